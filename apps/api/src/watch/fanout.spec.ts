/**
 * The shared parts of the watch fan-out: a store's window bounds (every stream cuts its bursts at
 * the same LSNs; one behind the clock takes the bounds that passed, one by one, without waiting),
 * the event shared by the subscribers of one query, and the slices of burst work per loop turn.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { TenantStore } from '@mmdb/storage';
import type { WatchQuery } from '@mmdb/sql';
import { Subject } from 'rxjs';
import { TURN_CHANNEL } from './turns';
import { burstBound, type BurstEvent, DELIVERED, endTurn, fanoutYieldsTo, LOOP, sharedEvents, sliceTurn, TAKE_TURN, turn, windowTurn } from './fanout';

/**
 * The slice the turn tests run with: long enough that the host descheduling this process between
 * two calls (load 9 on a 2-core CI machine) does not end it, so the tests see only the slices they
 * spend on purpose.
 */
const TEST_SLICE_MS = 250;
const withLongSlice = () => {
  beforeEach(() => fanoutYieldsTo(() => true, TEST_SLICE_MS));
  afterEach(() => fanoutYieldsTo(() => false));
};

const until = async (pred: () => boolean) => {
  const deadline = Date.now() + 10_000;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 2));
  }
};

const storeAt = (published: { lsn: number }) => ({ get publishedLsn() { return published.lsn; } }) as unknown as TenantStore;
const open = () => false;

describe('burstBound', () => {
  it('ends a window at the LSN published when it closes; a stream behind gets the passed bounds in order, at once', async () => {
    const p = { lsn: 5 };
    const store = storeAt(p);
    const first = burstBound(store, 3, 20, open);
    const second = burstBound(store, 5, 20, open); // joins the window already open
    expect(await Promise.race([first, new Promise((r) => setImmediate(() => r('waits')))])).toBe('waits');
    p.lsn = 10; // published while the window is open
    expect(await first).toBe(10);
    expect(await second).toBe(10);
    p.lsn = 20;
    expect(await burstBound(store, 11, 20, open)).toBe(20);
    p.lsn = 30;
    // behind the clock: the bounds that passed, without waiting for a window
    expect(await Promise.race([burstBound(store, 1, 20, open), new Promise((r) => setImmediate(() => r('waited')))])).toBe(10);
    expect(await Promise.race([burstBound(store, 11, 20, open), new Promise((r) => setImmediate(() => r('waited')))])).toBe(20);
    // past every bound: the next window
    expect(await burstBound(store, 21, 20, open)).toBe(30);
  });

  it('stops waiting for a closed stream', async () => {
    const store = storeAt({ lsn: 0 });
    expect(await burstBound(store, 1, 5, () => true)).toBe(1);
  });
});

describe('sharedEvents', () => {
  it('keeps the event of a burst once per query and frames; recent bursts stay kept', () => {
    const q = {} as WatchQuery;
    const other = {} as WatchQuery;
    const at = (lsn: number, epoch = 1) => ({ lsn, epoch });
    const ev = (lsn: number): BurstEvent => ({ chunk: null, cursor: at(lsn) });
    const a = ev(10);
    expect(sharedEvents.get(q, at(1), at(10))).toBeUndefined();
    expect(sharedEvents.put(q, at(1), at(10), a)).toBe(a);
    expect(sharedEvents.get(q, at(1), at(10))).toBe(a);
    const b = sharedEvents.put(q, at(11), at(20), ev(20));
    expect(sharedEvents.get(q, at(1), at(10))).toBe(a); // an earlier burst, still kept
    expect(sharedEvents.get(q, at(11), at(20))).toBe(b);
    expect(sharedEvents.get(q, at(1), at(12))).toBeUndefined(); // other frames
    expect(sharedEvents.get(q, at(1, 2), at(10, 2))).toBeUndefined(); // the same LSNs under another epoch
    expect(sharedEvents.get(other, at(1), at(10))).toBeUndefined(); // another query
    for (let i = 2; i <= 8; i++) sharedEvents.put(q, at(i * 10 + 1), at(i * 10 + 10), ev(i * 10 + 10));
    expect(sharedEvents.get(q, at(1), at(10))).toBeUndefined(); // the oldest of 9 went (8 kept)
    expect(sharedEvents.get(q, at(11), at(20))).toBe(b);
  });
});

describe('sliceTurn', () => {
  withLongSlice();
  it('lets bursts run while the slice lasts, then sends them to a later turn of the loop', async () => {
    await new Promise((r) => setImmediate(r));
    expect(sliceTurn()).toBeNull(); // opens a slice
    expect(sliceTurn()).toBeNull(); // shares it
    const end = performance.now() + TEST_SLICE_MS + 1;
    while (performance.now() < end); // a slice's worth of work
    const later = sliceTurn();
    expect(later).toBeInstanceOf(Promise);
    await later;
    expect(sliceTurn()).toBeNull(); // a later turn opens a new slice
  });
});

describe('turn / endTurn: one stream of the fan-out at a time, in order', () => {
  withLongSlice();
  it('gives the turn to one caller, the next in line once it ends, and a later turn of the loop once the slice is spent', async () => {
    await new Promise((r) => setImmediate(r));
    expect(turn()).toBeNull(); // free: held at once
    const order: string[] = [];
    const a = turn()!.then(() => order.push('a'));
    const b = turn()!.then(() => order.push('b'));
    await Promise.resolve();
    expect(order).toEqual([]); // nobody starts while the turn is held
    endTurn();
    await a;
    expect(order).toEqual(['a']); // the first in line, at once (the slice lasts)
    const end = performance.now() + TEST_SLICE_MS + 1;
    while (performance.now() < end); // a slice's worth of work
    endTurn();
    for (let i = 0; i < 10; i++) await Promise.resolve();
    expect(order).toEqual(['a']); // the slice is spent: b waits for a later turn of the loop
    await b;
    expect(order).toEqual(['a', 'b']);
    endTurn();
  });
});

describe('the turn channel (a diagnostic: tools/bench/watch/trace.js)', () => {
  withLongSlice();
  it('publishes each turn (start, length) while subscribed, and nothing once unsubscribed', async () => {
    await new Promise((r) => setImmediate(r));
    const seen: Array<{ start: number; ms: number }> = [];
    const on = (m: unknown) => seen.push(m as { start: number; ms: number });
    subscribe(TURN_CHANNEL, on);
    const before = performance.now();
    expect(turn()).toBeNull();
    const end = performance.now() + 2;
    while (performance.now() < end); // 2 ms of burst work
    endTurn();
    unsubscribe(TURN_CHANNEL, on);
    expect(seen).toHaveLength(1);
    expect(seen[0].start).toBeGreaterThanOrEqual(before);
    expect(seen[0].ms).toBeGreaterThanOrEqual(2);
    expect(turn()).toBeNull();
    endTurn();
    expect(seen).toHaveLength(1);
  });
});

describe('windowTurn', () => {
  const liveStore = () => {
    const changes = new Subject<number>();
    const s = { lsn: 0 };
    const store = { get publishedLsn() { return s.lsn; }, changes } as unknown as TenantStore;
    const publish = () => changes.next(++s.lsn);
    return { store, publish, s };
  };

  it('on an idle store waits for a publish before a window opens; the window wakes its streams one turn at a time', async () => {
    const { store, publish } = liveStore();
    const first = windowTurn(store, 1, 10);
    const second = windowTurn(store, 1, 10);
    await new Promise((r) => setTimeout(r, 30));
    let woken = 0;
    void first.bound.then(() => woken++);
    void second.bound.then(() => woken++);
    await new Promise((r) => setTimeout(r, 5));
    expect(woken).toBe(0); // no publish: no window, no timer
    publish();
    publish();
    expect(await first.bound).toBe(2); // the window's bound: the LSN published when it closed
    await new Promise((r) => setImmediate(r));
    expect(woken).toBe(1); // the second waits for the first's turn to end
    endTurn();
    expect(await second.bound).toBe(2);
    endTurn();
    // a bound that passed answers at the caller's turn without a window
    const again = windowTurn(store, 2, 10);
    expect(await again.bound).toBe(2);
    endTurn();
  });

  describe('parked streams (deliver): one turn per window, grouped, in slices', () => {
    withLongSlice();
    it('delivers every parked stream of a window in one turn, those of one group together, and keeps them parked for the next window', async () => {
      await new Promise((r) => setImmediate(r));
      const { store, publish, s } = liveStore();
      const g1 = {};
      const g2 = {};
      const log: string[] = [];
      const park = (name: string, group: object) => {
        let from = 1;
        const w = windowTurn(store, from, 5, (bound) => {
          log.push(`${name}@${bound}`);
          from = bound + 1;
          return from; // delivered: stays parked from its next frame
        }, group);
        return w;
      };
      const waits = [park('a1', g1), park('b1', g2), park('a2', g1), park('b2', g2)];
      publish();
      publish();
      await until(() => log.length === 4);
      expect(log).toEqual(['a1@2', 'a2@2', 'b1@2', 'b2@2']); // the group of a, then of b
      expect(turn()).toBeNull(); // the group's turn ended: free
      endTurn();
      // still parked: the next window delivers them again, no new wait
      publish();
      await until(() => log.length === 8);
      expect(log.slice(4)).toEqual([`a1@${s.lsn}`, `a2@${s.lsn}`, `b1@${s.lsn}`, `b2@${s.lsn}`]);
      for (const w of waits) w.cancel();
      expect(await Promise.all(waits.map((w) => w.bound))).toEqual([null, null, null, null]);
    });

    it('yields once the slice is spent: the rest of the group at a later turn of the loop; a stream that cannot be served goes back to its loop', async () => {
      await new Promise((r) => setImmediate(r));
      const { store, publish } = liveStore();
      const g = {};
      const log: string[] = [];
      const spend = () => {
        const end = performance.now() + TEST_SLICE_MS + 1;
        while (performance.now() < end); // a slice's worth of work
      };
      // (an I/O callback's stand-in, queued while the first stream works: it runs before the rest of the group)
      const first = windowTurn(store, 1, 5, () => (log.push('first'), setImmediate(() => log.push('io')), spend(), 2), g);
      const loop = windowTurn(store, 1, 5, () => (log.push('loop'), LOOP), g);
      const own = windowTurn(store, 1, 5, () => (log.push('own'), TAKE_TURN), g);
      publish();
      expect(await loop.bound).toBe(DELIVERED); // its loop goes on, holding no turn
      // the slice was spent after the first: the rest of the group waited for a later turn of the loop
      expect(log).toEqual(['first', 'io', 'loop', 'own']);
      expect(await own.bound).toBe(1); // cannot be served synchronously: its own turn, held
      endTurn();
      first.cancel();
    });
  });

  it('parked streams behind the clock take each passed bound once, in order, across slices, then stay parked', async () => {
    fanoutYieldsTo(() => true, TEST_SLICE_MS);
    try {
      await new Promise((r) => setImmediate(r));
      const { store, publish, s } = liveStore();
      for (const from of [1, 2]) {
        const x = windowTurn(store, from, 5); // two windows pass (bounds 1 and 2) before any stream parks
        publish();
        expect(await x.bound).toBe(from);
        endTurn();
      }
      const g = {};
      const log: Record<string, number[]> = { a: [], b: [], c: [] };
      const spend = () => {
        const end = performance.now() + TEST_SLICE_MS + 1;
        while (performance.now() < end); // a slice's worth of work
      };
      const mk = (name: string) =>
        windowTurn(store, 1, 5, (bound) => {
          log[name].push(bound);
          if (name === 'a' && bound === 1) spend();
          return bound + 1;
        }, g);
      const waits = [mk('a'), mk('b'), mk('c')];
      expect(log).toEqual({ a: [1], b: [], c: [] }); // the slice is spent: the rest at later turns of the loop
      await until(() => Object.values(log).every((l) => l.length === 2));
      expect(log).toEqual({ a: [1, 2], b: [1, 2], c: [1, 2] });
      publish(); // the next window delivers each once more: they stayed parked
      await until(() => Object.values(log).every((l) => l.length === 3));
      expect(log).toEqual({ a: [1, 2, s.lsn], b: [1, 2, s.lsn], c: [1, 2, s.lsn] });
      for (const w of waits) w.cancel();
    } finally {
      fanoutYieldsTo(() => false);
    }
  });

  it('a cancelled wait answers null and holds no turn', async () => {
    const { store } = liveStore();
    const w = windowTurn(store, 1, 10);
    w.cancel();
    expect(await w.bound).toBeNull();
    await new Promise((r) => setImmediate(r)); // (a new turn of the loop: a new slice)
    expect(turn()).toBeNull(); // the turn is free
    endTurn();
  });
});
