/**
 * A watch stream through a SIGKILL of the server: the `eventsource` client keeps reconnecting
 * (Last-Event-ID) to the same port while the server is down; after the restart it gets every
 * change committed before the kill that it had not yet received, and every change committed
 * after the restart before it came back, in LSN order, once each.
 */
import * as net from 'net';
import { TENANT, TestServer, TOKEN, OPERATOR, tableToml } from './server';
import { EventSource, tokenFetch } from './sse-client';

const T = `/v1/tenants/${TENANT}`;
const TOML = tableToml('wc.rows', [['n', 'i64']]);

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
});
