/**
 * Aggregations over multi-valued fields (arrays) as plans (libs/es-compat plan-multi.ts: the
 * `unnest` node over the row's `_mv` column), differentially: random documents (fast-check) whose
 * keyword, long and double fields hold zero, one or several values (repeats included), and every
 * answer through plans equals the aggregation code's over the view (taken with a `post_filter`):
 * terms count a document once per distinct key, metrics count every value. ES_MULTI_SEED (and
 * ES_MULTI_PATH) replay a run fast-check reported.
 */
import fc from 'fast-check';
import { EsPlanCheck, suiteServer } from './es-plan-check';

const MAPPING = {
  properties: { tag: { type: 'keyword' }, n: { type: 'long' }, x: { type: 'double' }, f: { type: 'float' }, k: { type: 'keyword' }, m: { type: 'double' }, body: { type: 'text' }, at: { type: 'date' } },
};

const AGGS = {
  t: { terms: { field: 'tag' } },
  t2: { terms: { field: 'tag', size: 2, order: { _key: 'asc' } }, aggs: { s: { sum: { field: 'm' } }, a: { avg: { field: 'm' } }, kk: { terms: { field: 'k' } } } },
  t3: { terms: { field: 'tag', order: { s: 'desc' }, include: ['a', 'b', 'c'] }, aggs: { s: { max: { field: 'm' } } } },
  tn: { terms: { field: 'n', size: 4 } }, t0: { terms: { field: 'tag', min_doc_count: 0, order: { _key: 'desc' } } }, tn0: { terms: { field: 'n', min_doc_count: 0, size: 30 } }, tx: { terms: { field: 'x', size: 3, order: { _key: 'desc' } } }, tf: { terms: { field: 'f' } },
  rt: { rare_terms: { field: 'tag' } }, rn: { rare_terms: { field: 'n', max_doc_count: 2 } },
  mn: { min: { field: 'n' } }, mx: { max: { field: 'x' } }, sx: { sum: { field: 'x' } }, sf: { sum: { field: 'f' } }, ax: { avg: { field: 'x' } }, an: { avg: { field: 'n' } },
  st: { stats: { field: 'n' } }, es: { extended_stats: { field: 'x' } }, vc: { value_count: { field: 'tag' } }, vn: { value_count: { field: 'n' } },
  cd: { cardinality: { field: 'tag' } }, cx: { cardinality: { field: 'x' } },
  pc: { percentiles: { field: 'x', percents: [5, 50, 95] } }, pr: { percentile_ranks: { field: 'n', values: [0, 5] } }, md: { median_absolute_deviation: { field: 'f' } },
  // filter clauses on multi-valued fields: any value matches
  fa: { filter: { term: { tag: 'b' } }, aggs: { s: { sum: { field: 'm' } } } }, fb: { filters: { filters: { r: { range: { n: { gt: 5 } } }, e: { exists: { field: 'x' } } } } },
  fc: { terms: { field: 'k' }, aggs: { f: { filter: { terms: { tag: ['a', 'c'] } } } } }, adj: { adjacency_matrix: { filters: { a: { term: { tag: 'a' } }, n: { range: { n: { lt: 0 } } } } } },
  // composite: a document once in each combination of its sources' values
  cp: { composite: { size: 20, sources: [{ t: { terms: { field: 'tag' } } }, { k: { terms: { field: 'k', order: 'desc' } } }, { h: { histogram: { field: 'n', interval: 5, missing_bucket: true } } }] } },
  cp2: { composite: { size: 3, sources: [{ x: { terms: { field: 'x', missing_bucket: true } } }], after: { x: -1 } } },
  // `missing`: a document without a value counts once with it
  tm: { terms: { field: 'tag', missing: 'none' } }, tnm: { terms: { field: 'n', missing: -1, size: 3 } }, sm: { sum: { field: 'x', missing: 1.5 } },
  am: { avg: { field: 'n', missing: 100 } }, vm: { value_count: { field: 'tag', missing: 'z' } }, cm: { cardinality: { field: 'f', missing: 0 } },
  // histograms and ranges: a document once per bucket, whatever its values there
  hn: { histogram: { field: 'n', interval: 4 } }, hx: { histogram: { field: 'x', interval: 2.5, min_doc_count: 1, order: { _count: 'desc' } } },
  dh: { date_histogram: { field: 'at', calendar_interval: 'month' } }, df: { date_histogram: { field: 'at', fixed_interval: '10d', min_doc_count: 1 } },
  rn2: { range: { field: 'n', ranges: [{ to: 0 }, { from: 0, to: 6 }, { from: 3 }], keyed: true } }, rx2: { range: { field: 'x', ranges: [{ to: 0 }, { from: -1, to: 1 }] } },
  dr: { date_range: { field: 'at', ranges: [{ to: '2018-01-01' }, { from: '2017-06-01' }] } },
  // fields holding one value per document, beside them
  pk: { terms: { field: 'k' }, aggs: { m: { sum: { field: 'm' } } } }, pm: { stats: { field: 'm' } },
  // histogram `missing`: a document without a value in that value's bucket
  hmi: { histogram: { field: 'n', interval: 3, missing: 100 } }, hmm: { histogram: { field: 'm', interval: 100000, missing: 0, min_doc_count: 1 } },
  rmi: { range: { field: 'n', missing: 4, ranges: [{ to: 3 }, { from: 3, to: 6 }, { from: 5 }] } }, rmx: { range: { field: 'm', missing: -1, ranges: [{ to: 0 }, { from: 0 }] } },
};
/** Sub-aggregations reading multi-valued fields: a level per bucket over its documents (plan-multi-subs.ts). */
const SUBS = {
  s1: { terms: { field: 'k' }, aggs: { s: { sum: { field: 'n' } }, t: { terms: { field: 'tag' } }, x: { stats: { field: 'x' } } } },
  s2: { terms: { field: 'tag', size: 3, order: { _key: 'asc' } }, aggs: { n: { avg: { field: 'n' } }, c: { cardinality: { field: 'tag' } }, m: { sum: { field: 'm' } } } },
  s3: { filter: { range: { m: { gte: 0 } } }, aggs: { t: { terms: { field: 'tag' }, aggs: { mx: { max: { field: 'x' } }, h: { histogram: { field: 'n', interval: 5 } } } } } },
  s4: { filters: { filters: { p: { term: { k: 'p' } }, a: { term: { tag: 'a' } } } }, aggs: { v: { value_count: { field: 'n' } } } },
  s5: { range: { field: 'm', ranges: [{ to: 0 }, { from: 0 }] }, aggs: { pc: { percentiles: { field: 'x', percents: [50] } } } },
  s6: { global: {}, aggs: { t: { terms: { field: 'tag' } }, f: { min: { field: 'f' } } } },
  s7: { range: { field: 'n', ranges: [{ to: 3 }, { from: 3, to: 8 }], keyed: true }, aggs: { s: { sum: { field: 'x' } } } },
  s8: { terms: { field: 'n', size: 4 }, aggs: { t: { terms: { field: 'tag', size: 2 }, aggs: { a: { avg: { field: 'x' } } } } } },
  s9: { histogram: { field: 'm', interval: 100000 }, aggs: { t: { terms: { field: 'tag' } }, s: { sum: { field: 'n' } } } },
  s10: { histogram: { field: 'n', interval: 4, min_doc_count: 0 }, aggs: { c: { value_count: { field: 'tag' } } } },
  s11: { date_histogram: { field: 'at', calendar_interval: 'year' }, aggs: { x: { max: { field: 'x' } } } },
  s12: { histogram: { field: 'm', interval: 250000, keyed: true }, aggs: { k: { terms: { field: 'k' }, aggs: { s: { sum: { field: 'm' } } } } } },
};
const QUERIES: unknown[] = [
  undefined, { term: { k: 'p' } }, { range: { m: { gte: 0 } } }, { match: { body: 'alpha' } },
  // clauses on multi-valued fields: a document matches when any of its values does
  { term: { tag: 'a' } }, { bool: { filter: [{ range: { n: { gte: 3, lt: 9 } } }, { exists: { field: 'x' } }] } },
  { bool: { must: [{ match: { body: 'beta' } }], must_not: [{ terms: { tag: ['b', 'c'] } }] } }, { bool: { should: [{ term: { n: 4 } }, { range: { f: { lt: -1 } } }] } },
  { bool: { filter: [{ range: { at: { gte: '2017-01-01', lt: '2018-01-01' } } }, { prefix: { tag: 'd' } }] } },
];

const one = <T>(a: fc.Arbitrary<T>) => fc.oneof(a, fc.array(a, { maxLength: 4 }));
const dbl = fc.oneof(fc.integer({ min: -50, max: 50 }).map((i) => i / 4), fc.double({ min: -1e6, max: 1e6, noNaN: true }));
const doc = fc.record({
  tag: one(fc.constantFrom('a', 'b', 'c', 'd')), n: one(fc.integer({ min: -5, max: 12 })), x: one(dbl), f: one(dbl),
  k: fc.constantFrom('p', 'q'), m: dbl, body: fc.constantFrom('alpha', 'beta', 'alpha beta'), at: one(fc.integer({ min: 1.48e12, max: 1.53e12 })),
}, { requiredKeys: ['k', 'body'] });

type Json = any;

describe('ES aggregations over multi-valued fields as plans', () => {
  const server = suiteServer();
  let runs = 0;

  it('random documents with arrays: aggregations, queries on multi-valued fields, counts and sorted pages through plans equal the aggregation code and the scorer', async () => {
    await fc.assert(fc.asyncProperty(fc.array(doc, { minLength: 1, maxLength: 40 }), async (docs) => {
      const index = `mv${++runs}`;
      const c = await EsPlanCheck.fresh(server(), index, MAPPING, docs.map((d, i) => [`d${(i * 7919) % 1000}`, d]), AGGS);
      for (const query of QUERIES) {
        await c.planned(AGGS, query);
        await c.planned(SUBS, query);
        // `_count`: one plan, equal to the scorer's count; a page sorted by one-valued fields: two plans, the full search's hits
        if (query) await c.count(query);
        await c.page({ ...(query ? { query } : {}), sort: [{ m: 'desc' }, { k: 'asc' }], size: 5, from: 1 });
        // sorted by multi-valued fields: each document by its least value ascending, its greatest descending, or the mode's
        await c.page({ ...(query ? { query } : {}), sort: [{ tag: 'asc' }, { n: { order: 'desc', missing: '_first' } }, { x: { order: 'asc', mode: 'max' } }, { at: { order: 'desc', mode: 'min', missing: 0 } }], size: 7 });
        // search_after the last hit's sort values: the next page, as plans
        // (values a missing key prints, ±Long.MAX or ±Infinity, are left to the full search: missing values here)
        for (const sort of [[{ k: 'asc' }, { m: { order: 'desc', missing: 0 } }, '_doc'], [{ tag: { order: 'asc', missing: 'zz' } }, { n: { order: 'desc', missing: -100 } }, { _id: 'asc' }]]) {
          const first = await c.page({ ...(query ? { query } : {}), sort, size: 4 });
          const last = first.hits.hits[first.hits.hits.length - 1]?.sort;
          if (last) await c.page({ ...(query ? { query } : {}), sort, size: 4, search_after: last });
        }
        // sum / avg / median of a number field's values
        await c.page({ ...(query ? { query } : {}), sort: [{ x: { order: 'desc', mode: 'median' } }, { n: { order: 'asc', mode: 'median', missing: '_first' } }], size: 5 });
        await c.page({ ...(query ? { query } : {}), sort: [{ n: { order: 'desc', mode: 'sum' } }, { x: { order: 'asc', mode: 'avg', missing: '_first' } }, { f: { order: 'desc', mode: 'sum' } }], size: 6, from: 2 });
      }
    }), { numRuns: 10, ...(process.env.ES_MULTI_SEED ? { seed: Number(process.env.ES_MULTI_SEED), path: process.env.ES_MULTI_PATH, endOnFailure: true } : {}) });
  }, 300_000);

  it('known answers: a document counts once per distinct key, every value in the metrics; writes keep the counts', async () => {
    const c = await EsPlanCheck.fresh(server(), 'mvk', MAPPING, [
      ['1', { tag: ['a', 'b', 'a'], n: [1, 2, 3], k: 'p', m: 1, body: 'alpha' }],
      ['2', { tag: 'a', n: 10, k: 'q', m: 2, body: 'beta' }],
      ['3', { tag: [], n: [], k: 'p', m: 4, body: 'alpha' }],
    ], AGGS);
    const aggs = { t: { terms: { field: 'tag' }, aggs: { m: { sum: { field: 'm' } } } }, s: { stats: { field: 'n' } }, v: { value_count: { field: 'tag' } } };
    let r = await c.planned(aggs, undefined);
    expect(r.aggregations.t.buckets).toEqual([{ key: 'a', doc_count: 2, m: { value: 3 } }, { key: 'b', doc_count: 1, m: { value: 1 } }]);
    expect(r.aggregations.s).toEqual({ count: 4, min: 1, max: 10, avg: 4, sum: 16 });
    expect(r.aggregations.v.value).toBe(4);
    expect(r.hits.total.value).toBe(3);
    // an update to one value, a delete and a new array: the `_mv` counts follow this surface's own writes
    await c.es('PUT', '/mvk/_doc/1', { tag: 'b', n: 5, k: 'p', m: 1, body: 'alpha' });
    await c.es('DELETE', '/mvk/_doc/2');
    await c.es('PUT', '/mvk/_doc/4', { tag: ['c', 'c'], n: [7, 7], k: 'q', m: 8, body: 'beta' });
    r = await c.planned(aggs, undefined);
    expect(r.aggregations.t.buckets.map((b: Json) => [b.key, b.doc_count])).toEqual([['b', 1], ['c', 1]]);
    expect(r.aggregations.s).toEqual({ count: 3, min: 5, max: 7, avg: 19 / 3, sum: 19 });
    await c.es('DELETE', '/mvk/_doc/4');
    r = await c.planned(aggs, { match_all: {} });
    expect(r.aggregations.s.count).toBe(1);
  }, 60_000);

  it('typed_keys: plans name each aggregation by its result type at every depth, as the aggregation code does', async () => {
    const index = 'tk';
    const c = await EsPlanCheck.fresh(server(), index, MAPPING, fc.sample(doc, { numRuns: 30, seed: 7 }).map((d, i): [string, Record<string, unknown>] => [`t${i}`, d]), AGGS);
    const aggs = {
      ...AGGS,
      h: { histogram: { field: 'm', interval: 100000 }, aggs: { c: { cardinality: { field: 'k' } }, f: { filter: { term: { k: 'p' } } } } },
      fs: { filters: { filters: { p: { term: { k: 'p' } }, q: { term: { k: 'q' } } } }, aggs: { t: { terms: { field: 'k' }, aggs: { mx: { max: { field: 'm' } } } }, f: { filter: { term: { k: 'p' } }, aggs: { pc: { percentiles: { field: 'm' } } } } } },
      g: { global: {}, aggs: { r: { range: { field: 'm', ranges: [{ to: 0 }, { from: 0 }] } } } },
    };
    for (const query of [undefined, { term: { tag: 'a' } }]) {
      const r = await c.planned(aggs, query, undefined, 'typed_keys=true');
      expect(Object.keys(r.aggregations)).toEqual(expect.arrayContaining(['sterms#t', 'lterms#tn', 'dterms#tx', 'tdigest_percentiles#pc', 'histogram#h', 'filters#fs', 'global#g']));
      expect(Object.keys(r.aggregations['global#g'])).toContain('range#r');
    }
  }, 60_000);
});
