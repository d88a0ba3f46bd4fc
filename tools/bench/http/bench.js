#!/usr/bin/env node
/**
 * HTTP benchmark of apps/api over HTTPS with keep-alive: load generated from this process
 * (autocannon) against the built server running in a child process.
 *
 *   npm run build && node tools/bench/http/bench.js [--duration 10] [--rounds 3] [--connections 64] [--rows 200000] [--warmup 3] [--serial 2000]
 *
 * One server, one run: schema + 10,000 preloaded rows, then a warm-up (JIT, TLS sessions,
 * store caches: every route for --warmup seconds and a small NDJSON ingest), then --rounds
 * rounds. Each round runs, back to back, the no-op route (`GET /v1/tenants/{t}/_ping`: TLS,
 * routing, auth, request id, metrics, JSON reply — the ceiling of this stack), GET row and
 * durable PUT row (--duration seconds each, --connections connections), then an NDJSON ingest
 * of --rows fresh 5-column rows with one secondary index (chunk 10000, durable), after which it
 * waits for the server to go quiet (LevelDB compacts the ingested rows on background threads for a
 * while: that CPU is the ingest's, not the next route's). The routes are
 * interleaved in every round (in reverse order every other round) so that a change in machine
 * load hits all of them alike, and each route's ratio is taken against the no-op route of the
 * same round. The table shows the median round (median req/s, p50, p99, ratio; the ratio's
 * median over rounds); every round is printed too. Beside throughput it reports the server
 * process's CPU time (user + system, from /proc) per request or per row: on a shared, loaded
 * machine req/s swings with the neighbours' load, CPU per request much less. Last, --serial requests one at a time on one connection (no-op and GET row): per-request
 * latency of the stack without queueing, p50/p99 in ms with µs resolution.
 */
const os = require('os');
const https = require('https');
const h = require('./harness');
const { quiesce } = require('../quiet');

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : def;
};
const DURATION = opt('duration', 10);
const ROUNDS = opt('rounds', 5);
const CONNECTIONS = opt('connections', 64);
const INGEST_ROWS = opt('rows', 200_000);
const WARMUP = opt('warmup', 3);
const SERIAL = opt('serial', 2000);
const TARGET_INGEST = 50_000;

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** `n` requests one after another on one keep-alive connection; latencies in ms. */
async function serial(srv, pathOf, n) {
  const agent = new https.Agent({ keepAlive: true, maxSockets: 1, ca: srv.agent.options.ca });
  const one = (p) =>
    new Promise((resolve, reject) => {
      const t0 = process.hrtime.bigint();
      const req = https.request(srv.url + p, { agent, headers: { authorization: `Bearer ${h.TOKEN}` } }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve(Number(process.hrtime.bigint() - t0) / 1e6) : reject(new Error(`${p}: ${res.statusCode}`))));
      });
      req.on('error', reject);
      req.end();
    });
  // Steady state: the first few thousand requests of a fresh client pay for JIT tier-up
  // (p99 around 4–6 ms); warm up with 3,000 before measuring.
  for (let i = 0; i < 3000; i++) await one(pathOf(i));
  const ms = [];
  for (let i = 0; i < n; i++) ms.push(await one(pathOf(i)));
  agent.destroy();
  ms.sort((a, b) => a - b);
  return { p50: ms[Math.floor(n * 0.5)], p99: ms[Math.floor(n * 0.99)], max: ms[n - 1] };
}

async function main() {
  const srv = await h.startServer();
  try {
    await h.prepare(srv);
    const routes = ['noop', 'get', 'put'];
    const load = { connections: CONNECTIONS, duration: DURATION };

    // Warm-up: not measured.
    for (const r of routes) await h.cannon(srv, r, { connections: CONNECTIONS, duration: WARMUP });
    await h.ingest(srv, h.ndjsonBody(5_000_000, 20_000));
    // An ingest leaves LevelDB compacting its rows for a while (background threads): each
    // round's routes start once the server is quiet, so that work is not charged to whichever
    // route happens to run first after it (it was, to PUT or the no-op route by turns).
    const quiet = () => quiesce(srv.proc.pid, { maxMs: 60_000 });
    await quiet();

    const rounds = [];
    for (let i = 0; i < ROUNDS; i++) {
      const round = {};
      for (const r of i % 2 ? [...routes].reverse() : routes) {
        const cpu0 = h.cpuSeconds(srv.proc.pid);
        round[r] = await h.cannon(srv, r, load);
        round[r].cpuUs = ((h.cpuSeconds(srv.proc.pid) - cpu0) * 1e6) / round[r].total;
      }
      for (const r of routes) round[r].ratio = round[r].rps / round.noop.rps;
      const body = h.ndjsonBody(1_000_000 + i * INGEST_ROWS, INGEST_ROWS);
      const cpu0 = h.cpuSeconds(srv.proc.pid);
      const secs = await h.ingest(srv, body);
      round.ingest = { secs, rowsPerSec: INGEST_ROWS / secs, cpuUs: ((h.cpuSeconds(srv.proc.pid) - cpu0) * 1e6) / INGEST_ROWS };
      round.quietMs = await quiet();
      rounds.push(round);
      process.stderr.write(
        `round ${i + 1}/${ROUNDS}: ${routes.map((r) => `${r} ${round[r].rps.toFixed(0)}/s`).join(', ')}, ndjson ${round.ingest.rowsPerSec.toFixed(0)} rows/s, then quiet after ${round.quietMs} ms\n`,
      );
    }
    const lat = {
      noop: await serial(srv, () => `${h.T}/_ping`, SERIAL),
      get: await serial(srv, (i) => `${h.T}/rows/bench.items/${(i * 7919) % h.PRELOAD}`, SERIAL),
    };

    console.log(
      `\nHTTPS keep-alive, ${CONNECTIONS} connections, ${ROUNDS} rounds × ${DURATION}s per route after a ${WARMUP}s warm-up, node ${process.version}, ${os.cpus().length} cores, load average ${os
        .loadavg()
        .map((x) => x.toFixed(1))
        .join(' ')}\n`,
    );
    console.log('| route (median of rounds) | req/s | p50 ms | p99 ms | vs no-op (same round) | target | server CPU µs/req | non-2xx/errors |');
    console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
    for (const r of routes) {
      const sc = h.SCENARIOS[r];
      const ratio = median(rounds.map((x) => x[r].ratio));
      const bad = rounds.reduce((a, x) => a + x[r].bad, 0);
      const target = sc.target ? `≥ ${sc.target * 100}% ${ratio >= sc.target ? 'ok' : 'MISSED'}` : '';
      console.log(
        `| ${sc.title} | ${median(rounds.map((x) => x[r].rps)).toFixed(0)} | ${median(rounds.map((x) => x[r].p50))} | ${median(rounds.map((x) => x[r].p99))} | ${(ratio * 100).toFixed(0)}% | ${target} | ${median(rounds.map((x) => x[r].cpuUs)).toFixed(0)} | ${bad} |`,
      );
    }
    const ingest = median(rounds.map((x) => x.ingest.rowsPerSec));
    console.log(`\n| NDJSON ingest (5 columns, 1 secondary index, chunk 10000, durable) | rows per round | median s | median rows/s | target | server CPU µs/row |`);
    console.log('|---|---:|---:|---:|---:|---:|');
    console.log(
      `| POST _batch application/x-ndjson | ${INGEST_ROWS} | ${median(rounds.map((x) => x.ingest.secs)).toFixed(2)} | ${ingest.toFixed(0)} | ≥ ${TARGET_INGEST} ${ingest >= TARGET_INGEST ? 'ok' : 'MISSED'} | ${median(rounds.map((x) => x.ingest.cpuUs)).toFixed(1)} |`,
    );
    console.log(`\n| one client, one request at a time (${SERIAL} requests) | p50 ms | p99 ms | max ms | target p99 |`);
    console.log('|---|---:|---:|---:|---:|');
    console.log(`| no-op GET _ping | ${lat.noop.p50.toFixed(3)} | ${lat.noop.p99.toFixed(3)} | ${lat.noop.max.toFixed(1)} | |`);
    console.log(`| GET row (pk lookup) | ${lat.get.p50.toFixed(3)} | ${lat.get.p99.toFixed(3)} | ${lat.get.max.toFixed(1)} | ≤ 2 ${lat.get.p99 <= 2 ? 'ok' : 'MISSED'} |`);
    console.log('\nevery round:');
    console.log('| round | no-op req/s | GET req/s (ratio) | PUT req/s (ratio) | NDJSON rows/s |');
    console.log('|---:|---:|---:|---:|---:|');
    rounds.forEach((x, i) =>
      console.log(
        `| ${i + 1} | ${x.noop.rps.toFixed(0)} | ${x.get.rps.toFixed(0)} (${(x.get.ratio * 100).toFixed(0)}%) | ${x.put.rps.toFixed(0)} (${(x.put.ratio * 100).toFixed(0)}%) | ${x.ingest.rowsPerSec.toFixed(0)} |`,
      ),
    );
  } finally {
    await srv.stop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
