/**
 * Aggregations of a search over several indices (a comma list, a pattern, an alias over several)
 * as plans (libs/es-compat plan-indices.ts: the union of each index's matches, then the level's
 * plans), differentially: random documents (fast-check) spread over three indices, every answer
 * through plans equal to the aggregation code's over the views (taken with a `post_filter`).
 */
import fc from 'fast-check';
import { EsPlanCheck, suiteServer } from './es-plan-check';

const MAPPING = { properties: { tag: { type: 'keyword' }, n: { type: 'long' }, x: { type: 'double' }, at: { type: 'date' }, body: { type: 'text' } } };
/** The same fields, `n` mapped otherwise: the aggregation code answers a search reading it. */
const OTHER = { properties: { tag: { type: 'keyword' }, n: { type: 'double' }, x: { type: 'double' }, at: { type: 'date' }, body: { type: 'text' } } };

const AGGS = {
  t: { terms: { field: 'tag', size: 3 }, aggs: { s: { sum: { field: 'x' } }, n: { max: { field: 'n' } } } },
  h: { histogram: { field: 'n', interval: 3 } }, d: { date_histogram: { field: 'at', calendar_interval: 'month' } },
  sx: { sum: { field: 'x' } }, st: { stats: { field: 'n' } }, cd: { cardinality: { field: 'tag' } }, pc: { percentiles: { field: 'x', percents: [50] } },
  r: { range: { field: 'x', ranges: [{ to: 0 }, { from: 0, to: 10 }, { from: 10 }] } }, f: { filter: { term: { tag: 'a' } }, aggs: { a: { avg: { field: 'x' } } } },
  c: { composite: { sources: [{ tag: { terms: { field: 'tag' } } }, { n: { histogram: { field: 'n', interval: 5 } } }], size: 5 } },
};
const QUERIES: unknown[] = [undefined, { range: { n: { gte: 3 } } }, { bool: { filter: [{ term: { tag: 'b' } }] } }, { match: { body: 'alpha' } }];
/** Aggregations plan-multi.ts takes over multi-valued tag and n (the composite's and the terms' subs: one-valued fields). */
const MULTI_AGGS = {
  t: { terms: { field: 'tag', size: 3 }, aggs: { s: { sum: { field: 'x' } } } }, h: { histogram: { field: 'n', interval: 3 } }, st: { stats: { field: 'n' } },
  cd: { cardinality: { field: 'tag' } }, r: { range: { field: 'x', ranges: [{ to: 0 }, { from: 0, to: 10 }, { from: 10 }] } }, f: { filter: { term: { tag: 'a' } }, aggs: { a: { avg: { field: 'x' } } } },
  c: { composite: { sources: [{ tag: { terms: { field: 'tag' } } }, { n: { histogram: { field: 'n', interval: 5 } } }], size: 5 } },
};

/** One value, or several (an array): such fields are read by unnest over the union (plan-multi.ts). */
const some = <T>(a: fc.Arbitrary<T>) => fc.oneof({ arbitrary: a, weight: 4 }, { arbitrary: fc.array(a, { maxLength: 3 }), weight: 1 });
const doc = fc.record({
  tag: some(fc.constantFrom('a', 'b', 'c', 'd')), n: some(fc.integer({ min: 0, max: 20 })),
  x: fc.oneof(fc.integer({ min: -50, max: 50 }).map((i) => i / 10), fc.double({ min: -1e6, max: 1e6, noNaN: true })),
  at: fc.integer({ min: 1.5e12, max: 1.6e12 }), body: fc.constantFrom('alpha', 'beta', 'alpha beta'),
}, { requiredKeys: ['tag', 'body'] });

type Json = any;

describe('ES aggregations over several indices as plans', () => {
  const server = suiteServer();
  let runs = 0;

  async function same(c: EsPlanCheck, path: string, query: unknown, planned: boolean, aggs: unknown = AGGS): Promise<Json> {
    const body = { size: 0, aggs, ...(query ? { query } : {}) };
    const before = await c.plans();
    const r = await c.es('POST', `${path}/_search`, body);
    expect([path, query, (await c.plans()) - before > 0]).toEqual([path, query, planned]);
    const viewed = await c.es('POST', `${path}/_search`, { ...body, post_filter: { match_all: {} } });
    expect([path, query, r.hits.total, r._shards.total, r.aggregations]).toEqual([path, query, viewed.hits.total, viewed._shards.total, viewed.aggregations]);
    return r;
  }

  it('random documents over three indices: a list, a pattern and an alias answer through plans as the aggregation code', async () => {
    await fc.assert(fc.asyncProperty(fc.array(doc, { minLength: 1, maxLength: 45 }), async (docs) => {
      const run = ++runs;
      const names = [`u${run}a`, `u${run}b`, `u${run}c`];
      let c: EsPlanCheck | undefined;
      for (let j = 0; j < 3; j++) {
        const mine = docs.filter((_, i) => i % 3 === j);
        c = await EsPlanCheck.fresh(server(), names[j], MAPPING, mine.map((d, i) => [`d${i}`, d]), AGGS);
      }
      await c!.es('POST', '/_aliases', { actions: [{ add: { indices: names.slice(0, 2), alias: `u${run}al` } }] });
      // several values of tag or n in some document: the forms plan-multi.ts takes (a percentiles or date histogram beside them is one-valued)
      const multi = docs.some((d) => Array.isArray(d.tag) || Array.isArray(d.n));
      const aggs = multi ? { ...MULTI_AGGS, d: AGGS.d, pc: AGGS.pc } : AGGS;
      for (const query of QUERIES) {
        await same(c!, `/${names.join(',')}`, query, true, aggs);
        await same(c!, `/u${run}*`, query, true, aggs);
        await same(c!, `/u${run}al`, query, true, aggs);
      }
    }), { numRuns: 12 });
  }, 300_000);

  it('a field mapped otherwise in one index, or a global aggregation: the aggregation code answers, alike', async () => {
    const c = await EsPlanCheck.fresh(server(), 'w1', MAPPING, [['1', { tag: 'a', n: 1, x: 0.5, at: 1.5e12, body: 'alpha' }]], { s: { sum: { field: 'x' } } });
    await EsPlanCheck.fresh(server(), 'w2', OTHER, [['1', { tag: 'b', n: 2.5, x: 0.25, at: 1.55e12, body: 'beta' }], ['2', { tag: 'a', n: 3, x: 1, at: 1.55e12, body: 'beta' }]], { s: { sum: { field: 'x' } } });
    const r = await same(c, '/w1,w2', undefined, true, { s: { sum: { field: 'x' } }, t: { terms: { field: 'tag' } } });
    expect(r.aggregations.t.buckets).toEqual([{ key: 'a', doc_count: 2 }, { key: 'b', doc_count: 1 }]);
    expect(r.aggregations.s.value).toBe(1.75);
    await same(c, '/w1,w2', undefined, false, { s: { stats: { field: 'n' } } });
    await same(c, '/w*', undefined, false, { g: { global: {}, aggs: { s: { sum: { field: 'x' } } } } });
  }, 60_000);
});
