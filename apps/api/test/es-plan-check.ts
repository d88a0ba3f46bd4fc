/**
 * Shared checks of the ES plan tests (es-pattern-plans, es-date-plans): an ES answer reached
 * through plans is compared with the same request answered by the code over the view (a
 * `post_filter`, `terminate_after`, `min_score=0` on `_count` or the reference query takes that path), and the plans it ran
 * are counted (the executor's latency count for surface "es").
 */
import { bootstrapEnv, TENANT, TestServer, TOKEN } from './server';

export const T = `/v1/tenants/${TENANT}`;
type Json = any;

/** A test server started before the suite's tests and stopped after them; the getter reads it. */
export function suiteServer(): () => TestServer {
  let srv: TestServer;
  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
  }, 60_000);
  afterAll(async () => {
    await srv.stop();
  });
  return () => srv;
}

export class EsPlanCheck {
  constructor(private readonly srv: TestServer, private readonly index: string) {}

  /** A new index with `mappings` holding `docs` (id → source), after a first `_search` of `aggs` (the typed-column check, cached by the table's LSN). */
  static async fresh(srv: TestServer, index: string, mappings: unknown, docs: Array<[string, Record<string, unknown>]>, aggs: unknown): Promise<EsPlanCheck> {
    const c = new EsPlanCheck(srv, index);
    await c.es('PUT', `/${index}`, { mappings });
    await c.bulk(docs);
    await c.es('POST', `/${index}/_search`, { size: 0, aggs });
    return c;
  }

  async es(method: string, p: string, body?: unknown, token = TOKEN): Promise<Json> {
    const r = await this.srv.request(method, `${T}/es${p}`, { token, ...(body === undefined ? {} : { body }) });
    if (r.status >= 300) throw new Error(`${method} ${p}: ${r.status} ${r.text}`);
    return r.json;
  }

  /** Indexes `docs` (id → source) with one `_bulk`, none failing. */
  async bulk(docs: Array<[string, Record<string, unknown>]>): Promise<void> {
    if (!docs.length) return;
    const lines = docs.flatMap(([id, doc]) => [JSON.stringify({ index: { _index: this.index, _id: id } }), JSON.stringify(doc)]);
    const r = await this.srv.request('POST', `${T}/es/_bulk`, { token: TOKEN, raw: lines.join('\n') + '\n', contentType: 'application/x-ndjson' });
    expect(r.json.errors).toBe(false);
  }

  /** Plans the ES surface has run so far. */
  async plans(): Promise<number> {
    return Number(/db_query_latency_ms_count\{surface="es"\} (\d+)/.exec((await this.srv.request('GET', '/metrics')).text)?.[1] ?? 0);
  }

  /** `_search` of the index under `token`, and the number of plans it ran. */
  async counted(body: unknown, token = TOKEN, params = ''): Promise<{ r: Json; ran: number }> {
    const before = await this.plans();
    const r = await this.es('POST', `/${this.index}/_search${params ? `?${params}` : ''}`, body, token);
    return { r, ran: (await this.plans()) - before };
  }

  /** A size-0 search with `aggs` under `query`: it runs `n` plans and answers (hits total, aggregations) as the code over the view does. */
  async aggs(aggs: unknown, query: unknown, n: number): Promise<Json> {
    const body = { size: 0, aggs, ...(query ? { query } : {}) };
    const { r, ran } = await this.counted(body);
    expect([query, ran]).toEqual([query, n]);
    const viewed = await this.es('POST', `/${this.index}/_search`, { ...body, post_filter: { match_all: {} } });
    expect([query, r.hits.total, r.aggregations]).toEqual([query, viewed.hits.total, viewed.aggregations]);
    return r;
  }

  /**
   * A size-0 search of `aggs` under `query` (and query `params`): plans answer it (some ran), equal
   * to the code over the view (hits total, aggregations); `label` names the case in a failure.
   */
  async planned(aggs: unknown, query: unknown, label?: unknown, params = ''): Promise<Json> {
    const body = { size: 0, aggs, ...(query ? { query } : {}) };
    const { r, ran } = await this.counted(body, TOKEN, params);
    expect([label, query, ran > 0]).toEqual([label, query, true]);
    const viewed = await this.es('POST', `/${this.index}/_search${params ? `?${params}` : ''}`, { ...body, post_filter: { match_all: {} } });
    expect([label, query, r.hits.total, r.aggregations]).toEqual([label, query, viewed.hits.total, viewed.aggregations]);
    return r;
  }

  /** `_count` of `query`: one plan, equal to the scorer's count. */
  async count(query: unknown): Promise<number> {
    const before = await this.plans();
    const n = (await this.es('POST', `/${this.index}/_count`, { query })).count;
    expect([query, (await this.plans()) - before]).toEqual([query, 1]);
    expect([query, n]).toEqual([query, (await this.es('POST', `/${this.index}/_count?min_score=0`, { query })).count]);
    return n;
  }

  /** A page sorted by fields: two plans (the page, the total), the same hits and sort values as the full search. */
  async page(page: Record<string, unknown>): Promise<Json> {
    const { r, ran } = await this.counted(page);
    expect([page, ran]).toEqual([page, 2]);
    const v = await this.es('POST', `/${this.index}/_search`, { ...page, post_filter: { match_all: {} } });
    expect(r.hits.total).toEqual(v.hits.total);
    const hits = (x: Json) => x.hits.hits.map((h: { _id: string; sort: unknown }) => [h._id, h.sort]);
    expect([page, hits(r)]).toEqual([page, hits(v)]);
    return r;
  }

  /** A user reading the index's table under a policy that hides the documents whose id starts with `h`; its token. */
  async reader(user: string): Promise<string> {
    const table = ((await this.srv.request('GET', `${T}/schemas`, { token: TOKEN })).json as string[]).find((x) => x.startsWith(`es.i_${this.index}_`))!;
    const owner = (method: string, p: string, body: unknown) => this.srv.request(method, `${T}${p}`, { token: TOKEN, body });
    expect((await owner('PUT', `/users/${user}`, { grants: { [table]: ['read'] } })).status).toBe(200);
    expect((await owner('PUT', `/policies/${user}_visible`, { schema: table, users: [user], using: "_id NOT LIKE 'h%'" })).status).toBe(200);
    return (await owner('POST', `/users/${user}/tokens`, {})).json.token as string;
  }

  /**
   * Under the reader's token: a size-0 search runs `n` plans and answers as the owner's search of
   * the visible documents (the hidden ones excluded by the query) over the view; `_count` too.
   */
  async asReader(token: string, aggs: unknown, query: unknown, n: number): Promise<Json> {
    const { r, ran } = await this.counted({ size: 0, aggs, ...(query ? { query } : {}) }, token);
    expect([query, ran]).toEqual([query, n]);
    const ref = await this.es('POST', `/${this.index}/_search`, { size: 0, aggs, query: { bool: { must: query ? [query] : [], must_not: [{ prefix: { _id: 'h' } }] } }, post_filter: { match_all: {} } });
    expect([query, r.hits.total, r.aggregations]).toEqual([query, ref.hits.total, ref.aggregations]);
    if (query) expect((await this.es('POST', `/${this.index}/_count`, { query }, token)).count).toBe(ref.hits.total.value);
    return r;
  }
}
