/**
 * ip_range as plans (libs/es-compat plan-buckets.ts `ipRanges`: an ip field's typed column holds
 * the 128-bit address as 32 hex digits, so ranges are string comparisons), differentially: random
 * IPv4 and IPv6 addresses and random ranges (from / to / CIDR masks / keys / keyed), at the top,
 * with sub-aggregations and under a terms aggregation; every answer through plans equals the
 * aggregation code's over the view (taken with a `post_filter`).
 */
import fc from 'fast-check';
import { EsPlanCheck, suiteServer } from './es-plan-check';

const MAPPING = { properties: { ip: { type: 'ip' }, tag: { type: 'keyword' }, n: { type: 'long' } } };

const v4 = fc.tuple(fc.constantFrom(10, 192, 255), fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 })).map((p) => p.join('.'));
const v6 = fc.tuple(fc.constantFrom('2001:db8', 'fe80', '::'), fc.integer({ min: 0, max: 0xffff })).map(([h, x]) => (h === '::' ? `::${x.toString(16)}` : `${h}::${x.toString(16)}`));
const addr = fc.oneof(v4, v6);
const range = fc.oneof(
  fc.record({ from: addr, to: addr, key: fc.constantFrom('k1', 'k2') }, { requiredKeys: [] }),
  fc.record({ mask: fc.oneof(fc.tuple(v4, fc.integer({ min: 0, max: 32 })).map(([a, b]) => `${a}/${b}`), fc.tuple(v6, fc.integer({ min: 0, max: 128 })).map(([a, b]) => `${a}/${b}`)) }),
);

describe('ES ip_range as plans', () => {
  const server = suiteServer();
  let runs = 0;

  it('random addresses and ranges: buckets through plans equal the aggregation code', async () => {
    await fc.assert(fc.asyncProperty(fc.array(fc.record({ ip: addr, tag: fc.constantFrom('a', 'b'), n: fc.integer({ min: 0, max: 9 }) }, { requiredKeys: ['tag', 'n'] }), { minLength: 1, maxLength: 40 }), fc.array(range, { minLength: 1, maxLength: 4 }), fc.boolean(), async (docs, ranges, keyed) => {
      const index = `ip${++runs}`;
      const aggs = {
        r: { ip_range: { field: 'ip', ranges, ...(keyed ? { keyed } : {}) } },
        s: { ip_range: { field: 'ip', ranges }, aggs: { t: { terms: { field: 'tag' } }, m: { max: { field: 'n' } } } },
        t: { terms: { field: 'tag' }, aggs: { r: { ip_range: { field: 'ip', ranges } } } },
      };
      const c = await EsPlanCheck.fresh(server(), index, MAPPING, docs.map((d, i): [string, Record<string, unknown>] => [`d${i}`, d]), aggs);
      for (const query of [undefined, { range: { n: { gte: 5 } } }]) await c.planned(aggs, query, ranges);
    }), { numRuns: 25 });
  }, 300_000);
});
