#!/usr/bin/env node
// Query latency at 1,000,000 documents through the real search path, beside SQLite FTS5.
//
//   npx tsc -b libs/fts/tsconfig.lib.json
//   node --max-old-space-size=12000 tools/bench/fts/zipf.js        # ~5–8 min on the 2-core machine
//     [--docs 1000000] [--batch 5000] [--queries 300] [--no-reopen] [--profile default.cpuprofile]
//     [--data DIR]   keep our store in DIR, and reuse it (no indexing) when DIR already holds one
//     [--no-fts5]    skip SQLite FTS5 (for looking at our side only)
//
// 1. The seeded Zipfian corpus (zipf-corpus.js) is indexed durably as rows of a table with a
//    [[fulltext]] field: FtsParticipant on a real TenantStore (classic-level on disk, fsync per
//    commit), one commit per --batch docs. SQLite FTS5 (porter unicode61, WAL, synchronous=FULL,
//    one transaction per batch) indexes the same docs in the same batches.
// 2. The store is closed and reopened (unless --no-reopen): the participant rebuilds its
//    in-memory index from the F keyspace, LevelDB's caches start empty — a restarted server.
// 3. Top-10 queries through `participant.search` (the HTTP route's call):
//    - default ranking (plain BM25, spec 4.9), first pass = cold (every list touched for the
//      first time since the restart), then the same queries again = warm;
//    - the reranked ranking (opt-in: feedback=rm3, proximity=bm25tp: proximity rescoring of
//      the first 30, RM3 reranking the first 100), warm;
//    - SQLite FTS5 bm25() ORDER BY … LIMIT 10 over the same words (OR).
//    Wall time and process CPU time (user+system) per query; load average printed beside.
//    Each pass starts once the process has gone quiet (../quiet.js), as every benchmark's
//    timed loops do.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { TenantStore } = require('@mmdb/storage');
const { FtsParticipant } = require(process.env.FTS_MODULE || '@mmdb/fts');
const { percentile } = require('./data');
const { Fts5 } = require('./peers');
const { quiesce } = require('../quiet');
const { manifest } = require('./ours');
const { V, SEED, corpus, queries } = require('./zipf-corpus');

const args = process.argv.slice(2);
const opt = (n, d) => (args.includes(`--${n}`) ? Number(args[args.indexOf(`--${n}`) + 1]) : d);
const N = opt('docs', 1_000_000);
const BATCH = opt('batch', 5000);
const Q = opt('queries', 300);
const REOPEN = !args.includes('--no-reopen');
const DATA = args.includes('--data') ? args[args.indexOf('--data') + 1] : null;
const FTS5 = !args.includes('--no-fts5');
// --profile <file>: a V8 CPU profile of the two default-ranking passes (open in Chrome devtools)
const PROFILE = args.includes('--profile') ? args[args.indexOf('--profile') + 1] : null;
const RERANKED = { feedback: 'rm3', proximity: 'bm25tp' };

async function lat(fn, qs) {
  const ms = [];
  const cpu = [];
  for (const q of qs) {
    const c0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    await fn(q);
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
  }
  const byQuery = ms.slice();
  ms.sort((a, b) => a - b);
  cpu.sort((a, b) => a - b);
  return { p50: percentile(ms, 50), p99: percentile(ms, 99), max: ms[ms.length - 1], cpu50: percentile(cpu, 50), cpu99: percentile(cpu, 99), byQuery };
}
async function profiler() {
  const { Session } = require('inspector');
  const session = new Session();
  session.connect();
  const post = (m, p) => new Promise((res, rej) => session.post(m, p, (e, r) => (e ? rej(e) : res(r))));
  await post('Profiler.enable');
  await post('Profiler.setSamplingInterval', { interval: 200 });
  await post('Profiler.start');
  return { stop: async (file) => fs.writeFileSync(file, JSON.stringify((await post('Profiler.stop')).profile)) };
}
const load = () => os.loadavg().map((x) => x.toFixed(2)).join(' ');
const secs = (t0) => Number(process.hrtime.bigint() - t0) / 1e9;

async function main() {
  const qs = queries(Q);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'fts-zipf-'));
  const dir = DATA ? path.resolve(DATA) : path.join(tmp, 'store');
  const reuse = DATA !== null && fs.existsSync(path.join(dir, 'CURRENT'));
  const rows = [];
  const log = (...a) => console.error(`[${new Date().toISOString().slice(11, 19)} load ${load()}]`, ...a);
  const loadStart = load();

  let fts = new FtsParticipant();
  const o0 = process.hrtime.bigint();
  let store = await TenantStore.open({ dir, participants: [fts], sync: true });
  // a kept store opened again is the restart (its own reopen is not needed)
  if (reuse) log(`opened the kept store in ${secs(o0).toFixed(1)} s`);
  if (!reuse) await store.registerSchema(manifest());
  const fts5 = FTS5 ? new Fts5(path.join(tmp, 'fts5.db')) : null;
  const put = (batch) => store.commit({ changes: batch.map((d) => ({ op: 'put', schema: 'bench.docs', row: { id: d.id, body: d.body } })) });
  for (const [name, ins] of [
    ...(reuse ? [] : [['ours: rows through TenantStore + FtsParticipant (fsync per commit)', put]]),
    ...(fts5 ? [['SQLite FTS5 (WAL, synchronous=FULL, one txn per batch)', (b) => fts5.insertBatch(b)]] : []),
  ]) {
    const t0 = process.hrtime.bigint();
    let batch = [];
    for (const d of corpus(N)) {
      batch.push(d);
      if (batch.length === BATCH) {
        await ins(batch);
        batch = [];
      }
    }
    if (batch.length) await ins(batch);
    const s = secs(t0);
    log(`indexed ${N} docs: ${name} in ${s.toFixed(0)} s`);
    rows.push([`index ${N} docs, ${BATCH}/commit (durable)`, name, `${Math.round(N / s)} docs/s`]);
  }
  if (fts.fieldStats('bench.docs', 'body').docs !== N) throw new Error('not every doc indexed');
  if (REOPEN && !reuse) {
    await store.close();
    const t0 = process.hrtime.bigint();
    fts = new FtsParticipant();
    store = await TenantStore.open({ dir, participants: [fts], sync: true });
    const s = secs(t0);
    log(`reopened in ${s.toFixed(1)} s`);
    rows.push(['reopen the store (participant rebuilds its index from the F keyspace)', 'ours', `${s.toFixed(1)} s`]);
    if (fts.fieldStats('bench.docs', 'body').docs !== N) throw new Error('reopen lost docs');
  }
  const search = (opts) => (q) => fts.search('bench.docs', 'body', q, 10, opts);
  const fmt = (l) => `p50 ${l.p50.toFixed(2)} / p99 ${l.p99.toFixed(2)} ms (max ${l.max.toFixed(1)}); cpu p50 ${l.cpu50.toFixed(2)} / p99 ${l.cpu99.toFixed(2)} ms`;
  const what = `top-10, ${N} docs, ${qs.length} queries of 1–4 words`;
  const stats = { candidates: 0 };
  const prof = PROFILE ? await profiler() : null;
  // Each timed pass starts on a quiet process, as the other benchmarks' loops do: not while
  // LevelDB compacts the load or the collector works off the reopen's garbage. "Cold" still
  // means the first queries after the restart (no query has run, nothing is cached).
  const quiet = async (what) => log(`quiet after ${(await quiesce(process.pid, { maxMs: 60_000 })) / 1000} s, before ${what}`);
  await quiet('the cold pass');
  const cold = await lat(search({ stats }), qs);
  log('default cold', fmt(cold));
  await quiet('the warm pass');
  const warm = await lat(search({}), qs);
  log('default warm', fmt(warm));
  if (prof) await prof.stop(PROFILE);
  await quiet('the reranked ranking');
  const reranked = await lat(search(RERANKED), qs);
  log('reranked warm', fmt(reranked));
  const f5 = fts5 ? (await quiet('FTS5'), await lat((q) => fts5.search(q, 10), qs)) : null;
  if (f5) log('fts5', fmt(f5));
  rows.push([`${what}, first pass after the restart (cold)`, 'ours, default ranking (plain BM25)', fmt(cold)]);
  rows.push([`${what}, second pass (warm)`, 'ours, default ranking', fmt(warm)]);
  rows.push([`${what}, after the above`, 'ours, reranked (feedback=rm3, proximity=bm25tp)', fmt(reranked)]);
  if (f5) {
    rows.push([what, 'SQLite FTS5 bm25() (OR of the words)', fmt(f5)]);
    rows.push(['p99 wall: FTS5 / ours (cold, warm, reranked)', '', `${(f5.p99 / cold.p99).toFixed(1)}× / ${(f5.p99 / warm.p99).toFixed(1)}× / ${(f5.p99 / reranked.p99).toFixed(1)}×`]);
  }
  const slow = qs.map((q, i) => [q, cold.byQuery[i], warm.byQuery[i]]).sort((a, b) => b[2] - a[2]).slice(0, 5);
  const slowCold = qs.map((q, i) => [q, cold.byQuery[i], i]).sort((a, b) => b[1] - a[1]).slice(0, 5);
  await store.close();
  fts5?.close();
  fs.rmSync(tmp, { recursive: true, force: true });

  console.log(`Zipf(s=1) corpus: ${N} docs, 10–49 words each over a ${V}-word vocabulary (seed ${SEED}); node ${process.version}, ${os.cpus().length} cores; load average at start ${loadStart}, at end ${load()}`);
  console.log('| measure | system | result |');
  console.log('|---|---|---|');
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
  console.log(`slowest warm default queries (ms cold / warm): ${slow.map(([q, c, w]) => `"${q}" ${c.toFixed(1)}/${w.toFixed(1)}`).join('; ')}`);
  console.log(`slowest cold default queries (ms, and place in the pass): ${slowCold.map(([q, c, i]) => `"${q}" ${c.toFixed(1)} (#${i + 1})`).join('; ')}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
