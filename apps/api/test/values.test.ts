/**
 * Issue 15 over real HTTPS against the built server: values are never silently changed
 * (json through SQL UPDATE, big integers, vectors from SQL), Content-Type is honoured, SQL
 * DELETE says it only translates, PATCH merge patches, NDJSON and zero-vector details.
 */
import { parseJsonExact } from '@mmdb/core';
import { bootstrapEnv, TENANT, TestServer, TOKEN } from './server';

const T = `/v1/tenants/${TENANT}`;

const J_TOML = `namespace = "scratch"
table = "j"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "str"
required = true
[[columns]]
name = "tags"
ty = "json"
[[columns]]
name = "n"
ty = "i64"
[[columns]]
name = "price"
ty = "f64"
default = 1.5
`;

const P_TOML = `namespace = "shop"
table = "products"
primary_key = ["sku"]
[[columns]]
name = "sku"
ty = "str"
required = true
[[columns]]
name = "stock"
ty = "i64"
[[columns]]
name = "embedding"
ty = "vector"
dim = 4
[vector]
column = "embedding"
dim = 4
metric = "cosine"
`;

describe('values round-trip and bodies are honoured (issue 15)', () => {
  let srv: TestServer;
  const req = (m: string, p: string, o: Parameters<TestServer['request']>[2] = {}) => srv.request(m, T + p, { token: TOKEN, ...o });
  const sql = (q: string, params?: unknown[]) => req('POST', '/sql', { body: { sql: q, ...(params ? { params } : {}) } });
  const exact = (text: string) => parseJsonExact(text) as any;

  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
    for (const toml of [J_TOML, P_TOML]) expect((await req('POST', '/schemas', { raw: toml, contentType: 'text/plain' })).status).toBe(200);
  });
  afterAll(async () => {
    await srv.stop();
  });

  it('a SQL UPDATE leaves a json column it does not name as it was', async () => {
    expect((await req('POST', '/rows/scratch.j', { body: { id: 'a', tags: ['x', 'y'], n: 1 } })).status).toBe(200);
    const u = await sql(`UPDATE scratch.j SET n = 2 WHERE id='a'`);
    expect(u.json).toMatchObject({ kind: 'update', count: 1 });
    expect((await req('GET', '/rows/scratch.j/a')).json).toEqual({ id: 'a', tags: ['x', 'y'], n: 2, price: 1.5 });
    const s = await sql(`SELECT tags, json_extract(tags, '$[1]') AS second, tags ->> 0 AS first FROM scratch.j WHERE id = 'a'`);
    expect(s.json.columns).toEqual([{ name: 'tags', type: 'json' }, { name: 'second', type: 'text' }, { name: 'first', type: 'text' }]);
    expect(s.json.rows).toEqual([{ tags: ['x', 'y'], second: 'y', first: 'x' }]);
  });

  it('SQL writes and reads vector columns; an UPDATE that does not name the vector keeps it and its index entry', async () => {
    expect((await req('POST', '/rows/shop.products', { body: { sku: 'px0', stock: 0, embedding: [1, 0, 0, 0] } })).status).toBe(200);
    const up = await sql(`UPDATE shop.products SET stock = 1 WHERE sku = 'px0'`);
    expect(up.status).toBe(200);
    expect(up.json).toMatchObject({ kind: 'update', count: 1 });
    expect((await sql(`INSERT INTO shop.products (sku, stock, embedding) VALUES ('px1', 3, '[0,1,0,0]')`)).status).toBe(200);
    expect((await sql(`INSERT INTO shop.products (sku, embedding) VALUES ($1, $2)`, ['px2', [0, 0, 1, 0]])).status).toBe(200);
    const s = await sql(`SELECT sku, embedding FROM shop.products ORDER BY sku`);
    expect(s.json.columns).toEqual([{ name: 'sku', type: 'text' }, { name: 'embedding', type: 'vector' }]);
    expect(s.json.rows).toEqual([
      { sku: 'px0', embedding: [1, 0, 0, 0] },
      { sku: 'px1', embedding: [0, 1, 0, 0] },
      { sku: 'px2', embedding: [0, 0, 1, 0] },
    ]);
    const top = await req('POST', '/vector/shop.products/topk', { body: { vector: [1, 0.01, 0, 0], k: 1 } });
    expect(top.json[0]).toMatchObject({ id: 'px0' });
    expect(top.json[0].metadata).toMatchObject({ stock: 1 });
  });

  it('keeps integers beyond 2^53 exactly: in json columns, in i64 columns, in SQL answers', async () => {
    const w = await req('POST', '/rows/scratch.j', { raw: '{"id":"big","tags":{"order_ref":12345678901234567891,"ü":[-9223372036854775809]},"n":9223372036854775807}' });
    expect(w.status).toBe(200);
    const g = await req('GET', '/rows/scratch.j/big');
    expect(g.text).toContain('"order_ref":12345678901234567891');
    expect(exact(g.text)).toEqual({ id: 'big', tags: { order_ref: 12345678901234567891n, ü: [-9223372036854775809n] }, n: 9223372036854775807n, price: 1.5 });
    const s = await sql(`SELECT n, tags FROM scratch.j WHERE id = 'big'`);
    expect(s.text).toContain('"n":9223372036854775807');
    expect(exact(s.text).rows[0].tags.order_ref).toBe(12345678901234567891n);
    const q = await req('POST', '/query', { raw: '{"op":"filter","input":{"op":"scan","schema":"scratch.j"},"predicate":{"kind":"binary","op":"=","left":{"kind":"col","name":"n"},"right":{"kind":"lit","value":9223372036854775807}}}' });
    expect(q.status).toBe(200);
    expect(exact(q.text).map((r: { id: string }) => r.id)).toEqual(['big']);
    const x = await sql('SELECT 9007199254740993 AS x');
    expect(x.text).toContain('"rows":[{"x":9007199254740993}]');
    expect(x.json.columns).toEqual([{ name: 'x', type: 'integer' }]);
    // an i64 beyond 64 bits is refused, quoted as sent
    const o = await req('POST', '/rows/scratch.j', { raw: '{"id":"o","n":92233720368547758070}' });
    expect(o.json).toMatchObject({ error: 'type_mismatch', field: 'n' });
    expect(o.json.message).toContain('92233720368547758070');
  });

  it('quotes the values that were sent in error messages', async () => {
    const v = await req('POST', '/rows/shop.products', { raw: '{"sku":"q","embedding":[1,2,3,1e400]}' });
    expect(v.json).toMatchObject({ error: 'type_mismatch', field: 'embedding' });
    expect(v.json.message).toContain('[1,2,3,1e400]');
    const d = await req('POST', '/rows/scratch.j', { raw: '{"id":"d","tags":[0.10000000000000000001]}' });
    expect(d.json).toMatchObject({ error: 'type_mismatch', field: 'tags' });
    expect(d.json.message).toContain('0.10000000000000000001');
    const s = await req('POST', '/rows/scratch.j', { raw: '{"id":"s","n":"9007199254740993"}' });
    expect(s.json.message).toContain('"9007199254740993"');
  });

  it('JSON routes take application/json or +json only; anything else is invalid_body naming the expected type', async () => {
    const form = await req('POST', '/rows/scratch.j', { raw: 'id=f1&n=2', contentType: 'application/x-www-form-urlencoded' });
    expect(form.status).toBe(400);
    expect(form.json).toMatchObject({ error: 'invalid_body' });
    expect(form.json.message).toMatch(/application\/json/);
    const formJson = await req('POST', '/rows/scratch.j', { raw: '{"id":"f2"}', contentType: 'application/x-www-form-urlencoded' });
    expect(formJson.json.error).toBe('invalid_body');
    const text = await req('POST', '/rows/scratch.j', { raw: '{"id":"f3"}', contentType: 'text/plain' });
    expect(text.json.error).toBe('invalid_body');
    const none = await req('PUT', '/rows/scratch.j/f4', { raw: '{"id":"f4"}', headers: { 'content-type': '' } });
    expect(none.json.error).toBe('invalid_body');
    for (const id of ['f1', 'f2', 'f3', 'f4']) expect((await req('GET', `/rows/scratch.j/${id}`)).status).toBe(404);
    const sqlForm = await req('POST', '/sql', { raw: 'sql=SELECT+1', contentType: 'application/x-www-form-urlencoded' });
    expect(sqlForm.json.error).toBe('invalid_body');
    const plus = await req('POST', '/rows/scratch.j', { raw: '{"id":"f5"}', contentType: 'application/vnd.mmdb.row+json; charset=utf-8' });
    expect(plus.status).toBe(200);
    // the manifest route takes text/plain or application/toml, not JSON
    expect((await req('POST', '/schemas', { raw: J_TOML, contentType: 'application/toml' })).status).toBe(200);
    const js = await req('POST', '/schemas', { raw: JSON.stringify(J_TOML), contentType: 'application/json' });
    expect(js.json.error).toBe('invalid_body');
    expect(js.json.message).toMatch(/text\/plain/);
  });

  it('SQL DELETE answers pk as the row route segment and a note that nothing was removed', async () => {
    const d = await sql(`DELETE FROM scratch.j WHERE id = 'a'`);
    expect(d.json).toMatchObject({ kind: 'delete', schema: 'scratch.j', pk: 'a', pks: [['a']] });
    expect(d.json.note).toMatch(/^translated only: no row was removed/);
    expect((await req('GET', `/rows/scratch.j/${d.json.pk}`)).status).toBe(200);
  });

  it('PATCH merges (RFC 7396), honours If-Match and Idempotency-Key; PUT replaces the whole row', async () => {
    await req('PUT', '/rows/scratch.j/m', { body: { tags: { a: 1, b: { c: 2, d: 3 } }, n: 5, price: 9 } });
    const p = await req('PATCH', '/rows/scratch.j/m', { body: { tags: { b: { c: null, e: 4 }, z: [1] }, n: 6 }, contentType: 'application/merge-patch+json' });
    expect(p.status).toBe(200);
    expect(p.json).toMatchObject({ schema: 'scratch.j', pk: 'm', version: 2, created: false });
    expect((await req('GET', '/rows/scratch.j/m')).json).toEqual({ id: 'm', tags: { a: 1, b: { d: 3, e: 4 }, z: [1] }, n: 6, price: 9 });
    // If-Match: another version → 409 write_conflict; the current one → written
    const stale = await req('PATCH', '/rows/scratch.j/m', { body: { n: 7 }, headers: { 'if-match': '"1"' } });
    expect(stale.status).toBe(409);
    expect(stale.json).toMatchObject({ error: 'write_conflict', current_version: 2 });
    expect((await req('PATCH', '/rows/scratch.j/m', { body: { n: 7 }, headers: { 'if-match': '"2"' } })).headers.etag).toBe('"3"');
    // absent row: 404, or 412 with If-Match
    expect((await req('PATCH', '/rows/scratch.j/nope', { body: { n: 1 } })).json.error).toBe('row_not_found');
    expect((await req('PATCH', '/rows/scratch.j/nope', { body: { n: 1 }, headers: { 'if-match': '*' } })).status).toBe(412);
    // Idempotency-Key: the same patch replays, another body is 409
    const key = '01J00000000000000000000PAT';
    const a = await req('PATCH', '/rows/scratch.j/m', { body: { n: 8 }, headers: { 'idempotency-key': key } });
    const b = await req('PATCH', '/rows/scratch.j/m', { body: { n: 8 }, headers: { 'idempotency-key': key } });
    expect(b.headers['x-db-idempotent-replay']).toBe('true');
    expect(b.json).toEqual(a.json);
    expect((await req('PATCH', '/rows/scratch.j/m', { body: { n: 9 }, headers: { 'idempotency-key': key } })).status).toBe(409);
    expect((await req('GET', '/rows/scratch.j/m')).json.n).toBe(8);
    // a null sets the column to NULL; the key cannot change; PUT replaces (omitted columns take their default or NULL)
    await req('PATCH', '/rows/scratch.j/m', { body: { n: null } });
    expect((await req('GET', '/rows/scratch.j/m')).json.n).toBeNull();
    expect((await req('PATCH', '/rows/scratch.j/m', { body: { id: 'other' } })).json.error).toBe('validation_failed');
    await req('PUT', '/rows/scratch.j/m', { body: { n: 1 } });
    expect((await req('GET', '/rows/scratch.j/m')).json).toEqual({ id: 'm', n: 1, price: 1.5 });
  });

  it('NDJSON: chunk_discarded always carries first_line and last_line', async () => {
    const parse = await req('POST', '/rows/scratch.j/_batch?chunk=2', { raw: '{"id":"n1"}\n{"id":"n2"}\n{"id":\n{"id":"n4"}\n', contentType: 'application/x-ndjson' });
    expect(parse.json).toMatchObject({ error: 'invalid_body', line: 3, committed: 2, chunk_discarded: { first_line: 3, last_line: 3 } });
    const notObj = await req('POST', '/rows/scratch.j/_batch?chunk=5', { raw: '{"id":"n5"}\n[1]\n', contentType: 'application/x-ndjson' });
    expect(notObj.json).toMatchObject({ error: 'validation_failed', line: 2, committed: 0, chunk_discarded: { first_line: 1, last_line: 2 } });
  });

  it('a zero vector in a cosine table is refused at put and at top-k (no direction)', async () => {
    const row = await req('POST', '/rows/shop.products', { body: { sku: 'z', embedding: [0, 0, 0, 0] } });
    expect(row.json.error).toBe('validation_failed');
    expect(row.json.message).toMatch(/no direction/);
    expect((await req('POST', '/vector/standalone/put', { body: { id: 'a', embedding: [1, 2], metric: 'cosine' } })).status).toBe(200);
    const put = await req('POST', '/vector/standalone/put', { body: { id: 'z', embedding: [0, 0] } });
    expect(put.json.error).toBe('validation_failed');
    // integer literals beyond 2^53 in an embedding are floats like any other; 1e400 is refused, quoted
    expect((await req('POST', '/vector/standalone/put', { raw: '{"id":"b","embedding":[12345678901234567891,1]}' })).status).toBe(200);
    const inf = await req('POST', '/vector/standalone/put', { raw: '{"id":"i","embedding":[1e400,1]}' });
    expect(inf.json.error).toBe('validation_failed');
    expect(inf.json.message).toContain('1e400');
    const top = await req('POST', '/vector/shop.products/topk', { body: { vector: [0, 0, 0, 0] } });
    expect(top.json.error).toBe('validation_failed');
    expect(top.json.message).toMatch(/no direction/);
  });
});
