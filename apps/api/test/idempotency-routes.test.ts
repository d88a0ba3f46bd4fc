/**
 * Spec §5.6 on the vector put and the full-text POST: the Idempotency-Key record is committed in
 * the write's own frame (the rows routes' mechanism): the same key and body replays the stored
 * answer (same lsn, nothing written again), the same key with another body is 409 `conflict`.
 */
import { bootstrapEnv, TENANT, TestServer, TOKEN } from './server';

const T = `/v1/tenants/${TENANT}`;

describe('Idempotency-Key on the vector put and the full-text POST', () => {
  let srv: TestServer;
  const post = (p: string, body: unknown, key?: string) => srv.request('POST', `${T}${p}`, { token: TOKEN, body, headers: key ? { 'idempotency-key': key } : {} });

  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv({ DB_SYNC: '0' })).start();
  });
  afterAll(async () => {
    await srv.stop();
  });

  for (const [route, body, other] of [
    ['/vector/things/put', { id: 'a', embedding: [1, 2, 3] }, { id: 'a', embedding: [3, 2, 1] }],
    ['/fts/notes/body', { doc_id: 'n1', text: 'hello idempotent world' }, { doc_id: 'n1', text: 'another text' }],
  ] as const) {
    it(`${route}: replays the same request, refuses another body under the same key`, async () => {
      const key = '01J8Z3NDEKTSV4RRFFQ69G5F' + route.length.toString().padStart(2, '0');
      const a = await post(route, body, key);
      expect(a.status).toBe(200);
      const b = await post(route, body, key);
      expect(b.status).toBe(200);
      expect(b.json).toEqual(a.json);
      expect(b.headers['x-db-idempotent-replay']).toBe('true');
      const c = await post(route, other, key);
      expect(c.status).toBe(409);
      expect(c.json.error).toBe('conflict');
      // without a key, the same body writes again (a new lsn)
      const d = await post(route, body);
      expect(d.status).toBe(200);
      expect(d.json.lsn).toBeGreaterThan(a.json.lsn);
      expect((await post(route, body, 'not-a-key')).status).toBe(400);
    });
  }
});
