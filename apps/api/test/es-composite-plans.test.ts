/**
 * The `composite` aggregation as one plan per page (libs/es-compat plan-composite.ts) and
 * `rare_terms` as a grouped plan (plan-terms.ts `rareSpec`), differentially: random documents
 * (fast-check), every page of a composite walk with `after_key` and every rare_terms answer equal
 * to the aggregation code's over the view (taken with a `post_filter`).
 */
import fc from 'fast-check';
import { EsPlanCheck, suiteServer } from './es-plan-check';

const MAPPING = { properties: { tag: { type: 'keyword' }, n: { type: 'long' }, x: { type: 'double' }, at: { type: 'date' }, body: { type: 'text' } } };
const SOURCES: unknown[][] = [
  [{ t: { terms: { field: 'tag' } } }],
  [{ x: { terms: { field: 'x', order: 'desc' } } }, { t: { terms: { field: 'tag' } } }],
  [{ t: { terms: { field: 'tag', order: 'desc', missing_bucket: true } } }, { n: { terms: { field: 'n' } } }],
  [{ h: { histogram: { field: 'x', interval: 2.5, missing_bucket: true } } }, { t: { terms: { field: 'tag', missing_bucket: true } } }],
  [{ d: { date_histogram: { field: 'at', calendar_interval: 'day', format: 'yyyy-MM-dd' } } }, { n: { histogram: { field: 'n', interval: 3, order: 'desc' } } }],
  [{ d: { date_histogram: { field: 'at', fixed_interval: '6h', missing_bucket: true, order: 'desc' } } }],
  [{ d: { date_histogram: { field: 'at', calendar_interval: 'day', time_zone: 'America/New_York' } } }, { z: { date_histogram: { field: 'at', fixed_interval: '1h', time_zone: 'Asia/Kolkata', order: 'desc' } } }],
];
const SUBS = { s: { sum: { field: 'x' } }, m: { max: { field: 'n' } }, f: { filter: { match: { body: 'alpha' } } } };

const doc = fc.record({
  tag: fc.constantFrom('a', 'b', 'C', 'é', 'b2'), n: fc.integer({ min: -5, max: 12 }), x: fc.double({ min: -20, max: 20, noNaN: true }),
  at: fc.integer({ min: 1_600_000_000_000, max: 1_600_500_000_000 }), body: fc.constantFrom('alpha', 'beta'),
}, { requiredKeys: ['body'] });

describe('ES composite and rare_terms aggregations as plans', () => {
  const server = suiteServer();
  let runs = 0;

  it('random documents: every page of a walk by after_key equals the aggregation code', async () => {
    await fc.assert(fc.asyncProperty(fc.array(doc, { minLength: 1, maxLength: 50 }), fc.integer({ min: 1, max: 7 }), async (docs, size) => {
      const c = await EsPlanCheck.fresh(server(), `c${++runs}`, MAPPING, docs.map((d, i) => [`d${i}`, d]), { c: { composite: { sources: SOURCES[0] } } });
      for (const sources of SOURCES) {
        for (const query of [undefined, { match: { body: 'beta' } }]) {
          let after: unknown;
          for (let page = 0; page < 40; page++) {
            // the level's node (the total) and the page's
            const r = await c.aggs({ c: { composite: { sources, size, ...(after ? { after } : {}) }, aggs: SUBS } }, query, 2);
            after = r.aggregations.c.after_key;
            if (!after) break;
          }
        }
      }
    }), { numRuns: 8 });
  }, 300_000);

  it('random documents: rare_terms (max_doc_count, include / exclude, missing, metric subs) equals the aggregation code', async () => {
    const rare = {
      r1: { rare_terms: { field: 'tag' } },
      r2: { rare_terms: { field: 'n', max_doc_count: 2 }, aggs: { s: { sum: { field: 'x' } }, st: { stats: { field: 'at' } } } },
      r3: { rare_terms: { field: 'tag', max_doc_count: 3, exclude: ['a'], missing: 'none' } },
      r4: { rare_terms: { field: 'tag', include: 'b.*|C' } },
    };
    await fc.assert(fc.asyncProperty(fc.array(doc, { minLength: 1, maxLength: 40 }), async (docs) => {
      const c = await EsPlanCheck.fresh(server(), `r${++runs}`, MAPPING, docs.map((d, i) => [`d${i}`, d]), rare);
      // the level's node and one grouped node per rare_terms
      for (const query of [undefined, { match: { body: 'beta' } }]) await c.aggs(rare, query, 5);
    }), { numRuns: 10 });
  }, 300_000);
});
