/**
 * Users, grants, policies, masks and credit usage live in the tenant's log: a restarted node
 * keeps the credits spent (batched into one log entry per interval), and a follower (real etcd,
 * real HTTPS) enforces the leader's users, grants, row-level security and masks on its reads and
 * reports the leader's usage.
 */
import { Cluster, sleep, until } from './cluster';
import { bootstrapEnv, OPERATOR, TENANT, TestServer, TOKEN } from './server';
import { manifest } from './manifests';

const T = `/v1/tenants/${TENANT}`;
const PEOPLE = manifest('app.people', ['id'], { id: 'str', region: { ty: 'str', required: true }, ssn: 'str' });
const ROWS = [
  { id: 'e1', region: 'eu', ssn: '111' },
  { id: 'e2', region: 'eu', ssn: '222' },
  { id: 'u1', region: 'us', ssn: '199' },
];

/** Schema, rows, user alice (eu rows, ssn masked), user bob (no grant); their tokens. */
async function setUp(s: TestServer): Promise<{ alice: string; bob: string }> {
  const as = (method: string, p: string, body?: unknown) => s.request(method, `${T}${p}`, { token: TOKEN, body });
  expect((await s.request('POST', `${T}/schemas`, { token: TOKEN, raw: PEOPLE, contentType: 'text/plain' })).status).toBe(200);
  expect((await as('POST', '/rows/app.people/_batch', ROWS)).status).toBe(200);
  expect((await as('PUT', '/users/alice', { grants: { 'app.people': ['read'] }, attributes: { region: 'eu' } })).status).toBe(200);
  expect((await as('PUT', '/users/bob', { grants: {} })).status).toBe(200);
  expect((await as('PUT', '/policies/alice_region', { schema: 'app.people', users: ['alice'], using: "region = user_attr('region')" })).status).toBe(200);
  expect((await as('PUT', '/policies/alice_ssn', { schema: 'app.people', users: ['alice'], mask: { column: 'ssn', kind: 'partial', n: 1 } })).status).toBe(200);
  const alice = (await as('POST', '/users/alice/tokens', {})).json.token;
  const bob = (await as('POST', '/users/bob/tokens', {})).json.token;
  return { alice, bob };
}

const usage = async (s: TestServer) => (await s.request('GET', `${T}/usage`, { token: TOKEN })).json;

describe('credit usage survives a restart', () => {
  let srv: TestServer;
  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
  }, 60_000);
  afterAll(async () => {
    await srv.stop();
  });

  it('the spent credits are in the log (one entry per interval), not only in memory', async () => {
    expect((await srv.request('PUT', `${T}/credits`, { token: OPERATOR, body: { credits: 1000, reset: true } })).status).toBe(200);
    for (let i = 0; i < 20; i++) expect((await srv.request('GET', `${T}/schemas`, { token: TOKEN })).status).toBe(200);
    const before = await usage(srv);
    expect(before).toMatchObject({ credits: 1000, used: 20, by_class: { read: 20 } });
    await sleep(1500); // the flush interval is one second
    await srv.stop();
    await srv.start();
    expect(await usage(srv)).toMatchObject({ credits: 1000, used: 20, remaining: 980, by_class: { read: 20 } });
    // a new period starts from zero, and stays there after a restart
    expect((await srv.request('PUT', `${T}/credits`, { token: OPERATOR, body: { credits: 5, reset: true } })).status).toBe(200);
    expect((await srv.request('GET', `${T}/schemas`, { token: TOKEN })).status).toBe(200);
    await sleep(1500);
    await srv.stop();
    await srv.start();
    expect(await usage(srv)).toMatchObject({ credits: 5, used: 1 });
  }, 60_000);
});

describe('a follower enforces the leader\'s users, grants, policies and masks', () => {
  const { c, get } = Cluster.holder({});
  let a: TestServer;
  let b: TestServer;
  let tokens: { alice: string; bob: string };
  beforeAll(async () => {
    a = get();
    tokens = await setUp(a);
  }, 60_000);

  it('reads through the follower as a restricted user see what the leader would show', async () => {
    expect((await c.op(a, 'PUT', `${T}/credits`, { credits: 500, reset: true })).status).toBe(200);
    for (let i = 0; i < 4; i++) expect((await a.request('POST', `${T}/sql`, { token: TOKEN, body: { sql: 'SELECT 1' } })).status).toBe(200);
    await sleep(1500);
    b = await c.node('node-b');
    const lsn = async (s: TestServer) => (await c.op(s, 'GET', '/v1/replication/status')).json.last_lsn;
    await until('node-b caught up', async () => (await lsn(b)) === (await lsn(a)));
    // the leader's usage, as the log carries it
    expect(await usage(b)).toMatchObject({ credits: 500, used: 12, by_class: { query: 12 } });
    const sql = (token: string, text: string) => b.request('POST', `${T}/sql`, { token, body: { sql: text } });
    const r = await sql(tokens.alice, 'SELECT id, ssn FROM app.people ORDER BY id');
    expect([r.status, r.json.rows]).toEqual([200, [{ id: 'e1', ssn: '****1' }, { id: 'e2', ssn: '****2' }]]);
    expect((await sql(tokens.alice, "SELECT count(*) AS n FROM app.people WHERE ssn LIKE '1%'")).json.rows).toEqual([{ n: 0 }]);
    expect((await b.request('GET', `${T}/rows/app.people/u1`, { token: tokens.alice })).status).toBe(404);
    const got = await b.request('GET', `${T}/rows/app.people/e1`, { token: tokens.alice });
    expect([got.status, got.json.ssn]).toEqual([200, '****1']);
    const no = await sql(tokens.bob, 'SELECT id FROM app.people');
    expect([no.status, no.json.error]).toEqual([403, 'forbidden']);
    expect((await sql(TOKEN, 'SELECT count(*) AS n FROM app.people')).json.rows).toEqual([{ n: 3 }]);
    // a change on the leader reaches the follower's next request
    expect((await a.request('DELETE', `${T}/policies/alice_region`, { token: TOKEN })).status).toBe(200);
    await until('the policy drop on node-b', async () => (await sql(tokens.alice, 'SELECT count(*) AS n FROM app.people')).json.rows?.[0]?.n === 3);
  }, 60_000);
});
