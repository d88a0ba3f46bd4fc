/**
 * The leak matrix's graph row: a node the user's row-level security hides is neither returned nor
 * used as a hop, on the graph routes (neighbors, bfs, path, dijkstra, reverse), the SQL graph table
 * functions and JSON graph plans; a hidden start reaches nothing; a relation to another table
 * filters by that table's policy. Real HTTPS against the built server.
 */
import { bootstrapEnv, TENANT, TestServer, TOKEN } from './server';
import { manifest } from './manifests';

const T = `/v1/tenants/${TENANT}`;
const ORG = manifest('app.org', ['id'], { id: 'str', region: { ty: 'str', required: true } });
const PEOPLE = manifest('app.people', ['id'], { id: 'str', region: { ty: 'str', required: true }, knows: 'json', org: 'str' }, `[[relations]]\nname = "knows"\ntarget = "app.people"\ncolumns = ["knows"]\n[[relations]]\nname = "works"\ntarget = "app.org"\ncolumns = ["org"]\n`);

const SAILORS = 'label = "name"\n' + manifest('fleet.sailors', ['id'], { id: 'i64', name: { ty: 'str', required: true }, home_port: 'str' });
// a relation declared on an edge table: its policy is the reached table's (sailors), not the edges'
const MENTORING = manifest('fleet.mentoring', ['mentor_id', 'mentee_id'], { mentor_id: 'i64', mentee_id: 'i64' }, `[[relations]]\nname = "mentors"\nsource = "fleet.sailors"\nsource_columns = ["mentor_id"]\ntarget = "fleet.sailors"\ncolumns = ["mentee_id"]\nforward = "sailor -> sailors they mentor"\nreverse = "sailor -> their mentors"\n`);

// e1 → u1 → e3: alice (eu) sees e1 and e3 but not u1, so e3 is reachable from e1 only through a hidden hop
const PEOPLE_ROWS = [
  { id: 'e1', region: 'eu', knows: ['u1', 'e2'], org: 'oe' },
  { id: 'e2', region: 'eu', knows: [], org: 'ou' },
  { id: 'e3', region: 'eu', knows: [], org: 'oe' },
  { id: 'u1', region: 'us', knows: ['e1', 'e3'], org: 'oe' },
];
const ORGS = [{ id: 'oe', region: 'eu' }, { id: 'ou', region: 'us' }];

describe('graph traversal under row-level security', () => {
  let srv: TestServer;
  let alice = '';
  const as = (token: string, method: string, p: string, body?: unknown) => srv.request(method, `${T}${p}`, { token, body });
  const both = async (p: string) => [(await as(TOKEN, 'GET', p)).json, (await as(alice, 'GET', p)).json];

  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
    for (const toml of [ORG, PEOPLE, SAILORS, MENTORING]) expect((await srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: toml, contentType: 'text/plain' })).status).toBe(200);
    expect((await as(TOKEN, 'POST', '/rows/app.org/_batch', ORGS)).status).toBe(200);
    expect((await as(TOKEN, 'POST', '/rows/app.people/_batch', PEOPLE_ROWS)).status).toBe(200);
    expect((await as(TOKEN, 'POST', '/rows/fleet.sailors/_batch', [{ id: 1, name: 'Ada Byrne', home_port: 'Oslo' }, { id: 2, name: 'Bo Lund', home_port: 'Bergen' }, { id: 3, name: 'Cy Moss', home_port: 'Oslo' }, { id: 4, name: 'Di Kerr', home_port: 'Hull' }])).status).toBe(200);
    expect((await as(TOKEN, 'POST', '/rows/fleet.mentoring/_batch', [{ mentor_id: 1, mentee_id: 2 }, { mentor_id: 1, mentee_id: 3 }, { mentor_id: 2, mentee_id: 4 }])).status).toBe(200);
    expect((await as(TOKEN, 'PUT', '/users/alice', { grants: { 'app.people': ['read'], 'app.org': ['read'], 'fleet.sailors': ['read'], 'fleet.mentoring': ['read'] }, attributes: { region: 'eu' } })).status).toBe(200);
    expect((await as(TOKEN, 'PUT', '/policies/no_bergen', { schema: 'fleet.sailors', users: ['alice'], using: "home_port <> 'Bergen'" })).status).toBe(200);
    for (const schema of ['app.people', 'app.org']) {
      expect((await as(TOKEN, 'PUT', `/policies/${schema.replace('.', '_')}_region`, { schema, users: ['alice'], using: "region = user_attr('region')" })).status).toBe(200);
    }
    alice = (await as(TOKEN, 'POST', '/users/alice/tokens', {})).json.token;
  }, 60_000);
  afterAll(async () => {
    await srv.stop();
  });

  it('the graph routes neither return a hidden node nor walk through one', async () => {
    expect(await both('/graph/app.people/neighbors?rel=knows&node=e1')).toEqual([['e2', 'u1'], ['e2']]);
    const [ob, ab] = await both('/graph/app.people/bfs?rel=knows&src=e1&depth=3');
    expect(ob.map((v: { node: string }) => v.node).sort()).toEqual(['e1', 'e2', 'e3', 'u1']);
    expect(ab).toEqual([{ node: 'e1', depth: 0 }, { node: 'e2', depth: 1 }]);
    expect(await both('/graph/app.people/path?rel=knows&src=e1&dst=e3')).toEqual([{ reachable: true, path: ['e1', 'u1', 'e3'] }, { reachable: false, path: [] }]);
    expect(await both('/graph/app.people/dijkstra?rel=knows&src=e1&dst=e3')).toEqual([{ path: ['e1', 'u1', 'e3'], total_weight: 2 }, { path: [], total_weight: null }]);
    // a hidden start reaches nothing (it would tell who the hidden row knows), nor is a hidden end reached
    expect(await both('/graph/app.people/neighbors?rel=knows&node=u1')).toEqual([['e1', 'e3'], []]);
    expect((await both('/graph/app.people/path?rel=knows&src=u1&dst=e1'))[1]).toEqual({ reachable: false, path: [] });
    expect((await both('/graph/app.people/path?rel=knows&src=e1&dst=u1'))[1]).toEqual({ reachable: false, path: [] });
    expect((await both('/graph/app.people/dijkstra?rel=knows&src=u1&dst=e1'))[1]).toEqual({ path: [], total_weight: null });
  });

  it('a relation to another table: reached nodes by that table\'s policy, the start by its own', async () => {
    expect(await both('/graph/app.people/neighbors?rel=works&node=e2')).toEqual([['ou'], []]);
    expect(await both('/graph/app.people/neighbors?rel=works&node=e1')).toEqual([['oe'], ['oe']]);
    expect(await both('/graph/app.people/neighbors?rel=works&node=u1')).toEqual([['oe'], []]);
    const [or, ar] = await both('/graph/app.people/reverse?rel=works&pk=oe');
    expect(or.map((r: { id: string }) => r.id).sort()).toEqual(['e1', 'e3', 'u1']);
    expect(ar.map((r: { id: string }) => r.id).sort()).toEqual(['e1', 'e3']);
  });

  it('SQL graph functions and JSON graph plans: no hidden node, no path through one', async () => {
    const sql = async (token: string, text: string) => (await as(token, 'POST', '/sql', { sql: text })).json.rows;
    const reach = "SELECT _node FROM graph_expand('app.people', 'knows', 'e1', 1, 3) ORDER BY _node";
    expect(await sql(TOKEN, reach)).toEqual([{ _node: 'e1' }, { _node: 'e2' }, { _node: 'e3' }, { _node: 'u1' }]); // e1 again through u1
    expect(await sql(alice, reach)).toEqual([{ _node: 'e2' }]);
    const lateral = "SELECT p.id AS a, g._node AS b FROM app.people p JOIN graph_expand('app.people', 'knows', p.id, 1, NULL) g ON true ORDER BY a, b";
    expect(await sql(alice, lateral)).toEqual([{ a: 'e1', b: 'e2' }]);
    const path = "SELECT _node FROM graph_path('app.people', 'knows', 'e1', 'e3') ORDER BY _step";
    expect(await sql(TOKEN, path)).toEqual([{ _node: 'e1' }, { _node: 'u1' }, { _node: 'e3' }]);
    expect(await sql(alice, path)).toEqual([]);
    const count = "SELECT count(*) AS n FROM graph_expand('app.people', 'knows', 'u1', 1, 2)";
    expect(await sql(alice, count)).toEqual([{ n: 0 }]);
    const plan = { op: 'graph_expand', schema: 'app.people', rel: 'knows', from: { kind: 'lit', value: 'e1' }, min_depth: 1, max_depth: null };
    const o = await as(TOKEN, 'POST', '/query', plan);
    const a = await as(alice, 'POST', '/query', plan);
    expect(o.json.map((r: { _node: string }) => r._node).sort()).toEqual(['e1', 'e2', 'e3', 'u1']);
    expect([a.status, a.json.map((r: { _node: string }) => r._node)]).toEqual([200, ['e2']]);
    expect(a.text).not.toMatch(/u1|e3/);
    const dj = await as(alice, 'POST', '/query', { op: 'graph_dijkstra', schema: 'app.people', rel: 'knows', src: { kind: 'lit', value: 'e1' }, dst: { kind: 'lit', value: 'e3' } });
    expect([dj.status, dj.json]).toEqual([200, []]);
  });

  it('/ask relation hops: a hidden sailor is neither answered nor a hop to its mentees', async () => {
    const ask = async (token: string, nl: string) => as(token, 'POST', '/ask', { nl, show_plan: true });
    const q = 'who does Ada Byrne mentor directly or indirectly?';
    const o = await ask(TOKEN, q);
    expect(JSON.stringify(o.json.plan)).toContain('"op":"graph_expand"');
    expect(o.json.rows.map((r: Record<string, unknown>) => Object.values(r)[0]).sort()).toEqual(['Bo Lund', 'Cy Moss', 'Di Kerr']);
    const a = await ask(alice, q);
    expect([a.status, a.json.rows.map((r: Record<string, unknown>) => Object.values(r)[0])]).toEqual([200, ['Cy Moss']]);
    expect(a.text).not.toMatch(/Bo Lund|Di Kerr|Bergen/);
    const one = await ask(alice, 'who does Ada Byrne mentor?');
    expect(one.json.rows.map((r: Record<string, unknown>) => Object.values(r)[0])).toEqual(['Cy Moss']);
  });
});
