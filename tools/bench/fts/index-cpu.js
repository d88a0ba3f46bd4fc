#!/usr/bin/env node
// CPU time per document of durable indexing (process.cpuUsage, not wall clock: usable on a
// busy machine). Two measurements over Cranfield docs repeated with fresh ids:
//  1. participant: FtsParticipant.deriveRow + apply over an in-memory DeriveContext (the fts
//     share of a commit, nothing else);
//  2. store: TenantStore (sync: true) commits of --batch rows, without and with the
//     [[fulltext]] field (cpu µs/doc of the whole process; the difference is the fts cost).
// Usage: node tools/bench/fts/index-cpu.js [--docs 5000] [--batch 100] [--rounds 3] [--no-store]
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { TenantStore, parseManifest } = require('@mmdb/storage');
// FTS_MODULE: load another build of @mmdb/fts (a before/after comparison)
const { FtsParticipant } = require(process.env.FTS_MODULE || '@mmdb/fts');
const { loadDocs } = require('./data');
const { manifest } = require('./ours');

const args = process.argv.slice(2);
const opt = (n, d) => (args.includes(`--${n}`) ? Number(args[args.indexOf(`--${n}`) + 1]) : d);
const N = opt('docs', 5000);
const BATCH = opt('batch', 100);
const ROUNDS = opt('rounds', 3);
const base = loadDocs();
const docAt = (i) => {
  const d = base[i % base.length];
  return { id: `${d.id}-${Math.floor(i / base.length)}`, body: d.body };
};
const cpu = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

async function participantRun() {
  const fts = new FtsParticipant();
  const m = parseManifest(manifest());
  const kv = new Map();
  const ctx = {
    lsn: 1,
    get: async (k) => kv.get(k.toString('latin1')),
    range: async () => [],
    getRow: async () => undefined,
    manifest: () => m,
  };
  const t0 = cpu();
  for (let i = 0; i < N; i += BATCH) {
    const writes = [];
    for (let j = i; j < Math.min(N, i + BATCH); j++) {
      const d = docAt(j);
      const ws = await fts.deriveRow(
        { schema: m.id, manifest: m, pk: [d.id], before: null, after: { values: { id: d.id, body: d.body }, version: 1 } },
        ctx,
      );
      for (const w of ws) {
        kv.set(w.key.toString('latin1'), w.value ?? undefined);
        writes.push(w);
      }
    }
    fts.apply({ version: 1, epoch: 1, lsn: i + 1, time: 0, changes: [], writes });
  }
  const us = (cpu() - t0) / N;
  if (fts.fieldStats(m.id, 'body').docs !== N) throw new Error('not all docs indexed');
  return us;
}

async function storeRun(withFts) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fts-cpu-'));
  const fts = new FtsParticipant();
  const store = await TenantStore.open({ dir, participants: [fts], sync: true });
  await store.registerSchema(withFts ? manifest() : manifest().replace(/\[\[fulltext\]\][^]*$/, ''));
  const t0 = cpu();
  for (let i = 0; i < N; i += BATCH) {
    const changes = [];
    for (let j = i; j < Math.min(N, i + BATCH); j++) changes.push({ op: 'put', schema: 'bench.docs', row: docAt(j) });
    await store.commit({ changes });
  }
  const us = (cpu() - t0) / N;
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
  return us;
}

async function main() {
  const best = async (f) => {
    let b = Infinity;
    for (let r = 0; r < ROUNDS; r++) b = Math.min(b, await f());
    return b;
  };
  console.log(`CPU µs per doc, ${N} Cranfield docs, ${BATCH} per commit, best of ${ROUNDS}; node ${process.version}, load avg ${os.loadavg()[0].toFixed(1)}`);
  console.log('| path | cpu µs/doc |');
  console.log('|---|---|');
  console.log(`| fts participant: deriveRow + apply (in-memory ctx) | ${(await best(participantRun)).toFixed(1)} |`);
  if (!args.includes('--no-store')) {
    const alone = await best(() => storeRun(false));
    const withFts = await best(() => storeRun(true));
    console.log(`| TenantStore sync, no [[fulltext]] | ${alone.toFixed(1)} |`);
    console.log(`| TenantStore sync + FtsParticipant | ${withFts.toFixed(1)} |`);
    console.log(`| difference (fts share) | ${(withFts - alone).toFixed(1)} |`);
  }
}
main().catch((e) => {
  console.error(e);
  process.exit(1);
});
