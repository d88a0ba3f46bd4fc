/**
 * Spec §5.6 on `/sql` and the token routes (issue, rotate, revoke, a user's token issue): the Idempotency-Key record
 * is committed in the write's own frame through the rows routes' mechanism. The same key and
 * body answers the recorded answer (header `x-db-idempotent-replay: true`) and writes nothing;
 * the same key with another body is 409 `conflict`; both hold after a restart. A recorded token
 * answer is sealed under the caller's token: the log never holds the secret in clear, and
 * another caller presenting the key gets 409.
 */
import * as fs from 'fs';
import * as path from 'path';
import { bootstrapEnv, OPERATOR, TENANT, TestServer, TOKEN } from './server';

const T = `/v1/tenants/${TENANT}`;
const KEY = (n: number) => `01J8Z3NDEKTSV4RRFFQ69G5F${String(n).padStart(2, '0')}`;

/** Every file under `dir`, read as bytes, holds `s`. */
function onDisk(dir: string, s: string): boolean {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory() ? onDisk(p, s) : e.isFile() && fs.readFileSync(p).includes(s)) return true;
  }
  return false;
}

describe('Idempotency-Key on /sql and the token routes', () => {
  let srv: TestServer;
  const sql = (q: string, key?: string, token = TOKEN) => srv.request('POST', `${T}/sql`, { token, body: { sql: q }, headers: key ? { 'idempotency-key': key } : {} });
  const n = async () => (await sql("SELECT n FROM idem.c WHERE id = 'a'")).json.rows[0].n;
  const tokens = (method: string, p: string, key?: string, body?: unknown, token = TOKEN) =>
    srv.request(method, `${T}/tokens${p}`, { token, ...(body === undefined ? {} : { body }), headers: key ? { 'idempotency-key': key } : {} });
  const live = async () => (await tokens('GET', '')).json.map((x: any) => x.token_id) as string[];

  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
    const toml = 'namespace = "idem"\ntable = "c"\nprimary_key = ["id"]\n[[columns]]\nname = "id"\nty = "str"\nrequired = true\n[[columns]]\nname = "n"\nty = "i64"\n';
    expect((await srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: toml, contentType: 'text/plain' })).status).toBe(200);
    expect((await sql("INSERT INTO idem.c (id, n) VALUES ('a', 0)")).status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await srv.stop();
  });

  it('/sql UPDATE: a replay answers the recorded answer and applies nothing; another body under the key is 409', async () => {
    const a = await sql("UPDATE idem.c SET n = n + 1 WHERE id = 'a' RETURNING n", KEY(1));
    expect(a.status).toBe(200);
    expect(a.json.rows).toEqual([{ n: 1 }]);
    const b = await sql("UPDATE idem.c SET n = n + 1 WHERE id = 'a' RETURNING n", KEY(1));
    expect(b.status).toBe(200);
    expect(b.headers['x-db-idempotent-replay']).toBe('true');
    expect(b.json).toEqual(a.json);
    expect(await n()).toBe(1);
    const c = await sql("UPDATE idem.c SET n = n + 2 WHERE id = 'a'", KEY(1));
    expect(c.status).toBe(409);
    expect(c.json.error).toBe('conflict');
    // without a key the same statement applies again
    expect((await sql("UPDATE idem.c SET n = n + 1 WHERE id = 'a'")).status).toBe(200);
    expect(await n()).toBe(2);
  });

  it('/sql INSERT and a BEGIN…COMMIT script: replayed, written once', async () => {
    const ins = "INSERT INTO idem.c (id, n) VALUES ('b', 7)";
    const a = await sql(ins, KEY(2));
    expect(a.status).toBe(200);
    const b = await sql(ins, KEY(2));
    expect(b.status).toBe(200); // not 409 for the duplicate key: nothing ran
    expect(b.json).toEqual(a.json);
    const script = "BEGIN; UPDATE idem.c SET n = n + 10 WHERE id = 'a'; INSERT INTO idem.c (id, n) VALUES ('s', 1); COMMIT;";
    const s1 = await sql(script, KEY(3));
    expect(s1.status).toBe(200);
    const s2 = await sql(script, KEY(3));
    expect(s2.status).toBe(200);
    expect(s2.headers['x-db-idempotent-replay']).toBe('true');
    expect(s2.json).toEqual(s1.json);
    expect(await n()).toBe(12);
  });

  it('/sql refuses a key on a script that would write in several frames, and on DDL', async () => {
    const two = await sql("UPDATE idem.c SET n = n + 1 WHERE id = 'a'; UPDATE idem.c SET n = n + 1 WHERE id = 'b'", KEY(4));
    expect(two.status).toBe(400);
    expect(two.json.error).toBe('validation_failed');
    expect(two.json.message).toMatch(/BEGIN/);
    const ddl = await sql('CREATE TABLE idem_t (id INTEGER PRIMARY KEY)', KEY(5));
    expect(ddl.status).toBe(400);
    expect(await n()).toBe(12);
    expect((await sql('SELECT 1', 'not-a-key')).status).toBe(400);
  });

  let issued: any;
  let rotated: any;
  it('tokens: issue, rotate and revoke replay their recorded answers (the same secret), once', async () => {
    const before = await live();
    const a = await tokens('POST', '', KEY(10), { ttl_seconds: 3600 });
    expect(a.status).toBe(201);
    const b = await tokens('POST', '', KEY(10), { ttl_seconds: 3600 });
    expect(b.status).toBe(201);
    expect(b.headers['x-db-idempotent-replay']).toBe('true');
    expect(b.json).toEqual(a.json);
    expect((await live()).length).toBe(before.length + 1);
    expect((await srv.request('GET', `${T}/_ping`, { token: b.json.token })).status).toBe(200);
    expect((await tokens('POST', '', KEY(10), { ttl_seconds: 60 })).status).toBe(409);
    // another caller cannot read the answer recorded for this one
    const other = await tokens('POST', '', KEY(10), { ttl_seconds: 3600 }, OPERATOR);
    expect(other.status).toBe(409);
    issued = a.json;

    const r1 = await tokens('POST', `/${issued.token_id}/rotate`, KEY(11), { grace_seconds: 0 });
    expect(r1.status).toBe(201);
    const r2 = await tokens('POST', `/${issued.token_id}/rotate`, KEY(11), { grace_seconds: 0 });
    expect(r2.status).toBe(201);
    expect(r2.json).toEqual(r1.json);
    expect((await live()).filter((id) => id === r1.json.token_id)).toHaveLength(1);
    expect((await srv.request('GET', `${T}/_ping`, { token: issued.token })).status).toBe(401);
    rotated = r1.json;

    const d1 = await tokens('DELETE', `/${rotated.token_id}`, KEY(12));
    expect(d1.json).toEqual({ revoked: true });
    const d2 = await tokens('DELETE', `/${rotated.token_id}`, KEY(12));
    expect(d2.headers['x-db-idempotent-replay']).toBe('true');
    expect(d2.json).toEqual({ revoked: true }); // the recorded answer; without the key it is false
    expect((await tokens('DELETE', `/${rotated.token_id}`)).json).toEqual({ revoked: false });
    // the secrets are not in the tenant's files in clear (the recorded answers hold them sealed)
    const store = path.join(srv.dataDir, 'tenants', TENANT);
    expect(onDisk(store, issued.token_id)).toBe(true);
    expect(onDisk(store, issued.token)).toBe(false);
    expect(onDisk(store, rotated.token)).toBe(false);
  });

  let userToken: any;
  it('a user token issue (POST /users/{name}/tokens) replays the same way', async () => {
    expect((await srv.request('PUT', `${T}/users/ann`, { token: TOKEN, body: { grants: { 'idem.c': ['read'] } } })).status).toBe(200);
    const issue = () => srv.request('POST', `${T}/users/ann/tokens`, { token: TOKEN, body: {}, headers: { 'idempotency-key': KEY(13) } });
    const a = await issue();
    expect(a.status).toBe(201);
    const b = await issue();
    expect(b.headers['x-db-idempotent-replay']).toBe('true');
    expect(b.json).toEqual(a.json);
    expect((await srv.request('GET', `${T}/_ping`, { token: a.json.token })).status).toBe(200);
    userToken = a.json;
  });

  it('after a restart the recorded answers still replay, and nothing applies twice', async () => {
    await srv.stop();
    await srv.start();
    const b = await sql("UPDATE idem.c SET n = n + 1 WHERE id = 'a' RETURNING n", KEY(1));
    expect(b.headers['x-db-idempotent-replay']).toBe('true');
    expect(b.json.rows).toEqual([{ n: 1 }]);
    expect((await sql("UPDATE idem.c SET n = n + 2 WHERE id = 'a'", KEY(1))).status).toBe(409);
    expect(await n()).toBe(12);
    const t = await tokens('POST', '', KEY(10), { ttl_seconds: 3600 });
    expect(t.status).toBe(201);
    expect(t.json).toEqual(issued);
    const r = await tokens('POST', `/${issued.token_id}/rotate`, KEY(11), { grace_seconds: 0 });
    expect(r.json).toEqual(rotated);
    expect((await live()).includes(rotated.token_id)).toBe(false);
    const u = await srv.request('POST', `${T}/users/ann/tokens`, { token: TOKEN, body: {}, headers: { 'idempotency-key': KEY(13) } });
    expect(u.json).toEqual(userToken);
  });
});
