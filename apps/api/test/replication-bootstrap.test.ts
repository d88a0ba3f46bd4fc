/**
 * Bootstrap from a snapshot over real HTTPS with a real etcd: a follower that joins after the
 * holder's log retention dropped old segments is re-imaged from the holder's snapshot and then
 * tails; an old holder whose log diverged (it wrote frames while its follower was down, then
 * died, and the follower came back and took over) discards them by re-imaging from the new holder, and rejoins.
 */
import { Cluster, until } from './cluster';
import { ITEMS_TOML, TENANT, TOKEN, TestServer } from './server';

const T = `/v1/tenants/${TENANT}`;
const status = async (c: Cluster, s: TestServer) => (await c.op(s, 'GET', '/v1/replication/status')).json;
const put = (s: TestServer, id: number, name: string) => s.request('PUT', `${T}/rows/shop.items/${id}`, { token: TOKEN, body: { id, name } });
const get = async (s: TestServer, id: number) => {
  const r = await s.request('GET', `${T}/rows/shop.items/${id}`, { token: TOKEN });
  return r.status === 200 ? r.json.name : r.status;
};

describe('bootstrap from a snapshot', () => {
  const { c, get: first } = Cluster.holder({ DB_LOG_SEGMENT_FRAMES: '16', DB_CHECKPOINT_FRAMES: '20', DB_CHECKPOINT_MS: '0' });
  let a: TestServer;
  let b: TestServer;
  beforeAll(() => (a = first()));

  it('a follower joining after retention dropped the start of the log bootstraps from a snapshot, then tails', async () => {
    expect((await a.request('POST', `${T}/schemas`, { token: TOKEN, raw: ITEMS_TOML, contentType: 'text/plain' })).status).toBe(200);
    for (let i = 1; i <= 60; i++) expect((await put(a, i, `n${i}`)).status).toBe(200);
    const issued = await a.request('POST', `${T}/tokens`, { token: TOKEN, body: {} });
    expect(issued.status).toBe(201);
    for (let i = 61; i <= 80; i++) expect((await put(a, i, `n${i}`)).status).toBe(200);
    // While segment 0 still exists the probe streams it, and retention may drop it mid-stream:
    // the server then cuts the response (a follower retries), which the probe takes as "not yet".
    await until('segment 0 dropped on node-a', async () => (await c.op(a, 'GET', '/v1/replication/frames?since_segment=0').catch(() => null))?.status === 410);
    b = await c.node('node-b');
    await until('node-b bootstrapped and caught up', async () => {
      const s = await status(c, b);
      return s.bootstrapped !== null && s.role === 'follower' && s.last_lsn === (await status(c, a)).last_lsn;
    });
    for (const i of [1, 30, 60, 80]) expect(await get(b, i)).toBe(`n${i}`);
    // a token issued on the holder before node-b existed came with the image
    expect((await b.request('GET', `${T}/rows/shop.items/1`, { token: issued.json.token })).status).toBe(200);
    expect((await put(a, 61, 'after')).status).toBe(200);
    await until('the new row on node-b', async () => (await get(b, 61)) === 'after');
    // the unique index came with the image: a clash is refused on the holder, and node-b still agrees
    expect((await put(a, 62, 'n5')).status).toBe(409);
  });

  it('an old holder whose log diverged re-images from the new holder and loses only its unreplicated frames', async () => {
    const issued = await a.request('POST', `${T}/tokens`, { token: TOKEN, body: {} });
    expect(issued.status).toBe(201);
    const revoked: string = issued.json.token;
    await until('node-b caught up', async () => (await status(c, b)).last_lsn === (await status(c, a)).last_lsn);
    expect((await b.request('GET', `${T}/rows/shop.items/61`, { token: revoked })).status).toBe(200);
    const epoch = (await c.op(a, 'GET', '/v1/replication/lease')).json.epoch;
    // node-b goes down; node-a writes two frames only it has, then dies; node-b comes back alone
    await b.stop();
    expect((await put(a, 100, 'lost-1')).status).toBe(200);
    expect((await put(a, 101, 'lost-2')).status).toBe(200);
    await a.kill();
    await b.start();
    expect((await c.writer())[0]).toBe('node-b');
    expect((await c.op(b, 'GET', '/v1/replication/lease')).json.epoch).toBeGreaterThan(epoch);
    // a token both nodes know is revoked on node-b while node-a is down
    expect((await b.request('DELETE', `${T}/tokens/${issued.json.token_id}`, { token: TOKEN })).status).toBe(200);
    // node-b writes at the LSNs node-a used for its lost frames
    expect((await put(b, 200, 'kept-1')).status).toBe(200);
    expect((await put(b, 201, 'kept-2')).status).toBe(200);
    expect((await put(b, 202, 'kept-3')).status).toBe(200);

    await a.start();
    await until('node-a re-imaged and caught up', async () => {
      const s = await status(c, a);
      return s.bootstrapped !== null && s.role === 'follower' && s.last_lsn === (await status(c, b)).last_lsn;
    }, 30_000);
    expect(await get(a, 100)).toBe(404);
    expect(await get(a, 101)).toBe(404);
    for (const i of [200, 201, 202]) expect(await get(a, i)).toBe(`kept-${i - 199}`);
    expect(await get(a, 61)).toBe('after');
    // the image's tokens replace node-a's: the one revoked on node-b no longer opens node-a
    expect((await a.request('GET', `${T}/rows/shop.items/61`, { token: revoked })).status).toBe(401);
    expect((await a.request('GET', `${T}/rows/shop.items/61`, { token: TOKEN })).status).toBe(200);
    const refused = await put(a, 300, 'no');
    expect([refused.status, refused.json.holder]).toEqual([503, 'node-b']);
  });
});
