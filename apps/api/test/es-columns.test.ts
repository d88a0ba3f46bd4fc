/**
 * Mapped fields as typed columns of an index's table (libs/es-compat columns.ts, typed.ts), over
 * HTTPS against the built server: the columns hold each document's doc value (coerced,
 * normalized, multi-fields), several values leave the column null and are named in `_multi`;
 * aggregations read the columns and equal the aggregation code over the view; a write through
 * /sql that changes `_source` behind the columns' back is caught; a mapping that adds a field
 * backfills its column in the stored documents holding it (an online migration).
 */
import { bootstrapEnv, TENANT, TestServer, TOKEN } from './server';

const T = `/v1/tenants/${TENANT}`;

describe('ES typed columns', () => {
  let srv: TestServer;
  const es = async (method: string, p: string, body?: unknown) => {
    const r = await srv.request(method, `${T}/es${p}`, { token: TOKEN, ...(body === undefined ? {} : { body }) });
    if (r.status >= 300) throw new Error(`${method} ${p}: ${r.status} ${r.text}`);
    return r.json;
  };
  const sql = async (q: string) => {
    const r = await srv.request('POST', `${T}/sql`, { token: TOKEN, body: { sql: q } });
    if (r.status >= 300) throw new Error(`${q}: ${r.status} ${r.text}`);
    return r.json.rows as Array<Record<string, unknown>>;
  };
  const tableOf = async (index: string) => ((await srv.request('GET', `${T}/schemas`, { token: TOKEN })).json as string[]).find((x) => x.startsWith(`es.i_${index}_`))!;
  /** Plans the ES surface has run (the executor's latency count for surface "es"). */
  const plans = async () => Number(/db_query_latency_ms_count\{surface="es"\} (\d+)/.exec((await srv.request('GET', '/metrics')).text)?.[1] ?? 0);
  /** The same search through the aggregation code over the view (a post_filter takes that path). */
  const viewed = (index: string, body: Record<string, unknown>) => es('POST', `/${index}/_search`, { ...body, post_filter: { match_all: {} } });

  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
  }, 60_000);
  afterAll(async () => {
    await srv.stop();
  });

  it('each mapped field is a typed column holding the document\'s doc value; several values are held in _mv, an inexact one named in _multi', async () => {
    await es('PUT', '/cols', { mappings: { properties: {
      tag: { type: 'keyword' }, n: { type: 'long' }, price: { type: 'double' }, ok: { type: 'boolean' }, at: { type: 'date' },
      title: { type: 'text', fields: { raw: { type: 'keyword' } } }, low: { type: 'keyword', normalizer: 'lowercase' },
    } } });
    const docs = [
      { index: { _index: 'cols', _id: 'd1' } }, { tag: 'a', n: 5, price: 1.5, ok: true, at: '2020-01-02T03:04:05Z', title: 'Hello World', low: 'MiXeD' },
      { index: { _index: 'cols', _id: 'd2' } }, { tag: ['a', 'b'], n: '7', ok: 'false' },
      { index: { _index: 'cols', _id: 'd3' } }, { n: 9007199254740993 },
    ];
    const bulk = await srv.request('POST', `${T}/es/_bulk`, { token: TOKEN, raw: docs.map((d) => JSON.stringify(d)).join('\n').replace('9007199254740992', '9007199254740993') + '\n', contentType: 'application/x-ndjson' });
    expect(bulk.json.errors).toBe(false);
    const rows = await sql(`SELECT * FROM ${await tableOf('cols')} ORDER BY _id`);
    // a field's column is named from its path: v_ + letters and digits, `_` doubled, `.` as `_d`
    const colOf = (path: string) => `v_${path.replace(/_/g, '__').replace(/\./g, '_d')}`;
    expect(Object.keys(rows[0])).toEqual(expect.arrayContaining(['v_tag', 'v_n', 'v_price', 'v_ok', 'v_at', 'v_title_draw', 'v_low', '_multi']));
    const [d1, d2, d3] = rows;
    expect(d1[colOf('tag')]).toBe('a');
    expect(d1[colOf('n')]).toBe(5);
    expect(d1[colOf('price')]).toBe(1.5);
    expect(d1[colOf('ok')]).toBe(true);
    expect(d1[colOf('at')]).toBe(Date.UTC(2020, 0, 2, 3, 4, 5));
    expect(d1[colOf('title.raw')]).toBe('Hello World');
    expect(d1[colOf('low')]).toBe('mixed');
    expect(d1._multi).toBeNull();
    // an array leaves the column null and its values are held in `_mv`; a string in a long field is coerced as Elasticsearch does
    expect(d2[colOf('tag')]).toBeNull();
    expect(d2._multi).toBeNull();
    expect(d2._mv).toEqual({ [colOf('tag')]: ['a', 'b'] });
    expect(d1._mv).toBeNull();
    expect(d2[colOf('n')]).toBe(7);
    expect(d2[colOf('ok')]).toBe(false);
    // a long beyond ±2^53 is not a double the plans compute with exactly: null and named
    expect(d3[colOf('n')]).toBeNull();
    expect(d3._multi).toBe(colOf('n'));
    expect((await es('GET', '/cols/_doc/d3'))._source).toEqual({ n: 9007199254740993 });
    // a multi-field and a normalized keyword aggregate as plans, equal to the view's code
    const body = { size: 0, aggs: { raw: { terms: { field: 'title.raw' } }, low: { terms: { field: 'low' } } } };
    expect((await es('POST', '/cols/_search', body)).aggregations).toEqual((await viewed('cols', body)).aggregations);
  }, 60_000);

  it('aggregations read the columns; a /sql write of _source behind them is caught, and an ES write mends it', async () => {
    await es('PUT', '/agc', { mappings: { properties: { tag: { type: 'keyword' }, n: { type: 'long' } } } });
    const lines: string[] = [];
    for (let i = 0; i < 60; i++) lines.push(JSON.stringify({ index: { _index: 'agc', _id: `d${i}` } }), JSON.stringify({ tag: `t${i % 4}`, n: i }));
    await srv.request('POST', `${T}/es/_bulk`, { token: TOKEN, raw: lines.join('\n') + '\n', contentType: 'application/x-ndjson' });
    const body = { size: 0, query: { bool: { filter: [{ range: { n: { lt: 40 } } }] } }, aggs: { tags: { terms: { field: 'tag' } } } };
    const first = await es('POST', '/agc/_search', body);
    expect(first.aggregations).toEqual((await viewed('agc', body)).aggregations);
    expect(first.aggregations.tags.buckets).toEqual([0, 1, 2, 3].map((i) => ({ key: `t${i}`, doc_count: 10 })));
    // checked once: the next search runs its one aggregate plan
    let before = await plans();
    await es('POST', '/agc/_search', body);
    expect((await plans()) - before).toBe(1);
    // this surface's own writes carry the check (no second read of the table), arrays included
    await es('PUT', '/agc/_doc/x1', { tag: 't1', n: 3 });
    before = await plans();
    expect((await es('POST', '/agc/_search', body)).aggregations.tags.buckets).toContainEqual({ key: 't1', doc_count: 11 });
    expect((await plans()) - before).toBe(1);
    await es('PUT', '/agc/_doc/x2', { tag: ['t1', 't2'], n: 4 });
    const multi = await es('POST', '/agc/_search', body);
    expect(multi.aggregations).toEqual((await viewed('agc', body)).aggregations);
    expect(multi.aggregations.tags.buckets).toContainEqual({ key: 't1', doc_count: 12 });
    // the array's values are held in `_mv` (the plans unnest them): a /sql write of it that disagrees with `_source` is caught
    await sql(`UPDATE ${await tableOf('agc')} SET _mv = '{"v_tag":["zz"]}' WHERE _id = 'x2'`);
    expect((await es('POST', '/agc/_search', body)).aggregations).toEqual(multi.aggregations);
    await es('PUT', '/agc/_doc/x2', { tag: ['t1', 't2'], n: 4 });
    expect((await es('POST', '/agc/_search', body)).aggregations).toEqual(multi.aggregations);
    await es('DELETE', '/agc/_doc/x2');
    await es('DELETE', '/agc/_doc/x1');
    before = await plans();
    expect((await es('POST', '/agc/_search', body)).aggregations).toEqual(first.aggregations);
    expect((await plans()) - before).toBe(1);

    // /sql changes a document's _source, not its columns: the plans must not read the stale column
    const table = await tableOf('agc');
    await sql(`UPDATE ${table} SET _source = '{"tag":"t9","n":1}' WHERE _id = 'd0'`);
    const after = await es('POST', '/agc/_search', body);
    expect(after.aggregations).toEqual((await viewed('agc', body)).aggregations);
    expect(after.aggregations.tags.buckets).toContainEqual({ key: 't9', doc_count: 1 });
    expect(after.aggregations.tags.buckets).toContainEqual({ key: 't0', doc_count: 9 });
    before = await plans();
    await es('POST', '/agc/_search', body);
    expect((await plans()) - before).toBe(0); // the view answers while the table holds that row

    // the document written again through this surface gets its columns: the plans answer again
    await es('PUT', '/agc/_doc/d0', { tag: 't9', n: 1 });
    const mended = await es('POST', '/agc/_search', body);
    expect(mended.aggregations).toEqual(after.aggregations);
    before = await plans();
    expect((await es('POST', '/agc/_search', body)).aggregations).toEqual(after.aggregations);
    expect((await plans()) - before).toBe(1);
  }, 60_000);

  it('a mapping that adds a field the stored documents hold backfills its column by an online migration', async () => {
    await es('PUT', '/late', { mappings: { dynamic: false, properties: { a: { type: 'keyword' } } } });
    await es('PUT', '/late/_doc/1', { a: 'x', b: 'p', c: 3 });
    await es('PUT', '/late/_doc/2', { a: 'y', b: 'q' });
    await es('PUT', '/late/_doc/3', { a: 'z' });
    const table = await tableOf('late');
    const cols0 = Object.keys((await sql(`SELECT * FROM ${table} ORDER BY _id`))[0]);
    expect(cols0).not.toContain('v_b');
    await es('PUT', '/late/_mapping', { properties: { b: { type: 'keyword' }, c: { type: 'integer' } } });
    const rows = await sql(`SELECT * FROM ${table} ORDER BY _id`);
    const b = 'v_b', c = 'v_c';
    expect(rows.map((r) => [r[b], r[c]])).toEqual([['p', 3], ['q', null], [null, null]]);
    // versions are unchanged by the backfill
    expect((await es('GET', '/late/_doc/1'))._version).toBe(1);
    // the change ran as a migration with auto-cutover (every row reshaped by the ES surface's rules), audited
    const ms = (await srv.request('GET', `${T}/migrations`, { token: TOKEN })).json.migrations as Array<Record<string, any>>;
    const m = ms.find((x) => x.schema === table)!;
    expect(m).toMatchObject({ state: 'Completed', plan: 'rewrite', auto_cutover: true, cutover: { rows: 3, reshaped: 0 } });
    expect(m.steps.join(' ')).toMatch(/reshaped by "es"/);
    const audit = (await srv.request('GET', `${T}/migrations/_audit?migration=${m.id}`, { token: TOKEN })).json.entries.map((e: any) => e.action);
    expect(audit).toEqual(['submit', 'start', 'ready', 'auto-cutover']);
    // a mapping change no stored document is affected by stays one frame (no migration)
    await es('PUT', '/late/_mapping', { properties: { d: { type: 'keyword' } } });
    expect(((await srv.request('GET', `${T}/migrations`, { token: TOKEN })).json.migrations as unknown[]).length).toBe(ms.length);
    const body = { size: 0, aggs: { b: { terms: { field: 'b' } }, c: { sum: { field: 'c' } } } };
    const planned = await es('POST', '/late/_search', body);
    expect(planned.aggregations).toEqual((await viewed('late', body)).aggregations);
    expect(planned.aggregations.b.buckets).toEqual([{ key: 'p', doc_count: 1 }, { key: 'q', doc_count: 1 }]);

    // dynamic mapping: a new string field is text with a .keyword column, filled in the frame of its document
    await es('PUT', '/dyn/_doc/1', { who: 'ann' });
    await es('PUT', '/dyn/_doc/2', { who: 'bob', when: '2021-03-04' });
    const drows = await sql(`SELECT * FROM ${await tableOf('dyn')} ORDER BY _id`);
    const kw = 'v_who_dkeyword', when = 'v_when';
    expect(drows.map((r) => [r[kw], r[when]])).toEqual([['ann', null], ['bob', Date.UTC(2021, 2, 4)]]);
    const dq = { size: 0, aggs: { w: { terms: { field: 'who.keyword' } } } };
    expect((await es('POST', '/dyn/_search', dq)).aggregations).toEqual((await viewed('dyn', dq)).aggregations);
  }, 60_000);
});
