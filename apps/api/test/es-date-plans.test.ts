/**
 * Date fields through their typed column (epoch ms) in plans (libs/es-compat plan-buckets.ts
 * `timeSeries`, plan-dates.ts `timeKey`, plan-aggs.ts `filterClause`), over HTTPS against the
 * built server: date_histogram (calendar and fixed intervals, offset, format, extended_bounds,
 * keyed, order, min_doc_count; at the top and under terms) over dates of any mapped format,
 * date range filters (date math, format), exists / missing and pages sorted by a date. Each runs
 * as plans and answers as the aggregation code / scorer over the view (taken with a `post_filter`);
 * a user under a row-level policy sees only its rows through them.
 */
import { bootstrapEnv, TestServer, TOKEN } from './server';
import { EsPlanCheck } from './es-plan-check';
const AGGS = {
  month: { date_histogram: { field: 'at', calendar_interval: 'month' } },
  quarter: { date_histogram: { field: 'at', calendar_interval: '1q', min_doc_count: 1, keyed: true } },
  year: { date_histogram: { field: 'at', calendar_interval: 'year', offset: '+40d', format: 'yyyy-MM-dd' } },
  week: { date_histogram: { field: 'at', calendar_interval: 'week', order: { _count: 'desc' } } },
  day: { date_histogram: { field: 'at', calendar_interval: 'day', offset: '6h', min_doc_count: 2 } },
  fixed: { date_histogram: { field: 'at', fixed_interval: '10d', extended_bounds: { min: '2019-06-01T00:00:00Z', max: '2021-06-01T00:00:00Z' } } },
  hours: { date_histogram: { field: 'at', fixed_interval: '36h', offset: '-2h', order: { _key: 'desc' }, min_doc_count: 3 } },
  other: { date_histogram: { field: 'ts', calendar_interval: 'month' } },
  gone: { missing: { field: 'at' } },
  zday: { date_histogram: { field: 'at', calendar_interval: 'day', time_zone: '+05:30', min_doc_count: 1 } },
  zmonth: { date_histogram: { field: 'ts', calendar_interval: 'month', time_zone: '-08:00', extended_bounds: { min: '2019/01/01 00:00', max: '2021/12/31 00:00' } } },
  zfixed: { date_histogram: { field: 'at', fixed_interval: '12h', time_zone: '+01:00', offset: '1h', min_doc_count: 1 } },
  legacy: { date_histogram: { field: 'ts', interval: 'week', min_doc_count: 1 } }, legacy2: { date_histogram: { field: 'at', interval: '90m', min_doc_count: 1 } },
  dr: { date_range: { field: 'at', ranges: [{ to: '2020-01-01' }, { from: '2020-01-01', to: '2020-06-01||+1M' }, { from: 1600000000000, key: 'late' }] } },
  drk: { date_range: { field: 'ts', format: 'yyyy-MM', keyed: true, ranges: [{ from: '2019-12', to: '2020-07' }, { from: '2020-07' }] }, aggs: { q: { date_histogram: { field: 'at', calendar_interval: 'quarter' } } } },
  rd: { range: { field: 'at', ranges: [{ from: '2020-02-02T10:00:00Z', to: '2020-11-11' }] } },
  // metrics whose value does not depend on the order of the values, on dates and doubles: calls of the metrics node
  first: { min: { field: 'at' } }, last: { max: { field: 'ts' } }, nat: { value_count: { field: 'at' } }, uts: { cardinality: { field: 'ts' } },
  xmin: { min: { field: 'x' } }, xmax: { max: { field: 'x' } }, ux: { cardinality: { field: 'x' } },
};

const QUERIES: unknown[] = [
  undefined,
  { range: { at: { gte: '2020-03-01T00:00:00Z', lt: '2020-09-15T12:00:00Z' } } },
  { range: { at: { gt: '2020-01-01||+1M/d', lte: '2020-12-31||/M' } } },
  { bool: { filter: [{ range: { ts: { gte: '05/01/2020', format: 'MM/dd/yyyy' } } }, { exists: { field: 'at' } }] } },
  { bool: { must: [{ match: { body: 'alpha' } }], must_not: [{ range: { at: { lt: 1590000000000 } } }] } },
];

describe('ES dates as plans (typed date columns)', () => {
  let srv: TestServer;
  let c: EsPlanCheck;
  const es = (method: string, p: string, body?: unknown, token = TOKEN) => c.es(method, p, body, token);

  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
    c = new EsPlanCheck(srv, 'evts');
    // `at`: the default format (ISO strings and epoch millis); `ts`: a custom pattern, which the `_source` reading of dates did not take
    await es('PUT', '/evts', { mappings: { properties: { at: { type: 'date' }, ts: { type: 'date', format: 'yyyy/MM/dd HH:mm||epoch_millis' }, body: { type: 'text' }, tag: { type: 'keyword' }, n: { type: 'long' }, x: { type: 'double' }, tn: { type: 'date_nanos' } } } });
    const words = ['alpha', 'beta', 'gamma'];
    const t0 = Date.UTC(2019, 10, 3, 5, 17);
    const p2 = (n: number) => String(n).padStart(2, '0');
    const docs: Array<[string, Record<string, unknown>]> = [];
    for (let i = 0; i < 900; i++) {
      const t = t0 + i * 19 * 3600_000 + (i % 5) * 61_000;
      const iso = new Date(t).toISOString();
      const d = new Date(t + 3 * 86400_000);
      // `at`: epoch millis, ISO strings and dates (none in every 17th); `ts`: its pattern or epoch millis; ids h… hidden from the reader
      docs.push([i % 10 === 7 ? `h${i}` : `d${i}`, {
        ...(i % 17 ? { at: i % 3 === 0 ? t : i % 3 === 1 ? iso : iso.slice(0, 10) } : {}), body: `${words[i % 3]} ${words[(i * 7) % 3]}`, tag: `g${i % 4}`, n: (i * 13) % 50, x: ((i * 37) % 101) / 7, tn: new Date(t + 7 * 3600_000).toISOString(),
        ts: i % 2 ? `${d.getUTCFullYear()}/${p2(d.getUTCMonth() + 1)}/${p2(d.getUTCDate())} ${p2(d.getUTCHours())}:${p2(d.getUTCMinutes())}` : t + 3 * 86400_000,
      }]);
    }
    await c.bulk(docs);
  }, 60_000);
  afterAll(async () => {
    await srv.stop();
  });

  it('date histograms, date range filters, missing and date-sorted pages run as plans, equal to the code over the view', async () => {
    await es('POST', '/evts/_search', { size: 0, aggs: AGGS });
    for (const query of QUERIES) {
      // the metrics node (missing, the ranges), one grouped node per date histogram, and per bucket of drk a level (its node and its date histogram's)
      await c.aggs(AGGS, query, 18);
      if (query) expect(await c.count(query)).toBeGreaterThan(0);
      await c.page({ ...(query ? { query } : {}), sort: [{ at: { order: 'desc', missing: '_first' } }, { ts: { order: 'asc', missing: '2020/03/03 10:00', format: 'yyyy-MM-dd' } }], size: 12, from: 5 });
    }
    const all = (await es('POST', '/evts/_search', { size: 0, aggs: AGGS })).aggregations;
    expect(all.month.buckets[0].key_as_string).toBe('2019-11-01T00:00:00.000Z');
    expect(all.year.buckets[0].key_as_string).toBe('2019-02-10');
    expect(all.fixed.buckets[0].key).toBeLessThanOrEqual(Date.UTC(2019, 5, 1));
    expect(all.other.buckets.length).toBeGreaterThan(10);
    expect(all.dr.buckets.map((b: { doc_count: number }) => b.doc_count > 0)).toEqual([true, true, true]);
    expect(Object.keys(all.drk.buckets)).toEqual(['2019-12-2020-07', '2020-07-*']);
    expect(all.rd.buckets[0].doc_count).toBeGreaterThan(0);
    expect(all.first.value_as_string).toBe('2019-11-04T00:00:00.000Z'); // the third document's date-only value
    expect(all.xmax.value).toBe(100 / 7);
  }, 120_000);

  it('sub-aggregations of (date) histogram buckets (metrics, filter, range, missing) are calls of the grouped node, equal to the aggregation code', async () => {
    const subs = { first: { min: { field: 'at' } }, xmax: { max: { field: 'x' } }, avg: { avg: { field: 'n' } }, st: { stats: { field: 'n' } }, tags: { value_count: { field: 'tag' } }, a: { filter: { match: { body: 'alpha' } } }, r: { range: { field: 'n', ranges: [{ to: 10 }, { from: 10 }] } }, nots: { missing: { field: 'ts' } } };
    const aggs = {
      m: { date_histogram: { field: 'at', calendar_interval: 'month', extended_bounds: { min: '2019-06-01', max: '2021-09-01' } }, aggs: subs },
      w: { date_histogram: { field: 'at', fixed_interval: '7d', min_doc_count: 1, order: [{ 'st.max': 'asc' }, { _count: 'desc' }] }, aggs: { ...subs, u: { cardinality: { field: 'tag' } } } },
      h: { histogram: { field: 'n', interval: 7, offset: 2, order: { avg: 'desc' } }, aggs: { ...subs, u: { cardinality: { field: 'tag' } }, mx: { max: { field: 'n' } } } },
      f: { histogram: { field: 'x', interval: 3, format: '0.00', keyed: true } },
      // fractional intervals and offsets: the keys are the aggregation code's doubles
      fr: { histogram: { field: 'x', interval: 0.7, offset: 0.3, extended_bounds: { min: -1, max: 20 } }, aggs: { m: { max: { field: 'x' } } } },
      fn: { histogram: { field: 'n', interval: 2.5, min_doc_count: 1 } },
    };
    // the metrics node and one grouped node per histogram
    for (const query of [undefined, QUERIES[1], QUERIES[4]]) await c.aggs(aggs, query, 7);
    expect(Object.keys((await es('POST', '/evts/_search', { size: 0, aggs })).aggregations.f.buckets)[0]).toBe('0.00');
    // a named time zone's day and month (es-zone-plans.test.ts); a month's cardinality: the month key is calendar_floor's, so its distinct counts are one group's
    await c.aggs({ m: { date_histogram: { field: 'at', calendar_interval: 'day', time_zone: 'Europe/Paris', min_doc_count: 1 } } }, undefined, 2);
    await c.aggs({ m: { date_histogram: { field: 'at', calendar_interval: 'month', time_zone: 'Europe/Paris', min_doc_count: 1 } } }, undefined, 2);
    await c.aggs({ m: { date_histogram: { field: 'at', calendar_interval: 'month' }, aggs: { u: { cardinality: { field: 'tag' } } } } }, undefined, 2);
  }, 60_000);

  it('date_nanos fields (millisecond values) through their typed column too', async () => {
    const aggs = { d: { date_histogram: { field: 'tn', calendar_interval: 'week', min_doc_count: 1 } }, m: { min: { field: 'tn' } }, r: { date_range: { field: 'tn', ranges: [{ to: '2020-06-01' }, { from: '2020-06-01' }] } } };
    await es('POST', '/evts/_search', { size: 0, aggs });
    // the metrics node and the date histogram's
    for (const query of [undefined, { range: { tn: { gte: '2020-02-01', lt: '2020-08-01' } } }]) await c.aggs(aggs, query, 2);
    await c.page({ query: { range: { tn: { gte: '2020-02-01' } } }, sort: [{ tn: 'desc' }], size: 10 });
  }, 60_000);

  it('date histograms under terms run as grouped plans, equal to the aggregation code', async () => {
    const aggs = { t: { terms: { field: 'tag', size: 3 }, aggs: { r: { date_range: { field: 'at', keyed: true, ranges: [{ to: '2020-05-05' }, { from: '2020-05-05' }] } }, m: { date_histogram: { field: 'at', calendar_interval: 'quarter', extended_bounds: { min: '2019-01-01', max: '2022-01-01' } } }, d: { date_histogram: { field: 'ts', fixed_interval: '30d', offset: '1d' } } } } };
    for (const query of [undefined, QUERIES[1], QUERIES[4]]) await c.aggs(aggs, query, 4);
  }, 60_000);

  it('a user under a row-level policy reads only its rows through the date plans', async () => {
    const token = await c.reader('dreader');
    await es('POST', '/evts/_search', { size: 0, aggs: AGGS }, token); // the reader's view and typed-column check
    for (const query of [QUERIES[1], QUERIES[3]]) {
      await c.asReader(token, AGGS, query, 18);
      const page = await es('POST', '/evts/_search', { query, sort: [{ at: 'asc' }], size: 40 }, token);
      expect(page.hits.hits.length).toBeGreaterThan(0);
      expect(page.hits.hits.some((h: { _id: string }) => h._id.startsWith('h'))).toBe(false);
    }
  }, 60_000);
});
