#!/usr/bin/env node
// Query latency on a seeded synthetic corpus with a Zipfian vocabulary, beside SQLite FTS5
// (porter unicode61, bm25(), ORDER BY … LIMIT 10) on the same docs and queries; and durable
// indexing docs/s through the store on a prefix of the corpus.
// The in-memory variant (FieldIndex + plain BM25 only; zipf.js measures the real path).
// Usage: node --max-old-space-size=8192 tools/bench/fts/zipf-memory.js [--docs 1000000] [--store-docs 100000] [--batch 1000] [--queries 300]
// The query side of ours is built in memory through FieldIndex.putDoc, the same structure the
// participant maintains from applied frames (indexing 1M docs through the store is measured
// separately with --store-docs, since it is bounded by the store's commit path).
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const fts = require('@mmdb/fts');
const { percentile } = require('./data');
const { Fts5 } = require('./peers');
const { Ours } = require('./ours');

const args = process.argv.slice(2);
const opt = (n, d) => (args.includes(`--${n}`) ? Number(args[args.indexOf(`--${n}`) + 1]) : d);
const N = opt('docs', 1_000_000);
const STORE_DOCS = opt('store-docs', 100_000);
const BATCH = opt('batch', 1000);
const Q = opt('queries', 300);
const { V, SEED, corpus, queries: makeQueries } = require('./zipf-corpus');
const queries = () => makeQueries(Q);

/** Wall-clock and on-CPU (process user+system) milliseconds per query; the machine is shared, so both are shown. */
async function latAsync(fn, qs) {
  const ms = [];
  const cpu = [];
  for (const q of qs.slice(0, 20)) await fn(q);
  for (const q of qs) {
    const c0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    await fn(q);
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
  }
  ms.sort((a, b) => a - b);
  cpu.sort((a, b) => a - b);
  return { p50: percentile(ms, 50), p99: percentile(ms, 99), max: ms[ms.length - 1], cpu50: percentile(cpu, 50), cpu99: percentile(cpu, 99) };
}
const lat = latAsync;
const fmt = (l) => `wall p50 ${l.p50.toFixed(2)} ms, p99 ${l.p99.toFixed(2)} ms (max ${l.max.toFixed(1)}); cpu p50 ${l.cpu50.toFixed(2)} ms, p99 ${l.cpu99.toFixed(2)} ms`;

async function main() {
  const qs = queries();
  const rows = [];
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'fts-zipf-'));

  // durable indexing through the store (prefix of the corpus), beside FTS5 with the same batches
  if (STORE_DOCS > 0) {
    const ours = await Ours.open({ tmp });
    const fts5 = new Fts5(path.join(tmp, 'ix.db'));
    for (const [name, sys] of [
      ['ours: rows through TenantStore (fsync per commit)', ours],
      ['SQLite FTS5 (WAL, synchronous=FULL, one txn per batch)', fts5],
    ]) {
      let batch = [];
      const t0 = process.hrtime.bigint();
      for (const d of corpus(STORE_DOCS)) {
        batch.push(d);
        if (batch.length === BATCH) {
          await sys.insertBatch(batch);
          batch = [];
        }
      }
      if (batch.length) await sys.insertBatch(batch);
      rows.push({ what: `index ${STORE_DOCS} docs, ${BATCH}/commit`, name, value: `${Math.round(STORE_DOCS / (Number(process.hrtime.bigint() - t0) / 1e9))} docs/s` });
    }
    const sample = qs.slice(0, 100);
    const a = await latAsync((q) => ours.search(q, 10), sample);
    const b = await lat((q) => fts5.search(q, 10), sample);
    rows.push({ what: `top-10 on the ${STORE_DOCS} store docs`, name: 'ours (through participant.search)', value: fmt(a) });
    rows.push({ what: `top-10 on the ${STORE_DOCS} store docs`, name: 'SQLite FTS5', value: fmt(b) });
    await ours.close();
    fts5.close();
  }

  // query latency at N docs
  const analyzer = fts.analyzerFor({ analyzer: 'english' });
  const ix = new fts.FieldIndex();
  const fts5 = new Fts5(path.join(tmp, 'big.db'));
  fts5.db.pragma('synchronous = OFF');
  let total = 0;
  let batch = [];
  const t0 = process.hrtime.bigint();
  for (const d of corpus(N)) {
    const toks = analyzer.analyze(d.body);
    const by = new Map();
    for (const t of toks) by.set(t.term, (by.get(t.term) || 0) + 1);
    ix.putDoc(d.id, toks.length, [...by.keys()], [...by.values()]);
    total += toks.length;
    batch.push(d);
    if (batch.length === 10000) {
      fts5.insertBatch(batch);
      batch = [];
    }
  }
  if (batch.length) fts5.insertBatch(batch);
  ix.setStats(N, total);
  const buildS = Number(process.hrtime.bigint() - t0) / 1e9;
  const ctx = { index: ix, params: { k1: 1.2, b: 0.75 }, positions: async () => undefined };
  const stats = { candidates: 0, skips: 0, tierExits: 0, taat: 0 };
  // term and prefix queries run synchronously inside searchClauses; time the whole call
  const run = (q) => fts.searchClauses(fts.compileQuery(fts.parseQuery(q), analyzer), ctx, 10, stats);
  // first pass: every list is touched for the first time (tiers built, scratch allocated);
  // second pass: the same queries again, as a warmed-up server sees them
  const coldLat = await latAsync(run, qs);
  const cand = stats.candidates / (qs.length + 20);
  const oursLat = await latAsync(run, qs);
  const fts5Lat = await lat((q) => fts5.search(q, 10), qs);
  rows.push({ what: `top-10, ${N} docs, ${qs.length} queries of 1–4 words, first pass (cold)`, name: 'ours (MaxScore + block-max + champion tiers; TAAT for common-term disjunctions)', value: `${fmt(coldLat)}; ${Math.round(cand)} docs offered/query` });
  rows.push({ what: `top-10, ${N} docs, ${qs.length} queries of 1–4 words, second pass (warm)`, name: 'ours (same)', value: `${fmt(oursLat)}; over both passes ${stats.tierExits || 0} tier exits, ${stats.taat || 0} term-at-a-time, ${stats.skips || 0} block skips` });
  rows.push({ what: `top-10, ${N} docs, ${qs.length} queries of 1–4 words`, name: 'SQLite FTS5 bm25()', value: fmt(fts5Lat) });
  rows.push({ what: 'p99 ratio (wall / cpu), FTS5 vs our cold pass', name: 'FTS5 / ours', value: `${(fts5Lat.p99 / coldLat.p99).toFixed(1)}× / ${(fts5Lat.cpu99 / coldLat.cpu99).toFixed(1)}×` });
  fts5.close();
  fs.rmSync(tmp, { recursive: true, force: true });

  console.log(`Zipf(s=1) corpus: ${N} docs, 10–49 words each over a ${V}-word vocabulary (seed ${SEED}); build of both indexes ${buildS.toFixed(0)} s; node ${process.version}, ${os.cpus().length} cores`);
  console.log('| measure | system | result |');
  console.log('|---|---|---|');
  for (const r of rows) console.log(`| ${r.what} | ${r.name} | ${r.value} |`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
