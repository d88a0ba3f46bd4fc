/**
 * The writer lease through real HTTPS nodes and a real etcd: the first node takes the lease
 * and writes, the other refuses writes (503, naming the holder) and answers
 * /ready?require=write with 503; step-down moves the lease; a holder paused past its TTL
 * (SIGSTOP … SIGCONT) does not write a single frame after it resumes.
 */
import { LocalEtcd, freePort } from '@mmdb/replication';
import { Cluster, sleep, until } from './cluster';
import { bootstrapEnv, ITEMS_TOML, TENANT, TOKEN, TestServer } from './server';

const T = `/v1/tenants/${TENANT}`;

async function lastLsn(c: Cluster, s: TestServer): Promise<number> {
  const r = await c.op(s, 'GET', '/v1/replication/status');
  expect(r.status).toBe(200);
  return r.json.last_lsn;
}

describe('replication lease over HTTPS with etcd', () => {
  const c = new Cluster();
  let a: TestServer;
  let b: TestServer;

  beforeAll(async () => {
    await c.start();
    a = await c.node('node-a');
    await until('node-a writes', async () => (await a.request('GET', '/ready?require=write')).status === 200);
    b = await c.node('node-b');
  });
  afterAll(async () => {
    await c.stop();
  });

  it('the first node holds the lease and writes; the other refuses writes with 503 naming the holder', async () => {
    const lease = await c.op(b, 'GET', '/v1/replication/lease');
    expect(lease.status).toBe(200);
    expect(lease.json).toMatchObject({ tenant: TENANT, holder: 'node-a', advertise_url: a.url, ttl_ms: 2000 });
    expect(lease.json.epoch).toBeGreaterThan(0);
    // a tenant token may read its own tenant's lease, not the operator routes
    expect((await b.request('GET', '/v1/replication/lease', { token: TOKEN })).json.holder).toBe('node-a');
    expect((await b.request('GET', '/v1/replication/status', { token: TOKEN })).status).toBe(403);

    expect((await a.request('POST', `${T}/schemas`, { token: TOKEN, raw: ITEMS_TOML, contentType: 'text/plain' })).status).toBe(200);
    expect((await a.request('PUT', `${T}/rows/shop.items/1`, { token: TOKEN, body: { id: 1, name: 'one' } })).status).toBe(200);

    const ready = await until('node-b follows', async () => {
      const r = await b.request('GET', '/ready?require=write');
      return r.json?.replication?.[0]?.role === 'follower' ? r : null;
    });
    expect(ready.status).toBe(503);
    expect(ready.json).toMatchObject({ error: 'service_unavailable', retry: true, pressure: 'not_lease_holder', node: 'node-b' });
    expect((await b.request('GET', '/ready')).status).toBe(200); // the bare probe stays 200

    const refused = await b.request('POST', `${T}/schemas`, { token: TOKEN, raw: ITEMS_TOML, contentType: 'text/plain' });
    expect(refused.status).toBe(503);
    expect(refused.json).toMatchObject({ error: 'service_unavailable', retry: true, holder: 'node-a', holder_url: a.url, role: 'follower' });
    expect(refused.json.message).toContain('node-a');
    // node-b follows: it has node-a's frames and none of its own
    expect(await lastLsn(c, b)).toBeLessThanOrEqual(await lastLsn(c, a));
    // nor does it issue tokens
    expect((await b.request('POST', `${T}/tokens`, { token: TOKEN, body: {} })).status).toBe(503);

    const metrics = (await a.request('GET', '/metrics')).text;
    expect(metrics).toMatch(new RegExp(`db_replication_role\\{tenant="${TENANT}",role="leader"\\} 1`));
    expect(metrics).toMatch(new RegExp(`db_replication_epoch\\{tenant="${TENANT}"\\} ${lease.json.epoch}`));
  });

  it('step-down on a non-holder is 409 conflict; on the holder it moves the lease to the other node with a higher epoch', async () => {
    const before = (await c.op(a, 'GET', '/v1/replication/lease')).json;
    const busy = await c.op(b, 'POST', '/v1/replication/step-down');
    expect(busy.status).toBe(409);
    expect(busy.json).toMatchObject({ error: 'conflict', holder: 'node-a' });
    expect((await b.request('POST', '/v1/replication/step-down', { token: TOKEN })).status).toBe(403);

    const r = await c.op(a, 'POST', '/v1/replication/step-down');
    expect(r.status).toBe(200);
    expect(r.json.stepped_down).toBe(true);
    const [name] = await c.writer();
    expect(name).toBe('node-b');
    const after = (await c.op(a, 'GET', '/v1/replication/lease')).json;
    expect(after).toMatchObject({ holder: 'node-b', advertise_url: b.url });
    expect(after.epoch).toBeGreaterThan(before.epoch);
    expect((await a.request('GET', '/ready?require=write')).status).toBe(503);
    // back to node-a for the next test
    expect((await c.op(b, 'POST', '/v1/replication/step-down')).status).toBe(200);
    expect((await c.writer())[0]).toBe('node-a');
  });

  it('a holder paused past its TTL does not write a single frame after it resumes', async () => {
    for (let i = 10; i < 20; i++) expect((await a.request('PUT', `${T}/rows/shop.items/${i}`, { token: TOKEN, body: { id: i, name: `n${i}` } })).status).toBe(200);
    const epochBefore = (await c.op(a, 'GET', '/v1/replication/lease')).json.epoch;
    const lsnBefore = await lastLsn(c, a);

    a.proc.kill('SIGSTOP');
    // Writes sent to the paused holder wait in its socket until it resumes.
    const late = Array.from({ length: 8 }, (_, i) => a.request('PUT', `${T}/rows/shop.items/${100 + i}`, { token: TOKEN, body: { id: 100 + i, name: `late${i}` } }));
    await sleep(300);
    const [name] = await c.writer(15_000);
    expect(name).toBe('node-b');
    a.proc.kill('SIGCONT');

    const answers = await Promise.all(late);
    for (const r of answers) {
      expect(r.status).toBe(503);
      expect(r.json).toMatchObject({ error: 'service_unavailable', retry: true });
    }
    // nor later, and it knows the new holder
    await until('node-a follows node-b', async () => (await c.op(a, 'GET', '/v1/replication/status')).json.role === 'follower');
    const again = await a.request('PUT', `${T}/rows/shop.items/200`, { token: TOKEN, body: { id: 200, name: 'after' } });
    expect(again.status).toBe(503);
    expect(again.json).toMatchObject({ holder: 'node-b', holder_url: b.url });
    const lease = (await c.op(a, 'GET', '/v1/replication/lease')).json;
    expect(lease.holder).toBe('node-b');
    expect(lease.epoch).toBeGreaterThan(epochBefore);
    // node-a's log past the pause holds only what it applied from node-b (under node-b's epoch):
    // not one frame of its own, and none of the late rows
    const frames = (await c.op(a, 'GET', '/v1/replication/frames?since_segment=0')).text.trim().split('\n').map((l) => JSON.parse(l)).filter((l) => l.type === 'frame');
    const after = frames.filter((f) => f.lsn > lsnBefore);
    for (const f of after) expect(f.epoch).toBe(lease.epoch);
    expect(frames.filter((f) => f.lsn <= lsnBefore).every((f) => f.epoch <= epochBefore)).toBe(true);
    for (let i = 0; i < 8; i++) expect((await a.request('GET', `${T}/rows/shop.items/${100 + i}`, { token: TOKEN })).status).toBe(404);
  });

  it('hand-over moves the lease to a named node once it has caught up; 409 on a non-holder, 400 for an unknown node', async () => {
    expect((await c.op(a, 'POST', '/v1/replication/hand-over', { node: 'node-b' })).status).toBe(409);
    expect((await c.op(b, 'POST', '/v1/replication/hand-over', { node: 'nobody' })).json.error).toBe('validation_failed');
    expect((await c.op(b, 'POST', '/v1/replication/hand-over', {})).json.error).toBe('validation_failed');
    const r = await c.op(b, 'POST', '/v1/replication/hand-over', { node: 'node-a' });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ from: 'node-b', to: 'node-a' });
    expect((await c.writer())[0]).toBe('node-a');
    expect((await a.request('PUT', `${T}/rows/shop.items/300`, { token: TOKEN, body: { id: 300, name: 'handed' } })).status).toBe(200);
  });
});

describe('a node whose etcd is down', () => {
  it('starts fenced (writes 503, /ready?require=write 503) and takes the lease once etcd is up', async () => {
    const port = await freePort();
    const s = new TestServer(TestServer.tempDir(), bootstrapEnv({ DB_ETCD_ENDPOINTS: `http://127.0.0.1:${port}`, DB_NODE_NAME: 'lonely', DB_LEASE_TTL_MS: '2000' }));
    let etcd: LocalEtcd | null = null;
    try {
      await s.start();
      expect((await s.request('GET', '/ready?require=write')).status).toBe(503);
      const w = await s.request('POST', `${T}/schemas`, { token: TOKEN, raw: ITEMS_TOML, contentType: 'text/plain' });
      expect([w.status, w.json.error, w.json.fenced]).toEqual([503, 'service_unavailable', true]);
      etcd = await LocalEtcd.start({ clientPort: port });
      await until('the node takes the lease', async () => (await s.request('GET', '/ready?require=write')).status === 200, 30_000);
      expect((await s.request('POST', `${T}/schemas`, { token: TOKEN, raw: ITEMS_TOML, contentType: 'text/plain' })).status).toBe(200);
    } finally {
      await s.stop();
      await etcd?.stop();
    }
  });
});
