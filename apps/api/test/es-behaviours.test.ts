/**
 * Elasticsearch behaviours of issue 18e through the official client (@elastic/elasticsearch 7.17,
 * unmodified) over real HTTPS against the built server: completion contexts (category and geo,
 * mandatory on write and query), the english analyzer's Porter stems, double sums added as
 * Elasticsearch adds them, span queries, and the sort values of documents missing a field.
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

  it('span queries find terms near each other; a missing sort value prints as Elasticsearch prints it', async () => {
    await es.indices.create({ index: 'spans', body: { mappings: { properties: { t: { type: 'text' }, n: { type: 'long' }, x: { type: 'double' } } } } });
    await es.bulk({ body: [
      { index: { _index: 'spans', _id: '1' } }, { t: 'the quick brown fox', n: 5, x: 1.5 },
      { index: { _index: 'spans', _id: '2' } }, { t: 'quick fox' },
      { index: { _index: 'spans', _id: '3' } }, { t: 'a fox quick' },
    ] });
    const ids = async (query: unknown) => ((await es.search({ index: 'spans', body: { query } })).body.hits.hits as Array<{ _id: string }>).map((h) => h._id).sort();
    const near = (slop: number, inOrder = true) => ({ span_near: { clauses: [{ span_term: { t: 'quick' } }, { span_term: { t: 'fox' } }], slop, in_order: inOrder } });
    expect(await ids(near(0))).toEqual(['2']);
    expect(await ids(near(1))).toEqual(['1', '2']);
    expect(await ids(near(0, false))).toEqual(['2', '3']);
    expect(await ids({ span_first: { match: { span_multi: { match: { prefix: { t: 'fo' } } } }, end: 2 } })).toEqual(['2', '3']);
    // a long (or date) sorts a missing value as Long.MIN/MAX_VALUE, a double as -/+Infinity
    const r = await es.search({ index: 'spans', body: { sort: [{ n: 'desc' }, { x: 'asc' }, { _id: 'asc' }], _source: false } });
    expect(r.body.hits.hits.map((h: { sort: unknown[] }) => h.sort)).toEqual([[5, 1.5, '1'], [-9223372036854775808, 'Infinity', '2'], [-9223372036854775808, 'Infinity', '3']]);
    // every digit of the long, as Elasticsearch writes it (not a double's 9.223372036854776e+18)
    const raw = await srv.request('POST', `/v1/tenants/${TENANT}/es/spans/_search`, { token: TOKEN, body: { sort: [{ n: 'asc' }], _source: false, size: 1, from: 2 } });
    expect(raw.text).toContain('"sort":[9223372036854775807]');
  });

  it('date_nanos sorts and prints nanoseconds; docvalue_fields of one field in several formats list every value', async () => {
    await es.indices.create({ index: 'nanos', body: { mappings: { properties: { date: { type: 'date_nanos' } } } } });
    await es.bulk({ body: [
      { index: { _index: 'nanos', _id: 'first' } }, { date: '2018-10-29T12:12:12.123456789Z' },
      { index: { _index: 'nanos', _id: 'second' } }, { date: '2018-10-29T12:12:12.123456790Z' },
    ] });
    // the two differ by one nanosecond: only an exact sort orders them
    const raw = await srv.request('POST', `/v1/tenants/${TENANT}/es/nanos/_search`, { token: TOKEN, body: { sort: [{ date: 'desc' }], _source: false, docvalue_fields: [{ field: 'date', format: 'epoch_millis' }, { field: 'date', format: "uuuu-MM-dd'T'HH:mm:ss.SSSSSSSSSX" }] } });
    expect(raw.status).toBe(200);
    expect(raw.text).toContain('"sort":[1540815132123456790]');
    expect(raw.text).toContain('"sort":[1540815132123456789]');
    expect(raw.json.hits.hits.map((h: { _id: string }) => h._id)).toEqual(['second', 'first']);
    expect(raw.json.hits.hits[1].fields.date).toEqual(['1540815132123.456789', '2018-10-29T12:12:12.123456789Z']);
  });

  it('a get with a version conflicts unless the current version equals it, whatever the version type', async () => {
    await es.index({ index: 'versions', id: '1', body: { foo: 'bar' } });
    await es.index({ index: 'versions', id: '1', body: { foo: 'bar' } });
    for (const versionType of ['internal', 'external', 'external_gte'] as const) {
      expect((await es.get({ index: 'versions', id: '1', version: 2, version_type: versionType })).body._version).toBe(2);
      for (const version of [1, 10]) {
        await expect(es.get({ index: 'versions', id: '1', version, version_type: versionType })).rejects.toMatchObject({ statusCode: 409, body: { error: { type: 'version_conflict_engine_exception' } } });
      }
    }
  });

  it('custom analyzers from the index settings (char filter, tokenizer, filters) and the snowball analyzer', async () => {
    await es.indices.create({ index: 'custom', body: {
      settings: { analysis: {
        filter: { syn: { type: 'synonym', synonyms: ['quick, fast'] } },
        analyzer: { folded: { type: 'custom', char_filter: ['html_strip'], tokenizer: 'whitespace', filter: ['lowercase', 'asciifolding', 'syn', 'porter_stem'] } },
      } },
      mappings: { properties: { t: { type: 'text', analyzer: 'folded' } } },
    } });
    await es.index({ index: 'custom', id: '1', body: { t: '<p>Café</p> QUICK runners' } });
    const count = async (q: Record<string, unknown>) => (await es.count({ index: 'custom', ...q })).body.count;
    expect(await count({ body: { query: { match: { t: 'cafe fast runner' } } } })).toBe(1);
    expect(await count({ body: { query: { match_phrase: { t: 'fast runner' } } } })).toBe(1);
    expect(await count({ body: { query: { match: { t: 'slow' } } } })).toBe(0);
    // snowball (Porter2) at query time: bars → bar
    await es.index({ index: 'bars', id: '1', body: { field: 'foo bar' } });
    expect((await es.count({ index: 'bars', q: 'field:bars', analyzer: 'snowball' })).body.count).toBe(1);
    await expect(es.indices.create({ index: 'broken', body: { settings: { analysis: { analyzer: { x: { tokenizer: 'nope' } } } } } })).rejects.toMatchObject({ statusCode: 400 });
  });
});
