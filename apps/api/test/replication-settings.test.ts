/**
 * A tenant's own sync settings (GET/PUT /v1/replication/settings: stored in its log, so a
 * follower and a later holder keep them) and the staleness bound of a node cut off from its
 * holder (DB_REPLICATION_MAX_STALE_MS), on a real etcd and real HTTPS nodes.
 */
import { Cluster, until } from './cluster';
import { ITEMS_TOML, TENANT, TOKEN, TestServer } from './server';

jest.setTimeout(120_000);

const T = `/v1/tenants/${TENANT}`;
const S = '/v1/replication/settings';

describe('per-tenant sync settings and the staleness bound', () => {
  // The nodes' own defaults are asynchronous and not strict; the tenant changes that for itself.
  const { c, get } = Cluster.holder({ DB_LEASE_TTL_MS: '6000', DB_REPLICATION_MAX_STALE_MS: '2000' });
  let a: TestServer;
  let b: TestServer;
  const row = (s: TestServer, id: number) => s.request('PUT', `${T}/rows/shop.items/${id}`, { token: TOKEN, body: { id, name: `n${id}` } });
  const read = (s: TestServer, id: number) => s.request('GET', `${T}/rows/shop.items/${id}`, { token: TOKEN });

  beforeAll(async () => {
    a = get();
    expect((await a.request('POST', `${T}/schemas`, { token: TOKEN, raw: ITEMS_TOML, contentType: 'text/plain' })).status).toBe(200);
    expect((await row(a, 1)).status).toBe(200);
    b = await c.node('node-b');
    await until('node-b follows and has row 1', async () => (await read(b, 1)).status === 200);
  });

  it('are the node defaults until set; checked; taken only by the holder; written in the log the follower applies', async () => {
    const none = { sync_followers: null, sync_ms: null, strict: null };
    const defaults = { sync_followers: 0, sync_ms: 1000, strict: false };
    expect((await c.op(a, 'GET', S)).json).toEqual({ tenant: TENANT, stored: none, node_defaults: defaults, effective: defaults, replicated: true });
    for (const body of [{ strict: 'yes' }, { sync_ms: 0 }, { sync_followers: 65 }, { sync_followers: 1.5 }, { window: 1 }, [1]]) {
      const r = await c.op(a, 'PUT', S, body);
      expect([JSON.stringify(body), r.status, r.json.error]).toEqual([JSON.stringify(body), 400, 'validation_failed']);
    }
    expect((await a.request('GET', S, { token: TOKEN })).status).toBe(403); // operator only
    const onFollower = await c.op(b, 'PUT', S, { strict: true });
    expect([onFollower.status, onFollower.json.error, onFollower.json.holder]).toEqual([503, 'service_unavailable', 'node-a']);

    const put = await c.op(a, 'PUT', S, { sync_followers: 1, sync_ms: 400, strict: true });
    expect(put.status).toBe(200);
    expect(put.json).toMatchObject({ stored: { sync_followers: 1, sync_ms: 400, strict: true }, effective: { sync_followers: 1, sync_ms: 400, strict: true } });
    // writes now wait for node-b's acknowledgement (and get it)
    const w = await row(a, 2);
    expect([w.status, w.headers['x-db-replication']]).toEqual([200, undefined]);
    expect((await c.op(a, 'GET', '/v1/replication/status')).json.followers).toEqual([expect.objectContaining({ follower: 'node-b' })]);
    // the follower holds them from the log
    await until('node-b has the settings', async () => (await c.op(b, 'GET', S)).json.stored.strict === true);
    // absent fields stay, null goes back to the node default
    const back = await c.op(a, 'PUT', S, { strict: null });
    expect(back.json).toMatchObject({ stored: { sync_followers: 1, sync_ms: 400, strict: null }, effective: { sync_followers: 1, sync_ms: 400, strict: false } });
    expect((await c.op(a, 'PUT', S, { strict: true })).json.effective.strict).toBe(true);
  });

  it('a follower cut off from the holder refuses the tenant past DB_REPLICATION_MAX_STALE_MS, and serves again once it hears from it', async () => {
    const before = await read(b, 1);
    expect([before.status, before.headers['x-db-replication-lag-frames']]).toEqual([200, '0']);
    a.proc.kill('SIGSTOP'); // the holder keeps its lease (TTL 6 s) but says nothing
    try {
      const refused = await until('node-b refuses', async () => {
        const r = await read(b, 1);
        return r.status === 503 ? r : null;
      });
      expect(refused.json).toMatchObject({ error: 'service_unavailable', retry: true, stale: true, max_stale_ms: 2000, holder: 'node-a' });
      expect(refused.json.stale_ms).toBeGreaterThan(2000);
      expect((await c.op(b, 'GET', '/v1/replication/status')).json.stale_ms).toBeGreaterThan(2000);
      const ready = await b.request('GET', '/ready?require=read');
      expect([ready.status, ready.json.readable, ready.json.pressure]).toEqual([503, false, 'stale']);
    } finally {
      a.proc.kill('SIGCONT');
    }
    await until('node-b serves again', async () => (await read(b, 1)).status === 200);
    expect((await b.request('GET', '/ready?require=read')).status).toBe(200);
  });

  it('a new holder keeps them: strict 504 with no follower left, though its own defaults are asynchronous', async () => {
    await a.kill();
    const [name] = await c.writer(30_000);
    expect(name).toBe('node-b');
    const r = await row(b, 3);
    expect([r.status, r.json.error]).toEqual([504, 'gateway_timeout']);
    expect((await read(b, 3)).status).toBe(200); // committed all the same
    // the operator can still change them (the change does not wait on the window)
    const put = await c.op(b, 'PUT', S, { sync_followers: null, strict: null });
    expect([put.status, put.json.effective]).toEqual([200, { sync_followers: 0, sync_ms: 400, strict: false }]);
    const w = await row(b, 4);
    expect([w.status, w.headers['x-db-replication']]).toEqual([200, undefined]);
  });
});
