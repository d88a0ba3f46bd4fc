/**
 * The shared parts of the watch fan-out: a store's window bounds (every stream cuts its bursts at
 * the same LSNs; one behind the clock takes the bounds that passed, one by one, without waiting),
 * the event shared by the subscribers of one query, and the slices of burst work per loop turn.
 */
import type { TenantStore } from '@mmdb/storage';
import type { WatchQuery } from '@mmdb/sql';
import { burstBound, sharedEvent, sliceTurn, SLICE_MS } from './fanout';

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

describe('sharedEvent', () => {
  it('matches and serializes a burst once per query and frames; recent bursts stay shared', () => {
    const q = {} as WatchQuery;
    const other = {} as WatchQuery;
    let made = 0;
    const make = (text: string | null) => () => {
      made++;
      return text;
    };
    const at = (lsn: number, epoch = 1) => ({ lsn, epoch });
    expect(sharedEvent(q, at(1), at(10), make('a'))).toBe('a');
    expect(sharedEvent(q, at(1), at(10), make('x'))).toBe('a');
    expect(sharedEvent(q, at(11), at(20), make(null))).toBeNull();
    expect(sharedEvent(q, at(1), at(10), make('x'))).toBe('a'); // an earlier burst, still kept
    expect(sharedEvent(q, at(11), at(20), make('x'))).toBeNull();
    expect(made).toBe(2);
    expect(sharedEvent(q, at(1), at(12), make('b'))).toBe('b'); // other frames
    expect(sharedEvent(q, at(1, 2), at(10, 2), make('c'))).toBe('c'); // the same LSNs under another epoch
    expect(sharedEvent(other, at(1), at(10), make('d'))).toBe('d'); // another query
    expect(made).toBe(5);
  });
});

describe('sliceTurn', () => {
  it('lets bursts run while the slice lasts, then sends them to a later turn of the loop', async () => {
    await new Promise((r) => setImmediate(r));
    expect(sliceTurn()).toBeNull(); // opens a slice
    expect(sliceTurn()).toBeNull(); // shares it
    const end = performance.now() + SLICE_MS + 1;
    while (performance.now() < end); // a slice's worth of work
    const later = sliceTurn();
    expect(later).toBeInstanceOf(Promise);
    await later;
    expect(sliceTurn()).toBeNull(); // a later turn opens a new slice
  });
});
