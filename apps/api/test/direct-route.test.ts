/**
 * The row PUT is a direct route (apps/api/src/http/direct-route.ts: fastify calls it without
 * Nest's router). Everything Nest's pipeline does around a route must hold for it exactly as for
 * the PATCH beside it (a Nest route of the same controller, same path, same guards): the guards
 * (auth, grants, the body's type, credit), the error filter's bodies and headers, an empty path
 * parameter as "no such route", the request id, the request metrics, and the charge.
 * Real HTTPS against the built server.
 */
import { bootstrapEnv, ITEMS_TOML, TENANT, TestServer, TOKEN } from './server';

const T = `/v1/tenants/${TENANT}`;

describe('the direct PUT route behaves as the Nest routes around it', () => {
  let srv: TestServer;
  let reader = '';
  const both = async (path: string, o: Parameters<TestServer['request']>[2]) => ({
    put: await srv.request('PUT', T + path, o),
    patch: await srv.request('PATCH', T + path, o),
  });
  /** An error answer with the request-specific parts (id, method in the message) taken out. */
  const shape = (r: Awaited<ReturnType<TestServer['request']>>) => {
    expect(r.headers['x-db-request-id']).toBe(r.json.request_id);
    expect(r.headers['content-type']).toBe('application/json; charset=utf-8');
    return { status: r.status, body: { ...r.json, request_id: 'id', message: String(r.json.message).replace(/\b(PUT|PATCH)\b/, 'METHOD') } };
  };

  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
    expect((await srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: ITEMS_TOML, contentType: 'text/plain' })).status).toBe(200);
    expect((await srv.request('PUT', `${T}/rows/shop.items/1`, { token: TOKEN, body: { name: 'apple', price: 3 } })).status).toBe(200);
    expect((await srv.request('PUT', `${T}/users/reader`, { token: TOKEN, body: { grants: { 'shop.items': ['read', 'insert'] } } })).status).toBe(200);
    reader = (await srv.request('POST', `${T}/users/reader/tokens`, { token: TOKEN, body: {} })).json.token;
  }, 60_000);
  afterAll(async () => {
    await srv.stop();
  });

  it('answers the guards and the error filter exactly as a Nest route', async () => {
    const cases: Array<[string, string, Parameters<TestServer['request']>[2]]> = [
      ['no token', '/rows/shop.items/1', { token: null, body: { name: 'x' } }],
      ['an unknown token', '/rows/shop.items/1', { token: 'not-a-token-at-all', body: { name: 'x' } }],
      ['a user without the grant', '/rows/shop.items/1', { token: reader, body: { name: 'x' } }],
      ['a body of another type', '/rows/shop.items/1', { token: TOKEN, raw: 'name=x', contentType: 'text/plain' }],
      ['a body that is not JSON', '/rows/shop.items/1', { token: TOKEN, raw: '{"name":', contentType: 'application/json' }],
      ['an empty key segment', '/rows/shop.items/', { token: TOKEN, body: { name: 'x' } }],
      ['an unknown schema', '/rows/shop.nope/1', { token: TOKEN, body: { name: 'x' } }],
      ['a bad If-Match', '/rows/shop.items/1', { token: TOKEN, body: { name: 'x' }, headers: { 'if-match': 'seven' } }],
      ['a bad Idempotency-Key', '/rows/shop.items/1', { token: TOKEN, body: { name: 'x' }, headers: { 'idempotency-key': 'k' } }],
    ];
    for (const [what, path, o] of cases) {
      const { put, patch } = await both(path, o);
      expect([what, put.status]).toEqual([what, expect.any(Number)]);
      expect(put.status).toBeGreaterThanOrEqual(400);
      expect([what, shape(put)]).toEqual([what, shape(patch)]);
    }
  });

  it('answers a write with its ETag, counts it in the request metrics under its route, and charges it', async () => {
    const usage0 = (await srv.request('GET', `${T}/usage`, { token: TOKEN })).json.by_class.write ?? 0;
    const r = await srv.request('PUT', `${T}/rows/shop.items/2`, { token: TOKEN, body: { name: 'pear', price: 2 } });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ schema: 'shop.items', pk: '2', version: expect.any(Number), created: true });
    expect(r.headers.etag).toBe(`"${r.json.version}"`);
    expect(r.headers['x-db-request-id']).toMatch(/\S/);
    expect(r.headers['content-type']).toBe('application/json; charset=utf-8');
    // the charge lands when the response finishes on the server: poll briefly
    let used = usage0;
    for (let i = 0; i < 50 && used === usage0; i++) {
      used = (await srv.request('GET', `${T}/usage`, { token: TOKEN })).json.by_class.write ?? 0;
      if (used === usage0) await new Promise((res) => setTimeout(res, 50));
    }
    expect(used).toBe(usage0 + 2);
    const metrics = (await srv.request('GET', '/metrics', { token: null })).text;
    expect(metrics).toMatch(/db_http_requests_total\{[^}]*method="PUT"[^}]*route="\/v1\/tenants\/:tenant\/rows\/:schema\/:pk"[^}]*status="200"[^}]*\} [1-9]/);
  });
});
