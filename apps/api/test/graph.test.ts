/** Graph routes (spec §4.10) over real HTTPS against the built server. */
import { bootstrapEnv, TENANT, TestServer, TOKEN } from './server';

const T = `/v1/tenants/${TENANT}`;

const CITIES = `namespace = "geo"
table = "cities"
primary_key = ["name"]
[[columns]]
name = "name"
ty = "str"
required = true
[[columns]]
name = "country"
ty = "str"
`;

const COUNTRIES = `namespace = "geo"
table = "countries"
primary_key = ["code"]
[[columns]]
name = "code"
ty = "str"
required = true
`;

const ROADS = `namespace = "geo"
table = "roads"
primary_key = ["a", "b"]
[[columns]]
name = "a"
ty = "str"
required = true
[[columns]]
name = "b"
ty = "str"
required = true
[[columns]]
name = "km"
ty = "f64"
[[columns]]
name = "toll"
ty = "f64"
[[relations]]
name = "road"
source = "geo.cities"
source_columns = ["a"]
target = "geo.cities"
columns = ["b"]
weight = "km"
`;

const CITIES_IN = CITIES + `[[relations]]
name = "in_country"
target = "geo.countries"
columns = ["country"]
`;

describe('graph routes over real HTTPS (spec §4.10)', () => {
  let srv: TestServer;
  const get = (p: string) => srv.request('GET', `${T}/graph${p}`, { token: TOKEN });
  const q = (o: Record<string, string>) => new URLSearchParams(o).toString();

  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
    for (const toml of [COUNTRIES, CITIES_IN, ROADS]) {
      const r = await srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: toml, contentType: 'text/plain' });
      expect(r.status).toBe(200);
    }
    const cities = ['A', 'B', 'C', 'D', 'E'].map((name, i) => ({ name, country: i < 3 ? 'XX' : 'YY' }));
    expect((await srv.request('POST', `${T}/rows/geo.cities/_batch`, { token: TOKEN, body: cities })).status).toBe(200);
    const roads = [
      { a: 'A', b: 'B', km: 1, toll: 9 },
      { a: 'B', b: 'C', km: 1, toll: 9 },
      { a: 'A', b: 'C', km: 5, toll: 0 },
      { a: 'C', b: 'D', km: 2, toll: 0 },
    ];
    expect((await srv.request('POST', `${T}/rows/geo.roads/_batch`, { token: TOKEN, body: roads })).status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await srv.stop();
  });

  it('neighbors: an array of neighbour primary-key strings', async () => {
    const r = await get(`/geo.roads/neighbors?${q({ node: 'A', rel: 'road' })}`);
    expect(r.status).toBe(200);
    expect(r.json.sort()).toEqual(['B', 'C']);
    expect((await get(`/geo.cities/neighbors?${q({ node: 'A', rel: 'road' })}`)).json.sort()).toEqual(['B', 'C']);
  });

  it('bfs: {node, depth} in visit order, source first, default depth 3', async () => {
    const r = await get(`/geo.roads/bfs?${q({ src: 'A', rel: 'road' })}`);
    expect(r.status).toBe(200);
    expect(r.json[0]).toEqual({ node: 'A', depth: 0 });
    expect(new Map(r.json.map((v: any) => [v.node, v.depth]))).toEqual(new Map([['A', 0], ['B', 1], ['C', 1], ['D', 2]]));
    expect((await get(`/geo.roads/bfs?${q({ src: 'A', rel: 'road', depth: '1' })}`)).json).toHaveLength(3);
  });

  it('path: {reachable, path} within max_depth', async () => {
    expect((await get(`/geo.roads/path?${q({ rel: 'road', src: 'A', dst: 'D' })}`)).json).toEqual({ reachable: true, path: ['A', 'C', 'D'] });
    expect((await get(`/geo.roads/path?${q({ rel: 'road', src: 'A', dst: 'D', max_depth: '1' })}`)).json).toEqual({ reachable: false, path: [] });
    expect((await get(`/geo.roads/path?${q({ rel: 'road', src: 'D', dst: 'A' })}`)).json).toEqual({ reachable: false, path: [] });
  });

  it('dijkstra: weight column, weight_field, weights_json overrides, unreachable', async () => {
    const d = (o: Record<string, string>) => get(`/geo.roads/dijkstra?${q({ rel: 'road', src: 'A', dst: 'D', ...o })}`);
    expect((await d({})).json).toEqual({ path: ['A', 'B', 'C', 'D'], total_weight: 4 });
    expect((await d({ weight_field: 'toll' })).json).toEqual({ path: ['A', 'C', 'D'], total_weight: 0 });
    expect((await d({ weights_json: JSON.stringify({ 'A|B': 10 }) })).json).toEqual({ path: ['A', 'C', 'D'], total_weight: 7 });
    const un = await get(`/geo.roads/dijkstra?${q({ rel: 'road', src: 'D', dst: 'A' })}`);
    expect(un.status).toBe(200);
    expect(un.json).toEqual({ path: [], total_weight: null });
    for (const bad of [JSON.stringify({ 'A|B': -1 }), '{"A|B": "x"}', 'not json', '[1]']) {
      const r = await d({ weights_json: bad });
      expect(r.status).toBe(400);
      expect(r.json).toMatchObject({ error: 'validation_failed', message: expect.stringContaining('weights_json') });
    }
  });

  it('reverse: the rows pointing at pk; 400 on a self-relation', async () => {
    const r = await get(`/geo.cities/reverse?${q({ rel: 'in_country', pk: 'XX' })}`);
    expect(r.status).toBe(200);
    expect(r.json.map((x: any) => x.name).sort()).toEqual(['A', 'B', 'C']);
    const self = await get(`/geo.roads/reverse?${q({ rel: 'road', pk: 'C' })}`);
    expect(self.status).toBe(400);
    expect(self.json).toMatchObject({ error: 'validation_failed', message: expect.stringMatching(/source and target tables differ/) });
  });

  it('edges follow row updates and deletes made over HTTP', async () => {
    const put = await srv.request('PUT', `${T}/rows/geo.roads/A,C`, { token: TOKEN, body: { a: 'A', b: 'C', km: 1, toll: 0 } });
    expect(put.status).toBe(200);
    expect((await get(`/geo.roads/dijkstra?${q({ rel: 'road', src: 'A', dst: 'D' })}`)).json).toEqual({ path: ['A', 'C', 'D'], total_weight: 3 });
    const del = await srv.request('DELETE', `${T}/rows/geo.roads/A,B`, { token: TOKEN });
    expect(del.json).toEqual({ deleted: true });
    expect((await get(`/geo.roads/neighbors?${q({ node: 'A', rel: 'road' })}`)).json).toEqual(['C']);
    expect((await srv.request('PUT', `${T}/rows/geo.cities/E`, { token: TOKEN, body: { name: 'E', country: 'XX' } })).status).toBe(200);
    const r = await get(`/geo.cities/reverse?${q({ rel: 'in_country', pk: 'XX' })}`);
    expect(r.json.map((x: any) => x.name).sort()).toEqual(['A', 'B', 'C', 'E']);
    expect((await get(`/geo.cities/reverse?${q({ rel: 'in_country', pk: 'YY' })}`)).json.map((x: any) => x.name)).toEqual(['D']);
  });

  it('missing or malformed parameters: 400 validation_failed naming the parameter', async () => {
    const cases: Array<[string, string]> = [
      [`/geo.roads/neighbors?${q({ rel: 'road' })}`, 'node'],
      [`/geo.roads/neighbors?${q({ node: 'A' })}`, 'rel'],
      [`/geo.roads/bfs?${q({ rel: 'road', src: 'A', depth: 'x' })}`, 'depth'],
      [`/geo.roads/bfs?${q({ rel: 'road', src: 'A', depth: '1000' })}`, 'depth'],
      [`/geo.roads/path?${q({ rel: 'road', src: 'A' })}`, 'dst'],
      [`/geo.roads/path?${q({ rel: 'road', src: 'A', dst: 'B', max_depth: '-1' })}`, 'max_depth'],
      [`/geo.roads/dijkstra?${q({ rel: 'road', dst: 'A' })}`, 'src'],
      [`/geo.cities/reverse?${q({ rel: 'in_country' })}`, 'pk'],
      [`/geo.roads/neighbors?rel=road&node=A&node=B`, 'node'],
    ];
    for (const [p, param] of cases) {
      const r = await get(p);
      expect([p, r.status]).toEqual([p, 400]);
      expect(r.json).toMatchObject({ error: 'validation_failed', message: expect.stringContaining(`"${param}"`) });
    }
  });

  it('unknown schema → 404 schema_not_found; unknown relation → 404 not_found', async () => {
    const s = await get(`/geo.nope/neighbors?${q({ rel: 'road', node: 'A' })}`);
    expect(s.status).toBe(404);
    expect(s.json.error).toBe('schema_not_found');
    const r = await get(`/geo.roads/neighbors?${q({ rel: 'nope', node: 'A' })}`);
    expect(r.status).toBe(404);
    expect(r.json.error).toBe('not_found');
  });

  it('needs a token', async () => {
    const r = await srv.request('GET', `${T}/graph/geo.roads/neighbors?rel=road&node=A`, { token: null });
    expect(r.status).toBe(401);
  });
});
