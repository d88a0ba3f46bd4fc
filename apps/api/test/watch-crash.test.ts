/**
 * A watch stream through a SIGKILL of the server: the `eventsource` client keeps reconnecting
 * (Last-Event-ID) to the same port while the server is down; after the restart it gets every
 * change committed before the kill that it had not yet received, and every change committed
 * after the restart before it came back, in LSN order, once each. The same for an aggregate
 * subscription: the result rows folded from its snapshot and every change event (each update's
 * `old` being what the client held) end equal to the query's answer, with no reset.
 */
import * as net from 'net';
import { TENANT, TestServer, TOKEN, OPERATOR, tableToml } from './server';
import { EventSource, tokenFetch } from './sse-client';

const T = `/v1/tenants/${TENANT}`;
const TOML = tableToml('wc.rows', [['n', 'i64']]);
const AGG_TOML = tableToml('wc.agg', [['cat', 'str'], ['n', 'i64']]);

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
    s.on('error', reject);
  });
}

describe('watch through a server crash', () => {
  it('resumes after a SIGKILL and restart with every change once, in LSN order', async () => {
    const dir = TestServer.tempDir();
    // durable commits (no DB_SYNC=false); a reconnect hint long enough that writes land while the client is away
    const env = { DB_BOOTSTRAP_TENANT: TENANT, DB_BOOTSTRAP_TOKEN: TOKEN, DB_OPERATOR_TOKEN: OPERATOR, DB_PORT: String(await freePort()), DB_WATCH_RETRY_MS: '1500', DB_WATCH_COALESCE_MS: '20' };
    let srv = await new TestServer(dir, env).start();
    const put = (id: number) => srv.request('PUT', `${T}/rows/wc.rows/${id}`, { token: TOKEN, body: { id, n: id } });
    expect((await srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: TOML, contentType: 'text/plain' })).status).toBe(200);

    const got: Array<{ lsn: number; id: string; keys: number[] }> = [];
    const ids: string[] = [];
    const es = new EventSource(`${srv.url}${T}/watch?sql=${encodeURIComponent('select id from wc.rows where n % 3 <> 0')}`, { fetch: tokenFetch(TOKEN, srv.ca) });
    let opens = 0;
    es.addEventListener('open', () => opens++);
    es.addEventListener('position', (e) => ids.push((e as MessageEvent).lastEventId));
    es.addEventListener('change', (e) => {
      const m = e as MessageEvent;
      const d = JSON.parse(m.data) as { lsn: number; changes: Array<{ key: number[]; op: string }> };
      ids.push(m.lastEventId);
      got.push({ lsn: d.lsn, id: m.lastEventId, keys: d.changes.map((c) => c.key[0]) });
    });
    const waitFor = async (pred: () => boolean, what: string) => {
      const deadline = Date.now() + 20_000;
      while (!pred()) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; got ${JSON.stringify(got)}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    try {
      await waitFor(() => ids.length > 0, 'the stream to open');
      let id = 1;
      for (; id <= 40; id++) expect((await put(id)).status).toBe(200);
      // killed with some of those possibly still in a coalescing window, never sent
      await srv.kill();
      srv = await new TestServer(dir, env).start();
      // committed while the client is still away (it retries every 1.5 s)
      for (; id <= 60; id++) expect((await put(id)).status).toBe(200);
      await waitFor(() => opens >= 2, 'the client to come back');
      for (; id <= 80; id++) expect((await put(id)).status).toBe(200);
      const want = Array.from({ length: 80 }, (_, i) => i + 1).filter((k) => k % 3 !== 0);
      await waitFor(() => got.flatMap((g) => g.keys).length >= want.length, 'every change');
      await new Promise((r) => setTimeout(r, 200)); // nothing more (no duplicates) arrives
      expect(got.flatMap((g) => g.keys)).toEqual(want);
      const lsns = got.map((g) => g.lsn);
      for (let i = 1; i < lsns.length; i++) expect(lsns[i]).toBeGreaterThan(lsns[i - 1]);
    } finally {
      es.close();
      await srv.stop();
    }
  }, 90_000);

  it('resumes an aggregate subscription after a SIGKILL and restart: the result rows each missed burst changed, once', async () => {
    const dir = TestServer.tempDir();
    const env = { DB_BOOTSTRAP_TENANT: TENANT, DB_BOOTSTRAP_TOKEN: TOKEN, DB_OPERATOR_TOKEN: OPERATOR, DB_PORT: String(await freePort()), DB_WATCH_RETRY_MS: '1500', DB_WATCH_COALESCE_MS: '20' };
    let srv = await new TestServer(dir, env).start();
    const cats = ['a', 'b', 'c', 'd'];
    // row i: inserted in group i % 4, later moved to another group or deleted
    const put = (id: number, cat: string) => srv.request('PUT', `${T}/rows/wc.agg/${id}`, { token: TOKEN, body: { id, cat, n: id } });
    const write = async (i: number) => {
      const r = i % 5 === 0 ? await srv.request('DELETE', `${T}/rows/wc.agg/${i - 3}`, { token: TOKEN }) : i % 3 === 0 ? await put(i - 2, cats[(i + 1) % 4]) : await put(i, cats[i % 4]);
      expect(r.status).toBe(200);
    };
    expect((await srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: AGG_TOML, contentType: 'text/plain' })).status).toBe(200);
    for (let i = 1; i <= 6; i++) await write(i);
    const SQL = 'select cat, count(*) as k, sum(n) as s, max(n) as hi from wc.agg where n % 7 <> 0 group by cat having count(*) > 0';
    const held = new Map<string, unknown>();
    const lsns: number[] = [];
    const events: string[] = [];
    const es = new EventSource(`${srv.url}${T}/watch?initial=true&sql=${encodeURIComponent(SQL)}`, { fetch: tokenFetch(TOKEN, srv.ca) });
    let opens = 0;
    es.addEventListener('open', () => opens++);
    for (const name of ['snapshot', 'reset', 'position']) es.addEventListener(name, (e) => events.push(`${name} ${(e as MessageEvent).data}`));
    es.addEventListener('snapshot', (e) => {
      for (const r of JSON.parse((e as MessageEvent).data).rows as Array<{ cat: string }>) held.set(r.cat, r);
    });
    const problems: string[] = [];
    es.addEventListener('change', (e) => {
      const d = JSON.parse((e as MessageEvent).data) as { lsn: number; changes: Array<{ key: string[]; op: string; old?: unknown; new?: unknown }> };
      lsns.push(d.lsn);
      for (const c of d.changes) {
        const k = c.key[0];
        if (c.op !== 'insert' && JSON.stringify(held.get(k)) !== JSON.stringify(c.old)) problems.push(`${c.op} of ${k} from ${JSON.stringify(c.old)} while holding ${JSON.stringify(held.get(k))}`);
        if (c.op === 'insert' && held.has(k)) problems.push(`insert of ${k}, already held`);
        if (c.op === 'delete') held.delete(k);
        else held.set(k, c.new);
      }
    });
    const answer = async () => {
      const r = await srv.request('POST', `${T}/sql`, { token: TOKEN, body: { sql: SQL } });
      return new Map((r.json.rows as Array<{ cat: string }>).map((x) => [x.cat, x]));
    };
    const waitFor = async (pred: () => boolean | Promise<boolean>, what: string) => {
      const deadline = Date.now() + 20_000;
      while (!(await pred())) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; events ${events.join(' | ')}; problems ${problems.join('; ')}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    try {
      await waitFor(() => events.length > 0, 'the snapshot');
      let i = 7;
      for (; i <= 40; i++) await write(i);
      await srv.kill();
      srv = await new TestServer(dir, env).start();
      for (; i <= 60; i++) await write(i); // while the client is away
      await waitFor(() => opens >= 2, 'the client to come back');
      for (; i <= 80; i++) await write(i);
      const want = await answer();
      await waitFor(() => JSON.stringify([...held].sort()) === JSON.stringify([...want].sort()), 'the folded result to equal the query');
      await new Promise((r) => setTimeout(r, 300)); // nothing more (no duplicates) arrives
      expect(problems).toEqual([]);
      expect(new Map([...held].sort())).toEqual(new Map([...want].sort()));
      expect(events.filter((e) => e.startsWith('reset') || e.startsWith('snapshot'))).toHaveLength(1); // the first snapshot; never a reset
      for (let j = 1; j < lsns.length; j++) expect(lsns[j]).toBeGreaterThan(lsns[j - 1]);
    } finally {
      es.close();
      await srv.stop();
    }
  }, 90_000);
});
