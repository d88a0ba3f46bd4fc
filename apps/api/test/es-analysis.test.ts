/**
 * Elasticsearch behaviours of issue 18e through the official client (@elastic/elasticsearch 7.17,
 * unmodified) over real HTTPS against the built server: completion contexts (category and geo,
 * mandatory on write and query), the english analyzer's Porter stems, and double sums added as
 * Elasticsearch adds them.
 */
import { Client } from '@elastic/elasticsearch';
import { bootstrapEnv, TENANT, TestServer, TOKEN } from './server';

jest.setTimeout(60_000);

describe('Elasticsearch analysis, completion contexts and metric sums (official 7.17 client)', () => {
  let srv: TestServer;
  let es: Client;

  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
    es = new Client({ node: `${srv.url}/v1/tenants/${TENANT}/es`, headers: { authorization: `Bearer ${TOKEN}` }, ssl: { rejectUnauthorized: false } });
  }, 60_000);
  afterAll(async () => {
    await es?.close();
    await srv.stop();
  });

  it('completion with geo and category contexts: nearby inputs, any named context, contexts mandatory on write and query', async () => {
    await es.indices.create({
      index: 'places',
      body: {
        mappings: {
          properties: {
            loc: { type: 'geo_point' },
            kind: { type: 'keyword' },
            name: { type: 'completion', contexts: [{ name: 'where', type: 'geo', precision: '5km', path: 'loc' }, { name: 'kind', type: 'category', path: 'kind' }] },
            tag: { type: 'completion', contexts: [{ name: 'where', type: 'geo', precision: 4 }] },
          },
        },
      },
    });
    await es.index({ index: 'places', id: 'ams', body: { name: 'Marriot Amsterdam', loc: { lat: 52.22, lon: 4.53 }, kind: 'hotel' } });
    await es.index({ index: 'places', id: 'ber', body: { name: 'Marriot Berlin', loc: '53.31,13.24', kind: 'hotel' } });
    await es.index({ index: 'places', id: 'mad', body: { name: 'Mar Madrid', loc: [-3.7, 40.42], kind: 'bar' } });
    await es.index({ index: 'places', id: 't1', body: { tag: { input: 'market', contexts: { where: { lat: 52.37, lon: 4.89 } } } } });

    const suggest = async (field: string, contexts: unknown) =>
      ((await es.search({ index: 'places', body: { suggest: { s: { prefix: 'mar', completion: { field, contexts } } } } })).body.suggest.s[0].options as Array<{ _id: string; _score: number }>);

    // 5km → geohash level 3 (Elasticsearch's geoHashLevelsForPrecision): the query's cell and its neighbours
    expect((await suggest('name', { where: { lat: 52.2263, lon: 4.543 } })).map((o) => o._id)).toEqual(['ams']);
    expect((await suggest('name', { where: 'u33d' })).map((o) => o._id)).toEqual(['ber']); // a geohash of Berlin
    // several names: a suggestion matching any of them (here: the Amsterdam cell, or the kind bar)
    expect((await suggest('name', { where: { lat: 52.22, lon: 4.53 }, kind: 'bar' })).map((o) => o._id).sort()).toEqual(['ams', 'mad']);
    // a boost multiplies the weight
    const boosted = await suggest('name', { kind: [{ context: 'hotel', boost: 3 }, 'bar'] });
    expect(boosted.map((o) => [o._id, o._score])).toEqual([['ams', 3], ['ber', 3], ['mad', 1]]);
    // a coarser query precision: the level-2 cell (shorter than the field's 4) matches the inputs' cells as a prefix
    expect((await suggest('tag', { where: { context: { lat: 52.0, lon: 4.0 }, precision: 2 } })).map((o) => o._id)).toEqual(['t1']);
    expect(await suggest('tag', { where: { lat: 40.42, lon: -3.7 } })).toEqual([]);

    await expect(es.index({ index: 'places', id: 'x', body: { tag: 'no context' } })).rejects.toMatchObject({
      statusCode: 400, body: { error: { type: 'illegal_argument_exception', reason: 'Contexts are mandatory in context enabled completion field [tag]' } },
    });
    expect((await es.exists({ index: 'places', id: 'x' })).body).toBe(false);
    for (const contexts of [undefined, {}, { where: [] }]) {
      const err = await suggest('tag', contexts).then(() => null, (e: { statusCode: number; body: unknown }) => e);
      expect(err?.statusCode).toBe(400);
      expect(JSON.stringify(err?.body)).toMatch(/Missing mandatory contexts in context query/);
    }
  });

  it('an english field matches every inflection through its Porter stem', async () => {
    await es.indices.create({ index: 'prose', body: { mappings: { properties: { body: { type: 'text', analyzer: 'english' } } } } });
    await es.bulk({ body: [
      { index: { _index: 'prose', _id: '1' } }, { body: 'The runner was running generously' },
      { index: { _index: 'prose', _id: '2' } }, { body: 'Relational databases and their relations' },
      { index: { _index: 'prose', _id: '3' } }, { body: 'Happy hopping' },
    ] });
    const ids = async (q: string) => ((await es.search({ index: 'prose', body: { query: { match: { body: q } } } })).body.hits.hits as Array<{ _id: string }>).map((h) => h._id).sort();
    expect(await ids('runs')).toEqual(['1']); // run ← running, runs
    expect(await ids('generous')).toEqual(['1']); // gener ← generously, generous
    expect(await ids('relate')).toEqual(['2']); // relat ← relational, relate
    expect(await ids('happiness hopped')).toEqual(['3']); // happi, hop
    const a = await es.indices.analyze({ body: { analyzer: 'english', text: "John's dogs are running" } });
    expect((a.body.tokens as Array<{ token: string }>).map((t) => t.token)).toEqual(['john', 'dog', 'run']);
  });

  it('sum and avg of doubles as Elasticsearch reports them (compensated summation)', async () => {
    await es.indices.create({ index: 'prices', body: { mappings: { properties: { p: { type: 'double' }, g: { type: 'keyword' } } } } });
    const body = [];
    for (let i = 0; i < 10; i++) body.push({ index: { _index: 'prices', _id: String(i) } }, { p: 0.1, g: i < 5 ? 'a' : 'b' });
    await es.bulk({ body });
    const r = await es.search({ index: 'prices', body: { size: 0, aggs: { s: { sum: { field: 'p' } }, a: { avg: { field: 'p' } }, st: { stats: { field: 'p' } }, by: { terms: { field: 'g' }, aggs: { s: { sum: { field: 'p' } } } } } } });
    expect(r.body.aggregations.s.value).toBe(1);
    expect(r.body.aggregations.a.value).toBe(0.1);
    expect(r.body.aggregations.st).toMatchObject({ count: 10, sum: 1, avg: 0.1 });
    expect(r.body.aggregations.by.buckets.map((b: { s: { value: number } }) => b.s.value)).toEqual([0.5, 0.5]);
  });
});
