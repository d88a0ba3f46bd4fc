/**
 * GET /watch over real HTTPS: the JSON errors before a stream opens, then raw HTTP/1.1 reads of
 * the stream (retry hint, snapshot, changes from exactly its LSN, RethinkDB delete semantics,
 * coalescing, aggregates, position events, heartbeats, reset past the lag bound, the subscriber
 * cap) and the `eventsource` client resuming with Last-Event-ID.
 */
import { TENANT, TestServer, TOKEN, bootstrapEnv, tableToml } from './server';
import { EventSource, RawStream, tokenFetch } from './sse-client';

const T = `/v1/tenants/${TENANT}`;
const TOML = tableToml('w.items', [['name', 'str'], ['price', 'f64'], ['cat', 'str']]);

const q = (sql: string) => `${T}/watch?sql=${encodeURIComponent(sql)}`;
const SSE = { accept: 'text/event-stream', authorization: `Bearer ${TOKEN}` };
const data = (b: { data?: string }) => JSON.parse(b.data!);

describe('GET /watch (SSE change streams)', () => {
  let srv: TestServer;
  const open: RawStream[] = [];
  const stream = async (path: string, headers: Record<string, string> = {}) => {
    const s = await RawStream.open(srv.url + path, srv.ca, { ...SSE, ...headers });
    open.push(s);
    return s;
  };
  const put = async (row: Record<string, unknown>) => {
    const r = await srv.request('PUT', `${T}/rows/w.items/${row.id}`, { token: TOKEN, body: row });
    expect(r.status).toBe(200);
  };
  const del = async (id: number) => expect((await srv.request('DELETE', `${T}/rows/w.items/${id}`, { token: TOKEN })).status).toBe(200);

  beforeAll(async () => {
    srv = await new TestServer(
      TestServer.tempDir(),
      bootstrapEnv({ DB_WATCH_MAX: '4', DB_WATCH_COALESCE_MS: '300', DB_WATCH_HEARTBEAT_MS: '400', DB_WATCH_RETRY_MS: '300', DB_WATCH_MAX_LAG_FRAMES: '20' }),
    ).start();
    expect((await srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: TOML, contentType: 'text/plain' })).status).toBe(200);
  }, 60_000);
  afterEach(() => {
    for (const s of open.splice(0)) s.close();
  });
  afterAll(async () => {
    await srv?.stop();
  });

  it('answers a bad request with its ordinary JSON error, not a stream', async () => {
    const get = (path: string, headers: Record<string, string> = SSE) => RawStream.open(srv.url + path, srv.ca, headers).then(async (s) => {
      await s.until((x) => x.ended);
      return { status: s.status, type: String(s.headers['content-type']), body: JSON.parse(s.body) };
    });
    const noAccept = await get(q('select id from w.items'), { authorization: `Bearer ${TOKEN}` });
    expect(noAccept).toMatchObject({ status: 400, type: expect.stringContaining('application/json'), body: { error: 'validation_failed', field: 'accept' } });
    expect((await get(q('select id from w.items'), { accept: 'text/event-stream', authorization: 'Bearer nope-not-a-token-000000' })).body.error).toBe('unauthorized');
    expect((await get(q('select id frm w.items'))).status).toBe(400);
    expect((await get(q('select id from w.nope'))).status).toBe(400); // no such table, as POST /sql says
    expect((await get(q('select a.id from w.items a join w.items b on a.id = b.id'))).body.error).toBe('unsupported_sql');
    expect((await get(q('select id from w.items limit 3'))).body.error).toBe('unsupported_sql');
    expect((await get(`${T}/watch?nl=${encodeURIComponent('zorbs frobnicated by the quux')}`)).body.error).toBe('validation_failed');
    expect((await get(`${T}/watch?nl=${encodeURIComponent('items with price under 5')}&params=[1]`)).body).toMatchObject({ error: 'validation_failed', field: 'params' });
    expect((await get(`${T}/watch?plan=${encodeURIComponent('{"op":')}`)).body).toMatchObject({ error: 'validation_failed', field: 'plan' });
    expect((await get(`${q('select id from w.items')}&since=yesterday`)).body).toMatchObject({ error: 'validation_failed', field: 'since' });
    expect((await get(`${T}/watch`)).body.error).toBe('validation_failed');
    expect((await get(`${q('select id from w.items where id = $1')}&params=7`)).body).toMatchObject({ error: 'validation_failed', field: 'params' });
  });

  it('sends retry, a snapshot, then every change from exactly its LSN, as the query projects it', async () => {
    await put({ id: 1, name: 'one', price: 10, cat: 'a' });
    await put({ id: 2, name: 'two', price: 1, cat: 'a' });
    const s = await stream(`${q('select id, name from w.items where price > 5')}&initial=true`);
    expect(s.status).toBe(200);
    expect(s.headers['content-type']).toMatch(/^text\/event-stream/);
    await s.until((x) => x.events('snapshot').length === 1);
    expect(s.blocks[0].retry).toBe('300');
    const snap = s.events('snapshot')[0];
    const sd = data(snap);
    expect(sd.rows).toEqual([{ id: 1, name: 'one' }]);
    expect(snap.id).toBe(`${sd.epoch}:${sd.lsn}`);
    // one at a time, so each lands in its own burst
    await put({ id: 3, name: 'three', price: 7, cat: 'b' }); // insert, matches
    await s.until((x) => x.events('change').length === 1);
    await put({ id: 4, name: 'four', price: 2, cat: 'b' }); // matches neither before nor after: nothing
    await put({ id: 3, name: 'three!', price: 8, cat: 'b' }); // update
    await s.until((x) => x.events('change').length === 2);
    await put({ id: 3, name: 'three!', price: 9, cat: 'b' }); // projected row unchanged: nothing
    await put({ id: 1, name: 'one', price: 3, cat: 'a' }); // stops matching: a delete for this query
    await s.until((x) => x.events('change').length === 3);
    await del(3);
    await s.until((x) => x.events('change').length === 4);
    const ch = s.events('change').map(data);
    expect(ch.map((c) => c.changes)).toEqual([
      [{ schema: 'w.items', key: [3], op: 'insert', new: { id: 3, name: 'three' } }],
      [{ schema: 'w.items', key: [3], op: 'update', old: { id: 3, name: 'three' }, new: { id: 3, name: 'three!' } }],
      [{ schema: 'w.items', key: [1], op: 'delete', old: { id: 1, name: 'one' } }],
      [{ schema: 'w.items', key: [3], op: 'delete', old: { id: 3, name: 'three!' } }],
    ]);
    // ids are the LSN of the last frame covered; the first change is the frame right after the snapshot
    expect(ch[0].first_lsn).toBe(sd.lsn + 1);
    const lsns = ch.map((c) => c.lsn);
    expect([...lsns].sort((a, b) => a - b)).toEqual(lsns);
    s.events('change').forEach((e, i) => expect(e.id).toBe(`${ch[i].epoch}:${ch[i].lsn}`));
  });

  it('a snapshot taken while writes land is the result at exactly its LSN: with the changes after it, every row once', async () => {
    const sql = "select id, price from w.items where cat = 's'";
    const writes = (from: number, to: number) => Promise.all(Array.from({ length: to - from }, (_, i) => put({ id: from + i, name: 's', price: (from + i) % 7, cat: (from + i) % 3 ? 's' : 't' })));
    await writes(200, 230);
    const busy = writes(230, 330).then(() => writes(200, 260)); // inserts, then updates moving rows in and out
    const s = await stream(`${q(sql)}&initial=true`);
    await busy;
    const want = (await srv.request('POST', `${T}/sql`, { token: TOKEN, body: { sql } })).json.rows as Array<{ id: number }>;
    await s.until((x) => x.events('snapshot').length === 1);
    const held = new Map<number, unknown>(data(s.events('snapshot')[0]).rows.map((r: { id: number }) => [r.id, r]));
    let folded = 0;
    let prev = data(s.events('snapshot')[0]).lsn;
    // (this server resets a stream more than 20 frames behind: a reset replaces what is held)
    const fold = () => {
      for (const e of s.events().filter((x) => x.event === 'change' || x.event === 'reset').slice(folded)) {
        const d = data(e);
        folded++;
        if (e.event === 'reset') {
          held.clear();
          for (const r of d.rows) held.set(r.id, r);
          prev = d.lsn;
          continue;
        }
        expect(d.first_lsn).toBeGreaterThan(prev); // bursts in LSN order, none covered twice
        prev = d.lsn;
        for (const c of d.changes) {
          const k = c.key[0];
          if (c.op === 'insert') expect(held.has(k)).toBe(false);
          else expect(held.get(k)).toEqual(c.old);
          if (c.op === 'delete') held.delete(k);
          else held.set(k, c.new);
        }
      }
    };
    const done = () => JSON.stringify([...held.values()].sort((x, y) => (x as { id: number }).id - (y as { id: number }).id)) === JSON.stringify(want);
    await s.until(() => (fold(), done()));
    await new Promise((r) => setTimeout(r, 500)); // nothing more (no duplicate) arrives
    fold();
    expect(folded).toBeGreaterThan(0); // the snapshot was taken between writes
    expect(done()).toBe(true);
    const m = (await srv.request('GET', '/metrics')).text;
    expect(m).toMatch(new RegExp(`db_watch_buffered_events\\{tenant="${TENANT}"\\} \\d+`));
    expect(m).toMatch(new RegExp(`db_watch_buffered_bytes\\{tenant="${TENANT}"\\} \\d+`));
  });

  it('subscribes by an English question (nl=), compiled as POST /ask compiles it', async () => {
    const s = await stream(`${T}/watch?initial=true&nl=${encodeURIComponent('items with price under 5')}`);
    await s.until((x) => x.events('snapshot').length === 1);
    const before = data(s.events('snapshot')[0]).rows;
    const asked = await srv.request('POST', `${T}/ask`, { token: TOKEN, body: { nl: 'items with price under 5' } });
    expect(before).toEqual(asked.json.rows);
    await put({ id: 60, name: 'cheap', price: 2, cat: 'n' });
    await s.until((x) => x.events('change').length === 1);
    expect(data(s.events('change')[0]).changes).toEqual([{ schema: 'w.items', key: [60], op: 'insert', new: { name: 'cheap' } }]);
  });

  it('coalesces commits landing within the window into one event; heartbeats and position events keep the resume point', async () => {
    const s = await stream(`${q('select id from w.items where cat = $1')}&params=${encodeURIComponent('["c"]')}`);
    await s.until((x) => x.events('position').length === 1); // the resume point at the start
    await Promise.all([10, 11, 12, 13, 14].map((id) => put({ id, name: `n${id}`, price: id, cat: 'c' })));
    await s.until((x) => x.events('change').flatMap((e) => data(e).changes).length === 5);
    const evs = s.events('change').map(data);
    expect(evs.flatMap((e) => e.changes.map((c: { key: number[] }) => c.key[0])).sort()).toEqual([10, 11, 12, 13, 14]);
    expect(evs.some((e) => e.lsn > e.first_lsn)).toBe(true); // one event covered several frames
    // a burst that changes nothing for this query: no change event, but a position event moves the id
    const before = s.events().length;
    await put({ id: 20, name: 'x', price: 1, cat: 'z' });
    await s.until((x) => x.events().length > before && x.events().at(-1)!.event === 'position');
    const pos = data(s.events().at(-1)!);
    expect(s.events().at(-1)!.id).toBe(`${pos.epoch}:${pos.lsn}`);
    await s.until((x) => x.blocks.some((b) => b.comments.includes('heartbeat')), 3000);
  });

  it('follows an aggregate: the result rows that changed, from groups kept incrementally', async () => {
    const plan = {
      op: 'aggregate',
      input: { op: 'filter', input: { op: 'scan', schema: 'w.items' }, predicate: { kind: 'binary', op: '=', left: { kind: 'col', name: 'cat' }, right: { kind: 'lit', value: 'g' } } },
      group: [{ name: 'name', expr: { kind: 'col', name: 'name' } }],
      aggregates: [{ name: 'n', fn: 'count', args: [], star: true }, { name: 'top', fn: 'max', args: [{ kind: 'col', name: 'price' }] }],
    };
    await put({ id: 30, name: 'p', price: 5, cat: 'g' });
    const s = await stream(`${T}/watch?plan=${encodeURIComponent(JSON.stringify(plan))}&initial=true`);
    await s.until((x) => x.events('snapshot').length === 1);
    expect(data(s.events('snapshot')[0]).rows).toEqual([{ name: 'p', n: 1, top: 5 }]);
    await put({ id: 31, name: 'p', price: 9, cat: 'g' });
    await s.until((x) => x.events('change').length === 1);
    await put({ id: 32, name: 'q', price: 1, cat: 'g' });
    await s.until((x) => x.events('change').length === 2);
    await del(31);
    await s.until((x) => x.events('change').length === 3);
    await put({ id: 32, name: 'q', price: 1, cat: 'h' }); // leaves the filter: its group empties
    await s.until((x) => x.events('change').length === 4);
    expect(s.events('change').map((e) => data(e).changes)).toEqual([
      [{ schema: 'w.items', key: ['p'], op: 'update', old: { name: 'p', n: 1, top: 5 }, new: { name: 'p', n: 2, top: 9 } }],
      [{ schema: 'w.items', key: ['q'], op: 'insert', new: { name: 'q', n: 1, top: 1 } }],
      [{ schema: 'w.items', key: ['p'], op: 'update', old: { name: 'p', n: 2, top: 9 }, new: { name: 'p', n: 1, top: 5 } }],
      [{ schema: 'w.items', key: ['q'], op: 'delete', old: { name: 'q', n: 1, top: 1 } }],
    ]);
  });

  it('replays what a client missed from the log (eventsource with Last-Event-ID), and resets past the lag bound', async () => {
    const sql = "select id, price from w.items where cat = 'r'";
    const first = await stream(q(sql));
    await s0(first);
    const from = first.events('position')[0].id!;
    first.close();
    // committed while no one listens
    for (let id = 40; id < 45; id++) await put({ id, name: 'r', price: id, cat: 'r' });
    const base = tokenFetch(TOKEN, srv.ca);
    const got: Array<{ id: string; changes: Array<{ key: number[] }> }> = [];
    // the first request carries Last-Event-ID as a reconnecting browser would
    const es = new EventSource(srv.url + q(sql), {
      fetch: ((url: string, init: RequestInit & { headers: Record<string, string> }) =>
        base(url, { ...init, headers: { 'Last-Event-ID': from, ...init.headers } })) as typeof fetch,
    });
    try {
      es.addEventListener('change', (e) => got.push({ id: (e as MessageEvent).lastEventId, ...JSON.parse((e as MessageEvent).data) }));
      const deadline = Date.now() + 10_000;
      while (got.flatMap((g) => g.changes).length < 5 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(got.flatMap((g) => g.changes.map((c) => c.key[0]))).toEqual([40, 41, 42, 43, 44]);
    } finally {
      es.close();
    }
    // further behind than DB_WATCH_MAX_LAG_FRAMES (20): a reset with the rows to resnapshot from, then changes go on
    for (let id = 50; id < 75; id++) await put({ id, name: 'r', price: id, cat: 'q' });
    const late = await stream(q(sql), { 'last-event-id': from });
    await late.until((x) => x.events('reset').length === 1);
    const reset = data(late.events('reset')[0]);
    expect(reset.reason).toBe('lag');
    expect(reset.rows.map((r: { id: number }) => r.id)).toEqual([40, 41, 42, 43, 44]);
    expect(late.events('reset')[0].id).toBe(`${reset.epoch}:${reset.lsn}`);
    await put({ id: 45, name: 'r', price: 1, cat: 'r' });
    await late.until((x) => x.events('change').length === 1);
    expect(data(late.events('change')[0]).changes).toEqual([{ schema: 'w.items', key: [45], op: 'insert', new: { id: 45, price: 1 } }]);
    const m = await srv.request('GET', '/metrics');
    expect(m.text).toMatch(/db_watch_resets_total\{reason="lag"\} [1-9]/);
    expect(m.text).toMatch(/db_watch_match_evaluations_total [1-9]/);
    expect(m.text).toMatch(/db_watch_events_sent_total\{event="change"\} [1-9]/);
  });

  it('resets when the followed table is registered again (with its new columns), and ends with an error event when it is dropped', async () => {
    const toml = tableToml('w.tmp', [['a', 'i64']]);
    expect((await srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: toml, contentType: 'text/plain' })).status).toBe(200);
    expect((await srv.request('PUT', `${T}/rows/w.tmp/1`, { token: TOKEN, body: { id: 1, a: 5 } })).status).toBe(200);
    const s = await stream(q('select * from w.tmp'));
    await s0(s);
    const wider = tableToml('w.tmp', [['a', 'i64'], ['b', 'str']]);
    expect((await srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: wider, contentType: 'text/plain' })).status).toBe(200);
    await s.until((x) => x.events('reset').length === 1);
    expect(data(s.events('reset')[0])).toMatchObject({ reason: 'schema', rows: [{ id: 1, a: 5, b: null }] });
    expect((await srv.request('PUT', `${T}/rows/w.tmp/2`, { token: TOKEN, body: { id: 2, a: 6, b: 'x' } })).status).toBe(200);
    await s.until((x) => x.events('change').length === 1);
    expect(data(s.events('change')[0]).changes[0].new).toEqual({ id: 2, a: 6, b: 'x' });
    expect((await srv.request('DELETE', `${T}/schemas/w.tmp`, { token: TOKEN })).status).toBe(204);
    await s.until((x) => x.ended);
    const err = data(s.events('error')[0]);
    expect(err.error).toBe('validation_failed'); // what POST /sql answers for an unknown table
    expect(err.message).toMatch(/tmp/);
  });

  it('ends a stream whose token is revoked, with an error event', async () => {
    const issued = (await srv.request('POST', `${T}/tokens`, { token: TOKEN })).json;
    const s = await stream(q('select id from w.items'), { authorization: `Bearer ${issued.token}` });
    await s0(s);
    expect((await srv.request('DELETE', `${T}/tokens/${issued.token_id}`, { token: TOKEN })).json).toEqual({ revoked: true });
    await s.until((x) => x.ended, 5000); // at the next heartbeat (400 ms) or burst
    expect(data(s.events('error')[0]).error).toBe('unauthorized');
  });

  it(`caps open streams per tenant (DB_WATCH_MAX) with 429, and frees a slot when a client closes`, async () => {
    const streams = [];
    for (let i = 0; i < 4; i++) streams.push(await stream(q('select id from w.items')));
    for (const s of streams) await s0(s);
    const m = await srv.request('GET', '/metrics');
    expect(m.text).toContain(`db_watch_subscribers{tenant="${TENANT}"} 4`);
    const over = await RawStream.open(srv.url + q('select id from w.items'), srv.ca, SSE);
    await over.until((x) => x.ended);
    expect(over.status).toBe(429);
    expect(over.headers['retry-after']).toBeDefined();
    expect(JSON.parse(over.body).error).toBe('rate_limited');
    streams[0].close();
    const deadline = Date.now() + 5000;
    for (;;) {
      const again = await stream(q('select id from w.items'));
      if (again.status === 200) break;
      again.close();
      if (Date.now() > deadline) throw new Error('the closed stream never freed its slot');
      await new Promise((r) => setTimeout(r, 100));
    }
  });

  it("shows the fan-out's main-thread time and the feed's one shared buffer in /metrics; three streams of one query get one event each, the same bytes", async () => {
    const streams = [];
    const deadline = Date.now() + 5000;
    while (streams.length < 3) {
      // (the streams earlier tests closed free their slots of DB_WATCH_MAX once the server sees them close)
      const s = await stream(q('select id, name from w.items where price >= 1000'));
      if (s.status === 200) streams.push(s);
      else if (Date.now() > deadline) throw new Error(`stream answered ${s.status}`);
      else await new Promise((r) => setTimeout(r, 100));
    }
    for (const s of streams) await s0(s);
    await put({ id: 900, name: 'shared', price: 1000, cat: 'm' });
    for (const s of streams) await s.until((x) => x.events('change').length === 1);
    const texts = streams.map((s) => JSON.stringify(s.events('change')));
    expect(new Set(texts).size).toBe(1);
    expect(data(streams[0].events('change')[0]).changes).toEqual([{ schema: 'w.items', key: [900], op: 'insert', new: { id: 900, name: 'shared' } }]);
    const m = (await srv.request('GET', '/metrics')).text;
    const value = (re: RegExp) => Number(re.exec(m)?.[1] ?? NaN);
    expect(value(/^db_watch_fanout_turns_total (\S+)$/m)).toBeGreaterThanOrEqual(3);
    expect(value(/^db_watch_fanout_seconds_total (\S+)$/m)).toBeGreaterThan(0);
    // the frame is held once in the store's buffer, for every open reader
    expect(value(new RegExp(`^db_feed_memory_frames\\{tenant="${TENANT}"\\} (\\S+)$`, 'm'))).toBeGreaterThanOrEqual(1);
    expect(value(new RegExp(`^db_feed_memory_bytes\\{tenant="${TENANT}"\\} (\\S+)$`, 'm'))).toBeGreaterThan(0);
  });

  it('ends open streams when the server shuts down (clients reconnect with their last id)', async () => {
    const s = await stream(q('select id from w.items'));
    await s0(s);
    const stopping = srv;
    srv = undefined as unknown as TestServer; // stopped here, not again in afterAll
    await stopping.stop();
    await s.until((x) => x.ended, 10_000);
    expect(s.events('error')).toEqual([]);
  });
});

/** Waits for a stream's first event (its start position). */
async function s0(s: RawStream): Promise<void> {
  await s.until((x) => x.events().length >= 1);
}
