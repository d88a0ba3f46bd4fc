/**
 * Watch event ids through a real failover (etcd lease, two HTTPS nodes): ids carry the lease
 * epoch; a client whose last id names frames the old holder wrote and the new holder never had
 * (its LSN rewritten under the new epoch) resumes on the new holder with `reset` (the rows to
 * start again from), not a silent gap; a client whose last id is in the history both share
 * resumes with every change after it, under ids of the new epoch.
 */
import { Cluster, until } from './cluster';
import { TENANT, TOKEN, tableToml, type TestServer } from './server';
import { RawStream } from './sse-client';

const T = `/v1/tenants/${TENANT}`;
const TOML = tableToml('wf.rows', [['n', 'i64']]);
const Q = `${T}/watch?sql=${encodeURIComponent('select id from wf.rows')}`;
const data = (b: { data?: string }) => JSON.parse(b.data!);

describe('watch through a failover', () => {
  const { c, get } = Cluster.holder({});
  const streams: RawStream[] = [];
  afterAll(() => {
    for (const s of streams) s.close();
  });
  const stream = async (s: TestServer, lastEventId?: string) => {
    const r = await RawStream.open(s.url + Q, s.ca, { accept: 'text/event-stream', authorization: `Bearer ${TOKEN}`, ...(lastEventId ? { 'last-event-id': lastEventId } : {}) });
    streams.push(r);
    return r;
  };
  const lastLsn = async (s: TestServer) => (await c.op(s, 'GET', '/v1/replication/status')).json.last_lsn as number;
  const put = async (s: TestServer, id: number) => expect((await s.request('PUT', `${T}/rows/wf.rows/${id}`, { token: TOKEN, body: { id, n: id } })).status).toBe(200);

  it('resets a client whose last id the new holder rewrote; resumes one from the shared history under the new epoch', async () => {
    const a = get();
    expect((await a.request('POST', `${T}/schemas`, { token: TOKEN, raw: TOML, contentType: 'text/plain' })).status).toBe(200);
    for (let id = 1; id <= 3; id++) await put(a, id);
    const b = await c.node('node-b');
    await until('node-b caught up', async () => (await lastLsn(b)) === (await lastLsn(a)));
    const e1 = (await c.op(a, 'GET', '/v1/replication/lease')).json.epoch as number;

    const s = await stream(a);
    await s.until((x) => x.events('position').length === 1);
    const shared = s.events('position')[0].id!; // in the history both nodes hold
    expect(shared).toBe(`${e1}:${await lastLsn(a)}`);

    // node-b goes down; node-a commits frames it will never ship
    await b.kill();
    for (let id = 4; id <= 12; id++) await put(a, id);
    await s.until((x) => x.events('change').flatMap((e) => data(e).changes).length === 9);
    const lost = s.events('change').at(-1)!.id!;
    const lostLsn = Number(lost.split(':')[1]);
    expect(lost.startsWith(`${e1}:`)).toBe(true);

    await a.kill();
    await b.start(); // its log ends where the shared history does
    const [name] = await c.writer(20_000);
    expect(name).toBe('node-b');
    const e2 = (await c.op(b, 'GET', '/v1/replication/lease')).json.epoch as number;
    expect(e2).toBeGreaterThan(e1);
    // node-b writes past the LSN the client last saw: that LSN now holds another frame
    let id = 100;
    while ((await lastLsn(b)) < lostLsn + 1) await put(b, id++);

    const onB = ((await b.request('POST', `${T}/sql`, { token: TOKEN, body: { sql: 'select id from wf.rows' } })).json.rows as Array<{ id: number }>).map((r) => r.id);
    expect(onB).toEqual([1, 2, 3, ...Array.from({ length: id - 100 }, (_, i) => 100 + i)]);

    const late = await stream(b, lost);
    await late.until((x) => x.events('reset').length === 1);
    const reset = data(late.events('reset')[0]);
    expect(reset.reason).toBe('epoch');
    expect(reset.rows.map((r: { id: number }) => r.id)).toEqual(onB);
    expect(late.events('reset')[0].id).toBe(`${e2}:${reset.lsn}`);

    const after = onB.filter((k) => k > 3);
    const back = await stream(b, shared);
    await back.until((x) => x.events('change').flatMap((e) => data(e).changes).length === after.length);
    expect(back.events('reset')).toEqual([]);
    expect(back.events('change').flatMap((e) => data(e).changes.map((ch: { key: number[]; op: string }) => [ch.op, ch.key[0]]))).toEqual(after.map((k) => ['insert', k]));
    // the frames node-b wrote carry the new epoch in their ids
    const last = back.events('change').at(-1)!;
    expect(last.id!.startsWith(`${e2}:`)).toBe(true);
    // live changes go on under the new epoch
    await put(b, 999);
    await back.until((x) => x.events('change').some((e) => data(e).changes.some((ch: { key: number[] }) => ch.key[0] === 999)));
  }, 90_000);
});
