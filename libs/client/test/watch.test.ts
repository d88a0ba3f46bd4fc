/**
 * watch(): an async iterator over SSE that reconnects with Last-Event-ID and never yields an
 * event twice, against a local server that drops the stream and replays events on reconnect.
 */
import { Mmdb, parseSse, idAfter } from '../src';
import { FaultServer, err } from './fault-server';

const TENANT = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
let srv: FaultServer;
let db: Mmdb;
beforeEach(async () => {
  srv = await new FaultServer().start();
  db = new Mmdb({ url: srv.url, token: 'tok', tenant: TENANT });
});
afterEach(async () => {
  await db.close();
  await srv.stop();
});

const ev = (id: number, data: unknown) => `id: ${id}\nevent: change\ndata: ${JSON.stringify(data)}\n\n`;

test('reconnects with Last-Event-ID after a drop and skips what it already yielded', async () => {
  srv.script(
    { sse: ['retry: 5\n\n', ev(1, { n: 1 }), ev(2, { n: 2 })] }, // then the stream ends
    err(503, 'service_unavailable'), // one failed reconnect
    { sse: ['retry: 5\n\n', ev(2, { n: 2 }), ': heartbeat\n\n', ev(3, { n: 3 })], end: false },
  );
  const got: unknown[] = [];
  for await (const e of db.watch<{ n: number }>('new orders')) {
    got.push({ id: e.id, event: e.event, n: e.data.n });
    if (got.length === 3) break;
  }
  expect(got).toEqual([
    { id: '1', event: 'change', n: 1 },
    { id: '2', event: 'change', n: 2 },
    { id: '3', event: 'change', n: 3 },
  ]);
  expect(srv.seen.map((s) => s.headers['last-event-id'])).toEqual([undefined, '2', '2']);
  expect(srv.seen[0].url).toBe(`/v1/tenants/${TENANT}/watch?nl=new%20orders`);
  expect(srv.seen[0].headers.accept).toBe('text/event-stream');
});

test('resumes from a saved lastEventId', async () => {
  srv.script({ sse: [ev(7, 'a'), ev(8, 'b')], end: false });
  const it = db.watch('x', { lastEventId: '7' })[Symbol.asyncIterator]();
  const first = await it.next();
  expect(first.value).toMatchObject({ id: '8', data: 'b' });
  await it.return!();
  expect(srv.seen[0].headers['last-event-id']).toBe('7');
});

test('a 4xx ends the iteration with the error', async () => {
  srv.script(err(400, 'validation_failed'));
  const it = db.watch('')[Symbol.asyncIterator]();
  await expect(it.next()).rejects.toMatchObject({ code: 'validation_failed' });
});

test('parseSse: multi-line data, CRLF, comments, split chunks', async () => {
  const te = new TextEncoder();
  async function* chunks() {
    for (const c of ['id: 1\r\nda', 'ta: a\r\ndata: b\r', '\n\r\n: note\n', 'event: x\ndata: y\n\n']) yield te.encode(c);
  }
  const out = [];
  for await (const e of parseSse(chunks())) out.push(e);
  expect(out).toEqual([
    { id: '1', event: 'message', data: 'a\nb' },
    { id: undefined, event: 'x', data: 'y' },
  ]);
});

test('idAfter orders numeric and epoch-lsn ids', () => {
  expect(idAfter('10', '9')).toBe(true);
  expect(idAfter('9', '10')).toBe(false);
  expect(idAfter('2-1', '1-99')).toBe(true);
  expect(idAfter('abc', 'abc')).toBe(false);
  expect(idAfter('abd', 'abc')).toBe(true);
  expect(idAfter('1', undefined)).toBe(true);
});
