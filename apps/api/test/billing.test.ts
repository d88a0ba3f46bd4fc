/**
 * Credits and add-ons over real HTTPS: documented costs per request class, 402 quota_exceeded
 * when the credit cannot cover a request, 402 addon_required naming a disabled add-on on every
 * surface it covers, and refused or failed requests charge nothing.
 */
import { bootstrapEnv, OPERATOR, TENANT, TestServer, TOKEN } from './server';

const T = `/v1/tenants/${TENANT}`;
const DOCS = `namespace = "app"
table = "docs"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "str"
required = true
[[columns]]
name = "body"
ty = "str"
[[columns]]
name = "emb"
ty = "vector"
dim = 2
[vector]
column = "emb"
dim = 2
metric = "l2"
[[fulltext]]
field = "body"
`;

describe('credits and add-ons over real HTTPS', () => {
  let srv: TestServer;
  const req = (method: string, p: string, body?: unknown, token = TOKEN) => srv.request(method, `${T}${p}`, { token, body });
  const used = async () => (await req('GET', '/usage')).json.used as number;
  // a request is charged when its response finishes on the server, which can come after the client
  // has read it: wait (up to 2 s) for the charge to land, then compare
  const usedReaches = async (want: number): Promise<number> => {
    const end = Date.now() + 2_000;
    let v = await used();
    while (v !== want && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 20));
      v = await used();
    }
    return v;
  };
  const surfaces: Array<[string, string, unknown?]> = [
    ['GET', '/rows/app.docs/a'],
    ['PUT', '/rows/app.docs/z', { id: 'z', body: 'zzz' }],
    ['POST', '/sql', { sql: 'SELECT count(*) FROM app.docs' }],
    ['POST', '/query', { op: 'scan', schema: 'app.docs' }],
    ['POST', '/vector/app.docs/topk', { vector: [0, 0], k: 1 }],
    ['GET', '/fts/app.docs/body?q=hello'],
    ['GET', '/schemas'],
    ['GET', '/es/_cat/indices'],
  ];

  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
    expect((await srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: DOCS, contentType: 'text/plain' })).status).toBe(200);
    expect((await req('POST', '/rows/app.docs/_batch', [{ id: 'a', body: 'hello world', emb: [0, 0] }, { id: 'b', body: 'hello there', emb: [1, 1] }])).status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await srv.stop();
  });

  it('only the operator sets credits and add-ons; usage is visible to the tenant', async () => {
    expect((await req('PUT', '/credits', { credits: 100 })).status).toBe(403);
    expect((await req('PUT', '/addons/vector', { enabled: false })).status).toBe(403);
    const set = await req('PUT', '/credits', { credits: 100, reset: true }, OPERATOR);
    expect([set.status, set.json.credits, set.json.used]).toEqual([200, 100, 0]);
    expect((await req('PUT', '/credits', { credits: -1 }, OPERATOR)).status).toBe(400);
    expect((await req('PUT', '/addons/nope', { enabled: false }, OPERATOR)).status).toBe(404);
    const u = await req('GET', '/usage');
    expect(u.json).toMatchObject({ credits: 100, used: 0, remaining: 100, addons: { vector: true, es: true, ask: true } });
  });

  it('successful requests cost their class; failed and refused ones cost nothing', async () => {
    const costs = (await req('GET', '/usage')).json.costs;
    let before = await used();
    expect((await req('GET', '/rows/app.docs/a')).status).toBe(200);
    expect(await usedReaches(before + costs.read)).toBe(before + costs.read);
    before = await used();
    expect((await req('POST', '/sql', { sql: 'SELECT 1' })).status).toBe(200);
    expect(await usedReaches(before + costs.query)).toBe(before + costs.query);
    before = await used();
    expect((await req('GET', '/rows/app.docs/nope')).status).toBe(404);
    expect((await req('POST', '/sql', { sql: 'SELEC nonsense' })).status).toBe(400);
    expect((await req('GET', '/rows/app.docs/a', undefined, 'mmdb_unknown_token')).status).toBe(401);
    expect(await used()).toBe(before);
    const m = (await srv.request('GET', '/metrics')).text;
    expect(m).toMatch(new RegExp(`db_credits_used_total\\{tenant="${TENANT}",class="query"\\} \\d+`));
  });

  it('a disabled add-on answers 402 addon_required naming it, on every surface it covers, and charges nothing', async () => {
    expect((await req('PUT', '/addons/vector', { enabled: false }, OPERATOR)).status).toBe(200);
    expect((await req('PUT', '/addons/es', { enabled: false }, OPERATOR)).status).toBe(200);
    const before = await used();
    const probes: Array<[string, string, unknown, string]> = [
      ['POST', '/vector/app.docs/topk', { vector: [0, 0], k: 1 }, 'vector'],
      ['POST', '/vector/app.docs/put', { id: 'q', vector: [0, 0] }, 'vector'],
      ['POST', '/sql', { sql: 'SELECT id FROM app.docs ORDER BY emb <-> $1 LIMIT 1', params: [[0, 0]] }, 'vector'],
      ['POST', '/query', { op: 'vector_topk', schema: 'app.docs', vector: { kind: 'lit', value: [0, 0] }, k: 1 }, 'vector'],
      ['GET', '/es/_cat/indices', undefined, 'es'],
    ];
    for (const [m, p, b, addon] of probes) {
      const r = await req(m, p, b);
      expect([p, r.status, r.json?.error, r.text]).toEqual([p, 402, "addon_required", expect.stringContaining(`\\"${addon}\\"`)]);
    }
    expect(await used()).toBe(before);
    // what is not an add-on still works
    expect((await req('GET', '/fts/app.docs/body?q=hello')).status).toBe(200);
    expect((await req('PUT', '/addons/vector', { enabled: true }, OPERATOR)).status).toBe(200);
    expect((await req('PUT', '/addons/es', { enabled: true }, OPERATOR)).status).toBe(200);
    expect((await req('POST', '/vector/app.docs/topk', { vector: [0, 0], k: 1 })).status).toBe(200);
  });

  it('without credit every surface answers 402 quota_exceeded and charges nothing; management stays free', async () => {
    const u = (await req('GET', '/usage')).json;
    expect((await req('PUT', '/credits', { credits: u.used + 1 }, OPERATOR)).status).toBe(200);
    const before = await used();
    for (const [m, p, b] of surfaces) {
      const r = await req(m, p, b);
      if (m === 'GET' && p.startsWith('/rows')) {
        // a read costs 1: the last credit pays for it
        expect(r.status).toBe(200);
        continue;
      }
      expect([p, r.status, r.json?.error]).toEqual([p, 402, 'quota_exceeded']);
    }
    expect(await usedReaches(before + 1)).toBe(before + 1);
    expect((await req('GET', '/rows/app.docs/a')).status).toBe(402);
    expect((await req('GET', '/tokens')).status).toBe(200); // management is free
    // auth comes first: a bad token is 401, not 402
    expect((await req('POST', '/sql', { sql: 'SELECT 1' }, 'mmdb_nope')).status).toBe(401);
    expect((await req('PUT', '/credits', { credits: null }, OPERATOR)).status).toBe(200);
    expect((await req('POST', '/sql', { sql: 'SELECT 1' })).status).toBe(200);
  });
});
