/** Multi-model plan nodes over a real TenantStore with the fts, vector and graph participants. */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { TenantStore } from '@mmdb/storage';
import { DbError } from '@mmdb/core';
import { FtsParticipant } from '@mmdb/fts';
import { VectorParticipant } from '@mmdb/vector';
import { GraphIndex } from '@mmdb/graph';
import type { PlanNode } from '@mmdb/plan';
import { SqlEngine, formatResult, ftsSearchRoute, graphBfsRoute, vectorTopkRoute } from '@mmdb/sql';

const REVIEWS = `
namespace = "app"
table = "reviews"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "str"
required = true
[[columns]]
name = "body"
ty = "str"
required = true
[[columns]]
name = "branch"
ty = "i64"
required = true
[[columns]]
name = "emb"
ty = "vector"
dim = 3
required = false
[[columns]]
name = "follows"
ty = "json"
required = false
[vector]
column = "emb"
metric = "l2"
index = "exact"
[[fulltext]]
field = "body"
[[relations]]
name = "follows"
target = "app.reviews"
columns = ["follows"]
`;

let dir: string;
let store: TenantStore;
let sql: SqlEngine;
let fts: FtsParticipant;
let vector: VectorParticipant;
let graph: GraphIndex;

const DATA = [
  { id: 'a', body: 'a happy ending to the story', branch: 3, emb: [0, 0, 0], follows: ['b'] },
  { id: 'b', body: 'the ending was sad', branch: 1, emb: [1, 0, 0], follows: ['c'] },
  { id: 'c', body: 'no ending at all, just a story', branch: 3, emb: [2, 0, 0], follows: ['a', 'd'] },
  { id: 'd', body: 'beginning middle and ending', branch: 3, emb: [3, 0, 0], follows: [] },
  { id: 'e', body: 'unrelated words', branch: 2, emb: [0.5, 0, 0], follows: ['a'] },
];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sql-mm-'));
  fts = new FtsParticipant();
  vector = new VectorParticipant();
  graph = new GraphIndex();
  store = await TenantStore.open({ dir, sync: false, participants: [fts, vector, graph] });
  graph.attach(store);
  sql = new SqlEngine(store, undefined, { sources: { fts, vector, graph } });
  await store.registerSchema(REVIEWS);
  for (const r of DATA) await store.put('app.reviews', r);
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

async function plan(p: PlanNode, explain = false): Promise<Record<string, unknown>[]> {
  const r = await sql.runPlan(p, { explain });
  return (formatResult(r) as { rows: Record<string, unknown>[] }).rows;
}

const lit = (value: unknown) => ({ kind: 'lit', value }) as never;
const col = (name: string) => ({ kind: 'col', name }) as const;

describe('vector_topk', () => {
  it('answers the k nearest with _distance, equal to the vector reader', async () => {
    const rows = await plan({ op: 'vector_topk', schema: 'app.reviews', vector: lit([0.9, 0, 0]), k: 3 });
    expect(rows.map((r) => r.id)).toEqual(['b', 'e', 'a']);
    const direct = vector.topk('app.reviews', { vector: [0.9, 0, 0], k: 3 });
    expect(rows.map((r) => r._distance)).toEqual(direct.map((m) => m.distance));
  });

  it('a filter over any column keeps k results whenever k rows pass', async () => {
    const rows = await plan({ op: 'vector_topk', schema: 'app.reviews', vector: lit([0, 0, 0]), k: 2, filter: { kind: 'binary', op: '=', left: col('branch'), right: lit(3) } });
    expect(rows.map((r) => r.id)).toEqual(['a', 'c']);
  });

  it('a repeated filtered top-k sees a write in between', async () => {
    const p: PlanNode = { op: 'vector_topk', schema: 'app.reviews', vector: lit([0.4, 0, 0]), k: 1, filter: { kind: 'binary', op: '=', left: col('branch'), right: lit(3) } };
    expect((await plan(p)).map((r) => r.id)).toEqual(['a']);
    expect((await plan(p)).map((r) => r.id)).toEqual(['a']);
    await store.put('app.reviews', { id: 'f', body: 'new', branch: 3, emb: [0.4, 0, 0], follows: [] });
    expect((await plan(p)).map((r) => r.id)).toEqual(['f']);
  });

  it('the passing rows remembered per filter follow the parameters the filter reads, not the query vector', async () => {
    const p: PlanNode = { op: 'vector_topk', schema: 'app.reviews', vector: { kind: 'param', index: 1 }, k: 2, filter: { kind: 'binary', op: '=', left: col('branch'), right: { kind: 'param', index: 2 } } };
    const ids = async (params: unknown[]) => (formatResult(await sql.runPlan(p, { params })) as { rows: Array<{ id: string }> }).rows.map((r) => r.id);
    expect(await ids([[0, 0, 0], 3])).toEqual(['a', 'c']);
    expect(await ids([[3, 0, 0], 3])).toEqual(['d', 'c']);
    expect(await ids([[3, 0, 0], 1])).toEqual(['b']);
    expect(await ids([[0, 0, 0], 2])).toEqual(['e']);
  });

  it('another metric than the index answers exactly (an exact scan)', async () => {
    const r = await sql.runPlan({ op: 'vector_topk', schema: 'app.reviews', vector: lit([1, 1, 0]), k: 2, metric: 'manhattan' }, { explain: true });
    const rows = (formatResult(r) as { rows: Record<string, unknown>[] }).rows;
    expect(rows.map((x) => [x.id, x._distance])).toEqual([['b', 1], ['e', 1.5]]);
    expect(JSON.stringify(r.explain)).toMatch(/exact scan \(manhattan; the index is l2\)/);
  });

  it('a wrong vector length is dim_mismatch', async () => {
    await expect(plan({ op: 'vector_topk', schema: 'app.reviews', vector: lit([1, 2]), k: 1 })).rejects.toMatchObject({ code: 'dim_mismatch' });
  });
});

describe('fts_search', () => {
  it('answers the route ranking with _score and the rows', async () => {
    const rows = await plan({ op: 'fts_search', schema: 'app.reviews', field: 'body', query: 'ending story', limit: 10 });
    const direct = await fts.search('app.reviews', 'body', 'ending story', 10);
    expect(rows.map((r) => [r.id, r._score])).toEqual(direct.map((d) => [d.doc_id, d.score]));
    expect(rows[0].body).toBeDefined();
  });

  it('a structured query means the same as its syntax', async () => {
    const a = await plan({ op: 'fts_search', schema: 'app.reviews', field: 'body', query: { bool: { must: [{ terms: ['ending'] }], must_not: [{ terms: ['sad'] }] } } });
    const b = await plan({ op: 'fts_search', schema: 'app.reviews', field: 'body', query: '+ending -sad' });
    expect(a).toEqual(b);
    expect(a.map((r) => r.id)).not.toContain('b');
  });

  it('a filter keeps the best among the passing rows', async () => {
    const rows = await plan({ op: 'fts_search', schema: 'app.reviews', field: 'body', query: 'ending', limit: 2, filter: { kind: 'binary', op: '<>', left: col('branch'), right: lit(3) } });
    expect(rows.map((r) => r.id)).toEqual(['b']);
  });

  it('a filter holding a subquery over every match stays above the leaf and passes its rows (an ES bucket under a text query)', async () => {
    const stories = { op: 'project', input: { op: 'fts_search', schema: 'app.reviews', field: 'body', query: 'story', limit: null }, columns: [{ name: '_k', expr: col('id') }] };
    const inStories = { kind: 'in_subquery', arg: col('id'), plan: stories } as never;
    const p = { op: 'aggregate', input: { op: 'filter', input: { op: 'fts_search', schema: 'app.reviews', field: 'body', query: 'ending', limit: null }, predicate: inStories }, group: [], aggregates: [{ name: 'n', fn: 'count', args: [], star: true }, { name: 'b', fn: 'total', args: [col('branch')] }] } as PlanNode;
    expect(await plan(p)).toEqual([{ n: 2, b: 6 }]); // a and c: "ending" and "story"
  });

  it('phrase slop: words near their places, in any order; a bad nested clause is refused naming its path', async () => {
    const exact = await plan({ op: 'fts_search', schema: 'app.reviews', field: 'body', query: { phrase: 'ending story' } });
    expect(exact).toEqual([]);
    const sloppy = await plan({ op: 'fts_search', schema: 'app.reviews', field: 'body', query: { phrase: 'ending story', slop: 3 } });
    expect(sloppy.map((r) => r.id)).toEqual(['a']);
    const reordered = await plan({ op: 'fts_search', schema: 'app.reviews', field: 'body', query: { phrase: 'story happy', slop: 5 } });
    expect(reordered.map((r) => r.id)).toEqual(['a']);
    await expect(plan({ op: 'fts_search', schema: 'app.reviews', field: 'body', query: { bool: { must: [{ bool: { should: [{ terms: ['x y'] }] } }] } } })).rejects.toMatchObject({ code: 'validation_failed', details: { path: '$.query.bool.must[0].bool.should[0].terms[0]' } });
    await expect(plan({ op: 'fts_search', schema: 'app.reviews', field: 'body', query: { bool: { must: [{ bool: { must_not: [{ terms: ['x'] }] } }] } } })).rejects.toMatchObject({ code: 'validation_failed', details: { path: '$.query.bool.must[0].bool' } });
  });

  it('nested bool and minimum_should_match: matches and BM25 sums as the route scores each part', async () => {
    const plain = { feedback: 'none', proximity: 'none' } as const;
    // (ending AND (story OR happy)) OR "no ending", at least 2 of ending / story / sad
    const q = { bool: { should: [{ bool: { must: [{ terms: ['ending'] }, { terms: ['story', 'happy'] }] } }, { phrase: 'no ending' }] } };
    const rows = await plan({ op: 'fts_search', schema: 'app.reviews', field: 'body', query: q, ranking: plain });
    const s = async (text: string) => new Map((await fts.search('app.reviews', 'body', text, 20, { feedback: 'none', proximity: 'none' })).map((d) => [d.doc_id, d.score]));
    const [ending, storyHappy, phrase] = [await s('ending'), await s('story happy'), await s('"no ending"')];
    const want = new Map<string, number>();
    for (const id of ['a', 'b', 'c', 'd', 'e']) {
      const inner = ending.has(id) && storyHappy.has(id) ? (ending.get(id) as number) + (storyHappy.get(id) as number) : undefined;
      const total = (inner ?? 0) + (phrase.get(id) ?? 0);
      if (inner !== undefined || phrase.has(id)) want.set(id, total);
    }
    expect(rows.map((r) => r.id).sort()).toEqual([...want.keys()].sort());
    for (const r of rows) expect(r._score).toBeCloseTo(want.get(r.id as string) as number, 12);
    const two = await plan({ op: 'fts_search', schema: 'app.reviews', field: 'body', query: { bool: { should: [{ terms: ['ending'] }, { terms: ['story'] }, { terms: ['sad'] }], minimum_should_match: 2 } } });
    expect(two.map((r) => r.id).sort()).toEqual(['a', 'b', 'c']);
  });

  it('query as a $n parameter: text in the syntax, or a structured query object', async () => {
    const p = (query: unknown): PlanNode => ({ op: 'fts_search', schema: 'app.reviews', field: 'body', query: query as never, limit: 10 });
    const text = await sql.runPlan(p({ kind: 'param', index: 1 }), { params: ['+ending -sad'] });
    expect(text.rows).toEqual((await sql.runPlan(p('+ending -sad'))).rows);
    const obj = await sql.runPlan(p({ kind: 'param', index: 1 }), { params: [{ phrase: 'ending story', slop: 3 }] });
    expect((formatResult(obj) as { rows: Array<{ id: string }> }).rows.map((r) => r.id)).toEqual(['a']);
    const phrase = { kind: 'binary', op: '||', left: { kind: 'binary', op: '||', left: lit('"'), right: { kind: 'param', index: 1 } }, right: lit('"') };
    const quoted = await sql.runPlan(p(phrase), { params: ['happy ending'] });
    expect((formatResult(quoted) as { rows: Array<{ id: string }> }).rows.map((r) => r.id)).toEqual(['a']);
    await expect(sql.runPlan(p({ kind: 'param', index: 1 }), { params: [] })).rejects.toMatchObject({ code: 'validation_failed' });
    await expect(sql.runPlan(p({ kind: 'param', index: 1 }), { params: [5] })).rejects.toMatchObject({ code: 'validation_failed', details: { path: '$.query' } });
  });
});

describe('graph nodes', () => {
  it('graph_expand is capped by the tenant node budget (nodes visited, not only depth): resource_exhausted', async () => {
    const capped = new SqlEngine(store, undefined, { sources: { fts, vector, graph }, limits: { timeoutMs: 30_000, maxRows: 1_000_000, maxNodes: 3 } });
    const p: PlanNode = { op: 'graph_expand', schema: 'app.reviews', rel: 'follows', from: lit('e'), min_depth: 1, max_depth: null };
    // e → a → b → c → d: four nodes (a, b, c, d) visited, past the budget of 3
    await expect(capped.runPlan(p)).rejects.toMatchObject({ code: 'resource_exhausted' });
    const ok = new SqlEngine(store, undefined, { sources: { fts, vector, graph }, limits: { timeoutMs: 30_000, maxRows: 1_000_000, maxNodes: 5 } });
    expect((formatResult(await ok.runPlan(p)) as { rows: unknown[] }).rows).toHaveLength(4);
  });

  it('graph_expand: multi-hop as a depth range, cycle-safe, per input row', async () => {
    const rows = await plan({
      op: 'graph_expand', schema: 'app.reviews', rel: 'follows', from: col('id'), min_depth: 1, max_depth: null,
      input: { op: 'filter', input: { op: 'scan', schema: 'app.reviews', alias: 's' }, predicate: { kind: 'binary', op: '=', left: col('s.id'), right: lit('a') } },
      alias: 'r',
    });
    // a is reached again through the cycle a → b → c → a
    expect(rows.map((r) => [r['r._node'], r['r._depth']])).toEqual([['b', 1], ['c', 2], ['a', 3], ['d', 3]]);
    expect(rows.every((r) => r['s.id'] === 'a')).toBe(true);
  });

  it('graph_expand from depth 0 is the bfs route, with paths', async () => {
    const rows = await plan({ op: 'graph_expand', schema: 'app.reviews', rel: 'follows', from: lit('e'), min_depth: 0, max_depth: 3, emit_path: true });
    const bfs = await graph.bfs('app.reviews', 'follows', 'e', 3);
    expect(rows.map((r) => [r._node, r._depth])).toEqual(bfs.map((v) => [v.node, v.depth]));
    expect(rows.map((r) => r._path)).toEqual(['["e"]', '["e","a"]', '["e","a","b"]', '["e","a","b","c"]']);
  });

  it('graph_expand walks a self-relation backwards ("who follows a")', async () => {
    const rows = await plan({ op: 'graph_expand', schema: 'app.reviews', rel: 'follows', from: lit('a'), direction: 'reverse' });
    expect(rows.map((r) => r._node).sort()).toEqual(['c', 'e']);
    expect(rows.every((r) => typeof r.body === 'string')).toBe(true);
  });

  it('graph_path and graph_dijkstra equal the routes', async () => {
    const p = await plan({ op: 'graph_path', schema: 'app.reviews', rel: 'follows', src: lit('a'), dst: lit('d') });
    expect(p.map((r) => r._node)).toEqual((await graph.path('app.reviews', 'follows', 'a', 'd')).path);
    const d = await plan({ op: 'graph_dijkstra', schema: 'app.reviews', rel: 'follows', src: lit('e'), dst: lit('d') });
    const route = await graph.dijkstra('app.reviews', 'follows', 'e', 'd');
    expect(d.map((r) => r._node)).toEqual(route.path);
    expect(d[d.length - 1]._cost).toBe(route.total_weight);
  });
});

describe('fuse', () => {
  it('rrf over a vector and a full-text ranking, with each input rank', async () => {
    const rows = await plan({
      op: 'fuse', method: 'rrf', key: ['id'], limit: 3,
      inputs: [
        { op: 'vector_topk', schema: 'app.reviews', vector: lit([2, 0, 0]), k: 4 },
        { op: 'fts_search', schema: 'app.reviews', field: 'body', query: 'story', limit: 4 },
      ],
    });
    // c is 1st by vector and in the text ranking: first
    expect(rows[0].id).toBe('c');
    expect(rows[0]._rank_1).toBe(1);
    expect(typeof rows[0]._rank_2).toBe('number');
    expect(rows[0]._score).toBeCloseTo(1 / 61 + 1 / (60 + (rows[0]._rank_2 as number)), 12);
    expect(rows).toHaveLength(3);
  });
});

describe('errors', () => {
  it('unknown schema is schema_not_found, unknown relation not_found', async () => {
    await expect(plan({ op: 'vector_topk', schema: 'app.nope', vector: lit([1, 2, 3]), k: 1 })).rejects.toMatchObject({ code: 'schema_not_found' });
    await expect(plan({ op: 'graph_path', schema: 'app.reviews', rel: 'nope', src: lit('a'), dst: lit('b') })).rejects.toBeInstanceOf(DbError);
    await expect(plan({ op: 'graph_path', schema: 'app.reviews', rel: 'nope', src: lit('a'), dst: lit('b') })).rejects.toMatchObject({ code: 'not_found' });
  });
});

describe('SQL: pgvector operators', () => {
  const q = async (s: string, params?: unknown[]) => (formatResult((await sql.run(s, { params }))[0], 'arrays') as { rows: unknown[][] }).rows;

  it('ORDER BY col <-> $1 LIMIT k with WHERE reads vector_topk with the filter pushed in', async () => {
    const text = 'SELECT id, emb <-> $1 AS d FROM app.reviews WHERE branch = 3 ORDER BY emb <-> $1 LIMIT 2';
    expect(await q(text, [[0.9, 0, 0]])).toEqual([['a', 0.9], ['c', 1.1]]);
    const p = JSON.stringify(sql.planSql(text).plan);
    expect(p).toMatch(/"op":"vector_topk"/);
    expect(p).toMatch(/"filter":\{"kind":"binary","op":"="/);
    expect(p).not.toMatch(/"metric"/);
  });

  it('pgvector text literals and ORDER BY an alias', async () => {
    expect(await q("SELECT id, emb <-> '[3,0,0]' AS d FROM app.reviews ORDER BY d LIMIT 1")).toEqual([['d', 0]]);
  });

  it('an operator of another metric answers exactly, and explain says exact scan', async () => {
    const rows = await q('SELECT id FROM app.reviews WHERE branch <> 2 ORDER BY emb <+> $1 LIMIT 3', [[1, 1, 0]]);
    expect(rows).toEqual([['b'], ['a'], ['c']]);
    const r = await sql.run('SELECT id FROM app.reviews ORDER BY emb <=> $1 LIMIT 2', { params: [[1, 0.1, 0]], explain: true });
    expect(JSON.stringify((r[0] as { explain: unknown }).explain)).toMatch(/exact scan \(cosine; the index is l2\)/);
  });

  it('never fewer than k when k rows pass', async () => {
    const rows = await q('SELECT id FROM app.reviews WHERE body LIKE $2 ORDER BY emb <-> $1 LIMIT 10', [[0, 0, 0], '%ending%']);
    expect(rows.map((r) => r[0])).toEqual(['a', 'b', 'c', 'd']);
  });
});

describe('routes through plans', () => {
  it('pass their request values as parameters: repeated calls with other values reuse one cached plan', async () => {
    const a = await vectorTopkRoute(sql, 'app.reviews', { vector: [0.9, 0, 0], k: 2 });
    expect(a.map((m) => m.id)).toEqual(['b', 'e']);
    const before = sql.planCache.hits;
    expect((await vectorTopkRoute(sql, 'app.reviews', { vector: [3, 0, 0], k: 2 })).map((m) => m.id)).toEqual(['d', 'c']);
    await ftsSearchRoute(sql, 'app.reviews', 'body', 'ending', 5, {});
    const f = await ftsSearchRoute(sql, 'app.reviews', 'body', 'story', 5, {});
    expect(f).toEqual(await fts.search('app.reviews', 'body', 'story', 5));
    await graphBfsRoute(sql, 'app.reviews', 'follows', 'a', 2);
    expect(await graphBfsRoute(sql, 'app.reviews', 'follows', 'c', 2)).toEqual([{ node: 'c', depth: 0 }, { node: 'a', depth: 1 }, { node: 'd', depth: 1 }, { node: 'b', depth: 2 }]);
    expect(sql.planCache.hits - before).toBe(3);
  });
});

describe('SQL: the full-text predicate col @@ query and score()', () => {
  const q = async (s: string, params?: unknown[]) => (formatResult((await sql.run(s, { params }))[0], 'arrays') as { rows: unknown[][] }).rows;
  const route = async (text: string, limit = 1000) => fts.search('app.reviews', 'body', text, limit);

  it('WHERE body @@ q: every match, best first, with score() = the route score', async () => {
    const want = await route('ending story');
    expect(want.length).toBe(4);
    expect(await q("SELECT id, score() FROM app.reviews WHERE body @@ 'ending story'")).toEqual(want.map((d) => [d.doc_id, d.score]));
    expect(await q('SELECT r.id, score(r.body) AS s FROM app.reviews AS r WHERE r.body @@ $1', ['+ending -sad'])).toEqual((await route('+ending -sad')).map((d) => [d.doc_id, d.score]));
  });

  it('the rest of the WHERE goes into the search, and ORDER BY score() DESC LIMIT n bounds it', async () => {
    const passing = (await route('ending story')).filter((d) => ['a', 'c', 'd'].includes(d.doc_id)).slice(0, 2);
    const sqlText = "SELECT id, score() AS s FROM app.reviews WHERE branch = 3 AND body @@ 'ending story' ORDER BY score() DESC LIMIT 2";
    expect(await q(sqlText)).toEqual(passing.map((d) => [d.doc_id, d.score]));
    const r = await sql.run(sqlText, { explain: true });
    const plan = JSON.stringify((r[0] as { explain?: { plan: unknown } }).explain?.plan);
    expect(plan).toMatch(/"op":"fts_search"[^}]*"field":"body"/);
    expect(plan).toMatch(/"limit":2/);
    expect(plan).not.toMatch(/"op":"scan"/);
    expect(plan).toMatch(/"filter":\{"kind":"binary","op":"="/);
  });

  it('on one side of a join, with the conjuncts of the other side left to it', async () => {
    const rows = await q("SELECT r.id, s.branch, score() FROM app.reviews r JOIN app.reviews s ON s.id = r.id WHERE r.body @@ 'ending' AND s.branch = 3 ORDER BY r.id");
    const want = (await route('ending')).filter((d) => ['a', 'c', 'd'].includes(d.doc_id)).sort((x, y) => (x.doc_id < y.doc_id ? -1 : 1));
    expect(rows).toEqual(want.map((d) => [d.doc_id, 3, d.score]));
  });

  it('an order-free aggregate over every match reads it unranked (unordered), with the same answer', async () => {
    const plain = { feedback: 'none', proximity: 'none', query_stopwords: 'none' } as const;
    const every: PlanNode = { op: 'fts_search', schema: 'app.reviews', field: 'body', query: 'ending story', limit: null, ranking: plain };
    const agg: PlanNode = { op: 'aggregate', input: { op: 'filter', input: every, predicate: { kind: 'binary', op: '>', left: { kind: 'col', name: 'branch' }, right: { kind: 'lit', value: 0 } } }, group: [{ name: 'b', expr: { kind: 'col', name: 'branch' } }], aggregates: [{ name: 'n', fn: 'count', args: [], star: true }, { name: 's', fn: 'max', args: [{ kind: 'col', name: '_score' }] }] };
    const r = await sql.runPlan(agg, { explain: true });
    expect(JSON.stringify(r.explain)).toMatch(/"unordered":true/);
    const hits = await fts.search('app.reviews', 'body', 'ending story', 1000, { feedback: 'none', proximity: 'none' });
    expect(hits.length).toBeGreaterThan(1);
    const want = new Map<number, { n: number; s: number }>();
    for (const h of hits) {
      const b = DATA.find((x) => x.id === h.doc_id)!.branch;
      const w = want.get(b) ?? { n: 0, s: -Infinity };
      want.set(b, { n: w.n + 1, s: Math.max(w.s, h.score) });
    }
    const rows = (formatResult(r, 'arrays') as { rows: unknown[][] }).rows.map((x) => [Number(x[0]), Number(x[1]), x[2]]).sort((x, y) => (x[0] as number) - (y[0] as number));
    expect(rows).toEqual([...want].sort((x, y) => x[0] - y[0]).map(([b, w]) => [b, w.n, w.s]));
    expect(JSON.stringify(r.explain)).not.toMatch(/"no_score":true/); // max(_score) reads the score
    // nothing reads _score: each hit is its row as is (no_score), the counts the same
    const counts = await sql.runPlan({ ...agg, aggregates: [{ name: 'n', fn: 'count', args: [], star: true }] } as PlanNode, { explain: true });
    expect(JSON.stringify(counts.explain)).toMatch(/"no_score":true/);
    const got = (formatResult(counts, 'arrays') as { rows: unknown[][] }).rows.map((x) => [Number(x[0]), Number(x[1])]).sort((x, y) => x[0] - y[0]);
    expect(got).toEqual([...want].sort((x, y) => x[0] - y[0]).map(([b, w]) => [b, w.n]));
    // an order-dependent aggregate keeps the ranked input
    const concat = await sql.runPlan({ ...agg, aggregates: [{ name: 'ids', fn: 'group_concat', args: [{ kind: 'col', name: 'id' }] }] } as PlanNode, { explain: true });
    expect(JSON.stringify(concat.explain)).not.toMatch(/"unordered":true/);
  });

  it('refuses what it cannot place, naming the construct', async () => {
    await expect(q("SELECT id FROM app.reviews WHERE body @@ 'ending' OR branch = 1")).rejects.toMatchObject({ code: 'unsupported_sql' });
    await expect(q("SELECT id FROM app.reviews WHERE id @@ 'ending'")).rejects.toMatchObject({ code: 'unsupported_sql' });
    await expect(q('SELECT id, score() FROM app.reviews')).rejects.toMatchObject({ code: 'unsupported_sql' });
    await expect(q("SELECT id FROM app.reviews WHERE body @@ 'a' AND body @@ 'b'")).rejects.toMatchObject({ code: 'unsupported_sql' });
  });
});

describe('SQL: table-valued functions and hybrid queries', () => {
  const q = async (s: string, params?: unknown[]) => (formatResult((await sql.run(s, { params }))[0], 'arrays') as { rows: unknown[][] }).rows;

  it('a select of the key and _score of fts_search reads no row (keys_only); other columns still read the rows', async () => {
    const text = "SELECT f.id, f._score FROM fts_search('app.reviews', 'body', 'ending story', 10) AS f";
    const r = await sql.run(text, { explain: true });
    const ex = JSON.stringify((r[0] as { explain?: unknown }).explain);
    expect(ex).toMatch(/"keys_only":true/);
    expect(ex).toMatch(/keys only/);
    const want = await fts.search('app.reviews', 'body', 'ending story', 10);
    expect(await q(text)).toEqual(want.map((d) => [d.doc_id, d.score]));
    const withBody = await sql.run("SELECT f.id, f.body FROM fts_search('app.reviews', 'body', 'ending story', 10) AS f", { explain: true });
    expect(JSON.stringify((withBody[0] as { explain?: unknown }).explain)).not.toMatch(/"keys_only":true/);
    expect((formatResult(withBody[0], 'arrays') as { rows: unknown[][] }).rows.map((x) => x[1])).toEqual(want.map((d) => DATA.find((x) => x.id === d.doc_id)?.body));
  });

  it('fts_search and vector_topk in FROM, joined and filtered', async () => {
    expect(await q("SELECT f.id, f._score > 0 FROM fts_search('app.reviews', 'body', 'story', 5) AS f ORDER BY f.id")).toEqual([['a', 1], ['c', 1]]);
    expect(await q("SELECT f.id, f._score > 0 FROM fts_search('app.reviews', 'body', $1, 5) AS f ORDER BY f.id", ['story'])).toEqual([['a', 1], ['c', 1]]);
    expect(await q("SELECT v.id, v._distance FROM vector_topk('app.reviews', $1, 2) v", [[2.9, 0, 0]])).toEqual([['d', expect.closeTo(0.1, 6)], ['c', expect.closeTo(0.9, 6)]]);
    const joined = await q("SELECT r.id, r.branch FROM fts_search('app.reviews', 'body', 'ending') f JOIN app.reviews r ON r.id = f.id WHERE r.branch = 3 ORDER BY r.id");
    expect(joined).toEqual([['a', 3], ['c', 3], ['d', 3]]);
  });

  it('graph table functions usable in FROM and joins', async () => {
    expect(await q("SELECT g._node, g._depth, g.branch FROM graph_expand('app.reviews', 'follows', 'a', 1, 2) g")).toEqual([['b', 1, 1], ['c', 2, 3]]);
    expect(await q("SELECT g._node FROM graph_expand('app.reviews', 'follows', 'a', 1, 1, 'reverse') g ORDER BY 1")).toEqual([['c'], ['e']]);
    expect(await q("SELECT _step, _node FROM graph_path('app.reviews', 'follows', 'a', 'd')")).toEqual([[0, 'a'], [1, 'b'], [2, 'c'], [3, 'd']]);
    const j = await q("SELECT r.body FROM graph_expand('app.reviews', 'follows', 'c', 1, 1) g JOIN app.reviews r ON r.id = g._node WHERE r.branch = 3 ORDER BY r.id");
    expect(j).toEqual([['a happy ending to the story'], ['beginning middle and ending']]);
  });

  it('graph_expand started per row of the left side (LATERAL), with the reached rows', async () => {
    const rows = await q("SELECT s.id, g._node, g.branch FROM app.reviews s CROSS JOIN graph_expand('app.reviews', 'follows', s.id, 1, 1) g WHERE s.branch = 3 ORDER BY 1, 2");
    expect(rows).toEqual([['a', 'b', 1], ['c', 'a', 3], ['c', 'd', 3]]);
    const on = await q("SELECT s.id, g._node FROM app.reviews s JOIN graph_expand('app.reviews', 'follows', s.id, 2, 2) g ON g.branch = 3 ORDER BY 1, 2");
    expect(on).toEqual([['a', 'c'], ['b', 'a'], ['b', 'd']]);
  });

  it('rrf table function over two ranked selects', async () => {
    const rows = await q(`SELECT id, _rank_1, _rank_2 FROM rrf(
        (SELECT id FROM app.reviews ORDER BY emb <-> $1 LIMIT 3),
        (SELECT id FROM fts_search('app.reviews', 'body', 'story')),
        'id') LIMIT 2`, [[2, 0, 0]]);
    expect(rows[0]).toEqual(['c', 1, 1]);
  });

  it("fts_search's ranking argument: 'bm25' is plain BM25, equal to the route asked for no feedback and no proximity", async () => {
    const plain = { feedback: 'none', proximity: 'none' } as const;
    const want = await fts.search('app.reviews', 'body', 'ending story', 10, plain);
    const sel = (ranking: string) => `SELECT f.id, f._score FROM fts_search('app.reviews', 'body', $1, 10${ranking}) AS f`;
    expect(await q(sel(", 'bm25'"), ['ending story'])).toEqual(want.map((d) => [d.doc_id, d.score]));
    expect(await q(sel(", 'feedback=none, proximity=none'"), ['ending story'])).toEqual(want.map((d) => [d.doc_id, d.score]));
    expect((await ftsSearchRoute(sql, 'app.reviews', 'body', 'ending story', 10, plain)).map((d) => [d.doc_id, d.score])).toEqual(want.map((d) => [d.doc_id, d.score]));
    const dflt = await fts.search('app.reviews', 'body', 'ending story', 10);
    expect(await q(sel(", 'default'"), ['ending story'])).toEqual(dflt.map((d) => [d.doc_id, d.score]));
    expect(await q(sel(''), ['ending story'])).toEqual(dflt.map((d) => [d.doc_id, d.score]));
    // explain names the stages a search runs beyond BM25
    const detail = async (ranking: string) => JSON.stringify((await sql.run(sel(ranking), { params: ['ending story'], explain: true }))[0]).match(/bm25(?: \+ \w+)* top-\d+[^"]*/)?.[0];
    expect(await detail(", 'bm25'")).toMatch(/^bm25 top-10/);
    expect(await detail('')).toMatch(/^bm25 top-10/); // the route's default: plain BM25 (issue 25 §5)
    expect(await detail(", 'feedback=rm3 proximity=bm25tp'")).toMatch(/^bm25 \+ proximity \+ rm3 top-10/);
    expect(await detail(", 'feedback=rm3'")).toMatch(/^bm25 \+ rm3 top-10/);
    // the opt-in reranked ranking: the node's answer equals the route's with the same options
    const reranked = { feedback: 'rm3', proximity: 'bm25tp' } as const;
    const wantR = await fts.search('app.reviews', 'body', 'ending story', 10, reranked);
    expect(await q(sel(", 'feedback=rm3 proximity=bm25tp'"), ['ending story'])).toEqual(wantR.map((d) => [d.doc_id, d.score]));
    for (const bad of ["'fast'", "'feedback=maybe'", "'feedback'", "'bm25', 1"]) {
      await expect(q(sel(`, ${bad}`), ['x'])).rejects.toMatchObject({ code: 'validation_failed' });
    }
  });

  it('a parameterized hybrid statement is parsed and planned once: later values hit the plan cache and answer as the routes fused', async () => {
    const text = `SELECT r.id, r.branch, f._score FROM (SELECT id, _score FROM rrf((SELECT id FROM app.reviews ORDER BY emb <-> $1 LIMIT 3),
      (SELECT id FROM fts_search('app.reviews', 'body', $2, 3, 'bm25')), 'id') LIMIT 3) f JOIN app.reviews r ON r.id = f.id ORDER BY f._score DESC, r.id`;
    const fused = async (v: number[], words: string) => {
      const s = new Map<string, number>();
      (await vectorTopkRoute(sql, 'app.reviews', { vector: v, k: 3 })).forEach((m, i) => s.set(m.id, (s.get(m.id) ?? 0) + 1 / (61 + i)));
      (await ftsSearchRoute(sql, 'app.reviews', 'body', words, 3, { feedback: 'none', proximity: 'none' })).forEach((d, i) => s.set(d.doc_id, (s.get(d.doc_id) ?? 0) + 1 / (61 + i)));
      return [...s].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, 3).map(([id, score]) => [id, DATA.find((x) => x.id === id)!.branch, expect.closeTo(score, 12)]);
    };
    expect(await q(text, [[0, 0, 0], 'story'])).toEqual(await fused([0, 0, 0], 'story'));
    const hits = sql.planCache.hits;
    expect(await q(text, [[3, 0, 0], 'ending'])).toEqual(await fused([3, 0, 0], 'ending'));
    expect(await q(text, [[1, 0, 0], 'sad'])).toEqual(await fused([1, 0, 0], 'sad'));
    // the two routes' own plans hit too (two each per fused()); the statement hit twice
    expect(sql.planCache.hits - hits).toBe(2 + 4);
  });

  it("explain times a multi-model leaf's synchronous search too (a warm BM25 top-k runs before its first await)", async () => {
    const text = `SELECT id FROM rrf((SELECT id FROM app.reviews ORDER BY emb <-> $1 LIMIT 3), (SELECT id FROM fts_search('app.reviews', 'body', $2, 3, 'bm25')), 'id')`;
    const leafTime = (ex: unknown, op: string): number => {
      const find = (n: { op?: string; time_ms?: number; children?: unknown[] }): number | undefined =>
        n.op === op ? n.time_ms : (n.children ?? []).map((c) => find(c as typeof n)).find((x) => x !== undefined);
      return find((ex as { tree: { op?: string } }).tree) ?? NaN;
    };
    // the search is made to take at least 30 ms of synchronous work: explain must count it (it showed ~0 before)
    const real = fts.search.bind(fts);
    const spy = jest.spyOn(fts, 'search').mockImplementation((...args: Parameters<typeof fts.search>) => {
      const until = performance.now() + 30;
      while (performance.now() < until) { /* busy: a synchronous search */ }
      return real(...args);
    });
    try {
      const r = await sql.run(text, { params: [[0, 0, 0], 'story'], explain: true });
      expect(leafTime((r[0] as { explain?: unknown }).explain, 'fts_search')).toBeGreaterThanOrEqual(30);
    } finally {
      spy.mockRestore();
    }
  });

  it('the plain RRF form people write in PostgreSQL: CTEs and row_number() OVER', async () => {
    const rows = await q(`WITH v AS (SELECT id, row_number() OVER (ORDER BY emb <-> $1) AS r FROM app.reviews ORDER BY emb <-> $1 LIMIT 3),
      t AS (SELECT id, row_number() OVER (ORDER BY _score DESC) AS r FROM fts_search('app.reviews', 'body', 'story'))
      SELECT id, sum(1.0 / (60 + r)) AS score FROM (SELECT id, r FROM v UNION ALL SELECT id, r FROM t) GROUP BY id ORDER BY score DESC, id LIMIT 2`, [[2, 0, 0]]);
    expect(rows.map((r) => r[0])).toEqual(['c', 'a']);
  });
});

describe('one snapshot', () => {
  it('a write committed while a hybrid plan runs is wholly in or out', async () => {
    const plan: PlanNode = {
      op: 'fuse', method: 'rrf', key: ['id'],
      inputs: [
        { op: 'vector_topk', schema: 'app.reviews', vector: lit([9, 0, 0]), k: 2 },
        { op: 'fts_search', schema: 'app.reviews', field: 'body', query: 'zebra', limit: 5 },
        { op: 'sort', input: { op: 'scan', schema: 'app.reviews' }, keys: [{ expr: col('id'), desc: true }] },
      ],
    };
    const running = sql.runPlan(plan);
    // committed after the query took its snapshot and read the in-memory indexes
    const write = store.put('app.reviews', { id: 'z', body: 'a zebra', branch: 9, emb: [9, 0, 0], follows: [] });
    const before = (formatResult(await running) as { rows: Record<string, unknown>[] }).rows;
    await write;
    expect(before.map((r) => r.id)).not.toContain('z');
    const after = (formatResult(await sql.runPlan(plan)) as { rows: Record<string, unknown>[] }).rows;
    const z = after.find((r) => r.id === 'z');
    expect(z).toMatchObject({ _rank_1: 1, _rank_2: 1, _rank_3: 1 });
  });
});

describe('optimizer over multi-model nodes', () => {
  it('join ordering uses their estimates: a top-k is the build side; a limit bounds k', async () => {
    const p = sql.planSql("SELECT r.id FROM vector_topk('app.reviews', '[0,0,0]', 2) v JOIN app.reviews r ON r.branch = v.branch").plan;
    const s = JSON.stringify(p);
    expect(s).toMatch(/"op":"join","kind":"inner","left":\{"op":"scan"[^]*"right":\{"op":"vector_topk"/);
    const l = sql.planSql("SELECT id FROM vector_topk('app.reviews', '[0,0,0]', 50) LIMIT 3").plan;
    expect(JSON.stringify(l)).toMatch(/"op":"vector_topk".*?"k":3\}/);
  });
});

describe('Policy port', () => {
  it('is applied at every leaf: scans, subqueries and the multi-model leaves', async () => {
    const policy = {
      leafFilter: (leaf: { op: string; schema?: string; alias?: string }) =>
        leaf.schema === 'app.reviews' && leaf.op !== 'graph_path'
          ? ({ kind: 'binary', op: '=', left: { kind: 'col', name: leaf.alias ? `${leaf.alias}.branch` : 'branch' }, right: { kind: 'lit', value: 3 } } as never)
          : undefined,
    };
    const guarded = new SqlEngine(store, undefined, { sources: { fts, vector, graph }, policy });
    const q = async (s: string, params?: unknown[]) => (formatResult((await guarded.run(s, { params }))[0], 'arrays') as { rows: unknown[][] }).rows.map((r) => r[0]);
    expect(await q('SELECT id FROM app.reviews ORDER BY id')).toEqual(['a', 'c', 'd']);
    expect(await q("SELECT 'x' WHERE EXISTS (SELECT 1 FROM app.reviews WHERE id = 'b')")).toEqual([]);
    // the k nearest among the rows the caller may see: b (branch 1) is nearest but hidden
    expect(await q('SELECT id FROM app.reviews ORDER BY emb <-> $1 LIMIT 2', [[1, 0, 0]])).toEqual(['a', 'c']);
    expect(await q("SELECT id FROM fts_search('app.reviews', 'body', 'sad ending')")).not.toContain('b');
    const r = (formatResult(await guarded.runPlan({ op: 'vector_topk', schema: 'app.reviews', vector: lit([1, 0, 0]), k: 2 })) as { rows: { id: string }[] }).rows;
    expect(r.map((x) => x.id)).toEqual(['a', 'c']);
  });
});

describe('graph_join', () => {
  it('an expansion joined to the rows it reaches reads them from the expansion (no scan, same answer)', async () => {
    const text = "SELECT r.id, r.branch, g._depth FROM graph_expand('app.reviews', 'follows', 'a', 1, 3) g JOIN app.reviews r ON r.id = g._node WHERE r.branch = 3 ORDER BY r.id";
    const planText = JSON.stringify(sql.planSql(text).plan);
    expect(planText).not.toMatch(/"op":"scan"/);
    expect(planText).not.toMatch(/"op":"join"/);
    const rows = (formatResult((await sql.run(text))[0], 'arrays') as { rows: unknown[][] }).rows;
    expect(rows).toEqual([['a', 3, 3], ['c', 3, 2], ['d', 3, 3]]);
    const both = "SELECT r.id FROM graph_expand('app.reviews', 'follows', 'a', 1, 3) g JOIN app.reviews r ON r.id = g._node WHERE r.branch = 3 AND g._depth = 3 ORDER BY r.id";
    expect(JSON.stringify(sql.planSql(both).plan)).not.toMatch(/"op":"join"/);
    expect((formatResult((await sql.run(both))[0], 'arrays') as { rows: unknown[][] }).rows).toEqual([['a'], ['d']]);
  });
});

describe('pgvector DDL', () => {
  it('VECTOR(n) columns, BIGSERIAL keys, CREATE INDEX … USING hnsw (opclass) indexes the rows already stored', async () => {
    const run = (s: string, params?: unknown[]) => sql.run(s, { params });
    await run('CREATE TABLE items (id bigserial PRIMARY KEY, category int, embedding vector(3))');
    const m = store.manifest('main.items')!;
    expect(m.columns.map((c) => [c.name, c.ty, c.dim])).toEqual([['id', 'i64', undefined], ['category', 'i64', undefined], ['embedding', 'vector', 3]]);
    for (let i = 1; i <= 6; i++) await store.put('main.items', { id: i, category: i % 2, embedding: [i, 0, 0] });
    const q = 'SELECT id FROM items WHERE category = 1 ORDER BY embedding <=> $1 LIMIT 2';
    const before = (formatResult((await run('SELECT id FROM items WHERE category = 1 ORDER BY embedding <-> $1 LIMIT 2', [[4.2, 0, 0]]))[0], 'arrays') as { rows: unknown[][] }).rows;
    expect(before).toEqual([[5], [3]]);
    await run('CREATE INDEX ON items USING hnsw (embedding vector_l2_ops) WITH (m = 8, ef_construction = 32)');
    expect(store.manifest('main.items')!.vector).toMatchObject({ column: 'embedding', metric: 'l2', index: 'hnsw', params: { m: 8, ef_construction: 32 } });
    expect(vector.table('main.items').size).toBe(6);
    const after = await sql.run('SELECT id FROM items WHERE category = 1 ORDER BY embedding <-> $1 LIMIT 2', { params: [[4.2, 0, 0]], explain: true });
    expect((formatResult(after[0], 'arrays') as { rows: unknown[][] }).rows).toEqual([[5], [3]]);
    expect(JSON.stringify((after[0] as { explain: unknown }).explain)).toMatch(/vector_topk/);
    // another operator than the index's: still exact
    expect((formatResult((await run(q, [[1, 1, 0]]))[0], 'arrays') as { rows: unknown[][] }).rows).toHaveLength(2);
    // SQL writes: pgvector text and a $n array; the new rows are in the index at once
    await run("INSERT INTO items (category, embedding) VALUES (1, '[4.1,0,0]')");
    await run('INSERT INTO items (category, embedding) VALUES (1, $1)', [[4.3, 0, 0]]);
    expect(vector.table('main.items').size).toBe(8);
    const ins = (formatResult((await run('SELECT id, embedding FROM items WHERE category = 1 ORDER BY embedding <-> $1 LIMIT 2', [[4.15, 0, 0]]))[0], 'arrays') as { rows: unknown[][] }).rows;
    expect(ins).toEqual([[7, [4.1, 0, 0]], [8, [4.3, 0, 0]]]);
    await expect(run('CREATE INDEX ON items USING hnsw (category)')).rejects.toMatchObject({ code: 'validation_failed' });
    await expect(run('CREATE INDEX ON items USING hnsw (embedding vector_cosine_ops)')).rejects.toMatchObject({ code: 'conflict' });
  });
});

describe('unnest', () => {
  const follows = { kind: 'col', name: 'follows' } as const;

  it('answers one row per array element beside the row, none for an empty array or NULL', async () => {
    const rows = await plan({ op: 'project', input: { op: 'unnest', input: { op: 'scan', schema: 'app.reviews' }, expr: follows, as: 'f' }, columns: [{ name: 'id', expr: col('id') }, { name: 'f', expr: col('f') }] });
    expect(rows.map((r) => `${r.id}>${r.f}`)).toEqual(['a>b', 'b>c', 'c>a', 'c>d', 'e>a']);
  });

  it('replaces the column it is named after, so a plan over that column reads every element', async () => {
    const p: PlanNode = {
      op: 'aggregate', group: [{ name: 'k', expr: col('follows') }], aggregates: [{ name: 'n', fn: 'count', args: [], star: true }],
      input: { op: 'unnest', input: { op: 'scan', schema: 'app.reviews' }, expr: follows, as: 'follows' },
    };
    const rows = await plan({ op: 'sort', input: p, keys: [{ expr: col('k') }] });
    expect(rows).toEqual([{ k: 'a', n: 2 }, { k: 'b', n: 1 }, { k: 'c', n: 1 }, { k: 'd', n: 1 }]);
  });

  it('distinct drops a repeated element of one row; affinity casts each element; a scalar is one element', async () => {
    const arr = (s: string) => ({ kind: 'lit', value: s }) as never;
    const one = async (e: unknown, opts: object) => (await plan({ op: 'project', input: { op: 'unnest', input: { op: 'values', columns: ['x'], rows: [[lit(1)]] }, expr: e as never, as: 'v', ...opts }, columns: [{ name: 'v', expr: col('v') }] })).map((r) => r.v);
    expect(await one(arr('[1, 2, 1, "a", true, null]'), {})).toEqual([1, 2, 1, 'a', 1, null]);
    expect(await one(arr('[1, 2, 1, 2.0]'), { distinct: true })).toEqual([1, 2]);
    const typed = await sql.runPlan({ op: 'project', input: { op: 'unnest', input: { op: 'values', columns: ['x'], rows: [[lit(1)]] }, expr: arr('[1, 2.5]'), as: 'v', affinity: 'real' }, columns: [{ name: 't', expr: { kind: 'call', name: 'typeof', args: [col('v')] } }] });
    expect((formatResult(typed) as { rows: Array<{ t: string }> }).rows.map((r) => r.t)).toEqual(['real', 'real']);
    expect(await one(arr('"solo"'), {})).toEqual(['solo']);
    expect(await one(lit(null), {})).toEqual([]);
    // outer: a row without elements is kept once, with NULL
    expect(await one(lit(null), { outer: true })).toEqual([null]);
    expect(await one(arr('[]'), { outer: true })).toEqual([null]);
    expect(await one(arr('[3]'), { outer: true })).toEqual([3]);
  });

  it('is checked by the plan validator', async () => {
    await expect(sql.runPlan({ op: 'unnest', input: { op: 'scan', schema: 'app.reviews' }, expr: follows, as: 'f', affinity: 'blob' } as never)).rejects.toThrow(/affinity/);
  });
});
