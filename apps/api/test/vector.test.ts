/** Vector routes (spec §4.8) over real HTTPS against the built server, on a slice of real MNIST data. */
import { join } from 'node:path';
import { readFvecs } from '@mmdb/vector';
import { bootstrapEnv, TENANT, TestServer, TOKEN } from './server';

const T = `/v1/tenants/${TENANT}`;
const MNIST = join(__dirname, '../../../../shared/datasets/mnist');
const base = readFvecs(join(MNIST, 'base.fvecs'), 300);
const row = (i: number) => Array.from(base.data.subarray(i * base.dim, (i + 1) * base.dim));

const DOCS = `namespace = "img"
table = "digits"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "str"
required = true
[[columns]]
name = "parity"
ty = "str"
[[columns]]
name = "emb"
ty = "vector"
dim = 784
[vector]
column = "emb"
dim = 784
metric = "l2"
`;

describe('vector routes over real HTTPS (spec §4.8)', () => {
  let srv: TestServer;
  const post = (p: string, body: unknown) => srv.request('POST', `${T}/vector${p}`, { token: TOKEN, body });

  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
  }, 60_000);
  afterAll(async () => {
    await srv.stop();
  });

  it('first put creates and locks the table; topk answers closest first with distances and metadata', async () => {
    for (let i = 0; i < 40; i++) {
      const r = await post('/mnist/put', { id: `m${i}`, embedding: row(i), metadata: { even: i % 2 === 0 }, metric: 'l2' });
      expect(r.status).toBe(200);
      expect(r.json).toMatchObject({ id: `m${i}`, created: true });
    }
    const r = await post('/mnist/topk', { vector: row(7), k: 3 });
    expect(r.status).toBe(200);
    expect(r.json).toHaveLength(3);
    expect(r.json[0]).toEqual({ id: 'm7', distance: 0, metadata: { even: false } });
    expect(r.json[1].distance).toBeGreaterThan(0);
    expect(r.json[2].distance).toBeGreaterThanOrEqual(r.json[1].distance);
    const f = await post('/mnist/topk', { vector: row(7), k: 5, filter: { even: true }, mode: 'fast' });
    expect(f.json).toHaveLength(5);
    for (const m of f.json) expect(m.metadata.even).toBe(true);
  });

  it('a put with an existing id replaces it', async () => {
    expect((await post('/mnist/put', { id: 'm1', embedding: row(7) })).json).toMatchObject({ created: false });
    const r = await post('/mnist/topk', { vector: row(7), k: 2 });
    expect(r.json.map((m: any) => m.id).sort()).toEqual(['m1', 'm7']);
  });

  it('the lock and bad input get 400 with the spec codes', async () => {
    const cases: Array<[string, unknown, string, string?]> = [
      ['/mnist/put', { id: 'x', embedding: [1, 2, 3] }, 'dim_mismatch'],
      ['/mnist/put', { id: 'x', embedding: row(0), metric: 'cosine' }, 'metric_mismatch'],
      ['/mnist/put', { id: 'x', embedding: [] }, 'validation_failed', 'embedding'],
      ['/mnist/put', { id: 'x', embedding: [1, 'a'] }, 'validation_failed', 'embedding'],
      ['/mnist/put', { embedding: [1] }, 'validation_failed', 'id'],
      ['/mnist/put', { id: 'x', embedding: [1], metric: 'hamming' }, 'validation_failed', 'metric'],
      ['/mnist/topk', { vector: [1, 2] }, 'dim_mismatch'],
      ['/mnist/topk', { vector: row(0), metric: 'dot' }, 'metric_mismatch'],
      ['/mnist/topk', { vector: row(0), k: 0 }, 'validation_failed', 'k'],
      ['/mnist/topk', { vector: row(0), k: 1001 }, 'validation_failed', 'k'],
      ['/mnist/topk', { vector: row(0), k: 2.5 }, 'validation_failed', 'k'],
      ['/mnist/topk', { vector: row(0), mode: 'turbo' }, 'validation_failed', 'mode'],
      ['/mnist/topk', { vector: 'abc' }, 'validation_failed', 'vector'],
      ['/mnist/topk', { vector: row(0), filter: [1] }, 'validation_failed', 'filter'],
    ];
    for (const [path, body, code, field] of cases) {
      const r = await post(path, body);
      expect([path, r.status, r.json.error]).toEqual([path, 400, code]);
      if (field) expect(r.json.message).toContain(field);
    }
    // JSON has no NaN/Infinity: a huge literal overflows to Infinity when parsed
    const inf = await srv.request('POST', `${T}/vector/mnist/topk`, { token: TOKEN, raw: '{"vector":[1e999]}', contentType: 'application/json' });
    expect([inf.status, inf.json.error]).toEqual([400, 'validation_failed']);
    expect((await post('/nothing/topk', { vector: [1] })).status).toBe(404);
  });

  it('manifest rows carry their vectors; deleting the row deletes the vector', async () => {
    expect((await srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: DOCS, contentType: 'text/plain' })).status).toBe(200);
    const rows = Array.from({ length: 30 }, (_, i) => ({ id: `r${i}`, parity: i % 2 ? 'odd' : 'even', emb: row(100 + i) }));
    expect((await srv.request('POST', `${T}/rows/img.digits/_batch`, { token: TOKEN, body: rows })).status).toBe(200);
    let r = await post('/img.digits/topk', { vector: row(105), k: 1 });
    expect(r.json[0]).toMatchObject({ id: 'r5', distance: 0, metadata: { id: 'r5', parity: 'odd' } });
    expect((await srv.request('DELETE', `${T}/rows/img.digits/r5`, { token: TOKEN })).status).toBe(200);
    r = await post('/img.digits/topk', { vector: row(105), k: 3, filter: { parity: 'odd' } });
    expect(r.json.map((m: any) => m.id)).not.toContain('r5');
    expect(r.json).toHaveLength(3);
    expect((await post('/img.digits/put', { id: 'z', embedding: row(0) })).json.error).toBe('validation_failed');
  });
});
