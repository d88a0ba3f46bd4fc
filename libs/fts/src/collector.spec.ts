import { FieldIndex } from './field-index';
import { compileQuery, searchClauses, type SearchContext } from './query';
import { parseQuery } from './query-parser';
import { analyzerFor } from './analysis';
import { bm25, idf } from './similarity';
import { collectorTuning, TAAT_WINDOW, type CollectStats } from './collector';

/** A corpus indexed straight into a FieldIndex, positions kept beside it (the participant reads them from the store). */
function build(docs: Record<string, string>) {
  const a = analyzerFor({ analyzer: 'english' });
  const ix = new FieldIndex();
  const pos = new Map<string, number[]>();
  let total = 0;
  for (const [id, text] of Object.entries(docs)) {
    const toks = a.analyze(text);
    const by = new Map<string, number[]>();
    for (const t of toks) by.set(t.term, [...(by.get(t.term) ?? []), t.pos]);
    for (const [t, ps] of by) pos.set(`${t}|${id}`, ps);
    ix.putDoc(id, toks.length, [...by.keys()], [...by.values()].map((ps) => ps.length));
    total += toks.length;
  }
  ix.setStats(Object.keys(docs).length, total);
  const ctx: SearchContext = { index: ix, params: { k1: 1.2, b: 0.75 }, positions: async (t, d) => pos.get(`${t}|${d}`) };
  const run = (q: string, k = 10, stats?: { candidates: number; skips?: number; tierExits?: number }) =>
    searchClauses(compileQuery(parseQuery(q), a), ctx, k, stats);
  return { ix, run };
}

describe('BM25 top-k', () => {
  const corpus = {
    d1: 'shock wave shock',
    d2: 'shock tube experiments on the wave',
    d3: 'boundary layer',
    d4: 'boundary layer transition and shock interaction in a boundary layer',
  };

  it('matches hand-computed scores', async () => {
    const { run } = build(corpus);
    // lengths: d1 3, d2 4 (shock tube experi wave), d3 2, d4 7 → avgdl 4; 'shock' df 3 of N 4
    const idfShock = Math.log(1 + (4 - 3 + 0.5) / (3 + 0.5));
    const s = (tf: number, dl: number) => (idfShock * tf * 2.2) / (tf + 1.2 * (1 - 0.75 + (0.75 * dl) / 4));
    const r = await run('shock');
    expect(r.map((x) => x.doc_id)).toEqual(['d1', 'd2', 'd4']);
    expect(r[0].score).toBeCloseTo(s(2, 3), 12);
    expect(r[1].score).toBeCloseTo(s(1, 4), 12);
    expect(r[2].score).toBeCloseTo(s(1, 7), 12);
    expect(idf(4, 3)).toBeCloseTo(idfShock, 15);
    expect(bm25(idfShock, 2, 3, 4, { k1: 1.2, b: 0.75 })).toBeCloseTo(s(2, 3), 15);
  });

  it('phrases need adjacent positions (stop-word gaps kept)', async () => {
    const { run } = build({ ...corpus, d5: 'layer boundary', d6: 'wave of shock' });
    expect((await run('"boundary layer"')).map((x) => x.doc_id)).toEqual(['d3', 'd4']);
    expect((await run('"shock wave"')).map((x) => x.doc_id)).toEqual(['d1']);
    expect((await run('"wave of shock"')).map((x) => x.doc_id)).toEqual(['d6']);
    expect((await run('"wave shock"')).map((x) => x.doc_id)).toEqual(['d1']); // shock wave *shock*
    expect((await run('"tube shock"')).map((x) => x.doc_id)).toEqual([]);
  });

  it('required, excluded and prefix clauses', async () => {
    const { run } = build(corpus);
    expect((await run('+shock +wave')).map((x) => x.doc_id).sort()).toEqual(['d1', 'd2']);
    expect((await run('shock -tube')).map((x) => x.doc_id)).toEqual(['d1', 'd4']);
    expect((await run('+boundary shock')).map((x) => x.doc_id)).toEqual(['d4', 'd3']);
    expect((await run('experi*')).map((x) => x.doc_id)).toEqual(['d2']);
    expect((await run('+absent shock'))).toEqual([]);
    expect((await run('the of'))).toEqual([]);
  });

  it('breaks ties by doc id', async () => {
    const { run } = build({ b: 'equal words', a: 'equal words', c: 'equal words' });
    expect((await run('equal')).map((x) => x.doc_id)).toEqual(['a', 'b', 'c']);
  });

  it('MaxScore gives exactly the exhaustive top-k on a random Zipfian corpus', async () => {
    let seed = 7;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
    const vocab = Array.from({ length: 300 }, (_, i) => `w${i}x`);
    const zipf = () => vocab[Math.min(vocab.length - 1, Math.floor(Math.pow(rnd(), 3) * vocab.length))];
    const docs: Record<string, string> = {};
    for (let i = 0; i < 2000; i++) docs[`doc${i}`] = Array.from({ length: 3 + Math.floor(rnd() * 30) }, zipf).join(' ');
    const { run } = build(docs);
    for (let qn = 0; qn < 40; qn++) {
      const q = Array.from({ length: 1 + Math.floor(rnd() * 5) }, zipf).join(' ');
      const fast = await run(q, 10);
      const all = await run(q, 2000);
      expect(fast.map((x) => x.doc_id)).toEqual(all.slice(0, 10).map((x) => x.doc_id));
      for (let i = 0; i < fast.length; i++) expect(fast[i].score).toBeCloseTo(all[i].score, 10);
    }
  });

  it('champion tiers and block-max skipping keep the exact top-k on long posting lists', async () => {
    let seed = 11;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
    const vocab = Array.from({ length: 60 }, (_, i) => `v${i}x`);
    const zipf = () => vocab[Math.min(vocab.length - 1, Math.floor(Math.pow(rnd(), 2.5) * vocab.length))];
    const docs: Record<string, string> = {};
    for (let i = 0; i < 12000; i++) docs[`d${i}`] = Array.from({ length: 2 + Math.floor(rnd() * 20) }, zipf).join(' ');
    const { run, ix } = build(docs);
    expect(ix.terms.get('v0x')!.n).toBeGreaterThan(4096);
    const stats = { candidates: 0, skips: 0, tierExits: 0, taat: 0 };
    for (let qn = 0; qn < 60; qn++) {
      // the second half runs with term-at-a-time enabled for every multi-term disjunction
      collectorTuning.taatMinPostings = qn < 30 ? 50_000 : 0;
      let q = Array.from({ length: 1 + Math.floor(rnd() * 3) }, zipf).join(' ');
      if (qn % 5 === 4) q += ` -${zipf()}`;
      if (q.split(' ').every((w) => w.startsWith('-'))) continue;
      const fast = await run(q, 10, stats);
      // independent brute force over the raw lists
      const words = q.split(' ');
      const pos = words.filter((w) => !w.startsWith('-'));
      const neg = words.filter((w) => w.startsWith('-')).map((w) => w.slice(1));
      const avgdl = ix.total / ix.docs;
      const scores = new Map<string, number>();
      for (const w of new Set(pos)) {
        const l = ix.terms.get(w);
        if (!l) continue;
        const boost = pos.filter((x) => x === w).length;
        const wi = idf(ix.docs, l.n) * boost;
        for (let i = 0; i < l.n; i++) {
          const id = ix.docIds[l.docs[i]];
          scores.set(id, (scores.get(id) ?? 0) + bm25(wi, l.tfs[i], ix.docLen[l.docs[i]], avgdl, { k1: 1.2, b: 0.75 }));
        }
      }
      for (const w of neg) {
        const l = ix.terms.get(w);
        for (let i = 0; l && i < l.n; i++) scores.delete(ix.docIds[l.docs[i]]);
      }
      const all = [...scores].sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1));
      expect(fast.map((x) => x.doc_id)).toEqual(all.slice(0, 10).map((x) => x[0]));
      for (let i = 0; i < fast.length; i++) expect(fast[i].score).toBeCloseTo(all[i][1], 10);
    }
    collectorTuning.taatMinPostings = 50_000;
    expect(stats.tierExits + stats.skips).toBeGreaterThan(0);
    expect(stats.taat).toBeGreaterThan(0);
  });

  it('short lists first, non-essential term-at-a-time and given seeds keep the exact top-k for k = 10, 100 and 300', async () => {
    let seed = 23;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
    // two words in more than 4,096 docs, several just below (similar idf), a long tail of rare ones
    const vocab = Array.from({ length: 300 }, (_, i) => `r${i}x`);
    const zipf = () => vocab[Math.min(vocab.length - 1, Math.floor(Math.pow(rnd(), 2) * vocab.length))];
    const docs: Record<string, string> = {};
    for (let i = 0; i < 20000; i++) docs[`d${i}`] = Array.from({ length: 2 + Math.floor(rnd() * 20) }, zipf).join(' ');
    for (let i = 0; i < 5; i++) docs[`z${i}`] = `zzrare r0x r${i + 7}x`; // a word in 5 docs only
    const { ix } = build(docs);
    const a = analyzerFor({ analyzer: 'english' });
    const ctx: SearchContext = { index: ix, params: { k1: 1.2, b: 0.75 }, positions: async () => undefined };
    expect(ix.terms.get('r0x')!.n).toBeGreaterThan(4096);
    const stats: CollectStats = { candidates: 0 };
    try {
      // fixed: two long lists with one rarer word whose bound exceeds theirs (non-essential TAAT)
      // repeated common words (boosted) against a shorter list; a word rarer than k
      const fixed = ['r0x r1x r25x', 'r0x r1x r150x', 'r0x r1x r2x r40x', 'r1x r0x r299x r12x', 'r0x r1x zzrare', 'r0x r0x r0x r1x r1x r5x'];
      for (let qn = 0; qn < 80 + fixed.length * 6; qn++) {
        const f = qn - 80;
        const k = [10, 100, 300][(f >= 0 ? Math.floor(f / 2) : qn) % 3];
        // term-at-a-time on for half the queries (every multi-word disjunction), off for the rest
        collectorTuning.taatMinPostings = qn % 2 ? 1000 : 1e9;
        // term-at-a-time's non-essential lists: probed per candidate, added to every window, or as it decides
        collectorTuning.taatProbeCost = [16, 0, 16, 1e9][qn % 4];
        // every third query seeds only the best long list's champion tier (the others count whole)
        collectorTuning.tierSeedShare = qn % 3 === 2 ? 1 : 4;
        const words = f >= 0 ? fixed[Math.floor(f / 6)].split(' ') : Array.from({ length: 1 + Math.floor(rnd() * 4) }, zipf);
        if (f < 0 && qn % 4 === 1) words.push(vocab[100 + Math.floor(rnd() * 200)]); // a rare word
        const q = words.join(' ');
        const clauses = compileQuery(parseQuery(q), a);
        const fast = await searchClauses(clauses, ctx, k, stats);
        // reference: k ≥ N and no term-at-a-time — no heap ever fills, nothing is pruned
        const taatMin = collectorTuning.taatMinPostings;
        collectorTuning.taatMinPostings = 1e9;
        const all = await searchClauses(clauses, ctx, 20005);
        collectorTuning.taatMinPostings = taatMin;
        expect(fast.map((x) => x.doc_id)).toEqual(all.slice(0, k).map((x) => x.doc_id));
        for (let i = 0; i < fast.length; i++) expect(fast[i].score).toBe(all[i].score);
        // seeded with docs from anywhere in the ranking: the same result
        const seeds = [all[all.length >> 1], all[all.length - 1], all[0]].filter(Boolean).map((h) => h.doc_id);
        expect(await searchClauses(clauses, ctx, k, stats, seeds)).toEqual(fast);
      }
    } finally {
      collectorTuning.taatMinPostings = 50_000;
      collectorTuning.taatProbeCost = 16;
      collectorTuning.tierSeedShare = 4;
    }
    expect(stats.tierExits).toBeGreaterThan(0);
    expect(stats.taatPartial).toBeGreaterThan(0);
    expect(stats.seeded).toBeGreaterThan(0);
  });

  it('term-at-a-time floors its threshold with docs the query can return (not excluded ones)', async () => {
    let seed = 5;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
    const docs: Record<string, string> = {};
    // 'alpha' in half the docs, 'beta' in most, once each among filler words
    for (let i = 0; i < 8000; i++)
      docs[`d${i}`] = [...(rnd() < 0.52 ? ['alpha'] : []), ...(rnd() < 0.8 ? ['beta'] : []), ...Array.from({ length: 4 + Math.floor(rnd() * 12) }, () => `f${Math.floor(rnd() * 500)}x`)].join(' ');
    // alpha's best postings (its champion tier: tf 4 in short docs) are all in docs the query excludes
    for (let i = 0; i < 300; i++) docs[`x${i}`] = 'alpha alpha alpha alpha banned';
    const { ix } = build(docs);
    const a = analyzerFor({ analyzer: 'english' });
    const ctx: SearchContext = { index: ix, params: { k1: 1.2, b: 0.75 }, positions: async () => undefined };
    const stats: CollectStats = { candidates: 0 };
    const tuning = { ...collectorTuning };
    try {
      for (const q of ['alpha beta -banned', 'beta alpha -banned f7x']) {
        const clauses = compileQuery(parseQuery(q), a);
        Object.assign(collectorTuning, tuning, { taatMinPostings: 1e9, taatMinEssential: 1e9 });
        const all = await searchClauses(clauses, ctx, 9000);
        expect(all.some((h) => h.doc_id.startsWith('x'))).toBe(false);
        for (const k of [5, 10, 50]) {
          Object.assign(collectorTuning, { taatMinPostings: 0, taatMinEssential: 0, taatProbeCost: k === 10 ? 1e9 : 16 });
          const got = await searchClauses(clauses, ctx, k, stats);
          expect(got).toEqual(all.slice(0, k));
        }
      }
    } finally {
      Object.assign(collectorTuning, tuning);
    }
    expect(stats.taat).toBeGreaterThan(0);
  });

  it('term-at-a-time over windows: lists turn non-essential as the threshold rises, dense windows add them, each doc offered once', async () => {
    let seed = 17;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
    // over three windows of docs; 'rare' and 'late' (long enough for a champion tier, so its
    // docs floor the threshold) only in the last one: the windows before it hold no candidate
    // once 'common' and 'mid' are non-essential; 'banned' docs, the first ordinals,
    // hold the best 'mid' postings, and 'odd' (in no other doc)
    const docs: Record<string, string> = {};
    for (let i = 0; i < 40; i++) docs[`x${i}`] = `mid mid mid common banned${i % 2 ? ' odd' : ''}`;
    const n = 3 * TAAT_WINDOW + 500;
    for (let i = 0; i < n; i++) {
      const late = i >= 2 * TAAT_WINDOW;
      const w = [...(rnd() < 0.7 ? ['common'] : []), ...(rnd() < 0.25 ? ['mid'] : []), ...(late && rnd() < 0.05 ? ['rare'] : []), ...(late && rnd() < 0.95 ? ['late'] : [])];
      if (rnd() < 0.1) w.push(...w);
      docs[`d${String(i).padStart(5, '0')}`] = [...w, ...Array.from({ length: 2 + Math.floor(rnd() * 12) }, () => `f${Math.floor(rnd() * 300)}x`)].join(' ');
    }
    const { ix } = build(docs);
    const a = analyzerFor({ analyzer: 'english' });
    const ctx: SearchContext = { index: ix, params: { k1: 1.2, b: 0.75 }, positions: async () => undefined };
    const tuning = { ...collectorTuning };
    const joins: Record<string, number> = {};
    let partial = 0;
    let skips = 0;
    try {
      // (the last: fewer matches than the largest k)
      for (const q of ['rare mid common', 'common mid', 'mid common rare -banned', 'f7x common mid', 'late common', 'mid late common', 'odd f3x -banned']) {
        const clauses = compileQuery(parseQuery(q), a);
        Object.assign(collectorTuning, { taatMinPostings: 1e9, taatMinEssential: 1e9 });
        const all = await searchClauses(clauses, ctx, n + 100);
        for (const k of [1, 10, 100, 600])
          for (const cost of [0, 16, 1e9]) {
            const stats: CollectStats = { candidates: 0 };
            Object.assign(collectorTuning, { taatMinPostings: 0, taatMinEssential: 0, taatProbeCost: cost });
            const got = await searchClauses(clauses, ctx, k, stats);
            expect(stats.taat).toBe(1);
            joins[cost] = (joins[cost] ?? 0) + (stats.taatJoins ?? 0);
            partial += stats.taatPartial ?? 0;
            skips += stats.skips ?? 0;
            expect(new Set(got.map((h) => h.doc_id)).size).toBe(got.length);
            expect(got).toEqual(all.slice(0, k));
          }
      }
    } finally {
      Object.assign(collectorTuning, tuning);
    }
    // never added (probed only), added in every window with a noted doc, and as costs decide
    expect(joins[0]).toBe(0);
    expect(joins[1e9]).toBeGreaterThan(0);
    expect(partial).toBeGreaterThan(0);
    expect(skips).toBeGreaterThan(0); // windows before the first 'rare' were jumped over
  });
});
