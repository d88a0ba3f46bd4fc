/**
 * Exact numbers on the Elasticsearch surface (issue 15): a `long` holds the full signed 64-bit
 * range and a big integer inside a document keeps every digit, in `_source` of get, mget,
 * search hits and `_bulk`, parsed by the same `parseJsonExact` as the row routes. Raw HTTPS
 * bodies (the official client parses answers with JSON.parse, which would round them; it is
 * used once to show it still talks to the surface).
 */
import { Client } from '@elastic/elasticsearch';
import { parseJsonExact } from '@mmdb/core';
import { bootstrapEnv, TENANT, TestServer, TOKEN } from './server';

const T = `/v1/tenants/${TENANT}`;
const ES = `${T}/es`;

const DOC1 = '{"n":9223372036854775807,"neg":-9223372036854775808,"u":18446744073709551615,"tag":"a","deep":{"ref":12345678901234567891,"list":[9007199254740993,-9007199254740993,1.5]}}';
const DOC2 = '{"n":9007199254740993,"tag":"b","deep":{"ref":-123456789012345678901234567890}}';

describe('Elasticsearch surface: exact 64-bit and big integers', () => {
  let srv: TestServer;
  const raw = async (method: string, p: string, body?: string, contentType = 'application/json') => {
    const r = await srv.request(method, ES + p, { token: TOKEN, ...(body === undefined ? {} : { raw: body, contentType }) });
    return { status: r.status, text: r.text, json: r.text ? (parseJsonExact(r.text) as any) : undefined };
  };

  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
    const c = await raw('PUT', '/nums', JSON.stringify({ mappings: { properties: { n: { type: 'long' }, neg: { type: 'long' }, u: { type: 'unsigned_long' }, tag: { type: 'keyword' } } } }));
    expect(c.status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await srv.stop();
  });

  it('index and get: _source answers every digit (bigints, not doubles)', async () => {
    expect((await raw('PUT', '/nums/_doc/1', DOC1)).status).toBe(201);
    expect((await raw('PUT', '/nums/_doc/2', DOC2)).status).toBe(201);
    const g = await raw('GET', '/nums/_doc/1');
    expect(g.status).toBe(200);
    expect(g.text).toContain(`"_source":${DOC1}`);
    expect(g.json._source.n).toBe(2n ** 63n - 1n);
    expect((await raw('GET', '/nums/_source/2')).text).toBe(DOC2);
    const m = await raw('POST', '/nums/_mget', JSON.stringify({ ids: ['1', '2'] }));
    expect(m.text).toContain(`"_source":${DOC1}`);
    expect(m.text).toContain(`"_source":${DOC2}`);
  });

  it('search hits, sort and term queries on longs beyond 2^53', async () => {
    const s = await raw('POST', '/nums/_search', JSON.stringify({ query: { match_all: {} }, sort: [{ n: 'desc' }] }));
    expect(s.status).toBe(200);
    expect(s.json.hits.hits.map((h: any) => h._id)).toEqual(['1', '2']);
    expect(s.text).toContain(`"_source":${DOC1}`);
    expect(s.text).toContain(`"_source":${DOC2}`);
    // a query's numbers are parameters: compared as doubles (README, "Differences")
    const t = await raw('POST', '/nums/_search', '{"query":{"term":{"n":9007199254740993}}}');
    expect(t.json.hits.hits.map((h: any) => h._id)).toEqual(['2']);
    const a = await raw('POST', '/nums/_search', '{"size":0,"aggs":{"hi":{"max":{"field":"n"}}}}');
    expect(a.json.aggregations.hi.value).toBe(2 ** 63);
    // stats sums longs near 2^63 as a double (as Elasticsearch does), not as an overflowing integer sum
    const st = await raw('POST', '/nums/_search', '{"size":0,"aggs":{"s":{"stats":{"field":"n"}}}}');
    expect(st.status).toBe(200);
    expect(st.json.aggregations.s).toMatchObject({ count: 2, max: 2 ** 63 });
  });

  it('_bulk keeps exact numbers; a long out of range and an inexact decimal fail alone, naming the field', async () => {
    const big = '{"n":-9223372036854775807,"deep":{"ref":99999999999999999999}}';
    const body = [
      '{"index":{"_index":"nums","_id":"3"}}', big,
      '{"index":{"_index":"nums","_id":"4"}}', '{"n":9223372036854775808}',
      '{"index":{"_index":"nums","_id":"5"}}', '{"n":1,"deep":{"x":0.10000000000000000001}}',
      '{"update":{"_index":"nums","_id":"1"}}', '{"doc":{"tag":"c","deep":{"ref":12345678901234567892}}}',
      '',
    ].join('\n');
    const r = await raw('POST', '/_bulk', body, 'application/x-ndjson');
    expect(r.status).toBe(200);
    expect(r.json.errors).toBe(true);
    const items = r.json.items.map((i: any) => Object.values(i)[0] as any);
    expect(items.map((i: any) => i.status)).toEqual([201, 400, 400, 200]);
    expect(items[1].error.type).toBe('mapper_parsing_exception');
    expect(items[1].error.caused_by.reason).toMatch(/Value \[9223372036854775808\] is out of range for a long/);
    expect(items[2].error.type).toBe('mapper_parsing_exception');
    expect(items[2].error.reason).toMatch(/\[deep\.x\]/);
    expect(items[2].error.caused_by.reason).toMatch(/0\.10000000000000000001/);
    expect((await raw('GET', '/nums/_source/3')).text).toBe(big);
    expect((await raw('GET', '/nums/_source/1')).text).toBe(DOC1.replace('"tag":"a"', '"tag":"c"').replace('12345678901234567891', '12345678901234567892'));
    expect((await raw('GET', '/nums/_doc/4')).status).toBe(404);
  });

  it('dynamic mapping maps a big integer as long; the row is exact through /sql too', async () => {
    expect((await raw('PUT', '/dyn/_doc/x', '{"id":-9223372036854775808}')).status).toBe(201);
    const m = await raw('GET', '/dyn/_mapping');
    expect(m.json.dyn.mappings.properties.id.type).toBe('long');
    const table = (await srv.request('GET', `${T}/schemas`, { token: TOKEN })).json.find((s: any) => /^es\.i_dyn_/.test(s.id ?? s.schema ?? s)) as any;
    const id = table.id ?? table.schema ?? table;
    const q = await srv.request('POST', `${T}/sql`, { token: TOKEN, body: { sql: `SELECT _source FROM ${id} WHERE _id = 'x'` } });
    expect(q.text).toContain('{"id":-9223372036854775808}');
  });

  it('a registered table searched by its schema id answers its i64 column exactly', async () => {
    const toml = 'namespace = "big"\ntable = "t"\nprimary_key = ["id"]\n[[columns]]\nname = "id"\nty = "str"\nrequired = true\n[[columns]]\nname = "i"\nty = "i64"\n[[columns]]\nname = "j"\nty = "json"\n';
    expect((await srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: toml, contentType: 'text/plain' })).status).toBe(200);
    const row = '{"id":"k","i":-9223372036854775807,"j":{"ref":123456789012345678901}}';
    expect((await srv.request('POST', `${T}/rows/big.t`, { token: TOKEN, raw: row })).status).toBe(200);
    expect((await raw('GET', '/big.t/_doc/k')).text).toContain(`"_source":${row}`);
    const s = await raw('POST', '/big.t/_search', '{"query":{"term":{"i":-9223372036854775807}}}');
    expect(s.text).toContain(`"_source":${row}`);
  });

  it('the official client still talks to it (it parses answers as doubles itself)', async () => {
    const es = new Client({ node: `${srv.url}${ES}`, headers: { authorization: `Bearer ${TOKEN}` }, ssl: { rejectUnauthorized: false } });
    try {
      const r = await es.get({ index: 'nums', id: '2' });
      expect(r.body._source.tag).toBe('b');
      expect(r.body._source.n).toBe(9007199254740992); // JSON.parse in the client rounds it; our text did not (above)
    } finally {
      await es.close();
    }
  });
});
