/**
 * POST /ask (spec §4.6) over real HTTPS against the built server, on a small domain of our own
 * (sailors, ships, a self-relation): rows, cache hits that survive a restart and are dropped on a
 * schema change, the direction protocol, errors with suggestions, schemas, metrics, and the
 * optional model adapter against a local fake chat-completions endpoint.
 */
import * as http from 'http';
import type { AddressInfo } from 'net';
import { bootstrapEnv, TENANT, TestServer, TOKEN } from './server';

const T = `/v1/tenants/${TENANT}`;

const SAILORS = `namespace = "fleet"
table = "sailors"
primary_key = ["id"]
label = "name"
[[columns]]
name = "id"
ty = "i64"
required = true
[[columns]]
name = "name"
ty = "str"
required = true
[[columns]]
name = "home_port"
ty = "str"
[[columns]]
name = "born_year"
ty = "i64"
`;
const SHIPS = `namespace = "fleet"
table = "ships"
primary_key = ["id"]
label = "name"
[[columns]]
name = "id"
ty = "i64"
required = true
[[columns]]
name = "name"
ty = "str"
required = true
[[columns]]
name = "tonnage"
ty = "f64"
synonyms = ["weight"]
[[columns]]
name = "captain_id"
ty = "i64"
[[foreign_keys]]
columns = ["captain_id"]
references = "fleet.sailors"
[[relations]]
name = "captained_by"
target = "fleet.sailors"
columns = ["captain_id"]
forward = "ship -> its captain"
reverse = "sailor -> ships they command"
`;
const MENTORING = `namespace = "fleet"
table = "mentoring"
primary_key = ["mentor_id", "mentee_id"]
[[columns]]
name = "mentor_id"
ty = "i64"
required = true
[[columns]]
name = "mentee_id"
ty = "i64"
required = true
[[relations]]
name = "mentors"
source = "fleet.sailors"
source_columns = ["mentor_id"]
target = "fleet.sailors"
columns = ["mentee_id"]
forward = "sailor -> sailors they mentor"
reverse = "sailor -> their mentors"
`;

const sailors = [
  { id: 1, name: 'Ada Byrne', home_port: 'Oslo', born_year: 1950 },
  { id: 2, name: 'Bo Lund', home_port: 'Bergen', born_year: 1962 },
  { id: 3, name: 'Cy Moss', home_port: 'Oslo', born_year: 1971 },
  { id: 4, name: 'Di Kerr', home_port: 'Hull', born_year: 1980 },
];
const ships = [
  { id: 1, name: 'Sea Hawk', tonnage: 5200, captain_id: 1 },
  { id: 2, name: 'North Star', tonnage: 800, captain_id: 1 },
  { id: 3, name: 'Grey Gull', tonnage: 12000, captain_id: 2 },
];
const mentoring = [
  { mentor_id: 1, mentee_id: 2 },
  { mentor_id: 1, mentee_id: 3 },
  { mentor_id: 2, mentee_id: 4 },
];

const names = (rows: any[]) => rows.map((r) => Object.values(r)[0]).sort();

describe('POST /ask over real HTTPS (spec §4.6)', () => {
  let srv: TestServer;
  let fake: http.Server;
  let modelCalls = 0;
  const ask = (body: unknown, q = '') => srv.request('POST', `${T}/ask${q}`, { token: TOKEN, body });

  beforeAll(async () => {
    // a local OpenAI-compatible endpoint: answers a plan counting fleet.ships for any question
    fake = http.createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        modelCalls++;
        const asked = JSON.parse(body);
        const question: string = asked.messages[1].content;
        const plan = { op: 'aggregate', input: { op: 'scan', schema: 'fleet.ships', alias: 's' }, group: [], aggregates: [{ name: 'n', fn: 'count', args: [], star: true }] };
        const content = question.includes('gibberish') ? 'not json at all' : '```json\n' + JSON.stringify(plan) + '\n```';
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ choices: [{ message: { role: 'assistant', content } }] }));
      });
    });
    await new Promise<void>((r) => fake.listen(0, '127.0.0.1', () => r()));
    const url = `http://127.0.0.1:${(fake.address() as AddressInfo).port}/v1`;
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv({ DB_NL_MODEL_URL: url, DB_NL_MODEL: 'fake', DB_NL_LEXICON_REFRESH_MS: '0' })).start();
    for (const toml of [SAILORS, SHIPS, MENTORING]) expect((await srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: toml, contentType: 'text/plain' })).status).toBe(200);
    for (const [t, rows] of [['sailors', sailors], ['ships', ships], ['mentoring', mentoring]] as const) {
      expect((await srv.request('POST', `${T}/rows/fleet.${t}/_batch`, { token: TOKEN, body: rows })).status).toBe(200);
    }
  }, 60_000);
  afterAll(async () => {
    await srv.stop();
    fake.close();
  });

  it('answers lookups, counts, comparisons and superlatives from the manifests and the data', async () => {
    const count = await ask({ nl: 'how many ships are there?' });
    expect(count.status).toBe(200);
    expect(count.json).toMatchObject({ rows: [{ value: 3 }], cache: 'miss' });
    expect(names((await ask({ nl: 'sailors from Oslo' })).json.rows)).toEqual(['Ada Byrne', 'Cy Moss']);
    expect(names((await ask({ nl: 'sailors born before 1965' })).json.rows)).toEqual(['Ada Byrne', 'Bo Lund']);
    expect((await ask({ nl: 'the heaviest ship' })).json.rows).toEqual([{ name: 'Grey Gull' }]);
    expect(names((await ask({ nl: 'ships captained by Ada Byrne' })).json.rows)).toEqual(['North Star', 'Sea Hawk']);
    const r = await ask({ nl: 'who does Ada Byrne mentor?', show_plan: true });
    expect(names(r.json.rows)).toEqual(['Bo Lund', 'Cy Moss']);
    // the plan comes with the question's literals written in: it runs as is on POST /query
    const again = await srv.request('POST', `${T}/query`, { token: TOKEN, body: r.json.plan });
    expect(again.status).toBe(200);
    expect(names(again.json)).toEqual(['Bo Lund', 'Cy Moss']);
    expect(r.json.interpretation).toMatch(/mentors/);
    expect(names((await ask({ nl: 'who mentors Di Kerr?' })).json.rows)).toEqual(['Bo Lund']);
    const ex = await ask({ nl: 'how many ships are there?' }, '?explain=true');
    expect(ex.json.explain).toBeDefined();
    // runs like every surface: a query id (given or made) comes back, so the question can be cancelled
    expect(ex.headers['x-db-query-id']).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
  });

  it('the lexicon follows the data: a name written a moment ago is understood, and a hit sees the new rows', async () => {
    // unknown to the grammar before the write (this server's fake model answers instead)
    expect(JSON.stringify((await ask({ nl: 'where is Eve Stone from?' })).json)).not.toContain('Tromso');
    expect((await srv.request('PUT', `${T}/rows/fleet.sailors/5`, { token: TOKEN, body: { id: 5, name: 'Eve Stone', home_port: 'Tromso', born_year: 1990 } })).status).toBeLessThan(300);
    const r = await ask({ nl: 'where is Eve Stone from?' });
    expect(r.json).toMatchObject({ rows: [{ home_port: 'Tromso' }] });
  });

  it('a second question of the same shape is a cache hit with its own literals, counted in metrics', async () => {
    expect((await ask({ nl: 'how many sailors are from Oslo?' })).json).toMatchObject({ rows: [{ value: 2 }], cache: 'miss' });
    expect((await ask({ nl: 'how many sailors are from Bergen?' })).json).toMatchObject({ rows: [{ value: 1 }], cache: 'hit' });
    const m = await srv.request('GET', '/metrics', { token: null });
    expect(m.text).toMatch(/db_plan_cache_hits_total\{surface="nl"\} [1-9]/);
  });

  it('a hop along a self-relation with no stated direction is 400 ambiguous_graph_direction; direction answers it', async () => {
    const amb = await ask({ nl: 'mentors connections of Bo Lund' });
    expect(amb.status).toBe(400);
    const code = typeof amb.json.error === 'string' ? amb.json.error : amb.json.error.code;
    expect(code).toBe('ambiguous_graph_direction');
    expect(JSON.stringify(amb.json)).toContain('mentors');
    expect(names((await ask({ nl: 'mentors connections of Bo Lund', direction: 'forward' })).json.rows)).toEqual(['Di Kerr']);
    expect(names((await ask({ nl: 'mentors connections of Bo Lund', direction: 'reverse' })).json.rows)).toEqual(['Ada Byrne']);
    // ignored on a plan with no such hop
    expect((await ask({ nl: 'how many ships are there?', direction: 'reverse' })).status).toBe(200);
  });

  it('errors: bad bodies, unknown schemas, questions it cannot place (with suggestions)', async () => {
    expect((await ask({})).status).toBe(400);
    expect((await ask({ nl: 'x', direction: 'up' })).status).toBe(400);
    expect((await ask({ nl: 'ships '.repeat(1000) })).status).toBe(400);
    expect((await ask({ nl: 'how many ships', extra: 1 })).status).toBe(400);
    const nf = await ask({ nl: 'how many ships are there?', schemas: ['fleet.nope'] });
    expect(nf.status).toBe(404);
    expect(JSON.stringify(nf.json)).toContain('schema_not_found');
    const bad = await ask({ nl: 'how many saylors are gibberish?' });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.json)).toContain('validation_failed');
    expect(JSON.stringify(bad.json)).toContain('sailors');
  });

  it('a question the grammar cannot compile goes to the model once; its validated plan is cached', async () => {
    const before = modelCalls;
    const r = await ask({ nl: 'tally up the whole armada' });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ rows: [{ n: 3 }], cache: 'miss' });
    expect(modelCalls).toBe(before + 1);
    expect((await ask({ nl: 'tally up the whole armada' })).json.cache).toBe('hit');
    expect(modelCalls).toBe(before + 1);
  });

  it('intent entries survive a restart and are dropped when a schema they read changes', async () => {
    expect((await ask({ nl: 'how many sailors are from Hull?' })).json.cache).toBe('hit');
    await srv.stop();
    await srv.start();
    expect((await ask({ nl: 'how many sailors are from Oslo?' })).json).toMatchObject({ rows: [{ value: 2 }], cache: 'hit' });
    const changed = SAILORS + `[[columns]]\nname = "rank"\nty = "str"\n`;
    expect((await srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: changed, contentType: 'text/plain' })).status).toBe(200);
    expect((await ask({ nl: 'how many sailors are from Oslo?' })).json).toMatchObject({ rows: [{ value: 2 }], cache: 'miss' });
  }, 60_000);
});
