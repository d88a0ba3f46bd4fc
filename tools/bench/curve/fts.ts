/**
 * The curve's full-text child: ours (TenantStore + FtsParticipant, rows of a [[fulltext]] table
 * loaded in commits of 5,000, sync off) or fts5 (SQLite FTS5, porter, WAL file) at one size of
 * the seeded Zipf corpus (tools/bench/fts/zipf-corpus.js), 300 top-10 queries of 1–4 words.
 * Ours runs the default ranking and plain BM25; both are reported.
 */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { TenantStore } from '@mmdb/storage';
import { FtsParticipant } from '@mmdb/fts';
import { percentiles, memory, report, log, settledMemory } from './common';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { corpus, queries } = require('../fts/zipf-corpus');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { Fts5 } = require('../fts/peers');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { quiesce } = require('../quiet');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { manifest } = require('../fts/manifest');

const BATCH = 5000;
const PLAIN = { feedback: 'none', proximity: 'none' } as const;
const RERANKED = { feedback: 'rm3', proximity: 'bm25tp' } as const;

type Doc = { id: string; body: string };

async function pass(name: string, qs: string[], fn: (q: string) => unknown, out: Record<string, { wall: number; cpu?: number }>): Promise<void> {
  await quiesce(process.pid, { maxMs: 60_000 });
  const p = await percentiles(qs, fn, 50);
  out[`${name}, mean`] = { wall: p.mean, cpu: p.cpuMean };
  out[`${name}, p99`] = { wall: p.p99, cpu: p.cpuP99 };
  log(`${name}: mean ${p.mean.toFixed(2)} p50 ${p.p50.toFixed(2)} p99 ${p.p99.toFixed(2)} ms; cpu mean ${p.cpuMean.toFixed(2)} p99 ${p.cpuP99.toFixed(2)} ms`);
}

/**
 * What libs/fts DESIGN.md "Limits" documents the in-memory index costs: 8 bytes per posting
 * (ordinal, tf) with arrays grown by doubling (so up to 16), 4 per (doc, term) for exact removal
 * (built at the first change; a load builds it), per doc its id string and length, and per
 * distinct term 60–110 bytes (the packed dictionary and the short lists' slab, doubling arrays).
 */
function documented(docs: number, postings: number, terms: number): string {
  const lo = (postings * 12 + docs * (8 + 2 * 8 + 40) + terms * 60) / 1048576;
  const hi = (postings * 20 + docs * (8 + 2 * 8 + 40) + terms * 110) / 1048576;
  return `${docs} docs, ${postings} postings, ${terms} terms: documented index memory ${lo.toFixed(0)}–${hi.toFixed(0)} MB (8–16 B a posting + 4 B a (doc, term) + ~64 B a doc id + 60–110 B a term)`;
}

/** The RSS budget to plan with (libs/fts DESIGN.md "Limits"): ~32 B a posting (the index's 16.5 and the allocator's slack of the doubling lists), ~128 B a doc (its id string and map entry), 110 B a term. */
const rssBudgetMB = (docs: number, postings: number, terms: number): number => (postings * 32 + docs * 128 + terms * 110) / 1048576;

/** The corpus's vocabulary (run.js --fts-vocab): 50,000 by default, larger for the memory-per-term curve. */
const VOCAB = Number(process.env.CURVE_FTS_VOCAB || 50_000);

export async function runFts(system: string, n: number): Promise<void> {
  const qs: string[] = queries(300, VOCAB);
  const tmp = mkdtempSync(join(tmpdir(), 'curve-fts-'));
  const base = memory();
  const t0 = performance.now();
  const out: Record<string, { wall: number; cpu?: number }> = {};
  let postings = 0;
  const loadAll = async (ins: (b: Doc[]) => unknown) => {
    let batch: Doc[] = [];
    postings = 0;
    for (const d of corpus(n, VOCAB) as Iterable<Doc>) {
      postings += new Set(d.body.split(' ')).size;
      batch.push(d);
      if (batch.length === BATCH) {
        await ins(batch);
        batch = [];
      }
    }
    if (batch.length) await ins(batch);
  };
  if (system === 'fts5') {
    const f5 = new Fts5(join(tmp, 'fts5.db'));
    await loadAll((b) => f5.insertBatch(b));
    const loadS = (performance.now() - t0) / 1000;
    const loaded = memory();
    for (const q of qs.slice(0, 50)) f5.search(q, 10);
    await pass('top-10', qs, (q) => f5.search(q, 10), out);
    report({ area: 'fts', system, size: n, loadS, base, loaded, after: memory(), settled: settledMemory(), queries: out });
    f5.close();
  } else {
    const fts = new FtsParticipant();
    const store = await TenantStore.open({ dir: join(tmp, 'store'), participants: [fts], sync: false });
    await store.registerSchema(manifest());
    await loadAll((b) => store.commit({ changes: b.map((d) => ({ op: 'put', schema: 'bench.docs', row: { id: d.id, body: d.body } })) }));
    const loadS = (performance.now() - t0) / 1000;
    const loaded = memory();
    log(`ours ${n}: loaded in ${loadS.toFixed(0)} s`);
    const search = (opts: object) => (q: string) => fts.search('bench.docs', 'body', q, 10, opts);
    // the JIT warmed on every ranking first, so no pass pays for the first compilations
    for (const o of [{}, RERANKED, PLAIN]) for (const q of qs) await search(o)(q);
    await pass('top-10, default ranking', qs, search({}), out);
    await pass('top-10, BM25 + proximity + RM3', qs, search(RERANKED), out);
    await pass('top-10, plain BM25', qs, search(PLAIN), out);
    const st = fts.fieldStats('bench.docs', 'body');
    report({ area: 'fts', system, size: n, loadS, base, loaded, after: memory(), settled: settledMemory(), queries: out, budget: documented(st.docs, postings, st.terms), budgetMB: rssBudgetMB(st.docs, postings, st.terms), terms: st.terms, longLists: st.longLists, vocabulary: VOCAB });
    await store.close();
  }
  rmSync(tmp, { recursive: true, force: true });
}
