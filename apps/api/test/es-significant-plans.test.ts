/**
 * significant_terms as plans (libs/es-compat plan-significant.ts: the subset's and the index's
 * counts per key read by grouped nodes, scored by the aggregation code's own heuristics),
 * differentially: random documents (fast-check), keyword and long fields, every heuristic and
 * its options, random min_doc_count and size; every answer through plans equals the aggregation
 * code's over the view (taken with a `post_filter`).
 */
import fc from 'fast-check';
import { EsPlanCheck, suiteServer } from './es-plan-check';

const MAPPING = { properties: { tag: { type: 'keyword' }, n: { type: 'long' }, g: { type: 'keyword' } } };
const HEURISTICS: Array<Record<string, unknown>> = [
  {}, { jlh: {} }, { mutual_information: { include_negatives: true } }, { mutual_information: { background_is_superset: false } },
  { chi_square: {} }, { chi_square: { include_negatives: true, background_is_superset: false } }, { gnd: {} }, { gnd: { background_is_superset: false } }, { percentage: {} },
];

describe('ES significant_terms as plans', () => {
  const server = suiteServer();
  let runs = 0;

  it('random documents, heuristics and thresholds: buckets through plans equal the aggregation code', async () => {
    const doc = fc.record({ tag: fc.constantFrom('a', 'b', 'c', 'd', 'e'), n: fc.integer({ min: 0, max: 6 }), g: fc.constantFrom('x', 'y') }, { requiredKeys: ['g'] });
    await fc.assert(fc.asyncProperty(fc.array(doc, { minLength: 1, maxLength: 60 }), fc.constantFrom(...HEURISTICS), fc.integer({ min: 0, max: 4 }), fc.integer({ min: 1, max: 5 }), async (docs, h, minDoc, size) => {
      const index = `sg${++runs}`;
      const aggs = {
        s: { significant_terms: { field: 'tag', min_doc_count: minDoc, size, ...h } },
        n: { significant_terms: { field: 'n', ...h } },
        bf: { significant_terms: { field: 'tag', min_doc_count: 1, background_filter: { bool: { filter: [{ range: { n: { lte: 4 } } }] } }, ...h } },
        ie: { significant_terms: { field: 'tag', min_doc_count: 1, include: ['a', 'b', 'c'], exclude: ['b'], ...h } }, ni: { significant_terms: { field: 'n', min_doc_count: 1, exclude: [0, 1], ...h } },
        // sub-aggregations of each shown bucket: a level of plans over its key's rows
        sub: { significant_terms: { field: 'tag', min_doc_count: 1, ...h }, aggs: { g: { terms: { field: 'g' } }, m: { avg: { field: 'n' } } } },
      };
      const c = await EsPlanCheck.fresh(server(), index, MAPPING, docs.map((d, i): [string, Record<string, unknown>] => [`d${i}`, d]), aggs);
      for (const query of [{ term: { g: 'x' } }, { bool: { filter: [{ range: { n: { gte: 3 } } }] } }, undefined]) await c.planned(aggs, query, h);
    }), { numRuns: 30 });
  }, 300_000);
});
