#!/usr/bin/env node
/**
 * Fairness, in-process (no HTTP): each heavy query of bench.js alone, then the 4 together, on a real
 * classic-level store through SqlEngine, while a "point read" is issued every 2 ms from a timer.
 * Prints per run: wall time, the point reads' delay (timer lateness + the read: what the event loop
 * made them wait), loop-iteration lengths, and GC pauses (PerformanceObserver). It separates the
 * executor's own share of the tail (slices, GC) from HTTP, TLS and the client's.
 *
 *   npm run build && node tools/bench/fairness/inproc.js          # ROWS=20000 NODES=300, ~30 s
 *   ONLY=cte,bfs node tools/bench/fairness/inproc.js               # some queries only (no "all4")
 *   SETF=--semi-space-growth-factor=1 node tools/bench/fairness/inproc.js   # a V8 flag set at start
 */
'use strict';
if (process.env.SETF) require('v8').setFlagsFromString(process.env.SETF);
const { mkdtempSync, rmSync } = require('fs');
const { PerformanceObserver } = require('perf_hooks');
const path = require('path'); const os = require('os');
const { TenantStore } = require('@mmdb/storage');
const { SqlEngine } = require('@mmdb/sql');
const ROWS = Number(process.env.ROWS ?? 20000), NODES = Number(process.env.NODES ?? 300), DEGREE = 16;
const CROSS = Math.max(200, Math.round(Math.sqrt(ROWS) * 20));
const HEAVY = [
  ['cross', `SELECT count(*) FROM big a, big b WHERE a.id <= ${CROSS} AND b.id <= ${CROSS} AND a.v + b.v < 0`],
  ['cte', `WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < ${ROWS * 50}) SELECT count(*) FROM c`],
  ['bfs', `WITH RECURSIVE r(node, d) AS (SELECT 1, 0 UNION SELECT e.dst, r.d + 1 FROM r, edges e WHERE e.src = r.node AND r.d < 64) SELECT count(*) FROM r`],
  ['top1000', `SELECT id, v FROM big ORDER BY v DESC, id LIMIT 1000`],
];
let gcs = [];
new PerformanceObserver((l) => { for (const e of l.getEntries()) gcs.push(e.duration); }).observe({ entryTypes: ['gc'] });
const stats = (xs) => { const s = [...xs].sort((a, b) => a - b); const n = s.length; return n ? `n ${n} p50 ${s[n >> 1].toFixed(2)} p99 ${s[Math.floor(n * .99)].toFixed(2)} max ${s[n - 1].toFixed(2)} sum ${s.reduce((a, b) => a + b, 0).toFixed(0)}` : 'n 0'; };
let sqlE;
async function measure(label, fn) {
  gcs = [];
  const lat = []; let probing = true;
  const probe = () => { const due = performance.now() + 2; setTimeout(() => { const t = performance.now(); sqlE.run('SELECT id, v, name FROM big WHERE id = $1', { params: [1 + Math.floor(Math.random() * ROWS)] }).then(() => { lat.push(performance.now() - due); if (probing) probe(); }); }, 2); };
  probe();
  const iters = []; let last = performance.now(); let live = true;
  const tick = () => { const t = performance.now(); iters.push(t - last); last = t; if (live) setImmediate(tick); };
  setImmediate(tick);
  const t0 = performance.now();
  await fn();
  live = false; probing = false;
  console.log(`${label}: wall ${(performance.now() - t0).toFixed(0)} ms | point-read delay ${stats(lat)} | loop iters ${stats(iters.filter((x) => x > 0.5))} | gc ${stats(gcs)}`);
}
(async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'inproc-'));
  const store = await TenantStore.open({ dir, sync: false });
  const sql = new SqlEngine(store); sqlE = sql;
  await sql.run('CREATE TABLE big(id INTEGER PRIMARY KEY, v INTEGER, name TEXT)');
  await sql.run('CREATE TABLE edges(src INTEGER, dst INTEGER)');
  await sql.run(`INSERT INTO big SELECT n, (n * 7919) % 100003, 'name' || n FROM (WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < ${ROWS}) SELECT n FROM s)`);
  await sql.run(`INSERT INTO edges SELECT n % ${NODES} + 1, (n * 7919 + n / ${NODES}) % ${NODES} + 1 FROM (WITH RECURSIVE s(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM s WHERE n < ${NODES * DEGREE - 1}) SELECT n FROM s)`);
  const only = process.env.ONLY ? process.env.ONLY.split(',') : null;
  for (const [name, q] of HEAVY) { if (only && !only.includes(name)) continue; await sql.run(q); await measure(name, () => sql.run(q)); }
  if (!only) await measure('all4', () => Promise.all(HEAVY.map(([, q]) => sql.run(q))));
  await new Promise((r) => setTimeout(r, 50));
  await store.close(); rmSync(dir, { recursive: true, force: true });
})();
