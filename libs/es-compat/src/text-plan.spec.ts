import { Doc, type IndexView } from './doc';
import { flatten, type JsonObject } from './mapping';
import type { IndexRef } from './indices';
import type { Kind } from './plan-aggs';
import { matchInput } from './text-plan';

const MAPPINGS: JsonObject = { properties: { title: { type: 'text' }, body: { type: 'text' }, tag: { type: 'keyword' }, n: { type: 'long' }, eng: { type: 'text', analyzer: 'english' }, ws: { type: 'text', analyzer: 'whitespace' }, sim: { type: 'text', analyzer: 'simple' } } };

function setup(sources: JsonObject[]) {
  const ix: IndexView = { name: 'docs', uuid: 'u', fields: flatten(MAPPINGS), settings: {}, mappings: MAPPINGS, docs: [], stats: new Map() };
  // the typed columns of the keyword and number fields (read by plans where the index has them)
  Object.assign(ix, { columns: { tag: 'v_tag', n: 'v_n' } });
  (ix as { docs: Doc[] }).docs = sources.map((s, i) => new Doc({ _id: `d${i}`, _source: s, _version: 1, _seq_no: i, _primary_term: 1, _routing: null }, ix));
  const cols = ['_id', '_source', '_version', '_seq_no', '_primary_term', '_routing', 't0_title', 't1_body', 't2_eng', 't3_ws', 't4_sim'].map((name) => ({ name, ty: 'str' }));
  const ref: IndexRef = {
    meta: { es_index: 'docs', uuid: 'u', created: 0, settings: {}, mappings: MAPPINGS, aliases: {}, text: { title: 't0_title', body: 't1_body', eng: 't2_eng', ws: 't3_ws', sim: 't4_sim' } },
    table: { id: 'es.i_docs', columns: cols, primaryKey: ['_id'], fulltext: ['t0_title', 't1_body', 't2_eng', 't3_ws', 't4_sim'], fulltextAllWords: ['t0_title', 't1_body', 't2_eng', 't3_ws', 't4_sim'] },
  };
  return { ix, ref };
}

const DOCS = [{ title: 'red fox', body: 'the quick brown fox', tag: 'a', n: 1 }, { title: 'blue', body: 'lazy dog sleeps', tag: 'b', n: 5 }];
/** The plan's node kinds, depth first. */
const ops = (n: unknown): string[] => {
  if (!n || typeof n !== 'object') return [];
  const o = n as Record<string, unknown>;
  return [...(typeof o.op === 'string' ? [o.op] : []), ...['input', 'left', 'right'].flatMap((k) => ops(o[k]))];
};

describe('text queries as plan inputs', () => {
  const { ix, ref } = setup(DOCS);
  const plan = (q: unknown, fields = new Map<string, Kind>()) => matchInput(ref, ix, q, fields) as unknown as JsonObject | null;

  it('merges clauses of one column into one structured fts query', () => {
    const p = plan({ bool: { must: { match: { body: 'quick fox' } }, should: [{ match_phrase: { body: 'brown fox' } }], must_not: { match: { body: 'dog' } }, minimum_should_match: 1 } });
    expect(p).toMatchObject({ op: 'fts_search', field: 't1_body', limit: null });
    expect(p!.query).toEqual({ bool: { must: [{ bool: { must: [{ terms: ['quick', 'fox'], operator: 'or' }, { phrase: 'brown fox' }], minimum_should_match: 0 } }], must_not: [{ terms: ['dog'], operator: 'or' }], minimum_should_match: 0 } });
    expect((plan({ match: { body: { query: 'quick brown fox dog', minimum_should_match: '75%' } } }) as JsonObject).query)
      .toEqual({ bool: { should: [{ terms: ['quick'] }, { terms: ['brown'] }, { terms: ['fox'] }, { terms: ['dog'] }], minimum_should_match: 3 } });
  });

  it('joins sets of several columns on _id: semi for must, anti for must_not, union for should', () => {
    expect(ops(plan({ bool: { must: [{ match: { title: 'fox' } }, { match: { body: 'dog' } }] } }))).toEqual(['join', 'fts_search', 'project', 'fts_search']);
    expect(ops(plan({ bool: { must: { match: { title: 'fox' } }, must_not: { match: { body: 'dog' } } } }))).toEqual(['join', 'fts_search', 'project', 'fts_search']);
    expect(plan({ bool: { must: { match: { title: 'fox' } }, must_not: { match: { body: 'dog' } } } })).toMatchObject({ kind: 'anti', strategy: 'hash' });
    expect(ops(plan({ multi_match: { query: 'fox', fields: ['title', 'body'] } }))).toEqual(['set_op', 'project', 'fts_search', 'project', 'fts_search']);
    // query_string: boosted fields and the default `*` (text and keyword fields) are expanded to the index's fields
    expect(ops(plan({ query_string: { query: 'fox', fields: ['title^2', 'body'] } }))).toEqual(['set_op', 'project', 'fts_search', 'project', 'fts_search']);
    expect(ops(plan({ query_string: { query: 'fox', fields: ['t*'] } }))).toEqual(['set_op', 'project', 'fts_search', 'project', 'filter', 'scan']);
    expect(plan({ query_string: { query: 'fox' } })).toBeNull(); // `*` holds the english-analyzed field
    // k of several columns: each document's matched clauses counted over a union all of ids
    expect(ops(plan({ bool: { should: [{ match: { title: 'fox' } }, { match: { body: 'dog' } }, { term: { tag: 'a' } }], minimum_should_match: 2 } })))
      .toEqual(['join', 'set_op', 'set_op', 'project', 'fts_search', 'project', 'fts_search', 'project', 'filter', 'scan', 'filter', 'aggregate', 'set_op', 'set_op', 'project', 'fts_search', 'project', 'fts_search', 'project', 'filter', 'scan']);
  });

  it('reads exact clauses as predicates and records their fields for the plain-value check', () => {
    const fields = new Map<string, Kind>();
    // a range of strings from the syntax: the scorer's bounds (`rangeBounds`: the numbers 1 and 3) over the column
    expect(plan({ query_string: { query: 'tag:a OR n:[1 TO 3]' } }, fields)).toMatchObject({ op: 'filter', predicate: { op: 'or', right: { right: { op: '<=', right: { value: 3 } } } } });
    const p = plan({ bool: { must: [{ match: { body: 'fox' } }, { match: { tag: 'a' } }], must_not: [{ range: { n: { gte: 3 } } }] } }, fields);
    expect(ops(p)).toEqual(['filter', 'fts_search']);
    expect(plan({ bool: { filter: [{ prefix: { body: 'qu' } }, { exists: { field: 'n' } }, { prefix: { tag: 'a' } }] } }, fields)).toMatchObject({ op: 'filter', input: { op: 'fts_search', query: { terms: ['quick'], operator: 'or' } } });
    expect([...fields.keys()].sort()).toEqual(['n', 'tag']);
  });

  it('answers null where the fts lib would not list exactly the matches', () => {
    const nulls: unknown[] = [
      { match: { eng: 'running' } }, // another analyzer
      { match_phrase: { body: { query: 'quick brown fox', slop: 1 } } }, // a sloppy phrase of 3 words
      { match: { body: 'café' } }, // a term the fts lib tokenizes otherwise
      { regexp: { body: '(' } }, // an invalid regex: the scorer reports it
      { wildcard: { n: '1*' } }, // not a text or keyword field: the scorer's error
      { function_score: { query: { match: { body: 'fox' } }, min_score: 1 } }, // scores decide the matches
      { function_score: { query: { match: { body: 'fox' } }, field_value_factor: { field: 'n' } } }, // fails on a document without n
      { intervals: { body: { match: { query: 'quick fox', ordered: true } } } }, // in order, any gap: no fts form
      { intervals: { body: { match: { query: 'fox', filter: { before: { match: { query: 'dog' } } } } } } },
    ];
    for (const q of nulls) expect([q, plan(q)]).toEqual([q, null]);
    expect(matchInput({ ...ref, readOnly: true }, ix, { match: { body: 'fox' } }, new Map())).toBeNull();
    // a phrase over a field holding arrays: our column joins the values, Elasticsearch leaves a gap
    const multi = setup([...DOCS, { title: ['red', 'fox'], body: 'x' }]);
    expect(matchInput(multi.ref, multi.ix, { match_phrase: { title: 'red fox' } }, new Map())).toBeNull();
    expect(matchInput(multi.ref, multi.ix, { match_phrase: { body: 'brown fox' } }, new Map())).not.toBeNull();
  });

  it('expands pattern, fuzzy and prefix clauses to the index\'s terms (text) or values (keyword)', () => {
    const q = (x: unknown) => (plan(x) as JsonObject | null)?.query;
    expect(q({ wildcard: { body: 'qu*k' } })).toEqual({ terms: ['quick'], operator: 'or' });
    expect(q({ regexp: { body: '(do|fo)[gx]' } })).toEqual({ terms: ['dog', 'fox'], operator: 'or' });
    expect(q({ fuzzy: { body: 'slepes' } })).toEqual({ terms: ['sleeps'], operator: 'or' });
    expect(plan({ prefix: { body: 'Qu' } })).toMatchObject({ op: 'filter', input: { op: 'scan' } }); // not analyzed: no lower-case term has it
    expect(plan({ wildcard: { tag: '[ab]' } })).toMatchObject({ op: 'filter', input: { op: 'scan' } }); // no value: none
    expect(plan({ wildcard: { tag: '?' } })).toMatchObject({ op: 'filter', predicate: { kind: 'in_list', list: [{ value: 'a' }, { value: 'b' }] } });
    expect(q({ match: { body: { query: 'fax dgo', fuzziness: 1, operator: 'and' } } })).toEqual({ bool: { must: [{ terms: ['fox'], operator: 'or' }, { terms: ['dog'], operator: 'or' }], minimum_should_match: 0 } });
    expect(q({ match_bool_prefix: { body: 'brown qu' } })).toEqual({ bool: { should: [{ terms: ['brown'] }, { terms: ['quick'], operator: 'or' }], minimum_should_match: 1 } });
    expect(q({ match_phrase_prefix: { body: 'quick br' } })).toEqual({ bool: { should: [{ phrase: 'quick brown' }], minimum_should_match: 1 } });
    expect(q({ match_phrase_prefix: { body: { query: 'quick b', max_expansions: 0 } } })).toEqual({ phrase: 'quick b' }); // the scorer: no expansion
    expect(ops(plan({ multi_match: { query: 'fox red', fields: ['title', 'body'], type: 'cross_fields', operator: 'and' } }))).toContain('aggregate');
    // a keyword field is a group of its own (the whole query its value): a union with the text group
    expect(ops(plan({ multi_match: { query: 'fox a', fields: ['title', 'tag'], type: 'cross_fields' } }))).toContain('set_op');
    // a number field: the whole query as its term; one it cannot hold ('fox') matches nothing there: the text group alone
    expect(ops(plan({ multi_match: { query: 'fox', fields: ['title', 'body', 'n'], type: 'cross_fields' } }))).not.toContain('filter');
    expect(ops(plan({ multi_match: { query: '7', fields: ['title', 'n'], type: 'cross_fields' } }))).toContain('set_op');
    expect(plan({ exists: { field: 'body' } })).toMatchObject({ op: 'filter', input: { op: 'scan' }, predicate: { kind: 'is_null', arg: { name: 't1_body' }, not: true } });
    expect(q({ intervals: { body: { match: { query: 'quick fox' } } } })).toEqual({ terms: ['quick', 'fox'], operator: 'and' });
    expect(q({ intervals: { body: { match: { query: 'brown fox', ordered: true, max_gaps: 0 } } } })).toEqual({ phrase: 'brown fox' });
    expect(q({ intervals: { body: { any_of: { intervals: [{ prefix: { prefix: 'qu' } }, { fuzzy: { term: 'dgo' } }] } } } }))
      .toEqual({ bool: { should: [{ terms: ['quick'], operator: 'or' }, { terms: ['dog'], operator: 'or' }], minimum_should_match: 1 } });
    expect(q({ function_score: { query: { match: { body: 'fox' } }, functions: [{ gauss: { n: { origin: 0, scale: 5 } } }, { weight: 2, filter: { term: { tag: 'a' } } }] } })).toEqual({ terms: ['fox'], operator: 'or' });
  });

  it('takes the whitespace and simple analyzers when their tokens are plain lowercase words (the fts column makes the same), else null', () => {
    const plain = setup([{ ws: 'red fox 42', sim: 'Red, fox!' }, { ws: 'lazy dog', sim: 'lazy dog' }]);
    const p = (q: unknown) => matchInput(plain.ref, plain.ix, q, new Map()) as unknown as JsonObject | null;
    expect(p({ match: { ws: 'fox 42' } })).toMatchObject({ op: 'fts_search', field: 't3_ws', query: { terms: ['fox', '42'], operator: 'or' } });
    expect(p({ match_phrase: { sim: 'red fox' } })).toMatchObject({ op: 'fts_search', field: 't4_sim', query: { phrase: 'red fox' } });
    expect(p({ wildcard: { sim: 'f*' } })).toMatchObject({ query: { terms: ['fox'], operator: 'or' } });
    expect(p({ match_phrase: { ws: 'red fox' } })).toMatchObject({ op: 'fts_search', field: 't3_ws', query: { phrase: 'red fox' } });
    expect(p({ match: { ws: 'Fox' } })).toBeNull(); // a whitespace query keeps its case: the scorer answers
    // a token with a capital (whitespace) or a digit next to letters (simple: letters only, the fts lib keeps digits)
    const other = setup([{ ws: 'Red fox', sim: 'fox2 dog' }]);
    expect(matchInput(other.ref, other.ix, { match: { ws: 'fox' } }, new Map())).toBeNull();
    expect(matchInput(other.ref, other.ix, { match: { sim: 'fox' } }, new Map())).toBeNull();
  });
});
