#!/usr/bin/env node
/**
 * How durable PUTs share fsyncs under the benchmark's load: the built server runs with the
 * commit coordinator's trace on (traced-server.js); each round runs the no-op route, then
 * PUT row, at --connections for --duration s, and prints PUT's ratio to the no-op route, the
 * server's main-thread CPU per request (Linux /proc: the event-loop thread alone) beside the
 * no-op route's, and the commit groups: size, each phase's mean, the time from one group's
 * write ending to the next one's being issued, and the share of time a batch write was in
 * progress.
 *
 *   npm run build && node tools/bench/http/commit-trace.js [--duration 5] [--rounds 3] [--connections 64]
 */
const fs = require('fs');
const path = require('path');
const h = require('./harness');
const { numArg } = require('../server');

const DURATION = numArg('duration', 5);
const ROUNDS = numArg('rounds', 3);
const CONNECTIONS = numArg('connections', 64);

/** CPU seconds of one thread of process `pid` (the main thread: tid = pid). */
function threadCpu(pid, tid = pid) {
  const s = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

const ask = (proc, msg) =>
  new Promise((resolve) => {
    proc.once('message', resolve);
    proc.send(msg);
  });

async function main() {
  const srv = await h.startServer({ script: path.join(__dirname, 'traced-server.js'), ipc: true });
  const pid = srv.proc.pid;
  const load = async (route) => {
    const m0 = threadCpu(pid);
    const c0 = h.cpuSeconds(pid);
    const r = await h.cannon(srv, route, { connections: CONNECTIONS, duration: DURATION });
    return { ...r, mainUs: ((threadCpu(pid) - m0) * 1e6) / r.total, cpuUs: ((h.cpuSeconds(pid) - c0) * 1e6) / r.total };
  };
  try {
    await h.prepare(srv);
    // as bench.js: GETs fill the row cache, then PUTs warm the write path
    for (const r of ['noop', 'get', 'put']) await h.cannon(srv, r, { connections: CONNECTIONS, duration: 2 });
    const f = (x, d = 2) => x.toFixed(d);
    console.log(`| round | no-op req/s | PUT req/s | PUT/no-op | main-thread µs/req no-op / PUT | PUT process µs/req | group mean (p50, max) | queued / prepare / wait flight / write / answer ms | write end → next issue p50 / p75 ms | writing share | ELU |`);
    console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (let i = 0; i < ROUNDS; i++) {
      const noop = await load('noop');
      await ask(srv.proc, 'start');
      const put = await load('put');
      const t = JSON.parse(await ask(srv.proc, 'stop'));
      console.log(
        `| ${i + 1} | ${f(noop.rps, 0)} | ${f(put.rps, 0)} | ${f((100 * put.rps) / noop.rps, 0)}% | ${f(noop.mainUs, 1)} / ${f(put.mainUs, 1)} | ${f(put.cpuUs, 1)} | ${f(t.group_mean, 1)} (${t.group_p50}, ${t.group_max}) | ${f(t.queued_ms)} / ${f(t.prepare_ms)} / ${f(t.wait_flight_ms)} / ${f(t.write_ms)} / ${f(t.answer_ms)} | ${f(t.gap_p50_ms)} / ${f(t.gap_p75_ms)} | ${f(t.writing_share)} | ${f(t.elu)} |`,
      );
    }
  } finally {
    await srv.stop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
