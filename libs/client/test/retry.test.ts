/**
 * The retry rules of spec 7.3 against a local server injecting 429 + Retry-After, runs of
 * 503, other 5xx, connection resets and slow answers. Waits run on jest's fake timers: the
 * test checks that no request goes out one millisecond before the rule's delay, and that one
 * does at it.
 */
import { Mmdb, MmdbError, type MmdbWarning } from '../src';
import { FaultServer, err } from './fault-server';

const TENANT = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
let srv: FaultServer;
let db: Mmdb;

beforeEach(async () => {
  srv = await new FaultServer().start();
  db = new Mmdb({ url: srv.url, token: 'tok', tenant: TENANT, timeoutMs: 5_000 });
  jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
});
afterEach(async () => {
  jest.useRealTimers();
  await db.close();
  await srv.stop();
});

const nextRetry = () => new Promise<{ attempt: number; delayMs: number; error: MmdbError }>((r) => db.transport.once('retry', r));

/** Checks the client sends request n+1 exactly `ms` after announcing the retry. */
async function expectWait(n: number, ms: number): Promise<void> {
  const r = await nextRetry();
  expect(r.delayMs).toBe(ms);
  await jest.advanceTimersByTimeAsync(ms - 1);
  await new Promise((res) => setImmediate(res));
  expect(srv.seen).toHaveLength(n);
  await jest.advanceTimersByTimeAsync(1);
  await srv.requests(n + 1);
}

test('429 waits Retry-After seconds, then succeeds', async () => {
  srv.script({ ...err(429, 'rate_limited', { retry_after: 2 }), headers: { 'retry-after': '2' } }, { status: 200, body: { id: 1 } });
  const p = db.rows.get('app.t', 1);
  await srv.requests(1);
  await expectWait(1, 2000);
  await expect(p).resolves.toEqual({ id: 1 });
});

test('429 with an HTTP-date Retry-After waits until that date', async () => {
  const at = new Date(Date.now() + 3000).toUTCString();
  srv.script({ ...err(429, 'rate_limited'), headers: { 'retry-after': at } }, { status: 200, body: [] });
  const p = db.schemas.list();
  const r = await nextRetry();
  expect(r.delayMs).toBeGreaterThan(1000);
  expect(r.delayMs).toBeLessThanOrEqual(3000);
  await jest.advanceTimersByTimeAsync(r.delayMs);
  await expect(p).resolves.toEqual([]);
});

test('503 three times backs off 0.25 s, 0.5 s, 1 s, then succeeds', async () => {
  srv.script(err(503, 'service_unavailable'), err(503, 'service_unavailable'), err(503, 'service_unavailable'), { status: 200, body: ['a.b'] });
  const p = db.schemas.list();
  await expectWait(1, 250);
  await expectWait(2, 500);
  await expectWait(3, 1000);
  await expect(p).resolves.toEqual(['a.b']);
  expect(srv.seen).toHaveLength(4);
});

test('at most 3 retries: a fourth 503 is the answer', async () => {
  srv.script(...[1, 2, 3, 4].map(() => err(503, 'service_unavailable')));
  const p = db.schemas.list();
  const failed = expect(p).rejects.toMatchObject({ code: 'service_unavailable', status: 503, requestId: 'rid-service_unavailable', retry: true });
  await expectWait(1, 250);
  await expectWait(2, 500);
  await expectWait(3, 1000);
  await failed;
  expect(srv.seen).toHaveLength(4);
});

test.each([500, 502, 504])('%i is retried for an idempotent request', async (status) => {
  srv.script(err(status, status === 504 ? 'gateway_timeout' : 'internal_error'), { status: 200, body: { deleted: true } });
  const p = db.rows.delete('app.t', 'k');
  await expectWait(1, 250);
  await expect(p).resolves.toEqual({ deleted: true });
});

test('a mutating POST carries an Idempotency-Key, and its retry sends the same key', async () => {
  srv.script(err(503, 'service_unavailable'), { status: 200, body: { schema: 'app.t', pk: '1', version: 1, created: true } });
  const p = db.rows.insert('app.t', { id: 1 });
  await expectWait(1, 250);
  await p;
  const keys = srv.seen.map((s) => s.headers['idempotency-key']);
  expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
  expect(keys[1]).toBe(keys[0]);
});

test('a given Idempotency-Key is sent as is', async () => {
  srv.script({ status: 200, body: {} });
  await db.rows.batch('app.t', [{ id: 1 }], { idempotencyKey: '01ARZ3NDEKTSV4RRFFQ69G5FAV' });
  expect(srv.seen[0].headers['idempotency-key']).toBe('01ARZ3NDEKTSV4RRFFQ69G5FAV');
});

test('a non-idempotent request (SQL inserts) is not retried on 503', async () => {
  srv.script(err(503, 'service_unavailable'), err(503, 'service_unavailable'));
  await expect(db.sql('INSERT INTO app.t VALUES (2)')).rejects.toMatchObject({ code: 'service_unavailable' });
  await expect(db.sql('INSERT INTO app.t VALUES (1)')).rejects.toMatchObject({ code: 'service_unavailable' });
  expect(srv.seen).toHaveLength(2);
  expect(srv.seen[0].headers['idempotency-key']).toBeUndefined();
});

test('a read-only SQL statement is retried', async () => {
  srv.script(err(503, 'service_unavailable'), { status: 200, body: { kind: 'select', rows: [{ x: 1 }] } });
  const p = db.sql<{ x: number }>('SELECT $1 AS x', [1]);
  await expectWait(1, 250);
  expect((await p).rows[0].x).toBe(1);
  expect(JSON.parse(srv.seen[1].body)).toEqual({ sql: 'SELECT $1 AS x', params: [1] });
});

test.each([
  [400, 'validation_failed'],
  [401, 'unauthorized'],
  [404, 'row_not_found'],
  [409, 'conflict'],
  [412, 'precondition_failed'],
])('%i %s is never retried', async (status, code) => {
  srv.script(err(status, code), { status: 200, body: {} });
  await expect(db.rows.get('app.t', 1)).rejects.toMatchObject({ code, status });
  expect(srv.seen).toHaveLength(1);
});

test('409 write_conflict carries its details', async () => {
  srv.script(err(409, 'write_conflict', { current_version: 7 }));
  const e = (await db.rows.put('app.t', 1, { id: 1 }, { ifMatch: 3 }).catch((x) => x)) as MmdbError;
  expect(e).toBeInstanceOf(MmdbError);
  expect(e.details).toEqual({ current_version: 7 });
  expect(e.requestId).toBe('rid-write_conflict');
  expect(srv.seen[0].headers['if-match']).toBe('3');
});

test('the nested error form is read too', async () => {
  srv.script({ status: 403, body: { error: { code: 'forbidden', message: 'no' } } });
  await expect(db.ping()).rejects.toMatchObject({ code: 'forbidden', message: 'no', requestId: 'req-1' });
});

test('a connection reset is retried with backoff for an idempotent request, and is final for a non-idempotent one', async () => {
  srv.script({ reset: true }, { status: 200, body: ['x.y'] });
  const p = db.schemas.list();
  await expectWait(1, 250);
  await expect(p).resolves.toEqual(['x.y']);
  srv.script({ reset: true });
  await expect(db.sql('INSERT INTO app.t VALUES (1)')).rejects.toMatchObject({ code: 'network_error', status: 0 });
});

test('a token issue is keyed (the server replays its answer), so a 503 is retried with the same key', async () => {
  srv.script(err(503, 'service_unavailable'), { status: 201, body: { token_id: 't' } });
  const p = db.tokens.issue();
  await expectWait(1, 250);
  await expect(p).resolves.toEqual({ token_id: 't' });
  expect(srv.seen).toHaveLength(2);
  expect(srv.seen[1].headers['idempotency-key']).toBe(srv.seen[0].headers['idempotency-key']);
  expect(typeof srv.seen[0].headers['idempotency-key']).toBe('string');
});

test('a slow answer times out and is retried', async () => {
  srv.script({ hang: true }, { status: 200, body: { ok: true, tenant: TENANT } });
  const p = db.ping();
  await srv.requests(1);
  const retry = nextRetry();
  await jest.advanceTimersByTimeAsync(5_000);
  expect((await retry).error.code).toBe('timeout');
  await jest.advanceTimersByTimeAsync(250);
  await expect(p).resolves.toEqual({ ok: true, tenant: TENANT });
});

test.each([
  ['service_unavailable', err(503, 'service_unavailable')],
  ['rate_limited', { ...err(429, 'rate_limited'), headers: { 'retry-after': '1' } }],
])('a streamed NDJSON body is never retried, even after %s (it cannot be sent twice)', async (code, step) => {
  srv.script(step);
  async function* rows() {
    yield { id: 1 };
    yield { id: 2 };
  }
  await expect(db.rows.stream('app.t', rows(), { chunk: 1 })).rejects.toMatchObject({ code });
  expect(srv.seen).toHaveLength(1);
  expect(srv.seen[0].headers['content-type']).toBe('application/x-ndjson');
  expect(srv.seen[0].body).toBe('{"id":1}\n{"id":2}\n');
  expect(srv.seen[0].url).toContain('chunk=1');
});

test('X-DB-Replication: degraded reaches the caller as a warning event', async () => {
  srv.script({ status: 200, headers: { 'x-db-replication': 'degraded' }, body: { schema: 'app.t', pk: '1', version: 2, created: false } });
  const warnings: MmdbWarning[] = [];
  db.on('warning', (w) => warnings.push(w));
  const r = await db.rows.put('app.t', 1, { id: 1 });
  expect(r.version).toBe(2);
  expect(warnings).toEqual([expect.objectContaining({ kind: 'replication_degraded', method: 'PUT', requestId: 'req-1' })]);
});

test('maxRetries: 0 turns retrying off', async () => {
  const once = new Mmdb({ url: srv.url, tenant: TENANT, maxRetries: 0 });
  srv.script(err(503, 'service_unavailable'));
  await expect(once.schemas.list()).rejects.toMatchObject({ status: 503 });
  expect(srv.seen).toHaveLength(1);
  await once.close();
});

test('429 is retried even for a non-idempotent request (the server refused it before doing anything)', async () => {
  srv.script({ ...err(429, 'rate_limited'), headers: { 'retry-after': '1' } }, { status: 201, body: { token: 'x' } });
  const p = db.tokens.issue();
  await expectWait(1, 1000);
  await expect(p).resolves.toEqual({ token: 'x' });
});

test('a Deprecation header reaches the caller as a warning, once per route', async () => {
  const dep = { status: 200, headers: { deprecation: '@1767225600', sunset: 'Fri, 01 Jan 2027 00:00:00 GMT' }, body: [] };
  srv.script(dep, dep);
  const warnings: MmdbWarning[] = [];
  db.on('warning', (w) => warnings.push(w));
  await db.schemas.list();
  await db.schemas.list();
  expect(warnings).toEqual([expect.objectContaining({ kind: 'deprecated', method: 'GET', sunset: 'Fri, 01 Jan 2027 00:00:00 GMT' })]);
});
