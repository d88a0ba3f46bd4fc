/**
 * WatchSession with a stuck client, against a real store: while the socket takes nothing the
 * session holds at most `bufferFrames` live frames (the feed then reads the log instead); once
 * the client drains it gets every change once, in LSN order; past `maxLagFrames` it gets a
 * `reset` with the rows to start again from, then the changes after it. An aggregate resumes from
 * the log the same way (its groups rewound through the missed frames).
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { TenantStore } from '@mmdb/storage';
import { SqlEngine, WatchQuery } from '@mmdb/sql';
import { Metrics } from '../health/metrics.service';
import { fanoutSpent } from './fanout';
import { CATCHUP_CHANNEL, TURN_CHANNEL } from './turns';
import { WatchSession, type SseOut } from './watch-session';

class StuckOut implements SseOut {
  text = '';
  stuck = true;
  private release: (() => void) | null = null;
  write(chunk: string): boolean {
    this.text += chunk;
    return !this.stuck;
  }
  drained(): Promise<void> {
    return this.stuck ? new Promise((r) => (this.release = r)) : Promise.resolve();
  }
  get pendingBytes(): number {
    return 0;
  }
  end(): void {}
  unstick(): void {
    this.stuck = false;
    this.release?.();
  }
  events(name: string): Array<Record<string, any>> {
    return this.text
      .split('\n\n')
      .filter((b) => b.includes(`event: ${name}\n`))
      .map((b) => JSON.parse(b.split('\n').find((l) => l.startsWith('data: '))!.slice(6)));
  }
}

const until = async (pred: () => boolean, what: string) => {
  const deadline = Date.now() + 10_000;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
};

// every test: a real store with one table t (id, v)
let dir: string;
let store: TenantStore;
let sql: SqlEngine;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'watch-session-'));
  store = await TenantStore.open({ dir, sync: false });
  sql = new SqlEngine(store);
  await sql.run('CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)');
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('WatchSession backpressure', () => {

  const session = (out: StuckOut, maxLagFrames: number) =>
    new WatchSession('s1', store, WatchQuery.compile(sql, { sql: 'SELECT id FROM t WHERE v >= 0' }), out, { coalesceMs: 0, heartbeatMs: 60_000, retryMs: 1000, bufferFrames: 8, maxLagFrames }, new Metrics(), () => undefined);

  it('holds a bounded buffer for a stuck client, then delivers every change once, in order, from the log', async () => {
    const out = new StuckOut();
    const s = session(out, 100_000);
    const running = s.run({ initial: false, since: null });
    await until(() => out.events('position').length === 1, 'the start position');
    let most = 0;
    for (let i = 1; i <= 100; i++) {
      await store.put('main.t', { id: i, v: i });
      most = Math.max(most, s.bufferedFrames);
    }
    expect(most).toBeLessThanOrEqual(8);
    out.unstick();
    await until(() => out.events('change').flatMap((e) => e.changes).length >= 100, 'every change');
    const keys = out.events('change').flatMap((e) => e.changes.map((c: { key: number[] }) => c.key[0]));
    expect(keys).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    s.close();
    await running;
  });

  it('a resume position from another history (its epoch, or past this log) gets reset, not a silent gap', async () => {
    for (let i = 1; i <= 3; i++) await store.put('main.t', { id: i, v: i });
    const epoch = store.epochOf(store.lastLsn)!;
    for (const [since, reason] of [[{ epoch: epoch + 5, lsn: store.lastLsn }, 'epoch'], [{ epoch, lsn: store.lastLsn + 50 }, 'ahead']] as const) {
      const out = new StuckOut();
      out.stuck = false;
      const s = session(out, 100_000);
      const running = s.run({ initial: false, since });
      await until(() => out.events('reset').length === 1, `the ${reason} reset`);
      const reset = out.events('reset')[0];
      expect(reset).toMatchObject({ reason, lsn: store.lastLsn });
      expect(reset.rows.slice(0, 3)).toEqual([{ id: 1 }, { id: 2 }, { id: 3 }]);
      await store.put('main.t', { id: 10 + since.lsn, v: 1 });
      await until(() => out.events('change').length === 1, 'a change after it');
      s.close();
      await running;
    }
  });

  it('past maxLagFrames sends reset with the rows to resnapshot from, then the changes after it', async () => {
    const out = new StuckOut();
    const s = session(out, 20);
    const running = s.run({ initial: false, since: null });
    await until(() => out.events('position').length === 1, 'the start position');
    await store.put('main.t', { id: 1, v: 1 }); // the burst pulled before the session blocks
    await until(() => out.events('change').length === 1, 'the first change');
    for (let i = 2; i <= 50; i++) await store.put('main.t', { id: i, v: i });
    out.unstick();
    await until(() => out.events('reset').length === 1, 'the reset');
    const reset = out.events('reset')[0];
    expect(reset.reason).toBe('lag');
    expect(reset.rows).toHaveLength(50);
    await store.put('main.t', { id: 51, v: 1 });
    await until(() => out.events('change').length === 2, 'a change after the reset');
    expect(out.events('change')[1].changes).toEqual([{ schema: 'main.t', key: [51], op: 'insert', new: { id: 51 } }]);
    expect(out.events('change')[1].first_lsn).toBe(reset.lsn + 1);
    s.close();
    await running;
  });

  it('an aggregate resumes from the log: the result rows each missed frame changed, or reset past the lag bound', async () => {
    for (let i = 1; i <= 4; i++) await store.put('main.t', { id: i, v: i % 2 });
    const since = { epoch: store.epochOf(store.lastLsn)!, lsn: store.lastLsn }; // the client held {v0: 2, v1: 2}
    await store.put('main.t', { id: 5, v: 1 });
    await store.put('main.t', { id: 1, v: 0 }); // moves between groups
    await store.put('main.t', { id: 6, v: 1 });
    await store.delete('main.t', [2]);
    const agg = (maxLagFrames: number) =>
      new WatchSession('s2', store, WatchQuery.compile(sql, { sql: 'SELECT v, count(*) AS n FROM t GROUP BY v' }), out, { coalesceMs: 0, heartbeatMs: 60_000, retryMs: 1000, bufferFrames: 8, maxLagFrames }, new Metrics(), () => undefined);
    let out = new StuckOut();
    out.stuck = false;
    let s = agg(100);
    let running = s.run({ initial: false, since });
    await until(() => out.events('change').length >= 1, 'the replayed changes');
    expect(out.events('reset')).toEqual([]);
    // the missed frames come back as one burst (read from the log): each group's net change
    // (v = 0 went 2 → 3 → 2: no change for it); the client's old rows are what it held
    expect(out.events('change').flatMap((e) => e.changes)).toEqual([{ schema: 'main.t', key: [1], op: 'update', old: { v: 1, n: 2 }, new: { v: 1, n: 3 } }]);
    expect(out.events('change')[0].first_lsn).toBe(since.lsn + 1);
    s.close();
    await running;
    out = new StuckOut();
    out.stuck = false;
    s = agg(2);
    running = s.run({ initial: false, since });
    await until(() => out.events('reset').length === 1, 'the lag reset');
    expect(out.events('reset')[0]).toMatchObject({ reason: 'lag', rows: [{ v: 0, n: 2 }, { v: 1, n: 3 }] }); // the result now
    s.close();
    await running;
  });
});

describe('WatchSession fan-out (fanout.ts)', () => {
  const open = (id: string, text: string) => {
    const out = new StuckOut();
    out.stuck = false;
    const s = new WatchSession(id, store, WatchQuery.compile(sql, { sql: text }), out, { coalesceMs: 20, heartbeatMs: 60_000, retryMs: 1000, bufferFrames: 1024, maxLagFrames: 100_000 }, new Metrics(), () => undefined);
    return { out, s, running: s.run({ initial: false, since: null }) };
  };
  const changes = (out: StuckOut) => out.events('change').flatMap((e) => e.changes as unknown[]);
  const ranges = (out: StuckOut) => out.events('change').map((e) => [e.first_lsn, e.lsn]);

  it('subscribers of one query get one shared event per burst, each query exactly its own projection, every burst the same frames', async () => {
    const even = 'SELECT id, v FROM t WHERE v % 2 = 0';
    const subs = [open('a1', even), open('a2', even), open('b', 'SELECT id FROM t WHERE v >= 0'), ...Array.from({ length: 20 }, (_, i) => open(`c${i}`, `SELECT v FROM t WHERE id % 20 = ${i}`))];
    const [a1, a2, b] = subs;
    await until(() => subs.every((x) => x.out.events('position').length === 1), 'every start position');
    const ids = Array.from({ length: 60 }, (_, i) => i + 1);
    for (let r = 0; r < 6; r++) {
      await Promise.all(ids.slice(r * 10, r * 10 + 10).map((i) => store.put('main.t', { id: i, v: i })));
      await new Promise((res) => setTimeout(res, 7));
    }
    await until(() => changes(b.out).length === 60 && changes(a1.out).length === 30 && changes(a2.out).length === 30, 'every change');
    await until(() => subs.slice(3).every((x) => changes(x.out).length === 3), 'every change of the c subscribers');
    const evens = ids.filter((i) => i % 2 === 0);
    expect(changes(a1.out)).toEqual(evens.map((i) => ({ schema: 'main.t', key: [i], op: 'insert', new: { id: i, v: i } })));
    expect(changes(b.out)).toEqual(ids.map((i) => ({ schema: 'main.t', key: [i], op: 'insert', new: { id: i } })));
    subs.slice(3).forEach((x, i) => expect(changes(x.out)).toEqual(ids.filter((n) => n % 20 === i).map((n) => ({ schema: 'main.t', key: [n], op: 'insert', new: { v: n } }))));
    // one shared text (its id, its frames, its changes) for the subscribers of one query, matched
    // once: the two hold one compiled query, which ran each of the 60 inserted rows once
    expect(a2.out.text).toBe(a1.out.text);
    const shared = WatchQuery.compile(sql, { sql: even });
    expect(shared.rowChanges).toBe(60);
    expect(shared.evaluations).toBe(60);
    // the window is the store's: every subscriber's bursts cover the same frames (b has an event for each)
    expect(ranges(b.out).length).toBeGreaterThan(1);
    for (const x of [a1, ...subs.slice(3)]) for (const r of ranges(x.out)) expect(ranges(b.out)).toContainEqual(r);
    const lsns = ranges(b.out).flat();
    expect(lsns).toEqual([...lsns].sort((x, y) => x - y));
    for (const x of subs) x.s.close();
    await Promise.all(subs.map((x) => x.running));
  });
});

describe('WatchSession groups: the parked streams of one query delivered in one turn', () => {
  const open = (id: string, text: string, since: { epoch: number; lsn: number } | null = null) => {
    const out = new StuckOut();
    out.stuck = false;
    const s = new WatchSession(id, store, WatchQuery.compile(sql, { sql: text }), out, { coalesceMs: 20, heartbeatMs: 60_000, retryMs: 1000, bufferFrames: 1024, maxLagFrames: 100_000 }, new Metrics(), () => undefined);
    return { out, s, running: s.run({ initial: false, since }) };
  };
  const keys = (out: StuckOut) => out.events('change').flatMap((e) => e.changes.map((c: { key: number[] }) => c.key[0]));
  const ids = (out: StuckOut) => out.text.split('\n\n').filter((blk) => blk.includes('event: change\n')).map((blk) => blk.split('\n').find((l) => l.startsWith('id: '))!.slice(4));
  const put = async (from: number, to: number) => {
    for (let i = from; i <= to; i += 5) {
      await Promise.all(Array.from({ length: Math.min(5, to - i + 1) }, (_, k) => store.put('main.t', { id: i + k, v: i + k })));
      await new Promise((r) => setTimeout(r, 5));
    }
  };
  const q = 'SELECT id, v FROM t WHERE v % 2 = 1';
  const odd = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i).filter((i) => i % 2 === 1);

  it('a parked stream whose window leaves it past its lag bound gets reset (not a silent end), then the changes after it', async () => {
    const out = new StuckOut();
    out.stuck = false;
    const s = new WatchSession('lag', store, WatchQuery.compile(sql, { sql: q }), out, { coalesceMs: 30, heartbeatMs: 60_000, retryMs: 1000, bufferFrames: 1024, maxLagFrames: 5 }, new Metrics(), () => undefined);
    const running = s.run({ initial: false, since: null });
    await until(() => out.events('position').length === 1, 'the start position');
    await store.put('main.t', { id: 1, v: 1 }); // (its first burst: from then on it is parked)
    await until(() => out.events('change').length === 1, 'the first change');
    const grouped = fanoutSpent().grouped;
    await Promise.all(Array.from({ length: 20 }, (_, i) => store.put('main.t', { id: i + 2, v: i + 2 }))); // 20 frames in one window
    await until(() => out.events('reset').length === 1, 'the reset');
    expect(fanoutSpent().grouped).toBeGreaterThan(grouped); // (found past its bound in its group's turn)
    const reset = out.events('reset')[0];
    expect(reset.reason).toBe('lag');
    expect(reset.rows).toHaveLength(11); // the odd rows, as of the reset's LSN
    await store.put('main.t', { id: 101, v: 101 });
    await until(() => out.events('change').some((e) => e.changes.some((c: { key: number[] }) => c.key[0] === 101)), 'a change after the reset');
    s.close();
    await running;
  });

  it('two subscribers of one query each get every event exactly once, in order, with their own cursors; a slow one does not delay the other; a resume from its last event id goes on', async () => {
    const a = open('a', q);
    const b = open('b', q);
    await until(() => [a, b].every((x) => x.out.events('position').length === 1), 'the start positions');
    const grouped0 = fanoutSpent().grouped;
    await put(1, 40);
    await until(() => keys(a.out).length === 20 && keys(b.out).length === 20, 'the first changes');
    expect(keys(a.out)).toEqual(odd(1, 40));
    expect(keys(b.out)).toEqual(odd(1, 40));
    // parked: their bursts were delivered in their group's turns, without a turn each
    expect(fanoutSpent().grouped).toBeGreaterThan(grouped0);
    // b stops reading: a goes on, every burst, while b holds its position
    b.out.stuck = true;
    await put(41, 42); // (b's socket takes this one and reports itself full)
    await until(() => keys(b.out).length === 21, "b's last event before it blocks");
    const bHeld = b.out.events('change').length;
    await put(43, 80);
    await until(() => keys(a.out).length === 40, 'every change for a while b is stuck');
    expect(keys(a.out)).toEqual(odd(1, 80));
    expect(b.out.events('change').length).toBe(bHeld);
    // a client resuming from b's last event id (Last-Event-ID) gets the rest, once each, in order
    const lastB = b.out.events('change').at(-1)!;
    const c = open('c', q, { epoch: lastB.epoch, lsn: lastB.lsn });
    await until(() => keys(c.out).length === 19, "the changes after b's last event");
    expect(keys(c.out)).toEqual(odd(43, 80));
    // b unstuck: the rest, once each, in order; its event ids ascend like a's
    b.out.unstick();
    await until(() => keys(b.out).length === 40, 'every change for b');
    expect(keys(b.out)).toEqual(odd(1, 80));
    for (const x of [a, b]) {
      const lsns = x.out.events('change').map((e) => e.lsn as number);
      expect(lsns).toEqual([...new Set(lsns)].sort((m, n) => m - n));
      expect(ids(x.out)).toEqual(x.out.events('change').map((e) => `${e.epoch}:${e.lsn}`));
    }
    for (const x of [a, b, c]) x.s.close();
    await Promise.all([a, b, c].map((x) => x.running));
  });
});

describe('WatchSession behind its buffer', () => {
  it('a stream reading the hub or the log in batches still ends its bursts at the window bounds the live streams end theirs at', async () => {
    const open = (id: string, text: string, bufferFrames: number) => {
      const out = new StuckOut();
      out.stuck = false;
      const s = new WatchSession(id, store, WatchQuery.compile(sql, { sql: text }), out, { coalesceMs: 150, heartbeatMs: 60_000, retryMs: 1000, bufferFrames, maxLagFrames: 100_000 }, new Metrics(), () => undefined);
      return { out, s, running: s.run({ initial: false, since: null }) };
    };
    // (the bench's trace, tools/bench/watch/trace.js, sees each read behind the buffer and each fan-out turn)
    const catchUps: Array<{ at: number }> = [];
    const turns: Array<{ start: number; ms: number }> = [];
    const onCatchUp = (m: unknown) => catchUps.push(m as { at: number });
    const onTurn = (m: unknown) => turns.push(m as { start: number; ms: number });
    subscribe(CATCHUP_CHANNEL, onCatchUp);
    subscribe(TURN_CHANNEL, onTurn);
    const live = open('live', 'SELECT id, v FROM t WHERE v >= 0', 4096);
    const behind = open('behind', 'SELECT id FROM t WHERE v >= 0', 4); // overflows within every window
    await until(() => [live, behind].every((x) => x.out.events('position').length === 1), 'the start positions');
    const n = 700; // more frames than one feed batch (256) within a window
    await Promise.all(Array.from({ length: n }, (_, i) => store.put('main.t', { id: i + 1, v: i })));
    const count = (out: StuckOut) => out.events('change').flatMap((e) => e.changes as unknown[]).length;
    await until(() => count(live.out) === n && count(behind.out) === n, 'every change');
    const ranges = (out: StuckOut) => out.events('change').map((e) => [e.first_lsn, e.lsn]);
    expect(ranges(behind.out)).toEqual(ranges(live.out));
    const keys = behind.out.events('change').flatMap((e) => e.changes.map((c: { key: number[] }) => c.key[0]));
    expect(keys).toEqual(Array.from({ length: n }, (_, i) => i + 1));
    unsubscribe(CATCHUP_CHANNEL, onCatchUp);
    unsubscribe(TURN_CHANNEL, onTurn);
    expect(catchUps.length).toBeGreaterThan(0); // the stream with a 4-frame buffer read behind it
    for (const c of catchUps) expect(c.at).toBeGreaterThan(0);
    expect(turns.length).toBeGreaterThan(0);
    for (const t of turns) expect(t.ms).toBeGreaterThanOrEqual(0);
    for (const x of [live, behind]) x.s.close();
    await Promise.all([live.running, behind.running]);
  });
});

describe('WatchSession with a coalescing window', () => {
  const windowed = (out: StuckOut) =>
    new WatchSession('w1', store, WatchQuery.compile(sql, { sql: 'SELECT id FROM t WHERE v >= 0' }), out, { coalesceMs: 20, heartbeatMs: 60_000, retryMs: 1000, bufferFrames: 64, maxLagFrames: 100_000 }, new Metrics(), () => undefined);

  it('coalesces the commits of a window into one event, waits without a timer on an idle store, and ends when the store closes', async () => {
    const out = new StuckOut();
    out.stuck = false;
    const s = windowed(out);
    const running = s.run({ initial: false, since: null });
    await until(() => out.events('position').length === 1, 'the start position');
    await Promise.all([1, 2, 3].map((i) => store.put('main.t', { id: i, v: i })));
    await until(() => out.events('change').flatMap((e) => e.changes).length === 3, 'the three changes');
    expect(out.events('change').length).toBe(1); // one window, one event
    await new Promise((r) => setTimeout(r, 60)); // idle: nothing more
    expect(out.events('change').length).toBe(1);
    await store.put('main.t', { id: 4, v: 4 });
    await until(() => out.events('change').length === 2, 'the next window');
    expect(out.events('change')[1].changes).toEqual([{ schema: 'main.t', key: [4], op: 'insert', new: { id: 4 } }]);
    await store.close(); // closes every cursor: the stream waiting for its next window ends
    await running;
  });
});
