#!/usr/bin/env node
/**
 * The SQL table cache under writes (issue 25 §1; README.md "The table cache under writes"):
 * in-process, the built libs/storage and libs/sql over a classic-level store on disk. A table of
 * --rows rows (the ES bench's documents, a string primary key), cached, then --rounds rounds of:
 * one commit of --batch rows (alternating new rows and replacements of loaded ones), then a
 * GROUP BY query over the whole table. Two modes in the same run, on the same store:
 *
 * - `patch`: the cache as it is: the query's read patches the cached table with the commit's rows.
 * - `reload`: the cache dropped after each commit, so the query reads and decodes the whole table
 *   again: what every write caused before the cache was patched (its entry was keyed by table LSN).
 *
 * Printed per mode: the query after a write p50 / p99 / max, the longest event-loop delay of the
 * rounds (`monitorEventLoopDelay`, 1 ms), the cache's loads and patches, and the ratio.
 *
 *   npm run build && node tools/bench/stalls/cache-writes.js --rows 200000 --rounds 60
 *   node tools/bench/stalls/cache-writes.js --rows 20000 --rounds 20      # smoke
 */
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { monitorEventLoopDelay } = require('perf_hooks');
const { numArg } = require('../server');
const { docAt, TOML } = require('../es/data');
const { TenantStore } = require('@mmdb/storage');
const { SqlEngine } = require('@mmdb/sql');

const ROWS = numArg('rows', 200_000);
const ROUNDS = numArg('rounds', 60);
const BATCH = numArg('batch', 10);
const now = () => Number(process.hrtime.bigint()) / 1e6;
const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]; };
const Q = 'SELECT tag, count(*) AS c FROM bench.docs WHERE n < 500 GROUP BY tag ORDER BY c DESC LIMIT 20';

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mmdb-bench-cache-writes-'));
  const store = await TenantStore.open({ dir, sync: false });
  try {
    await store.registerSchema(TOML);
    for (let i = 0; i < ROWS; i += 5000) {
      const changes = [];
      for (let j = i; j < Math.min(ROWS, i + 5000); j++) changes.push({ op: 'put', schema: 'bench.docs', row: docAt(j) });
      await store.commit({ changes });
    }
    const sql = new SqlEngine(store);
    let fresh = ROWS;
    const round = async (k) => {
      const from = k % 2 === 0 ? fresh : (k * 7919 * BATCH) % Math.max(1, ROWS - BATCH);
      if (k % 2 === 0) fresh += BATCH;
      const changes = [];
      for (let j = from; j < from + BATCH; j++) changes.push({ op: 'put', schema: 'bench.docs', row: { ...docAt(j), n: (docAt(j).n + k) % 1000 } });
      await store.commit({ changes });
    };
    const out = {};
    for (const mode of ['reload', 'patch']) {
      await sql.run(Q);
      await sql.run(Q);
      const s0 = sql.tables.stats();
      const lat = [];
      const h = monitorEventLoopDelay({ resolution: 1 });
      h.enable();
      for (let k = 0; k < ROUNDS; k++) {
        await round(k);
        if (mode === 'reload') sql.tables.clear();
        const t0 = now();
        await sql.run(Q);
        lat.push(now() - t0);
      }
      h.disable();
      const s1 = sql.tables.stats();
      out[mode] = { lat, loop: h.max / 1e6, loads: s1.misses - s0.misses, patches: s1.patches - s0.patches, bytes: s1.bytes };
    }
    const f = (x, d = 2) => x.toFixed(d);
    console.log(`\n### Table cache under writes: ${ROWS.toLocaleString()} rows, ${ROUNDS} rounds of a ${BATCH}-row commit then \`${Q}\`\n`);
    console.log('| mode | query after a write p50 / p99 / max | longest event-loop delay | table loads | patches | cache bytes at the end |');
    console.log('|---|---|---|---|---|---|');
    for (const [mode, r] of Object.entries(out)) {
      console.log(`| ${mode} | ${f(pct(r.lat, 50))} / ${f(pct(r.lat, 99))} / ${f(Math.max(...r.lat))} ms | ${f(r.loop, 1)} ms | ${r.loads} | ${r.patches} | ${(r.bytes / 1e6).toFixed(1)} MB |`);
    }
    console.log(`\npatch / reload, query p50: ${f(pct(out.patch.lat, 50) / pct(out.reload.lat, 50), 3)}x; longest loop delay: ${f(out.patch.loop / out.reload.loop, 3)}x`);
    await sql.tables.settled();
  } finally {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
