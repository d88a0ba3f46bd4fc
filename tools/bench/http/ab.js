#!/usr/bin/env node
/**
 * Two builds of the server side by side, for a change's before/after on a shared, loaded host:
 * each round starts a server of A, loads it (schema, rows, a warm-up) and measures the no-op
 * route and the scenario routes, stops it, then does the same with B (B first every other
 * round), so the host's load drifts over both alike. One server at a time: with both running at
 * once, the one started second measured slower (~2 µs per no-op request, the same build on both). Per round and build it prints each route's req/s,
 * its ratio to the no-op route of the same build and round, and the server's CPU per request:
 * the main thread's alone (the event loop, /proc/<pid>/task/<pid>/stat) and the process's.
 *
 *   npm run build && cp -r dist/apps /tmp/base-apps   # before the change: keep a copy of the build
 *   node tools/bench/http/ab.js --a /tmp/base-apps/api/main.js [--b dist/apps/api/main.js] [--routes put] [--duration 3] [--rounds 4] [--nosync]
 *
 * `--nosync`: both servers with DB_SYNC=0 (no fsync): a PUT's CPU without the disk's latency,
 * whose swings on a shared host (1-10 ms per fsync) change the commit groups' size and so
 * the CPU per request more than a small change does. Not the benchmark's durable PUT.
 *
 * A copy of dist/apps/api must sit inside the repository (e.g. `.base/apps`) so that it
 * resolves node_modules (and the libs' dist) as the build does; libs are shared by both.
 */
const fs = require('fs');
const path = require('path');
const h = require('./harness');

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : def;
};
const A = path.resolve(opt('a', ''));
const B = path.resolve(opt('b', path.join(__dirname, '../../../dist/apps/api/main.js')));
const ROUTES = ['noop', ...opt('routes', 'put').split(',')];
const DURATION = Number(opt('duration', 3));
const ROUNDS = Number(opt('rounds', 4));
const CONNECTIONS = Number(opt('connections', 64));
const ENV = args.includes('--nosync') ? { DB_SYNC: '0' } : {};

/** CPU seconds of one thread of process `pid` (the main thread: tid = pid). */
function threadCpu(pid) {
  const s = fs.readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8');
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

async function load(srv, route) {
  const pid = srv.proc.pid;
  const m0 = threadCpu(pid);
  const c0 = h.cpuSeconds(pid);
  const r = await h.cannon(srv, route, { connections: CONNECTIONS, duration: DURATION });
  return { ...r, mainUs: ((threadCpu(pid) - m0) * 1e6) / r.total, cpuUs: ((h.cpuSeconds(pid) - c0) * 1e6) / r.total };
}

async function round(script) {
  const srv = await h.startServer({ script, env: ENV });
  try {
    await h.prepare(srv);
    for (const r of ['noop', 'get', 'put']) await h.cannon(srv, r, { connections: CONNECTIONS, duration: 2 });
    const res = {};
    for (const r of ROUTES) res[r] = await load(srv, r);
    return res;
  } finally {
    await srv.stop();
  }
}

async function main() {
  if (!fs.existsSync(A)) throw new Error(`--a ${A}: no such file (a copy of a build's apps/api/main.js)`);
  const builds = { A, B };
  const sums = {};
  {
    console.log(`A = ${A}\nB = ${B}\n`);
    console.log(`| round | build | ${ROUTES.map((r) => `${r} req/s (vs no-op)`).join(' | ')} | ${ROUTES.map((r) => `${r} µs/req main / process`).join(' | ')} |`);
    console.log(`|---:|---|${ROUTES.map(() => '---:|').join('')}${ROUTES.map(() => '---:|').join('')}`);
    for (let i = 0; i < ROUNDS; i++) {
      for (const name of i % 2 ? ['B', 'A'] : ['A', 'B']) {
        const res = await round(builds[name]);
        const cells = ROUTES.map((r) => `${res[r].rps.toFixed(0)}${r === 'noop' ? '' : ` (${((100 * res[r].rps) / res.noop.rps).toFixed(0)}%)`}`);
        const cpu = ROUTES.map((r) => `${res[r].mainUs.toFixed(1)} / ${res[r].cpuUs.toFixed(1)}`);
        console.log(`| ${i + 1} | ${name} | ${cells.join(' | ')} | ${cpu.join(' | ')} |`);
        for (const r of ROUTES) {
          const k = `${name} ${r}`;
          sums[k] ??= { ratio: [], main: [], cpu: [] };
          sums[k].ratio.push(res[r].rps / res.noop.rps);
          sums[k].main.push(res[r].mainUs);
          sums[k].cpu.push(res[r].cpuUs);
        }
      }
    }
    const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
    // the least CPU per request a build showed: the host's load only adds to it
    const min = (xs) => Math.min(...xs);
    console.log('\n| build | route | median vs no-op | median (least) main µs/req | median (least) process µs/req |');
    console.log('|---|---|---:|---:|---:|');
    for (const [k, v] of Object.entries(sums)) {
      console.log(`| ${k.replace(' ', ' | ')} | ${(100 * med(v.ratio)).toFixed(0)}% | ${med(v.main).toFixed(1)} (${min(v.main).toFixed(1)}) | ${med(v.cpu).toFixed(1)} (${min(v.cpu).toFixed(1)}) |`);
    }
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
