/**
 * What the watch streams of one process share so that many subscribers cost the event loop
 * little and never hold a commit up behind a whole fan-out (apps/api/DESIGN.md, "Watch streams"):
 *
 * - `burstBound`: one coalescing clock per store. Every live session of a store sleeps through the
 *   same window and is woken by the same timer, which ends it at the last LSN the store had
 *   published (its bound: every live reader's buffer holds the frames up to it). Each session's
 *   burst stops at the first bound after its start (frames after it open its next one), and a
 *   session whose fan-out ran past a window takes the bounds that passed one by one, so every
 *   subscriber cuts its bursts at the same LSNs, however late in the fan-out it runs.
 * - `sharedEvent`: the last event text of a shared row query (libs/sql watch/pool.ts: subscribers
 *   compiled alike hold one instance), keyed by the frames it covers: a burst is matched and
 *   serialized once per distinct query, then written to each of its sockets.
 * - `sliceTurn`: bursts run in slices of at most SLICE_MS of work per turn of the event loop;
 *   a session past the slice waits for the next turn, so between two slices the loop reaches its
 *   poll phase (a commit's durable write, a request) instead of waiting for every subscriber.
 */
import type { TenantStore } from '@mmdb/storage';
import type { WatchQuery } from '@mmdb/sql';

/** How many past window bounds a store's clock remembers (for streams still working through them). */
const BOUNDS_KEPT = 64;

/** A store's coalescing clock: the bounds of its recent windows, ascending, and the window now open. */
interface Clock {
  readonly bounds: number[];
  open: Promise<void> | null;
}

const clocks = new WeakMap<TenantStore, Clock>();

function clockOf(store: TenantStore): Clock {
  let c = clocks.get(store);
  if (!c) clocks.set(store, (c = { bounds: [], open: null }));
  return c;
}

/** The first window bound at or after `lsn` that has passed, or null when none has yet. */
function boundFrom(c: Clock, lsn: number): number | null {
  const b = c.bounds;
  if (!b.length || b[b.length - 1] < lsn) return null;
  let lo = 0;
  let hi = b.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (b[mid] >= lsn) hi = mid;
    else lo = mid + 1;
  }
  return b[lo];
}

/**
 * Where the burst starting at frame `firstLsn` ends: the first of the store's window bounds at or
 * after it. A stream that is behind the clock (its fan-out ran past the next window) gets a bound
 * that has already passed, at once; one that is not waits for the window now open (one timer per
 * store, `ms` after the first stream asked), whose bound is the last LSN the store had published
 * when it closed. Every stream so cuts its bursts at the same LSNs, in the same sequence.
 */
export async function burstBound(store: TenantStore, firstLsn: number, ms: number, closed: () => boolean): Promise<number> {
  const c = clockOf(store);
  for (;;) {
    const b = boundFrom(c, firstLsn);
    if (b !== null) return b;
    if (closed()) return firstLsn; // (the caller stops)
    c.open ??= new Promise<void>((r) =>
      setTimeout(() => {
        c.open = null;
        const bound = store.publishedLsn;
        if (!c.bounds.length || bound > c.bounds[c.bounds.length - 1]) c.bounds.push(bound);
        if (c.bounds.length > BOUNDS_KEPT) c.bounds.splice(0, c.bounds.length - BOUNDS_KEPT);
        r();
      }, ms),
    );
    await c.open;
  }
}

/** A burst's event for one query: the frames it covers (first and last LSN and epoch) and its SSE text (null: no change). */
interface SharedEvent {
  readonly first: number;
  readonly firstEpoch: number;
  readonly last: number;
  readonly lastEpoch: number;
  readonly text: string | null;
}

/** Events kept per shared query: the streams of a query work through the same few recent bursts. */
const EVENTS_KEPT = 8;

const events = new WeakMap<WatchQuery, SharedEvent[]>();

/**
 * The SSE text of `query`'s event for the frames first…last (`make` matches and serializes it when
 * no subscriber of the same instance has yet). Only for row queries (stateless matching).
 */
export function sharedEvent(query: WatchQuery, first: { lsn: number; epoch: number }, last: { lsn: number; epoch: number }, make: () => string | null): string | null {
  let kept = events.get(query);
  if (!kept) events.set(query, (kept = []));
  for (const e of kept) if (e.first === first.lsn && e.firstEpoch === first.epoch && e.last === last.lsn && e.lastEpoch === last.epoch) return e.text;
  const text = make();
  kept.push({ first: first.lsn, firstEpoch: first.epoch, last: last.lsn, lastEpoch: last.epoch, text });
  if (kept.length > EVENTS_KEPT) kept.shift();
  return text;
}

/** Longest stretch of burst work (matching, serializing, socket writes) between two turns of the loop, in ms. */
export const SLICE_MS = 2;

let sliceOpen = false;
let sliceStart = 0;

/**
 * Null when the caller may run its burst now (the first burst of a loop turn opens a slice; the
 * next ones share it while it lasts), else a promise of a later turn: call again after it.
 */
export function sliceTurn(): Promise<void> | null {
  const t = performance.now();
  if (!sliceOpen) {
    sliceOpen = true;
    sliceStart = t;
    setImmediate(() => (sliceOpen = false));
    return null;
  }
  if (t - sliceStart < SLICE_MS) return null;
  return new Promise<void>((r) => setImmediate(r));
}
