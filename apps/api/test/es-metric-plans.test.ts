/**
 * Metrics of double, float, scaled_float and date fields (and percentile_ranks) as plan nodes (libs/es-compat
 * plan-metrics.ts: sums as the executor's `kahan_sum(v, _seq_no)`, Elasticsearch's compensated sum
 * in index order), differentially: random documents (fast-check), and every answer through plans
 * equals the aggregation code's over the view (taken with a `post_filter`), bit for bit.
 */
import fc from 'fast-check';
import { EsPlanCheck, suiteServer } from './es-plan-check';

const MAPPING = {
  properties: {
    x: { type: 'double' }, f: { type: 'float' }, s: { type: 'scaled_float', scaling_factor: 100 }, w: { type: 'double' },
    n: { type: 'long' }, at: { type: 'date' }, tag: { type: 'keyword' }, body: { type: 'text' }, ok: { type: 'boolean' },
  },
};

const METRICS = {
  xs: { sum: { field: 'x' } }, xa: { avg: { field: 'x' } }, xst: { stats: { field: 'x' } }, xe: { extended_stats: { field: 'x', sigma: 1.5 } },
  fs: { sum: { field: 'f' } }, fst: { stats: { field: 'f' } }, fmin: { min: { field: 'f' } }, fc: { value_count: { field: 'f' } },
  ss: { extended_stats: { field: 's' } }, sa: { avg: { field: 's' } },
  as: { sum: { field: 'at' } }, aa: { avg: { field: 'at' } }, ast: { stats: { field: 'at' } },
  wa: { weighted_avg: { value: { field: 'x' }, weight: { field: 'w' } } }, wn: { weighted_avg: { value: { field: 'n' }, weight: { field: 'f' } } },
  wm2: { weighted_avg: { value: { field: 'x', missing: 1 }, weight: { field: 'w', missing: 0.5 } } }, wf: { weighted_avg: { value: { field: 's' }, weight: { field: 'f', missing: 2 }, format: '0.0' } },
  // `missing` (a document without a value counts it) and `format`
  xm: { avg: { field: 'x', missing: 2.5 } }, fm: { stats: { field: 'f', missing: -1 } }, wm: { sum: { field: 'w', missing: 3 } }, cm: { cardinality: { field: 'x', missing: 0 } },
  am: { max: { field: 'at', missing: '2030-01-01' } }, af: { min: { field: 'at', format: 'yyyy' } }, xf: { stats: { field: 'x', format: '0.00' } }, vm: { value_count: { field: 's', missing: 1 } },
  // percentiles and median_absolute_deviation: order statistics of the executor's sorted_values
  pc: { percentiles: { field: 'x' } }, ph: { percentiles: { field: 'f', hdr: { number_of_significant_value_digits: 2 }, keyed: false, percents: [10, 50] } },
  pd: { percentiles: { field: 'at', percents: [50, 99.9], format: 'yyyy-MM' } }, md: { median_absolute_deviation: { field: 'x' } }, mm: { median_absolute_deviation: { field: 's', missing: 3, compression: 50 } },
  // a boolean read as 1 / 0
  ok1: { stats: { field: 'ok' } }, ok2: { cardinality: { field: 'ok' } }, ok3: { value_count: { field: 'ok' } }, ok4: { percentiles: { field: 'ok', percents: [50] } },
  pr: { percentile_ranks: { field: 'x', values: [0, 1.5, -3, 0.1] } }, pn: { percentile_ranks: { field: 'n', values: [5], keyed: false } }, pa: { percentile_ranks: { field: 'at', values: [1e12], missing: '2001-09-09' } }, ph2: { percentile_ranks: { field: 'x', values: [1], hdr: { number_of_significant_value_digits: 2 }, missing: 1 } },
};
const BUCKETED = {
  t: { terms: { field: 'tag', order: { xs: 'desc' } }, aggs: { xs: { sum: { field: 'x' } }, fa: { avg: { field: 'f' } }, st: { stats: { field: 'at' } }, pc: { percentiles: { field: 'n', percents: [50] } }, md: { median_absolute_deviation: { field: 'x' } } } },
  hf: { histogram: { field: 'f', interval: 0.3, min_doc_count: 1 } }, rf: { range: { field: 's', ranges: [{ to: 0.1 }, { from: 0.1, to: 2.5 }] } },
  // terms of double, float and scaled_float fields (keys the rounded doc values)
  tx: { terms: { field: 'f', size: 3, order: { _key: 'desc' } }, aggs: { m: { max: { field: 'n' } } } }, ts: { terms: { field: 's', missing: 0.5, min_doc_count: 0 } }, rx: { rare_terms: { field: 'x' } },
  tb: { terms: { field: 'ok', order: { _key: 'asc' } }, aggs: { s: { sum: { field: 'x' } } } }, tb0: { terms: { field: 'ok', min_doc_count: 0 } },
  h: { histogram: { field: 'n', interval: 5 }, aggs: { pr: { percentile_ranks: { field: 'f', values: [0, 10] } }, xe: { extended_stats: { field: 'x' } }, wa: { weighted_avg: { value: { field: 'x' }, weight: { field: 'w' } } } } },
};
const ADJ = {
  adj: { adjacency_matrix: { filters: { b: { range: { n: { gte: 5 } } }, a: { term: { tag: 'a' } }, c: { match: { body: 'beta' } } } }, aggs: { s: { sum: { field: 'x' } } } },
  adj2: { adjacency_matrix: { separator: '+', filters: { x: { exists: { field: 'x' } }, ok: { term: { ok: true } } } } },
};
const QUERIES: unknown[] = [
  undefined, { range: { n: { gte: 3 } } }, { match: { body: 'alpha' } }, { bool: { filter: [{ term: { tag: 'a' } }] } },
  // term / terms on number and boolean fields (the values as the scorer coerces them: a float's rounded, '2.5' a number)
  { term: { n: 3 } }, { bool: { filter: [{ terms: { ok: [true, 'false'] } }, { term: { f: { value: 0.1, boost: 2 } } }] } }, { terms: { x: [0.1, -5, '2.5'] } },
  { bool: { must: [{ match: { body: 'beta' } }], must_not: [{ term: { ok: false } }, { terms: { s: [1.25, null] } }] } },
  // an integer field's term or bound with a fraction, as Elasticsearch compares it (2.5 matches no long; from 2.5 is from 3)
  { bool: { should: [{ term: { n: 2.5 } }, { range: { n: { gte: 2.5, lt: 7.5 } } }] } }, { terms: { n: [4, '4.0', 5.5] } },
  // a float's and a scaled_float's range (bounds rounded as the values are)
  { bool: { filter: [{ range: { f: { gte: 0.1, lt: '100' } } }, { range: { s: { gt: -1.005 } } }] } },
  // a date's term: its epoch ms (the first document's instant, so something matches)
  { bool: { must_not: [{ terms: { at: [0, '2030-01-01'] } }] } },
];

const num = fc.oneof(fc.integer({ min: -1000, max: 1000 }).map((i) => i / 10), fc.double({ min: -1e6, max: 1e6, noNaN: true }), fc.double({ min: -1, max: 1, noNaN: true }));
const doc = fc.record({
  x: num, f: num, s: num, w: fc.double({ min: 0, max: 100, noNaN: true }), n: fc.integer({ min: 0, max: 20 }),
  at: fc.integer({ min: 0, max: 2_000_000_000_000 }), ok: fc.boolean(), tag: fc.constantFrom('a', 'b', 'c'), body: fc.constantFrom('alpha', 'beta', 'alpha beta'),
}, { requiredKeys: ['tag', 'body', 'n'] });

describe('ES metrics of doubles, floats and dates as plans', () => {
  const server = suiteServer();
  let runs = 0;

  it('random documents: sums, averages, stats, extended_stats, weighted_avg, percentile_ranks, percentiles, median_absolute_deviation (with missing and format) through plans equal the aggregation code', async () => {
    await fc.assert(fc.asyncProperty(fc.array(doc, { minLength: 1, maxLength: 60 }), async (docs) => {
      // ids out of index order: the compensated sums still add in index order
      const c = await EsPlanCheck.fresh(server(), `m${++runs}`, MAPPING, docs.map((d, i) => [`d${(i * 7919) % 1000}`, d]), { ...METRICS, ...BUCKETED });
      const firstAt = docs.find((d) => d.at !== undefined)?.at ?? 0;
      for (const query of [...QUERIES, { term: { at: firstAt } }, { term: { at: new Date(firstAt).toISOString() } }]) {
        await c.aggs(METRICS, query, 1);
        // the metrics node, one grouped node per terms / rare_terms aggregation and the histogram's
        await c.aggs(BUCKETED, query, 9);
        if (query) await c.count(query);
        // adjacency_matrix: a conditional count per filter and pair in the level's node; its sub-aggregations a level per bucket (6)
        await c.aggs(ADJ, query, 7);
      }
    }), { numRuns: 12 });
  }, 300_000);

  it('aggregations beside a page of hits run as plans (post_filter narrows the hits only), equal to the full search', async () => {
    const c = await EsPlanCheck.fresh(server(), 'beside', MAPPING, fc.sample(doc, { numRuns: 80, seed: 5 }).map((d, i) => [`b${i}`, d]), METRICS);
    const bodies: Array<Record<string, unknown>> = [
      { size: 5, sort: [{ n: 'asc' }, { tag: 'desc' }], aggs: { ...METRICS, ...BUCKETED } },
      { query: { match: { body: 'alpha' } }, post_filter: { term: { tag: 'b' } }, aggs: BUCKETED, _source: ['n'] },
      { query: { bool: { filter: [{ range: { n: { gte: 4 } } }] } }, from: 3, size: 4, sort: ['_doc'], track_total_hits: true, aggregations: { xs: { sum: { field: 'x' } } } },
    ];
    for (const body of bodies) {
      const { r, ran } = await c.counted(body);
      expect(ran).toBeGreaterThan(0);
      // terminate_after changes which documents are read: the aggregation code over the view answers
      const ref = await c.es('POST', '/beside/_search', { ...body, terminate_after: 100000 });
      const ids = (x: { hits: { hits: Array<{ _id: string }> } }) => x.hits.hits.map((h) => h._id);
      expect([r.hits.total, ids(r), r.aggregations]).toEqual([ref.hits.total, ids(ref), ref.aggregations]);
    }
    // pages sorted by a float or scaled_float field (their rounded values) are sort plans
    await c.page({ sort: [{ f: { order: 'desc', missing: '_first' } }, { s: 'asc' }], size: 10, from: 2 });
    await c.page({ query: { range: { f: { lte: 50 } } }, sort: [{ s: 'desc' }], size: 7 });
  }, 60_000);

  it('ten 0.1 sum to 1.0 (compensated, as Elasticsearch), in index order whatever the ids', async () => {
    const c = await EsPlanCheck.fresh(server(), 'tenth', MAPPING, Array.from({ length: 10 }, (_, i): [string, Record<string, unknown>] => [`z${9 - i}`, { x: 0.1, tag: 'a', body: 'alpha', n: i, at: i * 86400_000 * 20 }]), { s: { sum: { field: 'x' } } });
    const r = await c.aggs({ s: { sum: { field: 'x' } }, a: { avg: { field: 'x' } }, st: { stats: { field: 'x' } } }, undefined, 1);
    expect([r.aggregations.s.value, r.aggregations.a.value, r.aggregations.st.sum]).toEqual([1, 0.1, 1]);
    // n is 0 … 9: a long's term 2.5 matches nothing, a range from 2.5 starts at 3 (as Elasticsearch), on both paths
    expect(await c.count({ term: { n: 2.5 } })).toBe(0);
    expect(await c.count({ range: { n: { gte: 2.5, lte: 7.5 } } })).toBe(5);
    expect(await c.count({ range: { n: { gt: '2', lt: -0.5 } } })).toBe(0);
    // a terms lookup: the values the looked-up document holds (a missing one: none), resolved for the plans as the scorer resolves them
    await c.es('PUT', '/tenth/_doc/list', { ns: [1, 3, 8, 12], tag: 'list', body: 'x' });
    await c.es('POST', '/tenth/_search', { size: 0, query: { range: { n: { gte: 0 } } }, aggs: { s: { sum: { field: 'x' } } } }); // the typed-column check at the new LSN
    expect(await c.count({ terms: { n: { index: 'tenth', id: 'list', path: 'ns' } } })).toBe(3);
    expect(await c.count({ bool: { filter: [{ terms: { n: { id: 'nothing', path: 'ns' } } }] } })).toBe(0);
    const agg = await c.aggs({ s: { sum: { field: 'x' } } }, { terms: { n: { index: 'tenth', id: 'list', path: 'ns' } } }, 1);
    expect(agg.aggregations.s.value).toBeCloseTo(0.3, 10);
    // a month's (a quarter's) compensated sums, percentiles and distinct counts: one group per month (calendar_floor), no days merged
    await c.aggs({ m: { date_histogram: { field: 'at', calendar_interval: 'month' }, aggs: { s: { sum: { field: 'x' } }, p: { percentiles: { field: 'x' } }, u: { cardinality: { field: 'n' } } } } }, undefined, 2);
    await c.aggs({ q: { date_histogram: { field: 'at', calendar_interval: 'quarter', time_zone: 'America/New_York', offset: '+2d' }, aggs: { s: { avg: { field: 'x' } } } } }, undefined, 2);
  }, 60_000);
});
