/**
 * Multi-model plans over real HTTPS: POST /query and POST /sql with vector, full-text and graph
 * nodes in one plan, explain per node, one executor measured the same way for every surface.
 */
import { bootstrapEnv, TENANT, TestServer, TOKEN } from './server';

const T = `/v1/tenants/${TENANT}`;

const REVIEWS = `namespace = "app"
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
[[columns]]
name = "follows"
ty = "json"
[vector]
column = "emb"
dim = 3
metric = "l2"
[[fulltext]]
field = "body"
[[relations]]
name = "follows"
target = "app.reviews"
columns = ["follows"]
`;

const PRODUCTS = `namespace = "shop"
table = "products"
primary_key = ["sku"]
[[columns]]
name = "sku"
ty = "str"
required = true
[[columns]]
name = "price"
ty = "f64"
`;
const ORDERS = `namespace = "shop"
table = "orders"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "i64"
required = true
[[columns]]
name = "sku"
ty = "str"
required = true
`;

describe('multi-model plans over real HTTPS', () => {
  let srv: TestServer;
  const query = (body: unknown, explain = false) => srv.request('POST', `${T}/query${explain ? '?explain=true' : ''}`, { token: TOKEN, body });
  const sql = (body: unknown) => srv.request('POST', `${T}/sql`, { token: TOKEN, body });
  const lit = (value: unknown) => ({ kind: 'lit', value });

  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
    for (const toml of [REVIEWS, PRODUCTS, ORDERS]) expect((await srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: toml, contentType: 'text/plain' })).status).toBe(200);
    const rows = [
      { id: 'a', body: 'a happy ending to the story', branch: 3, emb: [0, 0, 0], follows: ['b'] },
      { id: 'b', body: 'the ending was sad', branch: 1, emb: [1, 0, 0], follows: ['c'] },
      { id: 'c', body: 'no ending at all, just a story', branch: 3, emb: [2, 0, 0], follows: ['a', 'd'] },
      { id: 'd', body: 'beginning middle and ending', branch: 3, emb: [3, 0, 0], follows: [] },
    ];
    expect((await srv.request('POST', `${T}/rows/app.reviews/_batch`, { token: TOKEN, body: rows })).status).toBe(200);
    expect((await srv.request('POST', `${T}/rows/shop.products/_batch`, { token: TOKEN, body: [{ sku: 'x', price: 2 }, { sku: 'y', price: 3 }] })).status).toBe(200);
    expect((await srv.request('POST', `${T}/rows/shop.orders/_batch`, { token: TOKEN, body: [{ id: 1, sku: 'x' }, { id: 2, sku: 'y' }, { id: 3, sku: 'x' }] })).status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await srv.stop();
  });

  it('"the reviews closest to this embedding that mention ending, of branch 3, ranked by both": one plan, one explain', async () => {
    const plan = {
      op: 'fuse', method: 'rrf', key: ['id'], limit: 2,
      inputs: [
        { op: 'filter', input: { op: 'vector_topk', schema: 'app.reviews', vector: lit([2.1, 0, 0]), k: 3 }, predicate: { kind: 'binary', op: '=', left: { kind: 'col', name: 'branch' }, right: lit(3) } },
        { op: 'fts_search', schema: 'app.reviews', field: 'body', query: 'ending', limit: 10, filter: { kind: 'binary', op: '=', left: { kind: 'col', name: 'branch' }, right: lit(3) } },
      ],
    };
    const r = await query(plan, true);
    expect(r.status).toBe(200);
    // vector (branch 3): c, d, a; text (plain BM25, the default ranking): c, a, d → c first
    // (1/61 + 1/61); a and d tie on 1/62 + 1/63, d seen first (the vector input comes first)
    expect(r.json.rows.map((x: { id: string; _rank_1: number; _rank_2: number }) => [x.id, x._rank_1, x._rank_2])).toEqual([['c', 1, 1], ['d', 2, 3]]);
    const text = (await srv.request('GET', `${T}/fts/app.reviews/body?q=ending`, { token: TOKEN })).json as Array<{ doc_id: string }>;
    expect(text.map((d) => d.doc_id).filter((id) => id !== 'b')).toEqual(['c', 'a', 'd']);
    expect(r.json.rows.every((x: { branch: number }) => x.branch === 3)).toBe(true);
    const tree = JSON.stringify(r.json.explain.tree);
    expect(tree).toMatch(/"op":"vector_topk","detail":"app.reviews k=3 [^"]*exact scan/);
    expect(tree).toMatch(/"op":"fts_search","detail":"app.reviews.body bm25/);
  });

  it('graph_expand joined to rows, through /query', async () => {
    const r = await query({
      op: 'project',
      input: { op: 'graph_expand', schema: 'app.reviews', rel: 'follows', from: lit('a'), direction: 'reverse', alias: 'f' },
      columns: [{ name: 'who', expr: { kind: 'col', name: 'f._node' } }, { name: 'says', expr: { kind: 'col', name: 'f.body' } }],
    });
    expect(r.json).toEqual([{ who: 'c', says: 'no ending at all, just a story' }]);
  });

  it('SQL: pgvector filtered top-k, window-function RRF, bad input codes', async () => {
    const v = await sql({ sql: 'SELECT id, emb <-> $1 AS d FROM app.reviews WHERE branch = 3 ORDER BY emb <-> $1 LIMIT 2', params: [[2.5, 0, 0]] });
    expect(v.json.rows).toEqual([{ id: 'c', d: 0.5 }, { id: 'd', d: 0.5 }]);
    const w = await sql({ sql: 'SELECT id, row_number() OVER (PARTITION BY branch ORDER BY id DESC) AS rn FROM app.reviews ORDER BY id' });
    expect(w.json.rows).toEqual([{ id: 'a', rn: 3 }, { id: 'b', rn: 1 }, { id: 'c', rn: 2 }, { id: 'd', rn: 1 }]);
    const dim = await sql({ sql: 'SELECT id FROM app.reviews ORDER BY emb <-> $1 LIMIT 2', params: [[1, 2]] });
    expect([dim.status, dim.json.error]).toEqual([400, 'dim_mismatch']);
    const bad = await query({ op: 'vector_topk', schema: 'app.reviews', vector: lit([1, 0, 0]), k: 2, metric: 'hamming' });
    expect([bad.status, bad.json.error]).toEqual([400, 'validation_failed']);
    expect(bad.json.message).toContain('$.metric');
    const nos = await query({ op: 'fts_search', schema: 'app.nope', field: 'body', query: 'x' });
    expect([nos.status, nos.json.error]).toEqual([404, 'schema_not_found']);
    const rel = await query({ op: 'graph_path', schema: 'app.reviews', rel: 'nope', src: lit('a'), dst: lit('b') });
    expect([rel.status, rel.json.error]).toEqual([404, 'not_found']);
  });

  it('SQL full-text predicate (@@, score(), $n) and a nested bool plan: answers equal the fts route', async () => {
    const route = async (q: string, limit = 20) => (await srv.request('GET', `${T}/fts/app.reviews/body?q=${encodeURIComponent(q)}&limit=${limit}`, { token: TOKEN })).json as Array<{ doc_id: string; score: number }>;
    const all = await route('ending story', 1000);
    const m = await sql({ sql: "SELECT id, score() AS s FROM app.reviews WHERE body @@ 'ending story'" });
    expect(m.status).toBe(200);
    expect(m.json.rows).toEqual(all.map((d) => ({ id: d.doc_id, s: d.score })));
    const top = await sql({ sql: 'SELECT id, score() AS s FROM app.reviews WHERE body @@ $1 AND branch = 3 ORDER BY score() DESC LIMIT 1', params: ['+ending story'] });
    const want = (await route('+ending story', 1000)).filter((d) => d.doc_id !== 'b')[0];
    expect(top.json.rows).toEqual([{ id: want.doc_id, s: want.score }]);
    const misplaced = await sql({ sql: "SELECT id FROM app.reviews WHERE body @@ 'x' OR branch = 1" });
    expect([misplaced.status, misplaced.json.error]).toEqual([400, 'unsupported_sql']);
    // a nested bool the syntax can say, through /query: the route's answer
    const nested = await query({ op: 'fts_search', schema: 'app.reviews', field: 'body', limit: 20, query: { bool: { must: [{ bool: { must: [{ terms: ['ending'] }], should: [{ terms: ['story'] }] } }], must_not: [{ terms: ['sad'] }] } } });
    expect(nested.status).toBe(200);
    const viaRoute = await route('+ending story -sad');
    expect(nested.json.map((r: { id: string; _score: number }) => [r.id, r._score])).toEqual(viaRoute.map((d) => [d.doc_id, d.score]));
    // the opt-in reranked ranking: the plan node with the same options answers as the route
    const rr = await query({ op: 'fts_search', schema: 'app.reviews', field: 'body', limit: 20, query: 'ending story', ranking: { feedback: 'rm3', proximity: 'bm25tp' } });
    const rrRoute = (await srv.request('GET', `${T}/fts/app.reviews/body?q=${encodeURIComponent('ending story')}&limit=20&feedback=rm3&proximity=bm25tp`, { token: TOKEN })).json as Array<{ doc_id: string; score: number }>;
    expect(rr.json.map((r: { id: string; _score: number }) => [r.id, r._score])).toEqual(rrRoute.map((d) => [d.doc_id, d.score]));
  });

  it('a JSON plan join is typed from the manifests: hash join without affinity annotations', async () => {
    const r = await query({
      op: 'join', kind: 'inner',
      left: { op: 'scan', schema: 'shop.orders', alias: 'o' },
      right: { op: 'scan', schema: 'shop.products', alias: 'p' },
      on: { kind: 'binary', op: '=', left: { kind: 'col', name: 'o.sku' }, right: { kind: 'col', name: 'p.sku' } },
    }, true);
    expect(r.json.rows).toHaveLength(3);
    expect(JSON.stringify(r.json.explain.tree)).toContain('inner hash');
  });

  it('every surface moves db_query_latency_ms; repeated JSON plans hit the plan cache', async () => {
    const plan = { op: 'scan', schema: 'shop.products' };
    for (let i = 0; i < 3; i++) expect((await query(plan)).status).toBe(200);
    await srv.request('POST', `${T}/vector/app.reviews/topk`, { token: TOKEN, body: { vector: [0, 0, 0], k: 1 } });
    await srv.request('GET', `${T}/fts/app.reviews/body?q=ending`, { token: TOKEN });
    await srv.request('GET', `${T}/graph/app.reviews/neighbors?rel=follows&node=a`, { token: TOKEN });
    const m = (await srv.request('GET', '/metrics')).text.split('\n');
    for (const surface of ['vector', 'fts', 'graph', 'plan']) {
      const line = m.find((l) => l.startsWith('db_query_latency_ms_count') && l.includes(`surface="${surface}"`));
      expect([surface, Number(line?.split(' ').pop())]).toEqual([surface, expect.any(Number)]);
      expect(Number(line!.split(' ').pop())).toBeGreaterThanOrEqual(1);
    }
    const hits = m.find((l) => l.startsWith('db_plan_cache_hits_total') && l.includes('surface="plan"'));
    expect(Number(hits?.split(' ').pop())).toBeGreaterThanOrEqual(2);
  });
});
