#!/usr/bin/env node
// Durable indexing throughput: Cranfield docs (repeated with fresh ids up to --docs) as rows
// through a real TenantStore (sync: true) with and without the [[fulltext]] field, beside
// SQLite FTS5 (WAL, synchronous=FULL) with the same batch per transaction.
// Usage: node tools/bench/fts/index-speed.js [--docs 20000] [--batch 1000] [--https]
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { TenantStore } = require('@mmdb/storage');
// FTS_MODULE=<dir>: another build of @mmdb/fts, for a before/after comparison
const { FtsParticipant } = require(process.env.FTS_MODULE || '@mmdb/fts');
const { loadDocs } = require('./data');
const { Fts5 } = require('./peers');
const { manifest } = require('./ours');
const { HttpsOurs } = require('./https');

const args = process.argv.slice(2);
const opt = (n, d) => (args.includes(`--${n}`) ? Number(args[args.indexOf(`--${n}`) + 1]) : d);
const N = opt('docs', 20000);
const BATCH = opt('batch', 1000);

async function storeRun(withFts) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fts-ix-'));
  const fts = new FtsParticipant();
  const store = await TenantStore.open({ dir, participants: [fts], sync: true });
  await store.registerSchema(withFts ? manifest() : manifest().replace(/\[\[fulltext\]\][^]*$/, ''));
  const t = await timed(async (batch) => {
    await store.commit({ changes: batch.map((d) => ({ op: 'put', schema: 'bench.docs', row: { id: d.id, body: d.body } })) });
  });
  if (withFts && fts.fieldStats('bench.docs', 'body').docs !== N) throw new Error('not all docs indexed');
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
  return t;
}

const base = loadDocs();
function* docs() {
  for (let i = 0; i < N; i++) {
    const d = base[i % base.length];
    yield { id: `${d.id}-${Math.floor(i / base.length)}`, body: d.body };
  }
}

async function timed(insert) {
  let batch = [];
  const t0 = process.hrtime.bigint();
  for (const d of docs()) {
    batch.push(d);
    if (batch.length === BATCH) {
      await insert(batch);
      batch = [];
    }
  }
  if (batch.length) await insert(batch);
  return N / (Number(process.hrtime.bigint() - t0) / 1e9);
}

async function main() {
  const rows = [];
  rows.push(['TenantStore rows, no [[fulltext]] (store alone)', await storeRun(false)]);
  rows.push(['TenantStore rows + FtsParticipant (ours)', await storeRun(true)]);
  if (args.includes('--https')) {
    const h = await HttpsOurs.open();
    if (!h) console.log('(https skipped: build the server first with `npx tsc -b tsconfig.build.json`)');
    else {
      rows.push(['ours over HTTPS: POST /rows/bench.docs/_batch (DB_SYNC=true)', await timed((b) => h.insertBatch(b))]);
      await h.close();
    }
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fts5-ix-'));
  const f = new Fts5(path.join(dir, 'x.db'));
  rows.push(['SQLite FTS5 porter (WAL, synchronous=FULL)', await timed(async (b) => f.insertBatch(b))]);
  f.close();
  fs.rmSync(dir, { recursive: true, force: true });
  console.log(`Durable indexing: ${N} Cranfield docs (avg ~90 words), ${BATCH} per commit/transaction; node ${process.version}, ${os.cpus().length} cores, load avg ${os.loadavg()[0].toFixed(1)}`);
  console.log('| system | docs/s | vs FTS5 |');
  console.log('|---|---|---|');
  for (const [n, v] of rows) console.log(`| ${n} | ${Math.round(v)} | ${(v / rows.find((r) => r[0].startsWith('SQLite'))[1]).toFixed(2)}× |`);
}
main().catch((e) => {
  console.error(e);
  process.exit(1);
});
