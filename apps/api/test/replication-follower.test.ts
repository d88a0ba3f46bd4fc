/**
 * Followers over real HTTPS with a real etcd: a node that joins late catches up through the
 * frames endpoint and the one frame applier (its log equals the holder's byte for byte, its
 * reads and searches answer the same, with the lag header), keeps up with new writes, and
 * acknowledges them (a sync write is not degraded). When the holder is killed, the follower
 * takes the lease with a higher epoch and writes; the old holder restarts and rejoins as a
 * follower with everything.
 */
import { Cluster, until } from './cluster';
import { PAPERS_TOML, TENANT, TOKEN, TestServer } from './server';

const T = `/v1/tenants/${TENANT}`;

async function log(c: Cluster, s: TestServer): Promise<string[]> {
  const r = await c.op(s, 'GET', '/v1/replication/frames?since_segment=0');
  expect(r.status).toBe(200);
  return r.text
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l))
    .filter((l) => l.type === 'frame')
    .map((l) => `${l.lsn}:${l.epoch}:${l.hex}`);
}

const status = async (c: Cluster, s: TestServer) => (await c.op(s, 'GET', '/v1/replication/status')).json;
const search = async (s: TestServer) => (await s.request('GET', `${T}/fts/lib.papers/body?q=hypersonic&limit=100`, { token: TOKEN })).json.map((h: { doc_id: string }) => h.doc_id).sort();

describe('followers and failover', () => {
  const { c, get: first } = Cluster.holder({ DB_REPLICATION_SYNC_FOLLOWERS: '1', DB_REPLICATION_SYNC_MS: '1000' });
  let a: TestServer;
  let b: TestServer;
  beforeAll(() => (a = first()));

  it('a late follower catches up and then keeps up; its log, reads and searches equal the holder', async () => {
    expect((await a.request('POST', `${T}/schemas`, { token: TOKEN, raw: PAPERS_TOML, contentType: 'text/plain' })).status).toBe(200);
    for (let k = 0; k < 3; k++) {
      const rows = Array.from({ length: 10 }, (_, j) => ({ id: `p${k * 10 + j}`, body: `note ${j} ${j % 3 ? 'subsonic' : 'hypersonic'} flow` }));
      const r = await a.request('POST', `${T}/rows/lib.papers/_batch`, { token: TOKEN, body: rows });
      expect([r.status, r.headers['x-db-replication']]).toEqual([200, 'degraded']); // no follower yet
    }
    b = await c.node('node-b');
    await until('node-b caught up', async () => (await status(c, b)).last_lsn === (await status(c, a)).last_lsn);
    expect(await log(c, b)).toEqual(await log(c, a));
    expect(await search(b)).toEqual(await search(a));

    // new writes reach it, acknowledged within the sync window
    const w = await a.request('PUT', `${T}/rows/lib.papers/new`, { token: TOKEN, body: { id: 'new', body: 'a hypersonic arrival' } });
    expect(w.status).toBe(200);
    expect(w.headers['x-db-replication']).toBeUndefined();
    const read = await until('the row on node-b', async () => {
      const r = await b.request('GET', `${T}/rows/lib.papers/new`, { token: TOKEN });
      return r.status === 200 ? r : null;
    });
    expect(read.json).toMatchObject({ id: 'new', body: 'a hypersonic arrival' });
    expect(read.headers['x-db-replication-lag-frames']).toBe('0');
    expect(Number(read.headers['x-db-replication-lag-seconds'])).toBeGreaterThanOrEqual(0);
    expect(await log(c, b)).toEqual(await log(c, a));
    expect(await search(b)).toEqual(await search(a));
    // the two stores hold the same keys, and verify finds every derived entry where the rows say
    const [ca, cb] = [(await c.op(a, 'GET', '/v1/replication/checksum')).json, (await c.op(b, 'GET', '/v1/replication/checksum')).json];
    expect(ca.verify).toMatchObject({ ok: true, rows: 31 });
    expect(cb).toEqual({ ...ca });
    // the follower refuses writes, naming the holder
    const refused = await b.request('PUT', `${T}/rows/lib.papers/x`, { token: TOKEN, body: { id: 'x' } });
    expect([refused.status, refused.json.holder]).toEqual([503, 'node-a']);
    const st = await status(c, a);
    expect(st.followers).toEqual([expect.objectContaining({ follower: 'node-b', lag_frames: 0 })]);
    expect((await a.request('GET', '/metrics')).text).toMatch(/db_replication_frames_total\{direction="out"\} [1-9]/);
    expect((await b.request('GET', '/metrics')).text).toMatch(/db_replication_frames_total\{direction="in"\} [1-9]/);
  });

  it('when the holder dies the follower takes the lease with a higher epoch; the old holder rejoins and catches up', async () => {
    const epoch = (await c.op(b, 'GET', '/v1/replication/lease')).json.epoch;
    const acked: string[] = [];
    for (let i = 0; i < 10; i++) {
      const r = await a.request('PUT', `${T}/rows/lib.papers/k${i}`, { token: TOKEN, body: { id: `k${i}`, body: 'hypersonic kill' } });
      expect(r.status).toBe(200);
      if (!r.headers['x-db-replication']) acked.push(`k${i}`);
    }
    expect(acked.length).toBe(10);
    await a.kill();
    const [name] = await c.writer(15_000);
    expect(name).toBe('node-b'); // how fast: tools/bench/failover
    const lease = (await c.op(b, 'GET', '/v1/replication/lease')).json;
    expect(lease.holder).toBe('node-b');
    expect(lease.epoch).toBeGreaterThan(epoch);
    for (const k of acked) expect((await b.request('GET', `${T}/rows/lib.papers/${k}`, { token: TOKEN })).status).toBe(200);
    // node-b writes now (degraded: its follower is down)
    expect((await b.request('PUT', `${T}/rows/lib.papers/after`, { token: TOKEN, body: { id: 'after', body: 'hypersonic later' } })).status).toBe(200);

    await a.start();
    await until('node-a rejoins and catches up', async () => {
      const s = await status(c, a);
      return s.role === 'follower' && s.last_lsn === (await status(c, b)).last_lsn;
    });
    expect(await log(c, a)).toEqual(await log(c, b));
    expect(await search(a)).toEqual(await search(b));
    expect((await c.op(a, 'GET', '/v1/replication/checksum')).json).toEqual((await c.op(b, 'GET', '/v1/replication/checksum')).json);
    expect((await a.request('GET', `${T}/rows/lib.papers/after`, { token: TOKEN })).status).toBe(200);
  });
});
