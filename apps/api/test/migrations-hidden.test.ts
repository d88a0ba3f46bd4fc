/**
 * A running migration's shadow table is the store's own, never a table of the user's
 * (libs/migrations DESIGN.md "Shadow tables are internal"): while a migration is paused mid-backfill,
 * no surface lists or names it — GET /schemas and GET /schemas/{id}, rows, SQL, Elasticsearch
 * index patterns (`_search` on `*` and `prefix*`, `_cat/indices`, `_stats`, GET of a pattern),
 * English questions — and a user cannot register a table named like one.
 */
import { Client } from '@elastic/elasticsearch';
import { bootstrapEnv, ITEMS_TOML, TENANT, TestServer, TOKEN } from './server';

const T = `/v1/tenants/${TENANT}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a migration shadow is hidden from every user surface', () => {
  let srv: TestServer;
  let es: Client;
  const req = (method: string, p: string, body?: unknown, extra: { raw?: string; contentType?: string } = {}) =>
    srv.request(method, `${T}${p}`, { token: TOKEN, ...(body !== undefined ? { body } : {}), ...extra });
  const until = async (id: string, ok: (m: any) => boolean) => {
    const end = Date.now() + 60_000;
    for (;;) {
      const m = (await req('GET', `/migrations/${id}`)).json;
      if (ok(m)) return m;
      if (Date.now() > end) throw new Error(`migration stuck: ${JSON.stringify(m)}`);
      await sleep(20);
    }
  };
  /** Submits a rewrite migration and pauses it once some rows are copied: its shadow exists, half filled. */
  const pausedMidway = async (schema: string) => {
    const sub = await req('POST', '/migrations', { schema, operations: [{ op: 'add_column', name: 'note', ty: 'str', default: 'x' }], throttle: { max_rows_per_s: 40, batch_size: 5 } });
    expect([sub.status, sub.json.error]).toEqual([201, undefined]);
    await until(sub.json.id, (m) => m.progress.done > 0);
    expect((await req('POST', `/migrations/${sub.json.id}/pause`)).status).toBe(200);
    const table = schema.split('.')[1];
    return { id: sub.json.id as string, shadow: `${schema.split('.')[0]}.${table}__mig_${(sub.json.id as string).toLowerCase()}` };
  };

  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
    es = new Client({ node: `${srv.url}${T}/es`, headers: { authorization: `Bearer ${TOKEN}` }, ssl: { rejectUnauthorized: false } });
    expect((await req('POST', '/schemas', undefined, { raw: ITEMS_TOML, contentType: 'text/plain' })).status).toBe(200);
    const rows = Array.from({ length: 120 }, (_, i) => ({ id: i, name: `n${i}`, price: i }));
    expect((await req('POST', '/rows/shop.items/_batch', rows)).status).toBe(200);
    await es.indices.create({ index: 'books', body: { mappings: { properties: { title: { type: 'text' }, genre: { type: 'keyword' } } } } });
    const body = Array.from({ length: 60 }, (_, i) => [{ index: { _index: 'books', _id: String(i) } }, { title: `book ${i} about waves`, genre: i % 2 ? 'sea' : 'sky' }]).flat();
    expect((await es.bulk({ body })).body.errors).toBe(false);
  }, 60_000);
  afterAll(async () => {
    await es?.close();
    await srv.stop();
  });

  it('GET /schemas, rows, SQL, Elasticsearch patterns and English questions never see it; its name is reserved', async () => {
    const items = await pausedMidway('shop.items');
    const booksId = ((await req('GET', '/schemas')).json as string[]).find((s) => s.startsWith('es.'))!;
    const books = await pausedMidway(booksId);
    const seen = (x: unknown) => JSON.stringify(x).includes('__mig_');

    // The schema list and a shadow's own id.
    const schemas = (await req('GET', '/schemas')).json as string[];
    expect(schemas).toEqual(['es.i_books_2aed5404', 'shop.items'].map((x) => (x.startsWith('es.') ? booksId : x)));
    expect(seen(schemas)).toBe(false);
    for (const s of [items.shadow, books.shadow]) {
      expect((await req('GET', `/schemas/${s}`)).status).toBe(404);
      expect((await req('GET', `/rows/${s}/1`)).json.error).toBe('schema_not_found');
      const q = await req('POST', '/sql', { sql: `SELECT count(*) FROM "${s}"` });
      // The answer to any table that does not exist.
      const none = await req('POST', '/sql', { sql: 'SELECT count(*) FROM "shop.no_such"' });
      expect([q.status, q.json.error, q.json.message]).toEqual([none.status, none.json.error, `no such table: ${s}`]);
    }
    // Writes still reach the table (and its shadow, by the dual write) while it is hidden.
    expect((await req('PUT', '/rows/shop.items/1000', { id: 1000, name: 'late', price: 1 })).status).toBe(200);

    // Elasticsearch: index patterns, _cat, _stats, GET of a pattern, an explicit name.
    for (const index of ['*', 'b*', '_all']) {
      const r = await es.search({ index, body: { query: { match_all: {} }, size: 100 } });
      expect(r.body.hits.total.value).toBe(60);
      expect(seen(r.body.hits.hits.map((h: any) => h._index))).toBe(false);
    }
    const cat = await es.cat.indices({ format: 'json' });
    expect(cat.body.map((x: any) => x.index)).toEqual(['books']);
    const stats = await es.indices.stats({ index: '*' });
    expect(Object.keys(stats.body.indices)).toEqual(['books']);
    expect(Object.keys((await es.indices.get({ index: '*' })).body)).toEqual(['books']);
    expect(seen((await es.indices.getMapping({ index: '*' })).body)).toBe(false);
    const direct = await es.search({ index: items.shadow }).catch((e) => e.meta);
    expect(direct.statusCode).toBe(404);
    // A plain table is still searchable by its schema id.
    expect((await es.search({ index: 'shop.items', body: { size: 0 } })).body.hits.total.value).toBe(121);

    // English: the lexicon knows the table, not its shadow.
    const asked = await req('POST', '/ask', { nl: 'how many items are there?', show_plan: true });
    expect(asked.status).toBe(200);
    expect(asked.json.rows).toEqual([{ value: 121 }]);
    expect(seen(asked.json)).toBe(false);

    // A user cannot register a table named like a shadow (POST /schemas, SQL, Elasticsearch).
    const reserved = ITEMS_TOML.replace('table = "items"', 'table = "items__mig_x"');
    const put = await req('POST', '/schemas', undefined, { raw: reserved, contentType: 'text/plain' });
    expect([put.status, put.json.error]).toEqual([400, 'validation_failed']);
    const create = await req('POST', '/sql', { sql: 'CREATE TABLE t__mig_1 (id INTEGER PRIMARY KEY)' });
    expect([create.status, create.json.error]).toEqual([400, 'validation_failed']);
    const esCreate = await es.indices.create({ index: 'x__mig_1' }).catch((e) => e.meta);
    expect(esCreate.statusCode).toBe(400);

    // Resumed, both complete; the shadows are gone with their cleanup.
    for (const m of [items, books]) {
      expect((await req('POST', `/migrations/${m.id}/resume`)).status).toBe(200);
      await until(m.id, (x) => x.state === 'ReadyToCutover');
      expect((await req('POST', `/migrations/${m.id}/cutover`)).json.state).toBe('Completed');
      await until(m.id, (x) => x.cleaned === true);
    }
    expect((await req('GET', '/rows/shop.items/1000')).json).toEqual({ id: 1000, name: 'late', price: 1, note: 'x' });
    expect((await es.search({ index: 'books', body: { size: 0 } })).body.hits.total.value).toBe(60);
  }, 180_000);
});
