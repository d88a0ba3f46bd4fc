/**
 * The SQL spelling of users, grants and policies over POST /sql: CREATE ROLE / USER, ALTER, DROP,
 * GRANT, REVOKE, CREATE / DROP POLICY map to the same catalogue as the routes (GET /users,
 * GET /policies show them; they take effect on the next request), owner only; a bad statement
 * or a mixed script changes nothing. Real HTTPS against the built server.
 */
import { bootstrapEnv, TENANT, TestServer, TOKEN } from './server';
import { manifest } from './manifests';

const T = `/v1/tenants/${TENANT}`;
const PEOPLE = manifest('app.people', ['id'], { id: 'str', region: { ty: 'str', required: true } });

describe('CREATE ROLE, GRANT, REVOKE and CREATE POLICY over /sql', () => {
  let srv: TestServer;
  const sql = (token: string, text: string) => srv.request('POST', `${T}/sql`, { token, body: { sql: text } });
  const users = async () => (await srv.request('GET', `${T}/users`, { token: TOKEN })).json;

  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
    expect((await srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: PEOPLE, contentType: 'text/plain' })).status).toBe(200);
    expect((await srv.request('POST', `${T}/rows/app.people/_batch`, { token: TOKEN, body: [{ id: 'e1', region: 'eu' }, { id: 'u1', region: 'us' }] })).status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await srv.stop();
  });

  it('creates users, grants and policies the routes see, and they take effect on the next request', async () => {
    const r = await sql(TOKEN, "CREATE ROLE alice WITH ATTRIBUTES (region = 'eu'); GRANT SELECT, INSERT ON app.people TO alice; CREATE POLICY alice_region ON app.people TO alice USING (region = user_attr('region')) WITH CHECK (region = user_attr('region'))");
    expect([r.status, r.json.kind, r.json.statement]).toEqual([200, 'ddl', 'create policy']);
    expect(await users()).toEqual([expect.objectContaining({ name: 'alice', grants: { 'app.people': ['read', 'insert'] }, attributes: { region: 'eu' }, manage_tokens: false })]);
    const pols = (await srv.request('GET', `${T}/policies`, { token: TOKEN })).json;
    expect(pols).toEqual([{ id: 'alice_region', schema: 'app.people', users: ['alice'], using: "region = user_attr('region')", check: "region = user_attr('region')" }]);
    const tok = (await srv.request('POST', `${T}/users/alice/tokens`, { token: TOKEN, body: {} })).json.token;
    expect((await sql(tok, 'SELECT id FROM app.people')).json.rows).toEqual([{ id: 'e1' }]);
    expect((await sql(tok, "INSERT INTO app.people (id, region) VALUES ('x', 'us')")).status).toBe(403);
    expect((await sql(tok, "INSERT INTO app.people (id, region) VALUES ('e2', 'eu')")).status).toBe(200);
    // a restricted user may not run them
    const no = await sql(tok, 'GRANT ALL ON * TO alice');
    expect([no.status, no.json.error]).toEqual([403, 'forbidden']);
    // REVOKE and DROP POLICY: the next request sees it
    expect((await sql(TOKEN, 'REVOKE INSERT ON app.people FROM alice; DROP POLICY alice_region')).status).toBe(200);
    expect((await sql(tok, 'SELECT count(*) AS n FROM app.people')).json.rows).toEqual([{ n: 3 }]);
    expect((await sql(tok, "INSERT INTO app.people (id, region) VALUES ('e3', 'eu')")).status).toBe(403);
    expect((await users())[0].grants).toEqual({ 'app.people': ['read'] });
    expect((await sql(TOKEN, 'ALTER ROLE alice WITH MANAGE_TOKENS')).status).toBe(200);
    expect((await users())[0].manage_tokens).toBe(true);
    expect((await sql(TOKEN, 'DROP ROLE alice')).status).toBe(200);
    expect(await users()).toEqual([]);
    expect((await sql(tok, 'SELECT 1 FROM app.people')).status).toBe(403);
  });

  it('a bad statement, an unknown user or a mixed script changes nothing', async () => {
    const cases: Array<[string, number, string]> = [
      ['CREATE USER bob; GRANT FLY ON app.people TO bob', 400, 'validation_failed'],
      ['CREATE USER bob; GRANT SELECT ON app.people TO nobody', 404, 'not_found'],
      ['CREATE USER bob; SELECT 1', 400, 'validation_failed'],
      ['CREATE POLICY p ON app.people TO bob USING (region = ', 400, 'validation_failed'],
      ['CREATE USER owner', 400, 'validation_failed'],
      ['DROP ROLE nobody', 404, 'not_found'],
    ];
    for (const [text, status, error] of cases) {
      const r = await sql(TOKEN, text);
      expect([text, r.status, r.json.error]).toEqual([text, status, error]);
    }
    expect(await users()).toEqual([]);
    expect((await sql(TOKEN, 'DROP ROLE IF EXISTS nobody; CREATE USER IF NOT EXISTS bob; CREATE USER IF NOT EXISTS bob')).status).toBe(200);
    expect((await users()).map((u: { name: string }) => u.name)).toEqual(['bob']);
  });
});
