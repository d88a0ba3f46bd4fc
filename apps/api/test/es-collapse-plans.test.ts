/**
 * Field collapsing of a sorted page as plans (libs/es-compat plan-sort.ts: `row_number()` per
 * collapse value in the sort's order, the first of each kept), differentially: random documents
 * (fast-check) and random sorts, collapsed on keyword, long, double and date fields; each page
 * (hits, sort values, the collapse field's value, the uncollapsed total) equals the full search's
 * over the view (taken with a `post_filter`).
 */
import fc from 'fast-check';
import { EsPlanCheck, suiteServer } from './es-plan-check';

const MAPPING = { properties: { tag: { type: 'keyword' }, n: { type: 'long' }, x: { type: 'double' }, at: { type: 'date' } } };

const doc = fc.record({
  tag: fc.constantFrom('a', 'b', 'c'), n: fc.integer({ min: 0, max: 5 }), x: fc.integer({ min: -3, max: 3 }).map((i) => i / 2), at: fc.constantFrom(0, 86_400_000, 2 * 86_400_000),
}, { requiredKeys: [] });
const sortOf = fc.shuffledSubarray(['tag', 'n', 'x', 'at', '_doc'], { minLength: 1, maxLength: 3 }).chain((fs) => fc.tuple(...fs.map((f) => fc.record({ f: fc.constant(f), order: fc.constantFrom('asc', 'desc'), missing: fc.constantFrom('_last', '_first') }))));

describe('ES collapse as plans', () => {
  const server = suiteServer();
  let runs = 0;

  it('random documents and sorts: a collapsed page through plans equals the full search', async () => {
    await fc.assert(fc.asyncProperty(fc.array(doc, { minLength: 1, maxLength: 40 }), sortOf, fc.constantFrom('tag', 'n', 'x', 'at'), fc.integer({ min: 0, max: 3 }), fc.integer({ min: 1, max: 5 }), async (docs, sorts, field, from, size) => {
      const index = `co${++runs}`;
      const c = await EsPlanCheck.fresh(server(), index, MAPPING, docs.map((d, i): [string, Record<string, unknown>] => [`d${i}`, d]), { m: { max: { field: 'n' } } });
      const sort = sorts.map((s) => (s.f === '_doc' ? { _doc: s.order } : { [s.f]: { order: s.order, missing: s.missing } }));
      const r = await c.page({ sort, collapse: { field }, from, size });
      const viewed = await c.es('POST', `/${index}/_search`, { sort, collapse: { field }, from, size, post_filter: { match_all: {} } });
      expect(r.hits.hits.map((h: { fields: unknown }) => h.fields)).toEqual(viewed.hits.hits.map((h: { fields: unknown }) => h.fields));
      await c.page({ query: { range: { n: { gte: 2 } } }, sort, collapse: { field }, size });
    }), { numRuns: 30 });
  }, 300_000);
});
