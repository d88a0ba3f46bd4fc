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

const realSetTimeout = setTimeout; // taken before any test fakes timers
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

test('a stream reset mid-event: the partial event is never yielded; the reconnect waits 250 ms (fake timers) and resumes after the last whole event', async () => {
  jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
  try {
    srv.script(
      { sse: [ev(1, { n: 1 }), ev(2, { n: 2 }), 'id: 3\nevent: change\ndata: {"n":'], drop: true }, // cut inside event 3
      { sse: [ev(2, { n: 2 }), ev(3, { n: 3 }), ev(4, { n: 4 })], end: false }, // the server replays from its log
    );
    const it = db.watch<{ n: number }>('x')[Symbol.asyncIterator]();
    expect((await it.next()).value).toMatchObject({ id: '1', data: { n: 1 } });
    expect((await it.next()).value).toMatchObject({ id: '2', data: { n: 2 } });
    const third = it.next();
    // the server drops the connection (50 ms of real time later); the client then sleeps its backoff on the fake clock
    for (let i = 0; jest.getTimerCount() === 0 && i < 400; i++) await new Promise((r) => realSetTimeout(r, 5));
    expect(jest.getTimerCount()).toBe(1);
    // no second request before 250 ms, one at 250 ms
    await jest.advanceTimersByTimeAsync(249);
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    expect(srv.seen).toHaveLength(1);
    await jest.advanceTimersByTimeAsync(1);
    await srv.requests(2);
    expect(srv.seen[1].headers['last-event-id']).toBe('2');
    expect((await third).value).toMatchObject({ id: '3', data: { n: 3 } });
    expect((await it.next()).value).toMatchObject({ id: '4', data: { n: 4 } });
    await it.return!();
  } finally {
    jest.useRealTimers();
  }
});

test('resumes from a saved lastEventId', async () => {
  srv.script({ sse: [ev(7, 'a'), ev(8, 'b')], end: false });
  const it = db.watch('x', { lastEventId: '7' })[Symbol.asyncIterator]();
  const first = await it.next();
  expect(first.value).toMatchObject({ id: '8', data: 'b' });
  await it.return!();
  expect(srv.seen[0].headers['last-event-id']).toBe('7');
});

test('aborting the signal ends an iteration that waits for data on an idle stream', async () => {
  srv.script({ sse: [ev(1, 'a')], end: false });
  const ctl = new AbortController();
  const it = db.watch('x', { signal: ctl.signal })[Symbol.asyncIterator]();
  expect((await it.next()).value).toMatchObject({ id: '1' });
  const pending = it.next(); // nothing more comes: the read waits
  ctl.abort();
  await expect(pending).resolves.toEqual({ done: true, value: undefined });
  expect(srv.seen).toHaveLength(1); // and it does not reconnect
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
  // the server's form, epoch:lsn: a higher epoch wins, then the LSN, compared as numbers
  expect(idAfter('1:10', '1:9')).toBe(true);
  expect(idAfter('2:1', '1:99')).toBe(true);
  expect(idAfter('1:99', '2:1')).toBe(false);
  expect(idAfter('1:9', '1:9')).toBe(false);
  expect(idAfter('abc', 'abc')).toBe(false);
  expect(idAfter('abd', 'abc')).toBe(true);
  expect(idAfter('1', undefined)).toBe(true);
});
