/**
 * WITH CHECK on every write surface: a user whose policy has a check writes through SQL INSERT
 * (VALUES, SELECT, RETURNING), UPDATE, BEGIN…COMMIT scripts, PATCH, JSON and NDJSON batches; every
 * new row is checked, a failing one answers 403 `forbidden` and nothing of the statement, script or
 * batch is written. Real HTTPS against the built server.
 */
import { bootstrapEnv, TENANT, TestServer, TOKEN } from './server';
import { manifest } from './manifests';

const T = `/v1/tenants/${TENANT}`;
const PEOPLE = manifest('app.people', ['id'], { id: 'str', region: { ty: 'str', required: true }, bio: 'str' });

describe('WITH CHECK on every write surface', () => {
  let srv: TestServer;
  let tok = '';
  const w = (method: string, p: string, body?: unknown) => srv.request(method, `${T}${p}`, { token: tok, body });
  const sql = (text: string) => w('POST', '/sql', { sql: text });
  const ids = async () => (await srv.request('POST', `${T}/sql`, { token: TOKEN, body: { sql: 'SELECT id, region, bio FROM app.people ORDER BY id' } })).json.rows;

  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
    expect((await srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: PEOPLE, contentType: 'text/plain' })).status).toBe(200);
    expect((await srv.request('POST', `${T}/rows/app.people/_batch`, { token: TOKEN, body: [{ id: 'e1', region: 'eu' }, { id: 'u1', region: 'us' }] })).status).toBe(200);
    const put = (p: string, body: unknown) => srv.request('PUT', `${T}${p}`, { token: TOKEN, body });
    expect((await put('/users/writer', { grants: { 'app.people': ['read', 'insert', 'update', 'delete'] }, attributes: { region: 'eu' } })).status).toBe(200);
    expect((await put('/policies/writer_region', { schema: 'app.people', users: ['writer'], using: "region = user_attr('region')", check: "region = user_attr('region')" })).status).toBe(200);
    tok = (await srv.request('POST', `${T}/users/writer/tokens`, { token: TOKEN, body: {} })).json.token;
  }, 60_000);
  afterAll(async () => {
    await srv.stop();
  });

  it('SQL INSERT and UPDATE: every new row is checked; a failing one fails the whole statement', async () => {
    const before = await ids();
    for (const text of [
      "INSERT INTO app.people (id, region) VALUES ('s1', 'us')",
      "INSERT INTO app.people (id, region) VALUES ('s1', 'eu'), ('s2', 'us')",
      "INSERT INTO app.people (id, region) SELECT id || 'x', 'us' FROM app.people",
      "UPDATE app.people SET region = 'us' WHERE id = 'e1'",
      "INSERT OR REPLACE INTO app.people (id, region) VALUES ('e1', 'us')",
      "INSERT OR REPLACE INTO app.people (id, region) VALUES ('u1', 'eu')", // a hidden row, overwritten by a passing one
    ]) {
      const r = await sql(text);
      expect([text, r.status, r.json.error]).toEqual([text, 403, 'forbidden']);
    }
    expect(await ids()).toEqual(before);
    const ok = await sql("INSERT INTO app.people (id, region) VALUES ('s1', 'eu'), ('s2', 'eu') RETURNING id");
    expect([ok.status, ok.json.returning]).toEqual([200, [{ id: 's1' }, { id: 's2' }]]);
    const sel = await sql("INSERT INTO app.people (id, region, bio) SELECT id || 'c', region, 'copy' FROM app.people WHERE id = 's1' RETURNING id, bio");
    expect([sel.status, sel.json.returning]).toEqual([200, [{ id: 's1c', bio: 'copy' }]]);
    const up = await sql("UPDATE app.people SET bio = 'upd' WHERE id LIKE 's%' RETURNING id");
    expect([up.status, up.json.rows?.length]).toEqual([200, 3]);
    expect((await ids()).filter((r: { id: string }) => r.id.startsWith('s'))).toEqual([
      { id: 's1', region: 'eu', bio: 'upd' }, { id: 's1c', region: 'eu', bio: 'upd' }, { id: 's2', region: 'eu', bio: 'upd' },
    ]);
  });

  it('a BEGIN…COMMIT script with one failing row writes nothing', async () => {
    const before = await ids();
    const r = await sql("BEGIN; INSERT INTO app.people (id, region) VALUES ('t1', 'eu'); UPDATE app.people SET bio = 'x' WHERE id = 's1'; INSERT INTO app.people (id, region) VALUES ('t2', 'us'); COMMIT");
    expect([r.status, r.json.error]).toEqual([403, 'forbidden']);
    expect(r.text).not.toMatch(/"us"/);
    expect(await ids()).toEqual(before);
    const ok = await sql("BEGIN; INSERT INTO app.people (id, region) VALUES ('t1', 'eu'); UPDATE app.people SET bio = 'x' WHERE id = 't1'; COMMIT");
    expect(ok.status).toBe(200);
    expect((await ids()).find((x: { id: string }) => x.id === 't1')).toEqual({ id: 't1', region: 'eu', bio: 'x' });
  });

  it('PATCH checks the merged row', async () => {
    const bad = await w('PATCH', '/rows/app.people/t1', { region: 'us' });
    expect([bad.status, bad.json.error]).toEqual([403, 'forbidden']);
    const ok = await w('PATCH', '/rows/app.people/t1', { bio: 'patched' });
    expect(ok.status).toBe(200);
    expect((await ids()).find((x: { id: string }) => x.id === 't1')).toEqual({ id: 't1', region: 'eu', bio: 'patched' });
    // a hidden row stays out of reach
    expect((await w('PATCH', '/rows/app.people/u1', { bio: 'x' })).status).toBe(403);
  });

  it('JSON and NDJSON batches: every row checked; a failing row writes nothing of its batch (NDJSON: of its chunk)', async () => {
    const before = await ids();
    const many = Array.from({ length: 150 }, (_, i) => ({ id: `b${String(i).padStart(3, '0')}`, region: 'eu' }));
    const bad = await w('POST', '/rows/app.people/_batch', [...many, { id: 'bx', region: 'us' }]);
    expect([bad.status, bad.json.error, bad.json.index]).toEqual([403, 'forbidden', 150]);
    const nd = [...many, { id: 'bx', region: 'us' }].map((r) => JSON.stringify(r)).join('\n') + '\n';
    const badNd = await srv.request('POST', `${T}/rows/app.people/_batch`, { token: tok, raw: nd, contentType: 'application/x-ndjson' });
    expect([badNd.status, badNd.json.error, badNd.json.line, badNd.json.committed]).toEqual([403, 'forbidden', 151, 0]);
    expect(await ids()).toEqual(before);
    const okNd = await srv.request('POST', `${T}/rows/app.people/_batch`, { token: tok, raw: many.map((r) => JSON.stringify(r)).join('\n') + '\n', contentType: 'application/x-ndjson' });
    expect([okNd.status, okNd.json.committed]).toEqual([200, 150]);
    expect((await ids()).length).toBe(before.length + 150);
  });

  it('the owner is bound by no check', async () => {
    expect((await srv.request('POST', `${T}/sql`, { token: TOKEN, body: { sql: "INSERT INTO app.people (id, region) VALUES ('o1', 'us')" } })).status).toBe(200);
  });
});
