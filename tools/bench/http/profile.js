#!/usr/bin/env node
/**
 * CPU-profiles the built server under the benchmark's load, one server per scenario, and
 * prints a summary of each profile (summarize-profile.js).
 *
 *   npm run build && node tools/bench/http/profile.js [noop get put ndjson] [--duration 10] [--connections 64] [--rows 200000] [--out /tmp/mmdb-prof] [--main <a copy of dist/apps/api/main.js>] [--nosync]
 *
 * `--nosync`: the server runs with DB_SYNC=0 (no fsync; see ab.js), for a steadier per-request profile of the CPU.
 *
 * Each profile is written as <out>/<scenario>.cpuprofile with <scenario>.json beside it (the
 * requests or rows served in the window): `profile-diff.js` compares two per request.
 *
 * The server runs under profiled-server.js: the profile covers only the load window (after
 * schema, preload and a 2 s warm-up; a PUT profile's warm-up reads rows first, as bench.js's
 * does), sampled every 200 µs.
 */
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');
const h = require('./harness');

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : def;
};
const DURATION = Number(opt('duration', 10));
const CONNECTIONS = Number(opt('connections', 64));
const ROWS = Number(opt('rows', 200_000));
const OUT = opt('out', '/tmp/mmdb-prof');
const MAIN = opt('main', undefined);
const optVals = new Set(['duration', 'connections', 'rows', 'out', 'main'].map((n) => opt(n, undefined)).filter(Boolean));
let scenarios = args.filter((a) => !a.startsWith('--') && !optVals.has(a));
if (!scenarios.length) scenarios = ['noop', 'get', 'put', 'ndjson'];

/** Sends `msg` to the profiled server and waits for its answer. */
function ask(proc, msg) {
  return new Promise((resolve) => {
    proc.once('message', resolve);
    proc.send(msg);
  });
}

async function run(name) {
  const file = path.join(OUT, `${name}.cpuprofile`);
  const srv = await h.startServer({ script: path.join(__dirname, 'profiled-server.js'), env: { PROFILE_OUT: file, ...(args.includes('--nosync') ? { DB_SYNC: '0' } : {}), ...(MAIN ? { PROFILE_MAIN: path.resolve(MAIN) } : {}) }, ipc: true });
  try {
    await h.prepare(srv);
    const load = name === 'ndjson' ? () => h.ingest(srv, body) : () => h.cannon(srv, name, { connections: CONNECTIONS, duration: DURATION });
    const body = name === 'ndjson' ? h.ndjsonBody(1_000_000, ROWS) : null;
    if (name === 'ndjson') await h.ingest(srv, h.ndjsonBody(2_000_000, 20_000));
    else {
      // As in the benchmark's warm-up: GET rows first (it fills the store's row cache, so the
      // PUTs' reads ahead hit it as they do in bench.js), then the scenario itself.
      if (name === 'put') await h.cannon(srv, 'get', { connections: CONNECTIONS, duration: 2 });
      await h.cannon(srv, name, { connections: CONNECTIONS, duration: 2 });
    }
    await ask(srv.proc, 'start');
    const r = await load();
    await ask(srv.proc, 'stop');
    fs.writeFileSync(file.replace(/\.cpuprofile$/, '.json'), JSON.stringify({ scenario: name, served: typeof r === 'number' ? ROWS : r.total }));
    console.log(`\n=== ${name}: ${typeof r === 'number' ? `${ROWS} rows in ${r.toFixed(2)} s = ${(ROWS / r).toFixed(0)} rows/s` : `${r.rps.toFixed(0)} req/s p50 ${r.p50} p99 ${r.p99} bad ${r.bad}`}`);
    console.log(execFileSync(process.execPath, [path.join(__dirname, 'summarize-profile.js'), file, '--top', '25'], { encoding: 'utf8' }));
  } finally {
    await srv.stop();
  }
}

(async () => {
  fs.mkdirSync(OUT, { recursive: true });
  for (const s of scenarios) await run(s);
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
