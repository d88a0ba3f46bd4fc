import { Doc, type IndexView } from './doc';
import { flatten, type JsonObject } from './mapping';
import { readBackend } from './testing/read-backend';
import type { IndexRef } from './indices';
import { topK } from './topk';

const MAPPINGS: JsonObject = { properties: { body: { type: 'text' }, tag: { type: 'keyword' }, n: { type: 'long' }, eng: { type: 'text', analyzer: 'english' } } };

function setup(sources: JsonObject[]) {
  const ix: IndexView = { name: 'docs', uuid: 'u', fields: flatten(MAPPINGS), settings: {}, mappings: MAPPINGS, docs: [], stats: new Map() };
  (ix as { docs: Doc[] }).docs = sources.map((s, i) => new Doc({ _id: `d${i}`, _source: s, _version: 1, _seq_no: i, _primary_term: 1, _routing: null }, ix));
  const ref: IndexRef = {
    meta: { es_index: 'docs', uuid: 'u', created: 0, settings: {}, mappings: MAPPINGS, aliases: {}, text: { body: 't0_body', eng: 't1_eng' } },
    table: { id: 'es.i_docs', columns: [], primaryKey: ['_id'], fulltext: ['t0_body', 't1_eng'], fulltextAllWords: ['t0_body', 't1_eng'] },
  };
  const plans: JsonObject[] = [];
  // answers an fts_search as a node would: the rows holding a term, by score (here: fewer words first)
  const backend = readBackend(async (plan) => {
    plans.push(plan as unknown as JsonObject);
    const node = (plan as unknown as { input: { query: { terms: string[] }; limit: number } }).input;
    return ix.docs
      .filter((d) => node.query.terms.some((t) => String(d.source.body).split(' ').includes(t)))
      .map((d) => ({ ...d.row, _source: JSON.stringify(d.source), _score: 1 / String(d.source.body).split(' ').length }))
      .sort((a, b) => b._score - a._score)
      .slice(0, node.limit);
  });
  return { ix, ref, backend, plans };
}

describe('top-k plan of a match page', () => {
  const docs = [{ body: 'red fox', tag: 'a', n: 1 }, { body: 'red red fox jumps', tag: 'b', n: 5 }, { body: 'blue fox', tag: 'a', n: 9 }, { body: 'green', tag: 'c', n: 2 }];

  it('compiles to fts_search with from+size bounding k and the filters pushed into the node', async () => {
    const { ix, ref, backend, plans } = setup(docs);
    const r = await topK(backend, ref, ix, { size: 2, query: { bool: { must: [{ match: { body: 'red fox' } }], filter: [{ term: { tag: 'a' } }, { range: { n: { lt: 5 } } }] } } });
    expect(plans[0]).toMatchObject({ op: 'project', input: { op: 'fts_search', schema: 'es.i_docs', field: 't0_body', query: { terms: ['red', 'fox'], operator: 'or' }, limit: 12 } });
    const filter = JSON.stringify((plans[0].input as JsonObject).filter);
    expect(filter).toContain('"json_extract"');
    expect(filter).toContain('"$.tag"');
    expect(filter).toContain('"$.n"');
    // the fake node does not apply the filter: the clauses decide on the rows it returned
    expect(r!.docs.map((d) => d.id)).toEqual(['d0']);
    expect(r!.total).toBe(1);
  });

  it('scores with Elasticsearch’s formula and counts the total', async () => {
    const { ix, ref, backend } = setup(docs);
    const r = await topK(backend, ref, ix, { query: { match: { body: 'fox' } } });
    expect(r!.docs.map((d) => d.id)).toEqual(['d0', 'd2', 'd1']);
    expect(r!.total).toBe(3);
  });

  it('leaves every other shape to full scoring', async () => {
    const { ix, ref, backend, plans } = setup(docs);
    for (const body of [
      { query: { match: { body: 'fox' } }, sort: ['n'] },
      { query: { match: { body: 'fox' } }, aggs: { t: { terms: { field: 'tag' } } } },
      { query: { match: { eng: 'fox' } } },
      { query: { match: { body: { query: 'fox', fuzziness: 1 } } } },
      { query: { match: { body: 'fox fox' } } },
      { query: { bool: { should: [{ match: { body: 'fox' } }, { match_phrase: { body: 'red fox' } }] } } },
      { query: { match: { body: 'fox' } }, size: 0 },
    ] as JsonObject[]) expect(await topK(backend, ref, ix, body)).toBeNull();
    expect(plans).toEqual([]);
    expect(await topK(backend, { ...ref, readOnly: true }, ix, { query: { match: { body: 'fox' } } })).toBeNull();
  });

  it('leaves a field to full scoring when the fts lib would split or fold its tokens differently', async () => {
    for (const odd of ['u.s.a fox', 'snake_case fox', 'café fox']) {
      const { ix, ref, backend, plans } = setup([...docs, { body: odd, tag: 'a', n: 3 }]);
      expect(await topK(backend, ref, ix, { query: { match: { body: 'fox' } } })).toBeNull();
      expect(plans).toEqual([]);
    }
    const { ix, ref, backend } = setup([...docs, { body: "don't fox", tag: 'a', n: 3 }]);
    expect(await topK(backend, ref, ix, { query: { match: { body: 'fox' } } })).not.toBeNull();
  });
});
