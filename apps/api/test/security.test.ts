/**
 * Database users, grants and row-level security over real HTTPS: the leak matrix users ×
 * surfaces (rows, /sql, /query, vector, fts, graph, schema lists) × a region policy. A hidden row
 * must not come back in any form: rows, counts, aggregates, predicates on its columns, sort
 * order, top-k, traversals, explain.
 */
import { bootstrapEnv, TENANT, TestServer, TOKEN } from './server';

const T = `/v1/tenants/${TENANT}`;
const PEOPLE = `namespace = "app"
table = "people"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "str"
required = true
[[columns]]
name = "region"
ty = "str"
required = true
[[columns]]
name = "ssn"
ty = "str"
[[columns]]
name = "bio"
ty = "str"
[[columns]]
name = "emb"
ty = "vector"
dim = 2
[[columns]]
name = "knows"
ty = "json"
[vector]
column = "emb"
dim = 2
metric = "l2"
[[fulltext]]
field = "bio"
[[relations]]
name = "knows"
target = "app.people"
columns = ["knows"]
`;
const SECRET = `namespace = "app"
table = "secret"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "i64"
required = true
`;

const ROWS = [
  { id: 'e1', region: 'eu', ssn: '111', bio: 'loves the sea', emb: [0, 0], knows: ['u1', 'e2'] },
  { id: 'e2', region: 'eu', ssn: '222', bio: 'sea and hills', emb: [1, 0], knows: [] },
  { id: 'u1', region: 'us', ssn: '199', bio: 'the sea again', emb: [0.1, 0], knows: ['e1'] },
  { id: 'u2', region: 'us', ssn: '188', bio: 'deep sea diver', emb: [0.2, 0], knows: [] },
];

describe('users, grants and row-level security over real HTTPS', () => {
  let srv: TestServer;
  const tokens: Record<string, string> = {};
  const as = (user: string, method: string, p: string, body?: unknown) => srv.request(method, `${T}${p}`, { token: user === 'owner' ? TOKEN : tokens[user], body });
  const sql = (user: string, text: string) => as(user, 'POST', '/sql', { sql: text });

  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
    for (const toml of [PEOPLE, SECRET]) expect((await srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: toml, contentType: 'text/plain' })).status).toBe(200);
    expect((await as('owner', 'POST', '/rows/app.people/_batch', ROWS)).status).toBe(200);
    const users = {
      alice: { grants: { 'app.people': ['read'] }, attributes: { region: 'eu' } },
      bob: { grants: {} },
      mgr: { grants: { 'app.people': ['read', 'insert', 'update'] }, manage_tokens: true },
    };
    for (const [name, body] of Object.entries(users)) expect((await as('owner', 'PUT', `/users/${name}`, body)).status).toBe(200);
    const pol = await as('owner', 'PUT', '/policies/people_region', { schema: 'app.people', users: ['alice'], using: "region = user_attr('region')" });
    expect(pol.status).toBe(200);
    for (const name of Object.keys(users)) {
      const r = await as('owner', 'POST', `/users/${name}/tokens`, {});
      expect([r.status, r.json.user]).toEqual([201, name]);
      tokens[name] = r.json.token;
    }
  }, 60_000);
  afterAll(async () => {
    await srv.stop();
  });

  it('a user without a grant gets 403 on every surface of the schema, and its schema list hides it', async () => {
    const probes: Array<[string, string, unknown?]> = [
      ['GET', '/rows/app.people/e1'],
      ['PUT', '/rows/app.people/e9', { id: 'e9', region: 'eu' }],
      ['DELETE', '/rows/app.people/e1'],
      ['GET', '/schemas/app.people'],
      ['POST', '/sql', { sql: 'SELECT count(*) FROM app.people' }],
      ['POST', '/sql', { sql: 'SELECT 1 WHERE EXISTS (SELECT 1 FROM app.people)' }],
      ['POST', '/query', { op: 'scan', schema: 'app.people' }],
      ['POST', '/vector/app.people/topk', { vector: [0, 0], k: 2 }],
      ['GET', '/fts/app.people/bio?q=sea'],
      ['POST', '/fts/app.people/bio', { doc_id: 'x', text: 'y' }],
      ['POST', '/vector/app.people/put', { id: 'x', vector: [0, 0] }],
      ['GET', '/graph/app.people/neighbors?rel=knows&node=e1'],
    ];
    for (const [m, p, b] of probes) {
      const r = await as('bob', m, p, b);
      expect([m, p, r.status, r.json.error]).toEqual([m, p, 403, 'forbidden']);
      expect(r.text).not.toMatch(/111|222|199|188|sea/);
    }
    // an absent schema answers as a present one does: existence is not revealed
    const absent = await as('bob', 'GET', '/schemas/app.nope');
    expect([absent.status, absent.json.error]).toEqual([403, 'forbidden']);
    expect((await as('bob', 'GET', '/schemas')).json).toEqual([]);
    expect((await as('alice', 'GET', '/schemas')).json).toEqual(['app.people']);
    expect((await as('owner', 'GET', '/schemas')).json.sort()).toEqual(['app.people', 'app.secret']);
    // alice reads people but may not write it, nor read app.secret through a join
    expect((await as('alice', 'PUT', '/rows/app.people/e9', { id: 'e9', region: 'eu' })).status).toBe(403);
    expect((await sql('alice', 'SELECT p.id FROM app.people p JOIN app.secret s ON 1 = 1')).status).toBe(403);
    for (const text of ["INSERT INTO app.people (id, region) VALUES ('x', 'eu')", "UPDATE app.people SET ssn = '0'", "DELETE FROM app.people", 'DROP TABLE app.people', 'CREATE TABLE t (a INTEGER)']) {
      const r = await sql('alice', text);
      expect([text, r.status, r.json.error]).toEqual([text, 403, 'forbidden']);
    }
    expect((await sql('owner', 'SELECT count(*) AS n FROM app.people')).json.rows).toEqual([{ n: 4 }]);
  });

  it('row-level security: hidden rows never come back, whatever the query does with them', async () => {
    const cases: Array<[string, unknown]> = [
      ['SELECT id FROM app.people ORDER BY id', [{ id: 'e1' }, { id: 'e2' }]],
      ['SELECT count(*) AS n FROM app.people', [{ n: 2 }]],
      ["SELECT count(*) AS n FROM app.people WHERE region = 'us'", [{ n: 0 }]],
      ["SELECT id FROM app.people WHERE ssn LIKE '1%'", [{ id: 'e1' }]],
      ['SELECT region, max(ssn) AS m FROM app.people GROUP BY region', [{ region: 'eu', m: '222' }]],
      ['SELECT id FROM app.people ORDER BY ssn DESC LIMIT 1', [{ id: 'e2' }]],
      ['SELECT (SELECT count(*) FROM app.people WHERE region = \'us\') AS n', [{ n: 0 }]],
      ['SELECT a.id AS a, b.id AS b FROM app.people a JOIN app.people b ON a.ssn < b.ssn ORDER BY a.id, b.id', [{ a: 'e1', b: 'e2' }]],
    ];
    for (const [text, rows] of cases) {
      const r = await sql('alice', text);
      expect([text, r.status, r.json.rows]).toEqual([text, 200, rows]);
      const owner = await sql('owner', text);
      expect(owner.status).toBe(200);
    }
    // the owner sees all four; the plan cache does not leak one user's plan to another
    expect((await sql('owner', 'SELECT count(*) AS n FROM app.people')).json.rows).toEqual([{ n: 4 }]);
    expect((await sql('alice', 'SELECT count(*) AS n FROM app.people')).json.rows).toEqual([{ n: 2 }]);
    const plan = await as('alice', 'POST', '/query', { op: 'scan', schema: 'app.people' });
    expect(plan.json.map((r: { id: string }) => r.id).sort()).toEqual(['e1', 'e2']);
    const topk = await as('alice', 'POST', '/vector/app.people/topk', { vector: [0, 0], k: 3 });
    expect(topk.status).toBe(200);
    expect(topk.json.map((h: { id: string }) => h.id)).toEqual(['e1', 'e2']);
    const fts = await as('alice', 'GET', '/fts/app.people/bio?q=sea');
    expect(fts.status).toBe(200);
    expect(fts.json.map((h: { doc_id: string }) => h.doc_id).sort()).toEqual(['e1', 'e2']);
    const g = await as('alice', 'GET', '/graph/app.people/neighbors?rel=knows&node=e1');
    expect(g.status).toBe(200);
    expect(g.json).toEqual(['e2']);
    // the query's own predicate never runs on a hidden row: an error it would raise there (malformed
    // JSON in u1's and u2's bio) does not tell alice those rows exist, though the key range is used
    const leaky = "SELECT id FROM app.people WHERE id >= 'u' AND id < 'v' AND json_extract(bio, '$.a') IS NULL";
    expect((await sql('owner', leaky)).status).toBe(400);
    expect([(await sql('alice', leaky)).status, (await sql('alice', leaky)).json.rows]).toEqual([200, []]);
    const ex = await srv.request('POST', `${T}/sql?explain=true`, { token: tokens.alice, body: { sql: "SELECT id FROM app.people WHERE ssn = '199'" } });
    expect(ex.status).toBe(200);
    expect(ex.json.rows).toEqual([]);
  });

  it('SQL writes need the grant; a user under a WITH CHECK policy writes only rows that pass, through the row routes', async () => {
    expect((await as('owner', 'PUT', '/users/writer', { grants: { 'app.people': ['read', 'insert', 'update'] }, attributes: { region: 'eu' } })).status).toBe(200);
    expect((await as('owner', 'PUT', '/policies/writer_region', { schema: 'app.people', users: ['writer'], using: "region = user_attr('region')", check: "region = user_attr('region')" })).status).toBe(200);
    const tok = (await as('owner', 'POST', '/users/writer/tokens', {})).json.token;
    const w = (method: string, p: string, body?: unknown) => srv.request(method, `${T}${p}`, { token: tok, body });
    const ok = await w('PUT', '/rows/app.people/w1', { id: 'w1', region: 'eu' });
    expect(ok.status).toBe(200);
    const bad = await w('PUT', '/rows/app.people/w2', { id: 'w2', region: 'us' });
    expect([bad.status, bad.json.error]).toEqual([403, 'forbidden']);
    expect((await w('POST', '/rows/app.people/_batch', [{ id: 'w3', region: 'eu' }, { id: 'w4', region: 'us' }])).status).toBe(403);
    expect((await w('PUT', '/rows/app.people/u1', { id: 'u1', region: 'eu' })).status).toBe(403); // a hidden row
    expect((await w('POST', '/sql', { sql: "INSERT INTO app.people (id, region) VALUES ('w5', 'us')" })).status).toBe(403);
    const owner = await sql('owner', "SELECT id FROM app.people WHERE id LIKE 'w%' OR id = 'u1' ORDER BY id");
    expect(owner.json.rows).toEqual([{ id: 'u1' }, { id: 'w1' }]);
    expect((await sql('owner', "SELECT region FROM app.people WHERE id = 'u1'")).json.rows).toEqual([{ region: 'us' }]);
    // mgr has update without a policy; an UPDATE by a user under USING touches visible rows only
    expect((await as('owner', 'PUT', '/policies/mgr_eu', { schema: 'app.people', users: ['mgr'], using: "region = 'eu'" })).status).toBe(200);
    const up = await sql('mgr', "UPDATE app.people SET bio = 'x'");
    expect(up.status).toBe(200);
    expect((await sql('owner', "SELECT id FROM app.people WHERE bio = 'x' ORDER BY id")).json.rows).toEqual([{ id: 'e1' }, { id: 'e2' }, { id: 'w1' }]);
    expect((await as('owner', 'DELETE', '/policies/mgr_eu')).status).toBe(200);
  });

  it('the Elasticsearch surface: search, count, aggregations and get see only visible rows; an unreadable index is absent', async () => {
    expect((await as('owner', 'PUT', '/policies/people_region', { schema: 'app.people', users: ['alice'], using: "region = user_attr('region')" })).status).toBe(200);
    const es = (user: string, method: string, p: string, body?: unknown) => as(user, method, `/es/${p}`, body);
    const all = await es('owner', 'POST', 'app.people/_search', { query: { match_all: {} }, size: 50 });
    expect([all.status, all.json.hits?.total?.value]).toEqual([200, expect.any(Number)]);
    const s = await es('alice', 'POST', 'app.people/_search', { query: { match_all: {} }, size: 50, sort: [{ ssn: 'desc' }] });
    expect(s.status).toBe(200);
    expect(s.json.hits.hits.map((h: { _id: string }) => h._id).sort()).toEqual(['e1', 'e2', 'w1']); // w1: eu, written by 'writer'
    expect(JSON.stringify(s.json)).not.toMatch(/199|188/);
    const c = await es('alice', 'POST', 'app.people/_count', { query: { prefix: { ssn: '1' } } });
    expect([c.status, c.json.count]).toEqual([200, 1]);
    const agg = await es('alice', 'POST', 'app.people/_search', { size: 0, aggs: { r: { terms: { field: 'region' } } } });
    expect(agg.json.aggregations.r.buckets).toEqual([{ key: 'eu', doc_count: 3 }]);
    // aggregations computed over the rows a plan read (top_hits, significant_terms, a pipeline) see the same rows
    const post = await es('alice', 'POST', 'app.people/_search', {
      size: 0,
      aggs: {
        r: { terms: { field: 'region' }, aggs: { top: { top_hits: { size: 10, sort: [{ ssn: 'desc' }] } } } },
        sig: { significant_terms: { field: 'region', min_doc_count: 1 } },
        most: { max_bucket: { buckets_path: 'r>_count' } },
      },
    });
    expect(post.status).toBe(200);
    expect(post.json.aggregations.r.buckets[0].top.hits.hits.map((h: { _id: string }) => h._id).sort()).toEqual(['e1', 'e2', 'w1']);
    expect(post.json.aggregations.r.buckets[0].top.hits.total.value).toBe(3);
    expect(post.json.aggregations.sig.doc_count).toBe(3);
    expect(post.json.aggregations.most).toEqual({ value: 3, keys: ['eu'] });
    expect(JSON.stringify(post.json)).not.toMatch(/199|188|"us"/);
    const hid = await es('alice', 'GET', 'app.people/_doc/u1');
    expect(hid.json.found).toBe(false);
    expect(hid.text).not.toMatch(/199/);
    expect((await es('alice', 'GET', 'app.people/_doc/e1')).json.found).toBe(true);
    const no = await es('bob', 'POST', 'app.people/_search', { query: { match_all: {} } });
    // on the ES surface an index the user may not read does not exist for it (wildcards, _cat and _all skip it):
    // the same answer as an index that really is absent
    const absent = await es('bob', 'POST', 'app.nope/_search', { query: { match_all: {} } });
    expect([no.status, no.json.error?.type]).toEqual([absent.status, absent.json.error?.type]);
    expect(no.status).toBe(404);
    expect(no.text).not.toMatch(/111|199/);
    expect((await es('bob', 'GET', '_cat/indices?format=json')).text).not.toContain('app.people');
    expect((await es('alice', 'PUT', 'app.people/_doc/e7', { id: 'e7', region: 'eu' })).status).toBeGreaterThanOrEqual(400);
    expect((await as('owner', 'GET', '/rows/app.people/e7')).status).toBe(404);
  });

  it('column masks: every operator, surface and error sees the masked value, never the stored one', async () => {
    expect((await as('owner', 'PUT', '/users/carol', { grants: { 'app.people': ['read'] } })).status).toBe(200);
    const masks = { ssn: { kind: 'partial', n: 1 }, bio: { kind: 'redact' }, region: { kind: 'expr', expr: 'upper(region)' }, emb: { kind: 'null' } };
    for (const [column, m] of Object.entries(masks)) {
      expect((await as('owner', 'PUT', `/policies/carol_${column}`, { schema: 'app.people', users: ['carol'], mask: { column, ...m } })).status).toBe(200);
    }
    tokens.carol = (await as('owner', 'POST', '/users/carol/tokens', {})).json.token;
    const stored = /111|222|199|188|sea|hills|diver|"eu"|"us"/;
    const cases: Array<[string, unknown]> = [
      ["SELECT id, ssn, bio, region FROM app.people WHERE id = 'e1'", [{ id: 'e1', ssn: '****1', bio: '****', region: 'EU' }]],
      ["SELECT id FROM app.people WHERE ssn LIKE '1%'", []],
      ["SELECT id FROM app.people WHERE ssn = '111'", []],
      ["SELECT count(*) AS n FROM app.people WHERE bio LIKE '%sea%'", [{ n: 0 }]],
      ["SELECT count(*) AS n FROM app.people WHERE region = 'eu'", [{ n: 0 }]],
      ["SELECT id FROM app.people WHERE id IN ('e1', 'e2', 'u1', 'u2') ORDER BY ssn, id", [{ id: 'e1' }, { id: 'e2' }, { id: 'u2' }, { id: 'u1' }]],
      ["SELECT max(ssn) AS m, min(bio) AS b FROM app.people WHERE id IN ('e1', 'e2', 'u1', 'u2')", [{ m: '****9', b: '****' }]],
      ["SELECT region, count(*) AS n FROM app.people WHERE id IN ('e1', 'e2', 'u1', 'u2') GROUP BY region ORDER BY region", [{ region: 'EU', n: 2 }, { region: 'US', n: 2 }]],
      ["SELECT a.id FROM app.people a JOIN app.people b ON a.ssn = b.ssn WHERE a.id = 'e1'", [{ id: 'e1' }]],
      ["SELECT id FROM app.people WHERE (SELECT count(*) FROM app.people p WHERE p.ssn = '199') > 0", []],
    ];
    for (const [text, rows] of cases) {
      const r = await sql('carol', text);
      expect([text, r.status, r.json.rows]).toEqual([text, 200, rows]);
      expect(r.text).not.toMatch(stored);
    }
    const ex = await srv.request('POST', `${T}/sql?explain=true`, { token: tokens.carol, body: { sql: "SELECT id, ssn FROM app.people WHERE ssn LIKE '1%' ORDER BY ssn" } });
    expect(ex.status).toBe(200);
    expect(ex.text).not.toMatch(/111|222|199|188/);
    const err = await sql('carol', 'SELECT CAST(ssn AS INTEGER) / 0 + json_extract(bio, 1) FROM app.people');
    expect(err.text.replace(/"request_id":"\w+"/, '')).not.toMatch(stored); // a random request id may hold "111"
    const plan = await as('carol', 'POST', '/query', { op: 'filter', input: { op: 'scan', schema: 'app.people' }, predicate: { kind: 'binary', op: '=', left: { kind: 'col', name: 'ssn' }, right: { kind: 'lit', value: '111' } } });
    expect([plan.status, plan.json]).toEqual([200, []]);
    const got = await as('carol', 'GET', '/rows/app.people/e1');
    expect([got.status, got.json.ssn, got.json.bio, got.json.region, got.json.emb]).toEqual([200, '****1', '****', 'EU', undefined]);
    expect(got.text).not.toMatch(stored);
    // searching a masked column by its stored value is refused, without the value
    const fts = await as('carol', 'GET', '/fts/app.people/bio?q=sea');
    expect([fts.status, fts.json.error]).toEqual([403, 'forbidden']);
    const topk = await as('carol', 'POST', '/vector/app.people/topk', { vector: [0, 0], k: 2 });
    expect([topk.status, topk.json.error]).toEqual([403, 'forbidden']);
    const esr = await as('carol', 'POST', '/es/app.people/_search', { query: { match_all: {} }, size: 50 });
    expect(esr.status).toBe(200);
    expect(esr.text).not.toMatch(stored);
    const esq = await as('carol', 'POST', '/es/app.people/_count', { query: { prefix: { ssn: '1' } } });
    expect(esq.json.count).toBe(0);
    // aggregations group and compare the masked values (the aggregate takes the masks in place)
    const esa = await as('carol', 'POST', '/es/app.people/_search', { size: 0, aggs: { r: { terms: { field: 'region' } }, s: { terms: { field: 'ssn' } } } });
    expect(esa.status).toBe(200);
    expect(esa.json.aggregations.r.buckets.map((x: { key: string }) => x.key).sort()).toEqual(['EU', 'US']);
    expect(esa.text).not.toMatch(stored);
    // the owner still sees the stored values
    expect((await sql('owner', "SELECT ssn FROM app.people WHERE id = 'e1'")).json.rows).toEqual([{ ssn: '111' }]);
  });

  it('/ask and watch: the question runs under the user policy; watch refuses users without a grant (watch-security.test.ts: events under a policy)', async () => {
    const ask = await as('alice', 'POST', '/ask', { nl: 'list all people' });
    if (ask.status === 200) {
      const ids = (ask.json.rows as Array<Record<string, unknown>>).map((r) => r.id).filter((x) => x !== undefined);
      expect(ids.every((x) => x === 'e1' || x === 'e2' || x === 'w1')).toBe(true);
    }
    expect(ask.text).not.toMatch(/"u1"|"u2"|199|188/);
    const bob = await as('bob', 'POST', '/ask', { nl: 'list all people' });
    expect(bob.status).toBeGreaterThanOrEqual(400);
    expect(bob.text).not.toMatch(/111|199|sea/);
    const w = (user: string) => srv.request('GET', `${T}/watch?sql=${encodeURIComponent('SELECT * FROM app.people')}`, { token: tokens[user], headers: { accept: 'text/event-stream' } });
    const wb = await w('bob');
    expect([wb.status, wb.json.error]).toEqual([403, 'forbidden']);
  });

  it('a hidden row is absent to GET (404, as if it did not exist)', async () => {
    expect((await as('alice', 'GET', '/rows/app.people/e1')).status).toBe(200);
    const hidden = await as('alice', 'GET', '/rows/app.people/u1');
    expect([hidden.status, hidden.json.error]).toEqual([404, 'row_not_found']);
    expect(hidden.text).not.toMatch(/199|sea/);
  });

  it('tokens: only token managers mint, rotate, revoke; never a token broader than themselves', async () => {
    expect((await as('alice', 'GET', '/tokens')).status).toBe(403);
    expect((await as('alice', 'POST', '/users/alice/tokens', {})).status).toBe(403);
    expect((await as('mgr', 'POST', '/tokens', {})).status).toBe(403); // an owner token
    expect((await as('mgr', 'POST', '/users/alice/tokens', {})).status).toBe(201); // alice ⊆ mgr
    expect((await as('owner', 'PUT', '/users/wide', { grants: { 'app.people': ['delete'] } })).status).toBe(200);
    expect((await as('mgr', 'POST', '/users/wide/tokens', {})).status).toBe(403);
    expect((await as('mgr', 'PUT', '/users/mgr', { grants: { '*': ['read', 'insert', 'update', 'delete', 'manage'] } })).status).toBe(403);
    const list = await as('mgr', 'GET', '/tokens');
    expect(list.status).toBe(200);
    const ownerTok = list.json.find((t: { user?: string }) => t.user === undefined);
    expect((await as('mgr', 'DELETE', `/tokens/${ownerTok.token_id}`)).status).toBe(403);
    expect((await as('mgr', 'POST', `/tokens/${ownerTok.token_id}/rotate`, {})).status).toBe(403);
  });

  it('changes take effect on the next request: a grant revoked, a policy dropped, a user removed', async () => {
    expect((await as('owner', 'DELETE', '/policies/people_region')).json).toEqual({ deleted: true });
    const all = (await sql('owner', 'SELECT count(*) AS n FROM app.people')).json.rows;
    expect((await sql('alice', 'SELECT count(*) AS n FROM app.people')).json.rows).toEqual(all);
    expect((await as('owner', 'PUT', '/users/alice', { grants: {} })).status).toBe(200);
    expect((await sql('alice', 'SELECT count(*) AS n FROM app.people')).status).toBe(403);
    expect((await as('owner', 'DELETE', '/users/mgr')).json).toEqual({ deleted: true });
    expect((await as('mgr', 'GET', '/rows/app.people/e1')).status).toBe(403);
  });
});
