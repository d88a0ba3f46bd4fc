#!/usr/bin/env node
/**
 * Steady-state stalls under the HTTP read workload (issue 25 §1; README.md "Steady-state stalls"):
 * the built server holding the ES benchmark's data (--docs documents as rows of `bench.docs` with
 * their fts postings, and the same number through `_bulk` into the ES index `docs`), then
 * --seconds of the ES benchmark's query mix, sequential on one connection, with a point read
 * between queries: ES match, fts route, ES bool + terms agg, SQL GROUP BY … LIKE, ES filter +
 * terms agg, SQL GROUP BY, each followed by `GET rows/bench.docs/<id>`.
 *
 * The server runs with probe.js preloaded: the longest event-loop delay, every stall over 50 ms
 * with the main thread's time split into on-CPU / run-queue wait (host noise) / blocked, and
 * the GCs that overlapped it. Printed: the stall table, the reads' p50 / p99 / max, and the
 * GC summary of the timed window.
 *
 *   npm run build && node tools/bench/stalls/http.js --docs 200000 --seconds 60
 *   node tools/bench/stalls/http.js --docs 20000 --seconds 10      # smoke
 *
 * `--writes-per-s N` (default 0: reads only) adds a writer on its own connection during the timed
 * window: N `_bulk` requests a second of `--write-batch B` (default 10) documents each, batches
 * alternating between new documents and re-indexing (replacing) existing ones, so every search
 * after a write meets a changed ES view (issue 25 §1: its derived state adjusted, not rebuilt).
 *
 * `--natives` has probe.js time the server's calls into classic-level's binding on its main thread
 * (split into on CPU / run queue / blocked, with their callers; README.md "The blocked stalls, call
 * by call"); `STALLS_NATIVE_WHERE=1` counts every call by caller, `STALLS_NATIVE_MS` (default 2)
 * is the threshold for listing a call.
 */
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const https = require('https');
const { startBuiltServer, httpsRequest, numArg } = require('../server');
const { quiesce } = require('../quiet');
const { WORDS, TOML, MAPPING, rowsNdjson, bulkNdjson } = require('../es/data');

const DOCS = numArg('docs', 200_000);
const SECONDS = numArg('seconds', 60);
/** `--semi N`: the server's young-generation semi-space in MB (default: as `npm start` runs it, 64; V8's own default is 16). */
const SEMI = numArg('semi', 0);
const WRITES = numArg('writes-per-s', 0);
const WRITE_BATCH = numArg('write-batch', 10);
/** `--cpu-prof FILE`: a CPU profile of the server over the timed window to FILE, its stalls to FILE.stalls.json (prof-stalls.js reads both). */
const CPU_PROF = (() => { const i = process.argv.indexOf('--cpu-prof'); return i >= 0 ? path.resolve(process.argv[i + 1]) : null; })();
/** `--natives`: probe.js times the server's calls into classic-level's binding on the main thread (printed after the stalls). */
const NATIVES = process.argv.includes('--natives');
const CHUNK = 5000;
const TENANT = '01J0S7A11SBENCH00000000000';
const TOKEN = 'stalls-bench-token-0123456789';
const T = `/v1/tenants/${TENANT}`;

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : NaN;
};
const now = () => Number(process.hrtime.bigint()) / 1e6;

/** CPU steal of the host (all CPUs, jiffies) from /proc/stat. */
function hostCpu() {
  const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  return { total: f.reduce((a, b) => a + b, 0), steal: f[7] ?? 0, idle: f[3] + (f[4] ?? 0) };
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mmdb-bench-stalls-'));
  const out = path.join(dir, 'probe.json');
  if (CPU_PROF) fs.rmSync(CPU_PROF, { force: true });
  const env = {
    NODE_OPTIONS: `--require ${path.join(__dirname, 'probe.js')}`, STALLS_PROBE_OUT: out, ...(CPU_PROF ? { STALLS_CPU_PROF: CPU_PROF } : {}),
    ...(NATIVES ? { STALLS_NATIVE: '1', STALLS_NATIVE_MS: process.env.STALLS_NATIVE_MS ?? '2', STALLS_NATIVE_WHERE: process.env.STALLS_NATIVE_WHERE ?? '' } : {}),
  };
  const nodeArgs = SEMI ? [`--max-semi-space-size=${SEMI}`] : undefined;
  const { proc, url } = await startBuiltServer(path.join(dir, 'data'), { tenant: TENANT, token: TOKEN, env, nodeArgs });
  proc.on('exit', (c, sig) => process.env.STALLS_DEBUG && console.error('server exit', c, sig));
  if (process.env.STALLS_DEBUG) proc.stderr.on('data', (d) => process.stderr.write(d));
  const agent = new https.Agent({ keepAlive: true, rejectUnauthorized: false, maxSockets: 1 });
  const req = async (m, p, b, ct) => {
    const r = await httpsRequest(agent, url, TOKEN, m, p, b, ct);
    if (r.status >= 300) throw new Error(`${m} ${p}: ${r.status} ${r.text.slice(0, 300)}`);
    return r.json;
  };
  /** Asks the probe for its report of the window since the last ask (and starts a new one). */
  const probe = async () => {
    fs.rmSync(out, { force: true });
    fs.writeFileSync(`${out}.ask`, '');
    for (let i = 0; i < 200 && !fs.existsSync(out); i++) await new Promise((r) => setTimeout(r, 50));
    return JSON.parse(fs.readFileSync(out, 'utf8'));
  };
  try {
    await req('POST', `${T}/schemas`, TOML, 'text/plain');
    await req('PUT', `${T}/es/docs`, MAPPING);
    for (let i = 0; i < DOCS; i += CHUNK) await req('POST', `${T}/rows/bench.docs/_batch?chunk=${CHUNK}`, rowsNdjson(i, Math.min(DOCS, i + CHUNK)), 'application/x-ndjson');
    for (let i = 0; i < DOCS; i += CHUNK) await req('POST', `${T}/es/_bulk`, bulkNdjson(i, Math.min(DOCS, i + CHUNK)), 'application/x-ndjson');

    const q = (i) => `${WORDS[i % WORDS.length]} ${WORDS[(i * 7 + 3) % WORDS.length]}`;
    const w = (i) => WORDS[i % WORDS.length];
    const MIX = [
      ['ES match', (i) => req('POST', `${T}/es/docs/_search`, { size: 10, query: { match: { body: q(i) } } })],
      ['fts route', (i) => req('GET', `${T}/fts/bench.docs/body?q=${encodeURIComponent(q(i))}&limit=10&feedback=none&proximity=none`)],
      ['ES bool + terms agg', (i) => req('POST', `${T}/es/docs/_search`, {
        size: 0, query: { bool: { filter: [{ range: { n: { lt: 500 + (i % 100) } } }], must: [{ match: { body: w(i) } }] } }, aggs: { tags: { terms: { field: 'tag', size: 20 } } },
      })],
      ['SQL GROUP BY … LIKE', (i) => req('POST', `${T}/sql`, { sql: `SELECT tag, count(*) AS c FROM bench.docs WHERE n < ${500 + (i % 100)} AND body LIKE '%${w(i)}%' GROUP BY tag ORDER BY c DESC LIMIT 20` })],
      ['ES filter + terms agg', (i) => req('POST', `${T}/es/docs/_search`, { size: 0, query: { bool: { filter: [{ range: { n: { lt: 500 + (i % 100) } } }] } }, aggs: { tags: { terms: { field: 'tag', size: 20 } } } })],
      ['SQL GROUP BY', (i) => req('POST', `${T}/sql`, { sql: `SELECT tag, count(*) AS c FROM bench.docs WHERE n < ${500 + (i % 100)} GROUP BY tag ORDER BY c DESC, tag LIMIT 20` })],
    ];
    const point = (i) => req('GET', `${T}/rows/bench.docs/d${(i * 7919) % DOCS}`);
    // warm-up: every word through every query kind (lazy per-word and per-table work happens here)
    for (let i = 0; i < 2 * WORDS.length; i++) for (const [, fn] of MIX) await fn(i);
    await quiesce(proc.pid, { maxMs: 60_000 });

    const cache0 = (await probe()).tableCache; // starts the timed window
    const cpu0 = hostCpu();
    const lat = new Map([...MIX.map(([name]) => [name, []]), ['point read', []]]);
    const all = [];
    const end = now() + SECONDS * 1000;
    const writes = [];
    const writer = WRITES > 0 ? (async () => {
      const wagent = new https.Agent({ keepAlive: true, rejectUnauthorized: false, maxSockets: 1 });
      let fresh = DOCS;
      for (let k = 0, next = now(); now() < end; k++) {
        // new documents past the loaded ones, or a replacement of loaded ones (an update: removed + added)
        const from = k % 2 === 0 ? fresh : (k * 7919 * WRITE_BATCH) % Math.max(1, DOCS - WRITE_BATCH);
        if (k % 2 === 0) fresh += WRITE_BATCH;
        const t0 = now();
        const r = await httpsRequest(wagent, url, TOKEN, 'POST', `${T}/es/_bulk`, bulkNdjson(from, from + WRITE_BATCH), 'application/x-ndjson');
        if (r.status >= 300 || r.json?.errors) throw new Error(`_bulk: ${r.status} ${r.text.slice(0, 300)}`);
        writes.push(now() - t0);
        next += 1000 / WRITES;
        const wait = next - now();
        if (wait > 0) await new Promise((res) => setTimeout(res, wait));
      }
      wagent.destroy();
    })() : Promise.resolve();
    for (let i = 0; now() < end; i++) {
      const [name, fn] = MIX[i % MIX.length];
      let t0 = now();
      await fn(i);
      let ms = now() - t0;
      lat.get(name).push(ms);
      all.push(ms);
      t0 = now();
      await point(i);
      ms = now() - t0;
      lat.get('point read').push(ms);
      all.push(ms);
    }
    await writer;
    const r = await probe();
    if (CPU_PROF) {
      for (let i = 0; i < 100 && !fs.existsSync(CPU_PROF); i++) await new Promise((res) => setTimeout(res, 100));
      fs.writeFileSync(`${CPU_PROF}.stalls.json`, JSON.stringify(r.stalls));
    }
    const cpu1 = hostCpu();
    const dt = cpu1.total - cpu0.total || 1;

    const f = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
    console.log(`\n### Steady-state stalls: ${DOCS.toLocaleString()} documents (rows + ES index), ${SECONDS} s of the ES bench's query mix + point reads (sequential)${WRITES ? `, with ${WRITES} _bulk writes/s of ${WRITE_BATCH} documents alongside` : ''}\n`);
    console.log(`host during the window: steal ${f((100 * (cpu1.steal - cpu0.steal)) / dt)} %, idle ${f((100 * (cpu1.idle - cpu0.idle)) / dt)} % (of all CPUs); server heap at the end ${f(r.heapUsedMb, 0)} MB, old space ${f(r.oldSpaceMb[0], 0)} → ${f(r.oldSpaceMb[1], 0)} MB over the window, new space ${f(r.semiSpaceMb, 0)} MB`);
    console.log(`old space grown by (promoted or allocated old) ${f(r.oldInMb, 0)} MB in the window: ${f((1000 * r.oldInMb) / Math.max(1, all.length), 1)} MB per 1,000 requests`);
    const major = r.gcs.filter((g) => g.kind === 'major');
    const minor = r.gcs.filter((g) => g.kind === 'minor');
    const incr = r.gcs.filter((g) => g.kind === 'incremental');
    const mx = (xs) => (xs.length ? Math.max(...xs.map((g) => g.ms)) : 0);
    console.log(`GC in the window: ${major.length} major (longest pause ${f(mx(major))} ms), ${incr.length} incremental-marking entries (longest ${f(mx(incr))} ms), ${minor.length} scavenges (longest ${f(mx(minor))} ms, total ${f(minor.reduce((a, g) => a + g.ms, 0), 0)} ms)\n`);
    console.log('| measure | value |');
    console.log('|---|---|');
    console.log(`| longest event-loop delay (monitorEventLoopDelay max) | ${f(r.loopMaxMs)} ms |`);
    console.log(`| event-loop delay p99 | ${f(r.loopP99Ms)} ms |`);
    const real = r.stalls.filter((s) => s.cpu >= s.runq + s.blocked);
    console.log(`| stalls over 50 ms (of them mostly on-CPU: GC or a long task) | ${r.stalls.length} (${real.length}) |`);
    console.log(`| requests (all) p50 / p99 / max | ${f(pct(all, 50), 2)} / ${f(pct(all, 99), 2)} / ${f(Math.max(...all))} ms (${all.length}) |`);
    for (const [name, xs] of lat) console.log(`| ${name} p50 / p99 / max | ${f(pct(xs, 50), 2)} / ${f(pct(xs, 99), 2)} / ${f(Math.max(...xs))} ms (${xs.length}) |`);
    if (r.tableCache && cache0) {
      const d = (k) => r.tableCache[k] - cache0[k];
      console.log(`| SQL table cache in the window: whole-table loads / patched versions (row changes) / unstable-snapshot reads | ${d('misses')} / ${d('patches')} (${d('patchedRows')}) / ${d('unstableReads')} |`);
    }
    if (WRITES) console.log(`| _bulk writes (${WRITE_BATCH} docs) p50 / p99 / max | ${f(pct(writes, 50), 2)} / ${f(pct(writes, 99), 2)} / ${f(Math.max(...writes))} ms (${writes.length}) |`);
    if (r.stalls.length) {
      console.log('\n| stall ms | on CPU ms | run-queue wait ms (host) | blocked ms | GCs overlapping (kind pause ms) | classic-level calls inside (ms) |');
      console.log('|---|---|---|---|---|---|');
      for (const s of [...r.stalls].sort((a, b) => b.ms - a.ms).slice(0, 15)) {
        const g = s.gcs.filter((x) => x.kind !== 'minor' || x.ms >= 5).map((x) => `${x.kind} ${f(x.ms)}`).join(', ');
        const small = s.gcs.filter((x) => x.kind === 'minor' && x.ms < 5).length;
        const nat = (s.natives ?? []).map((n) => `${n.name} ${f(n.ms)}`).join(', ');
        console.log(`| ${f(s.ms)} | ${f(s.cpu)} | ${f(s.runq)} | ${f(s.blocked)} | ${g}${small ? `${g ? ', ' : ''}${small} scavenges < 5 ms` : ''} | ${nat} |`);
      }
    }
    printNatives(r, f);
  } finally {
    await new Promise((r) => {
      proc.once('exit', r);
      proc.kill();
    });
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The classic-level binding's calls on the server's main thread over the window (probe.js): per
 * native function the calls, their total and longest time; then the slowest single calls with the
 * JS frames that made them (what took LevelDB's mutex on the event loop when a stall is blocked).
 */
function printNatives(r, f) {
  if (!r.nativeCalls) return;
  const rows = Object.entries(r.nativeCalls).sort((a, b) => b[1].max - a[1].max);
  console.log('\n| classic-level call (main thread) | calls | total ms | longest ms |');
  console.log('|---|---|---|---|');
  for (const [name, c] of rows) console.log(`| ${name} | ${c.n} | ${f(c.ms)} | ${f(c.max, 2)} |`);
  for (const [name, c] of rows) {
    if (!c.by) continue; // STALLS_NATIVE_WHERE=1: the callers of each call
    for (const [w, n] of Object.entries(c.by).sort((a, b) => b[1] - a[1]).slice(0, 5)) console.log(`  ${name} × ${n}: ${w}`);
  }
  const slow = [...r.natives].sort((a, b) => b.ms - a.ms).slice(0, 10);
  if (!slow.length) return;
  console.log('\n| slowest calls ms | on CPU | run queue | blocked | GC inside | call | made by |');
  console.log('|---|---|---|---|---|---|---|');
  for (const n of slow) console.log(`| ${f(n.ms, 2)} | ${f(n.cpu)} | ${f(n.runq)} | ${f(n.blocked)} | ${f(n.gc)} | ${n.name} | ${n.where.slice(0, 4).join(' ← ')} |`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
