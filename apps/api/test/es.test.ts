/**
 * The Elasticsearch 7.x surface (spec §4.11) driven by the official client
 * (@elastic/elasticsearch 7.17, unmodified) over real HTTPS against the built server.
 */
import { Client, errors } from '@elastic/elasticsearch';
import { bootstrapEnv, TENANT, TestServer, TOKEN } from './server';

const T = `/v1/tenants/${TENANT}`;

describe('Elasticsearch surface with the official 7.17 client', () => {
  let srv: TestServer;
  let es: Client;

  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
    es = new Client({
      node: `${srv.url}${T}/es`,
      headers: { authorization: `Bearer ${TOKEN}` },
      ssl: { rejectUnauthorized: false },
    });
  }, 60_000);
  afterAll(async () => {
    await es?.close();
    await srv.stop();
  });

  it('info reports 7.14.2 with the product header the client requires', async () => {
    const r = await es.info();
    expect(r.body.version.number).toBe('7.14.2');
    expect(r.headers?.['x-elastic-product']).toBe('Elasticsearch');
    expect((await es.ping()).statusCode).toBe(200);
  });

  it('creates an index with a mapping; documents are searchable the moment a write returns (no refresh)', async () => {
    const c = await es.indices.create({
      index: 'books',
      body: {
        settings: { number_of_shards: 1 },
        mappings: { properties: { title: { type: 'text' }, genre: { type: 'keyword' }, year: { type: 'integer' }, price: { type: 'double' } } },
      },
    });
    expect(c.body).toEqual({ acknowledged: true, shards_acknowledged: true, index: 'books' });
    const put = await es.index({ index: 'books', id: '1', body: { title: 'The Old Man and the Sea', genre: 'novel', year: 1952, price: 10 } });
    expect(put.statusCode).toBe(201);
    expect(put.body).toMatchObject({ _id: '1', _version: 1, result: 'created', _seq_no: 0, _primary_term: 1 });
    const hit = await es.search({ index: 'books', body: { query: { match: { title: 'sea' } } } });
    expect(hit.body.hits.total).toEqual({ value: 1, relation: 'eq' });
    expect(hit.body.hits.hits[0]._source).toEqual({ title: 'The Old Man and the Sea', genre: 'novel', year: 1952, price: 10 });
    const m = await es.indices.getMapping({ index: 'books' });
    expect(m.body.books.mappings.properties.genre).toEqual({ type: 'keyword' });
    await expect(es.indices.create({ index: 'books' })).rejects.toMatchObject({ statusCode: 400, body: { error: { type: 'resource_already_exists_exception' } } });
  });

  it('an index is a table of the tenant: its rows answer /sql in the same frame', async () => {
    const ids = (await srv.request('GET', `${T}/schemas`, { token: TOKEN })).json as string[];
    const id = ids.find((x) => x.startsWith('es.i_books_'));
    expect(id).toBeDefined();
    const r = await srv.request('POST', `${T}/sql`, { token: TOKEN, body: { sql: `SELECT _id, _version FROM ${id} ORDER BY _id` } });
    expect(r.status).toBe(200);
    expect(r.json.rows).toEqual([{ _id: '1', _version: 1 }]);
  });

  it('bulk: per-item results; a stale if_seq_no fails alone with the exact 409 reason', async () => {
    const r = await es.bulk({
      body: [
        { index: { _index: 'books', _id: '2' } }, { title: 'A Farewell to Arms', genre: 'novel', year: 1929, price: 12 },
        { index: { _index: 'books', _id: '3' } }, { title: 'The Sun Also Rises', genre: 'novel', year: 1926, price: 9 },
        { create: { _index: 'books', _id: '4' } }, { title: 'Men Without Women', genre: 'stories', year: 1927, price: 7 },
        { index: { _index: 'books', _id: '1', if_seq_no: 99, if_primary_term: 1 } }, { title: 'stale' },
        { update: { _index: 'books', _id: '2' } }, { doc: { price: 13 } },
      ],
    });
    expect(r.body.errors).toBe(true);
    expect(r.body.items.map((i: any) => Object.values(i)[0]).map((x: any) => x.status)).toEqual([201, 201, 201, 409, 200]);
    const stale = r.body.items[3].index;
    expect(stale.error.type).toBe('version_conflict_engine_exception');
    expect(stale.error.reason).toBe('[1]: version conflict, required seqNo [99], primary term [1]. current document has seqNo [0] and primary term [1]');
    expect((await es.get({ index: 'books', id: '1' })).body._source.title).toBe('The Old Man and the Sea');
    expect((await es.get({ index: 'books', id: '2' })).body).toMatchObject({ _version: 2, _source: { price: 13 } });
  });

  it('get, exists, get_source and count', async () => {
    const g = await es.get({ index: 'books', id: '3', _source_includes: 'title' });
    expect(g.body).toMatchObject({ _index: 'books', _id: '3', found: true, _source: { title: 'The Sun Also Rises' } });
    expect(g.body._source.year).toBeUndefined();
    expect((await es.exists({ index: 'books', id: '3' })).body).toBe(true);
    expect((await es.exists({ index: 'books', id: 'nope' })).body).toBe(false);
    expect((await es.getSource({ index: 'books', id: '4' })).body).toEqual({ title: 'Men Without Women', genre: 'stories', year: 1927, price: 7 });
    await expect(es.get({ index: 'books', id: 'nope' })).rejects.toBeInstanceOf(errors.ResponseError);
    expect((await es.count({ index: 'books', body: { query: { term: { genre: 'novel' } } } })).body.count).toBe(3);
    await expect(es.search({ index: 'missing' })).rejects.toMatchObject({ statusCode: 404, body: { error: { type: 'index_not_found_exception' } } });
  });

  it('Query DSL and aggregations in one request', async () => {
    const r = await es.search({
      index: 'books',
      body: {
        query: { bool: { filter: [{ range: { year: { gte: 1927 } } }], should: [{ match: { title: 'arms' } }] } },
        sort: ['_score', { year: 'asc' }],
        aggs: { genres: { terms: { field: 'genre' }, aggs: { avg_price: { avg: { field: 'price' } } } }, years: { histogram: { field: 'year', interval: 10 } } },
      },
    });
    expect(r.body.hits.hits.map((h: any) => h._id)).toEqual(['2', '4', '1']);
    expect(r.body.aggregations.genres.buckets).toEqual([
      { key: 'novel', doc_count: 2, avg_price: { value: 11.5 } },
      { key: 'stories', doc_count: 1, avg_price: { value: 7 } },
    ]);
    expect(r.body.aggregations.years.buckets.map((b: any) => [b.key, b.doc_count])).toEqual([[1920, 2], [1930, 0], [1940, 0], [1950, 1]]);
  });

  it('copy_to fields are searchable (their text is in the postings of the frame too)', async () => {
    await es.indices.create({ index: 'people', body: { mappings: { properties: { first: { type: 'text', copy_to: 'full' }, last: { type: 'text', copy_to: 'full' }, full: { type: 'text' } } } } });
    await es.index({ index: 'people', id: '1', body: { first: 'John', last: 'Smith' } });
    await es.index({ index: 'people', id: '2', body: { first: 'Jane', last: 'Smith' } });
    const r = await es.search({ index: 'people', body: { query: { match: { full: { query: 'john smith', operator: 'and' } } } } });
    expect(r.body.hits.hits.map((h: any) => h._id)).toEqual(['1']);
    expect(r.body.hits.hits[0]._source).toEqual({ first: 'John', last: 'Smith' });
  });

  it('term suggester', async () => {
    const r = await es.search({ index: 'books', body: { suggest: { fix: { text: 'farewel', term: { field: 'title' } } } } });
    expect(r.body.suggest.fix[0].options[0].text).toBe('farewell');
  });

  it('scroll and bulk helpers work unmodified', async () => {
    const result = await es.helpers.bulk({
      datasource: Array.from({ length: 250 }, (_, i) => ({ n: i, tag: i % 2 ? 'odd' : 'even' })),
      onDocument: () => ({ index: { _index: 'nums' } }),
    });
    expect(result.successful).toBe(250);
    expect(result.failed).toBe(0);
    const seen: number[] = [];
    for await (const page of es.helpers.scrollSearch<{ n: number }>({ index: 'nums', size: 40, body: { query: { term: { tag: 'odd' } }, sort: ['n'] } })) {
      for (const h of page.documents) seen.push(h.n);
    }
    expect(seen).toEqual(Array.from({ length: 125 }, (_, i) => 2 * i + 1));
  });

  it('point in time with search_after pages a frozen view; aliases resolve for reads and writes', async () => {
    const pit = await es.openPointInTime({ index: 'books', keep_alive: '1m' });
    await es.index({ index: 'books', id: '9', body: { title: 'Islands in the Stream', genre: 'novel', year: 1970, price: 11 } });
    const seen: string[] = [];
    let after: unknown[] | undefined;
    for (;;) {
      const r = await es.search({ body: { size: 2, pit: { id: pit.body.id, keep_alive: '1m' }, sort: [{ year: 'asc' }], ...(after ? { search_after: after } : {}) } });
      const hits = r.body.hits.hits;
      if (!hits.length) break;
      seen.push(...hits.map((h: any) => h._id));
      after = hits[hits.length - 1].sort;
    }
    expect(seen).toEqual(['3', '4', '2', '1']);
    await es.closePointInTime({ body: { id: pit.body.id } });
    await es.indices.putAlias({ index: 'books', name: 'library' });
    expect((await es.count({ index: 'library' })).body.count).toBe(5);
    await es.index({ index: 'library', id: '10', body: { title: 'Winner Take Nothing', genre: 'stories', year: 1933, price: 8 } });
    expect((await es.get({ index: 'books', id: '10' })).body.found).toBe(true);
    expect(Object.keys((await es.indices.getAlias({ name: 'library' })).body)).toEqual(['books']);
  });

  it('a registered table is searchable read-only by its schema id', async () => {
    const toml = 'namespace = "lib"\ntable = "papers"\nprimary_key = ["id"]\n[[columns]]\nname = "id"\nty = "i64"\nrequired = true\n[[columns]]\nname = "body"\nty = "str"\n[[columns]]\nname = "year"\nty = "i64"\n[[fulltext]]\nfield = "body"\n';
    expect((await srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: toml, contentType: 'text/plain' })).status).toBe(200);
    const rows = [{ id: 1, body: 'shock waves in supersonic flow', year: 1990 }, { id: 2, body: 'the boundary layer', year: 2001 }];
    expect((await srv.request('POST', `${T}/rows/lib.papers/_batch`, { token: TOKEN, body: rows })).status).toBe(200);
    const r = await es.search({ index: 'lib.papers', body: { query: { match: { body: 'boundary' } }, aggs: { last: { max: { field: 'year' } } } } });
    expect(r.body.hits.hits.map((h: any) => [h._id, h._source])).toEqual([['2', { id: 2, body: 'the boundary layer', year: 2001 }]]);
    expect(r.body.aggregations.last.value).toBe(2001);
    expect((await es.get({ index: 'lib.papers', id: '1' })).body._source.year).toBe(1990);
    const w = await es.index({ index: 'lib.papers', id: '3', body: { body: 'x' } }).catch((e) => e);
    expect(w.statusCode).toBe(400);
    expect(w.body.error.reason).toMatch(/read-only/);
  });

  it('delete_by_query: an unbounded whole-index delete is refused; max_docs and real queries delete', async () => {
    const refused = await es.deleteByQuery({ index: 'nums', body: { query: { match_all: {} } } }).catch((e) => e);
    expect(refused.statusCode).toBe(400);
    expect(refused.body.error.type).toBe('illegal_argument_exception');
    expect(refused.body.error.reason).toMatch(/max_docs/);
    expect((await es.count({ index: 'nums' })).body.count).toBe(250);
    const some = await es.deleteByQuery({ index: 'nums', max_docs: 10, body: { query: { match_all: {} } } });
    expect(some.body).toMatchObject({ deleted: 10, total: 10, version_conflicts: 0, failures: [] });
    const odd = await es.deleteByQuery({ index: 'nums', body: { query: { term: { tag: 'odd' } } } });
    expect(odd.body.deleted).toBeGreaterThan(100);
    expect((await es.count({ index: 'nums', body: { query: { term: { tag: 'odd' } } } })).body.count).toBe(0);
  });

  it('scripts are refused with an ES-shaped 400 naming what to use instead; unknown mapping types are mapper_parsing_exception', async () => {
    const s = await es.update({ index: 'books', id: '1', body: { script: { source: 'ctx._source.price += 1' } } }).catch((e) => e);
    expect(s.statusCode).toBe(400);
    expect(s.body.error.reason).toMatch(/doc_as_upsert/);
    const n = await es.indices.create({ index: 'bad', body: { mappings: { properties: { x: { type: 'nested' } } } } }).catch((e) => e);
    expect(n.body.error.type).toBe('mapper_parsing_exception');
    expect(n.body.error.reason).toMatch(/nested/);
  });
});
