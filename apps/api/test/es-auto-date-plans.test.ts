/**
 * auto_date_histogram as plans (libs/es-compat plan-auto-date.ts: the values' bounds, the rounding
 * the aggregation code takes, then one grouped node over `calendar_floor`), differentially: random
 * dates spanning seconds to centuries (fast-check), random `buckets`, `minimum_interval`,
 * `time_zone` and `format`, at the top and under a terms aggregation; every answer through plans
 * equals the aggregation code's over the view (taken with a `post_filter`).
 */
import fc from 'fast-check';
import { EsPlanCheck, suiteServer } from './es-plan-check';

const MAPPING = { properties: { at: { type: 'date' }, ts: { type: 'date', format: 'epoch_millis' }, tag: { type: 'keyword' } } };
const SPANS = [60_000, 3_600_000 * 30, 86_400_000 * 400, 86_400_000 * 365 * 300];
const T0 = Date.UTC(2001, 2, 25, 0, 59, 58);

const auto = fc.record({
  field: fc.constantFrom('at', 'ts'), buckets: fc.integer({ min: 1, max: 12 }),
  minimum_interval: fc.constantFrom('second', 'minute', 'hour', 'day', 'month', 'year'),
  time_zone: fc.constantFrom('UTC', '+05:30', 'Europe/Paris', 'America/Santiago'), format: fc.constantFrom('yyyy-MM-dd', 'epoch_millis'),
}, { requiredKeys: ['field'] });

type Json = any;

describe('ES auto_date_histogram as plans', () => {
  const server = suiteServer();
  let runs = 0;

  it('random dates and parameters: the buckets and interval through plans equal the aggregation code', async () => {
    await fc.assert(fc.asyncProperty(fc.constantFrom(...SPANS).chain((span) => fc.array(fc.record({ at: fc.integer({ min: T0, max: T0 + span }), ts: fc.integer({ min: T0 - span, max: T0 }), tag: fc.constantFrom('a', 'b') }, { requiredKeys: ['tag'] }), { minLength: 1, maxLength: 40 })), fc.array(auto, { minLength: 1, maxLength: 3 }), async (docs, specs) => {
      const index = `ad${++runs}`;
      const aggs: Record<string, unknown> = {};
      specs.forEach((p, i) => { aggs[`a${i}`] = { auto_date_histogram: p }; });
      aggs.t = { terms: { field: 'tag' }, aggs: { h: { auto_date_histogram: specs[0] } } };
      // sub-aggregations of each bucket: a level of plans over its keys' rows
      aggs.s = { auto_date_histogram: specs[specs.length - 1], aggs: { t: { terms: { field: 'tag' } }, m: { max: { field: 'at' } }, c: { value_count: { field: 'ts' } } } };
      const c = await EsPlanCheck.fresh(server(), index, MAPPING, docs.map((d, i): [string, Record<string, unknown>] => [`d${i}`, d]), aggs);
      for (const query of [undefined, { term: { tag: 'a' } }]) await c.planned(aggs, query, specs);
    }), { numRuns: 25 });
  }, 300_000);

  it('no values: no buckets and the first interval; a bad parameter answers the aggregation code\'s error', async () => {
    const c = await EsPlanCheck.fresh(server(), 'ad0', MAPPING, [['1', { tag: 'a' }]], { a: { max: { field: 'at' } } });
    const { r, ran } = await c.counted({ size: 0, aggs: { h: { auto_date_histogram: { field: 'at', minimum_interval: 'hour' } } } });
    expect(ran).toBeGreaterThan(0);
    expect(r.aggregations.h).toEqual({ buckets: [], interval: '1h' });
    // a day of 23 hours in a zone (Paris, 2001-03-25): the keys step from local midnight to local midnight (both paths used to miss the second day)
    await c.bulk([['2', { tag: 'a', at: 985481998000 }], ['3', { tag: 'b', at: 985557600000 }]]);
    const dst = await c.planned({ h: { auto_date_histogram: { field: 'at', buckets: 1, time_zone: 'Europe/Paris' } }, d: { auto_date_histogram: { field: 'at', buckets: 3, time_zone: 'Europe/Paris' } } }, undefined);
    expect(dst.aggregations.h).toEqual({ buckets: [{ key_as_string: '2001-03-25T00:00:00.000+01:00', key: 985474800000, doc_count: 2 }], interval: '7d' });
    expect(dst.aggregations.d.buckets.map((b: Json) => b.doc_count)).toEqual([1, 1]);
    const bad = await c.es('POST', '/ad0/_search', { size: 0, aggs: { h: { auto_date_histogram: { field: 'at', buckets: 0 } } } }).catch((e: Error) => e.message);
    expect(String(bad as Json)).toMatch(/400.*\[buckets\] must be greater than or equal to 1/);
  }, 60_000);
});
