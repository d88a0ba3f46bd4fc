/**
 * The ES surface on a follower (real etcd, real HTTPS): the follower's cached index view follows
 * the frames its applier applies, so an ES read there sees a document in the frame that brought
 * it (no wait beyond the follower's own last LSN reaching the holder's).
 */
import { Cluster, until } from './cluster';
import { TENANT, TOKEN, TestServer } from './server';

const T = `/v1/tenants/${TENANT}`;

describe('ES reads on a follower', () => {
  const { c, get: first } = Cluster.holder({});
  let a: TestServer;
  let b: TestServer;
  beforeAll(() => (a = first()));

  const es = async (s: TestServer, method: string, p: string, body?: unknown) => {
    const r = await s.request(method, `${T}/es${p}`, { token: TOKEN, ...(body === undefined ? {} : { body }) });
    if (r.status >= 300) throw new Error(`${method} ${p}: ${r.status} ${r.text}`);
    return r.json;
  };
  const lsn = async (s: TestServer) => (await c.op(s, 'GET', '/v1/replication/status')).json.last_lsn;
  const caughtUp = () => until('node-b caught up', async () => (await lsn(b)) === (await lsn(a)));

  it("a follower's ES search, count and get see each applied frame at once", async () => {
    await es(a, 'PUT', '/notes', { mappings: { properties: { text: { type: 'text' }, n: { type: 'long' } } } });
    await es(a, 'PUT', '/notes/_doc/1', { text: 'first note', n: 1 });
    b = await c.node('node-b');
    await caughtUp();
    const ids = async () => (await es(b, 'POST', '/notes/_search', { query: { match: { text: 'note' } } })).hits.hits.map((h: { _id: string }) => h._id).sort();
    expect(await ids()).toEqual(['1']); // node-b's view is cached now

    for (let i = 2; i <= 4; i++) {
      await es(a, 'PUT', `/notes/_doc/${i}`, { text: `note ${i}`, n: i });
      await caughtUp();
      expect(await ids()).toEqual(Array.from({ length: i }, (_, j) => String(j + 1)));
      expect((await es(b, 'POST', '/notes/_count', { query: { range: { n: { gte: i } } } })).count).toBe(1);
    }
    await es(a, 'POST', '/notes/_update/2', { doc: { text: 'changed' } });
    await es(a, 'DELETE', '/notes/_doc/3');
    await caughtUp();
    expect(await ids()).toEqual(['1', '4']);
    expect((await es(b, 'GET', '/notes/_doc/2'))._source).toEqual({ text: 'changed', n: 2 });
    const agg = await es(b, 'POST', '/notes/_search', { size: 0, aggs: { s: { sum: { field: 'n' } } } });
    expect(agg.aggregations.s.value).toBe(7);
  }, 90_000);
});
