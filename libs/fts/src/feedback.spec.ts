import { analyzerFor } from './analysis';
import { FieldIndex } from './field-index';
import { compileQuery, searchClauses, searchWithFeedback, type SearchContext } from './query';
import { parseQuery } from './query-parser';

describe('RM3 feedback', () => {
  const docs: Record<string, string> = {
    a: 'hypersonic inlet shock boundary',
    b: 'hypersonic inlet shock',
    c: 'inlet shock boundary ramp', // no "hypersonic": reachable only through expansion
    d: 'laminar pipe flow',
    e: 'inlet shock ramp turbulent',
  };
  const an = analyzerFor({ analyzer: 'english' });
  const ix = new FieldIndex();
  const vec = new Map<string, Map<string, number>>();
  let total = 0;
  for (const [id, text] of Object.entries(docs)) {
    const { length, positions } = an.termPositions(text);
    const tf = new Map([...positions].map(([t, p]) => [t, p.length]));
    vec.set(id, tf);
    ix.putDoc(id, length, [...tf.keys()], [...tf.values()]);
    total += length;
  }
  ix.setStats(Object.keys(docs).length, total);
  const ctx: SearchContext = { index: ix, params: { k1: 1.2, b: 0.75 }, positions: async () => undefined, termVector: async (d) => vec.get(d) };

  it('a full second round (depth 0) adds docs sharing the top docs’ vocabulary, keeping the original matches first', async () => {
    const plain = await searchClauses(compileQuery(parseQuery('hypersonic'), an), ctx, 10);
    expect(plain.map((h) => h.doc_id).sort()).toEqual(['a', 'b']);
    const fb = await searchWithFeedback(compileQuery(parseQuery('hypersonic'), an), ctx, 10, { docs: 2, terms: 5, weight: 0.5, depth: 0 });
    const ids = fb.map((h) => h.doc_id);
    expect(ids.slice(0, 2).sort()).toEqual(['a', 'b']);
    expect(ids).toContain('c');
    expect(ids).not.toContain('d');
  });

  it('by default reranks the first round’s docs: same docs, reordered by the expanded query; smaller limits are prefixes', async () => {
    // "inlet shock": every doc but d matches; the feedback docs' "ramp"/"boundary" reorder them
    const q = () => compileQuery(parseQuery('inlet shock'), an);
    const first = await searchClauses(q(), ctx, 10);
    const fb = await searchWithFeedback(q(), ctx, 10, { docs: 2, terms: 5 });
    expect(fb.map((h) => h.doc_id).sort()).toEqual(first.map((h) => h.doc_id).sort());
    for (let k = 1; k <= fb.length; k++) expect(await searchWithFeedback(q(), ctx, k, { docs: 2, terms: 5 })).toEqual(fb.slice(0, k));
    // the same scores as a full second round restricted to these docs
    const full = await searchWithFeedback(q(), ctx, 10, { docs: 2, terms: 5, depth: 0 });
    const byId = new Map(full.map((h) => [h.doc_id, h.score]));
    for (const h of fb) expect(h.score).toBeCloseTo(byId.get(h.doc_id) as number, 12);
    // a pool of 1 (plus the limit): only the first round's best is reranked
    expect((await searchWithFeedback(q(), ctx, 1, { docs: 2, terms: 5, depth: 1 })).map((h) => h.doc_id)).toEqual([first[0].doc_id]);
  });

  it('drops feedback words above maxDfRatio of the docs', async () => {
    // "inlet" and "shock" are in 4 of 5 docs: with 0.5 only rarer words expand the query
    const fb = await searchWithFeedback(compileQuery(parseQuery('hypersonic'), an), ctx, 10, { docs: 2, terms: 5, depth: 0, maxDfRatio: 0.5 });
    const all = await searchWithFeedback(compileQuery(parseQuery('hypersonic'), an), ctx, 10, { docs: 2, terms: 5, depth: 0 });
    expect(fb.map((h) => h.doc_id)).not.toContain('e'); // e shares only inlet/shock with the feedback docs
    expect(all.map((h) => h.doc_id)).toContain('e');
  });

  it('keeps excluded clauses excluded and weight 0 is plain BM25', async () => {
    const fb = await searchWithFeedback(compileQuery(parseQuery('hypersonic -turbulent'), an), ctx, 10, { docs: 2, terms: 5, weight: 0.5 });
    expect(fb.map((h) => h.doc_id)).not.toContain('e');
    const same = await searchWithFeedback(compileQuery(parseQuery('hypersonic'), an), ctx, 10, { weight: 0 });
    expect(same).toEqual(await searchClauses(compileQuery(parseQuery('hypersonic'), an), ctx, 10));
  });
});
