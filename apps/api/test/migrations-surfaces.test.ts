/**
 * Dual writes from every write surface, over real HTTPS (apps/api README "Migrations"): once a
 * rewrite migration's backfill is over (ReadyToCutover), only the dual writes can bring a
 * write into the new shape. Rows, batch, NDJSON, SQL and the Elasticsearch surface each write
 * the table; the cutover then finds every row's new shape current in the shadow
 * (`cutover.reshaped` 0: each was written in the frame of its source write) and the table
 * holds every write in the new shape.
 */
import { Client } from '@elastic/elasticsearch';
import { bootstrapEnv, TENANT, TestServer, TOKEN } from './server';

const T = `/v1/tenants/${TENANT}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('dual writes from every surface over real HTTPS', () => {
  let srv: TestServer;
  let es: Client;
  const req = (method: string, p: string, body?: unknown, extra: { raw?: string; contentType?: string } = {}) =>
    srv.request(method, `${T}${p}`, { token: TOKEN, ...(body !== undefined ? { body } : {}), ...extra });
  const until = async (id: string, states: string[]) => {
    const end = Date.now() + 60_000;
    for (;;) {
      const r = await req('GET', `/migrations/${id}`);
      if (states.includes(r.json.state)) return r.json;
      if (Date.now() > end) throw new Error(`migration ${id} stayed ${r.json.state}`);
      await sleep(25);
    }
  };

  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
    es = new Client({ node: `${srv.url}${T}/es`, headers: { authorization: `Bearer ${TOKEN}` }, ssl: { rejectUnauthorized: false } });
  }, 60_000);
  afterAll(async () => {
    await es?.close();
    await srv.stop();
  });

  it('rows, batch, NDJSON and SQL writes after the backfill are in the new shape after cutover, none reshaped', async () => {
    const toml = 'namespace = "app"\ntable = "kv"\nprimary_key = ["id"]\n[[columns]]\nname = "id"\nty = "i64"\nrequired = true\n[[columns]]\nname = "v"\nty = "i64"\n';
    expect((await srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: toml, contentType: 'text/plain' })).status).toBe(200);
    expect((await req('POST', '/rows/app.kv/_batch', Array.from({ length: 200 }, (_, i) => ({ id: i, v: i })))).status).toBe(200);
    const sub = await req('POST', '/migrations', { schema: 'app.kv', operations: [{ op: 'change_type', column: 'v', ty: 'str', using: "'#' || CAST(v AS TEXT)" }], throttle: { batch_size: 50 } });
    expect(sub.status).toBe(201);
    await until(sub.json.id, ['ReadyToCutover']);

    expect((await req('PUT', '/rows/app.kv/1', { id: 1, v: 101 })).status).toBe(200);
    expect((await req('DELETE', '/rows/app.kv/2')).status).toBe(200);
    expect((await req('POST', '/rows/app.kv/_batch', [{ id: 3, v: 103 }, { id: 500, v: 600 }])).status).toBe(200);
    const ndjson = `${JSON.stringify({ id: 4, v: 104 })}\n${JSON.stringify({ id: 501, v: 601 })}\n`;
    expect((await req('POST', '/rows/app.kv/_batch', undefined, { raw: ndjson, contentType: 'application/x-ndjson' })).status).toBe(200);
    expect((await req('POST', '/sql', { sql: 'INSERT INTO "app.kv" VALUES (502, 602); UPDATE "app.kv" SET v = v + 1000 WHERE id = 5' })).status).toBe(200);
    // SQL DELETE answers the keys (spec 4.5); they are deleted through the rows route.
    expect((await req('DELETE', '/rows/app.kv/6')).status).toBe(200);

    const done = await req('POST', `/migrations/${sub.json.id}/cutover`);
    expect([done.status, done.json.state]).toEqual([200, 'Completed']);
    // One frame switched the table onto the shadow's keys (no full-text/vector/relations here).
    expect(done.json.cutover).toMatchObject({ rows: 201, from_shadow: 201, reshaped: 0, switched: true });
    const get = async (id: number) => {
      const r = await req('GET', `/rows/app.kv/${id}`);
      return r.status === 200 ? r.json.v : r.status;
    };
    const expected: Array<[number, unknown]> = [[0, '#0'], [1, '#101'], [2, 404], [3, '#103'], [4, '#104'], [5, '#1005'], [6, 404], [7, '#7'], [500, '#600'], [501, '#601'], [502, '#602']];
    for (const [id, v] of expected) expect([id, await get(id)]).toEqual([id, v]);
  }, 120_000);

  it('Elasticsearch index, bulk and delete after the backfill are in the new shape after cutover', async () => {
    await es.indices.create({ index: 'notes', body: { mappings: { properties: { title: { type: 'text' }, n: { type: 'integer' } } } } });
    await es.bulk({ body: Array.from({ length: 50 }, (_, i) => [{ index: { _index: 'notes', _id: String(i) } }, { title: `note ${i}`, n: i }]).flat() });
    const schema = ((await req('GET', '/schemas')).json as string[]).find((x) => x.startsWith('es.i_notes_'))!;
    expect(schema).toBeDefined();
    // A new check: every row is validated (a rewrite), its values copied as they are.
    const sub = await req('POST', '/migrations', { schema, operations: [{ op: 'add_check', name: 'ok', expr: '1 = 1' }] });
    expect(sub.status).toBe(201);
    await until(sub.json.id, ['ReadyToCutover']);
    await es.index({ index: 'notes', id: '1', body: { title: 'changed', n: 1001 } });
    await es.index({ index: 'notes', id: '77', body: { title: 'new one', n: 77 } });
    await es.bulk({ body: [{ index: { _index: 'notes', _id: '78' } }, { title: 'bulk one', n: 78 }, { delete: { _index: 'notes', _id: '3' } }] });
    await es.delete({ index: 'notes', id: '4' });
    const done = await req('POST', `/migrations/${sub.json.id}/cutover`);
    expect([done.status, done.json.state]).toEqual([200, 'Completed']);
    expect(done.json.cutover).toMatchObject({ rows: 50, from_shadow: 50, reshaped: 0 });
    const got = async (id: string) => (await es.get({ index: 'notes', id }, { ignore: [404] })).body;
    const g1 = await got('1');
    expect(JSON.stringify(g1)).toContain('"found":true');
    expect(g1._source).toEqual({ title: 'changed', n: 1001 });
    expect((await got('78'))._source).toEqual({ title: 'bulk one', n: 78 });
    expect((await got('3')).found).toBe(false);
    expect((await got('4')).found).toBe(false);
    const hit = await es.search({ index: 'notes', body: { query: { match: { title: 'changed' } } } });
    expect(hit.body.hits.hits.map((h: any) => h._id)).toEqual(['1']);
  }, 120_000);
});
