/**
 * What the watch streams of one process share so that many subscribers cost the event loop
 * little and never hold a commit up behind a whole fan-out (apps/api/DESIGN.md, "Watch streams"):
 *
 * - The coalescing clock, one per store (`windowTurn`, `burstBound`). A window opens when a stream
 *   has frames to send (or, for streams at their feed's end, at the next publish: an idle store
 *   arms no timer) and closes `ms` later at the last LSN the store had published (its bound: every
 *   live reader's buffer holds the frames up to it). Each stream's burst stops at the first bound
 *   after its start, and a stream whose fan-out ran past a window takes the bounds that passed one
 *   by one, so every subscriber cuts its bursts at the same LSNs, however late it runs.
 * - The turn queue (`turn` / `endTurn`, turns.ts): one stream at a time does its burst's
 *   synchronous work (take its buffered frames, match, serialize, write its socket), in FIFO
 *   order; the streams a window closes for are queued, not all resumed in the timer's callback.
 *   The next in line starts at once while the slice lasts (SLICE_MS; while requests are in
 *   flight BUSY_SLICE_MS, or DB_WATCH_BUSY_SLICE_US: `fanoutYieldsTo`), else at a later turn of
 *   the event loop, after its poll phase: a commit's durable write completing, a request
 *   arriving, a response going out wait at most a slice.
 * - `sharedEvents`: the last events of a shared row query (libs/sql watch/pool.ts: subscribers
 *   compiled alike hold one instance), keyed by the frames it covers: a burst is matched and
 *   serialized once per distinct query, then written to each of its sockets.
 */
import type { TenantStore } from '@mmdb/storage';
import type { WatchQuery } from '@mmdb/sql';
import type { SseChunk } from './sse';
import { countBursts, endTurn, enqueue, sliceSpent, turn } from './turns';

export { BUSY_SLICE_MS, endTurn, fanoutSpent, fanoutYieldsTo, sliceTurn, SLICE_MS, turn } from './turns';

/** How many past window bounds a store's clock remembers (for streams still working through them). */
const BOUNDS_KEPT = 64;

/**
 * What a stream's synchronous delivery (`Deliver`) did: a positive number is its next frame (the
 * burst was sent; it stays parked for the window past it); TAKE_TURN: nothing was taken, wake it
 * for its own turn as before; LOOP: the burst was sent but its loop must go on (a full socket, a
 * reset, a burst cut short): wake it, holding no turn.
 */
export const TAKE_TURN = -1;
export const LOOP = -2;
/** What a wait answers when the stream's loop goes on after a synchronous delivery (no turn held). */
export const DELIVERED = -3;

/**
 * Takes a stream's frames up to `bound` and sends its burst, synchronously, inside the turn of
 * the group being delivered: no promise, no turn of its own, no new wait per window.
 */
export type Deliver = (bound: number) => number;

/** A stream waiting for a window to close past `from`; `wake` runs at its turn of the fan-out (null: cancelled, no turn held). */
interface Waiter {
  from: number;
  readonly wake: (bound: number | null) => void;
  woken: boolean;
  /** Given: the stream is live and parked; a window closing past it delivers its burst in its group's turn. */
  readonly deliver?: Deliver;
  /** The streams of one group (their shared compiled query) are delivered one after the other. */
  readonly group?: object;
}

/** A store's coalescing clock: the bounds of its recent windows, ascending, the window now open, and who waits for it. */
interface Clock {
  readonly bounds: number[];
  open: Promise<void> | null;
  /** Streams waiting for a window past their position (woken in turn when it closes). */
  waiters: Waiter[];
  /** Set once a stream waits for frames not yet published: a publish then opens the window. */
  watching: boolean;
}

const clocks = new WeakMap<TenantStore, Clock>();

function clockOf(store: TenantStore): Clock {
  let c = clocks.get(store);
  if (!c) clocks.set(store, (c = { bounds: [], open: null, waiters: [], watching: false }));
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

/** Opens the store's window (one timer per store) unless one is open: it closes `ms` later at the LSN published then. */
function openWindow(store: TenantStore, c: Clock, ms: number): Promise<void> {
  c.open ??= new Promise<void>((r) =>
    setTimeout(() => {
      c.open = null;
      const bound = store.publishedLsn;
      if (!c.bounds.length || bound > c.bounds[c.bounds.length - 1]) c.bounds.push(bound);
      if (c.bounds.length > BOUNDS_KEPT) c.bounds.splice(0, c.bounds.length - BOUNDS_KEPT);
      // the streams this window ends a burst for go to the fan-out queue, each woken at its turn
      // (not all at once in this timer's callback: that was one unsliced block per window)
      const last = c.bounds[c.bounds.length - 1];
      const keep: Waiter[] = [];
      const due: Waiter[] = [];
      for (const w of c.waiters) {
        if (w.from > last) keep.push(w);
        else if (w.deliver) due.push(w);
        else enqueue(() => wakeOnce(w, boundFrom(c, w.from) ?? last));
      }
      c.waiters = keep;
      if (due.length) deliverDue(store, c, ms, byGroup(due));
      // streams past this bound wait for a publish (windowTurn); without that watch, the next window
      if (keep.length && !c.watching) void openWindow(store, c, ms);
      r();
    }, ms),
  );
  return c.open;
}

/** The waiters in groups (insertion order of the groups, then of their members): a group's streams share one event per burst. */
function byGroup(ws: Waiter[]): Waiter[] {
  const groups = new Map<object, Waiter[]>();
  const out: Waiter[] = [];
  for (const w of ws) {
    if (!w.group) {
      out.push(w);
      continue;
    }
    const g = groups.get(w.group);
    if (g) g.push(w);
    else groups.set(w.group, [w]);
  }
  for (const g of groups.values()) for (const w of g) out.push(w);
  return out;
}

/**
 * Delivers the parked streams a window closed for: one turn of the fan-out for all of them (not a
 * promise and a turn each), in slices: once the slice is spent, the rest goes on at a later turn
 * of the loop, so a commit waits at most a slice. A stream that cannot be served synchronously
 * (behind its buffer, its socket full, a reset) goes back to its own loop. `from`: where the
 * previous slice stopped in `due`; `again`: the streams it served that have more bounds to take.
 */
function deliverDue(store: TenantStore, c: Clock, ms: number, due: Waiter[], from = 0, again: Waiter[] = []): void {
  enqueue(() => {
    let served = 0;
    let i = from;
    for (; i < due.length; i++) {
      if (served > 0 && sliceSpent()) break;
      const w = due[i];
      if (w.woken) continue; // (cancelled while it waited in this queue)
      const bound = boundFrom(c, w.from);
      if (bound === null) {
        park(store, c, ms, w);
        continue;
      }
      const next = w.deliver!(bound);
      if (next === TAKE_TURN) enqueue(() => wakeOnce(w, boundFrom(c, w.from) ?? bound));
      else if (next === LOOP) {
        served++;
        wakeOnce(w, DELIVERED);
      } else {
        served++;
        w.from = next;
        // a bound it has not reached yet (the fan-out ran past another window): next in line
        if (boundFrom(c, next) !== null) again.push(w);
        else park(store, c, ms, w);
      }
    }
    countBursts(served);
    // the rest of the list at a later turn (from where this slice stopped: no copy of what is
    // left per slice), then the streams with more passed bounds to take, in the order they came
    if (i < due.length) deliverDue(store, c, ms, due, i, again);
    else if (again.length) deliverDue(store, c, ms, again);
    endTurn();
  });
}

/** A stream waits (parked) for the window past its position: opened now when its frame is published, else at the next publish. */
function park(store: TenantStore, c: Clock, ms: number, w: Waiter): void {
  c.waiters.push(w);
  if (store.publishedLsn >= w.from) void openWindow(store, c, ms);
  else watchPublishes(store, c, ms);
}

function wakeOnce(w: Waiter, bound: number | null): void {
  if (w.woken) {
    if (bound !== null && bound !== DELIVERED) endTurn(); // (cancelled meanwhile: the turn it was given passes on)
    return;
  }
  w.woken = true;
  w.wake(bound);
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
  const b = boundFrom(c, firstLsn);
  if (b !== null) return b;
  if (closed()) return firstLsn; // (the caller stops)
  const bound = await new Promise<number | null>((wake) => {
    c.waiters.push({ from: firstLsn, wake, woken: false });
    void openWindow(store, c, ms);
  });
  endTurn(); // (woken at its turn of the fan-out: this caller only wanted the bound)
  return bound ?? firstLsn;
}

/** A wait for `windowTurn`; `cancel()` ends it at once (the stream closed): it then answers null. */
export interface WindowWait {
  readonly bound: Promise<number | null>;
  cancel(): void;
}

/**
 * Waits until a window of the store's clock has closed at or past `from` (a stream's next frame),
 * then for the stream's turn of the fan-out (`turn`): answers that bound, with the turn held (call
 * `endTurn()` after the burst's synchronous work). A bound that has passed answers at the stream's
 * turn; otherwise the window opens now when `from` is published, else at the next publish (so an
 * idle store arms no timer). The streams a window closes for are woken one at a time, in slices,
 * never all in the timer's callback.
 *
 * With `deliver` (a live stream with nothing in hand), the stream is parked instead: a window
 * closing past it delivers its burst synchronously in one turn with the other parked streams,
 * those of its `group` one after the other, and it stays parked for the next window; the wait
 * answers only when its loop must go on (DELIVERED: no turn held) or it wants its own turn.
 */
export function windowTurn(store: TenantStore, from: number, ms: number, deliver?: Deliver, group?: object): WindowWait {
  const c = clockOf(store);
  let w: Waiter | null = null;
  const bound = new Promise<number | null>((wake) => {
    const passed = boundFrom(c, from);
    if (passed !== null && deliver) {
      // behind the clock, nothing in hand: delivered at its turn like a parked stream, then parked
      // (or next in line while bounds it has not reached remain), so it rejoins its group
      w = { from, wake, woken: false, deliver, group };
      deliverDue(store, c, ms, [w]);
      return;
    }
    if (passed !== null) {
      w = { from, wake, woken: false };
      const it = w;
      const t = turn();
      if (t) void t.then(() => wakeOnce(it, passed));
      else wakeOnce(it, passed);
      return;
    }
    w = { from, wake, woken: false, deliver, group };
    park(store, c, ms, w);
  });
  return {
    bound,
    cancel: () => {
      if (!w || w.woken) return;
      c.waiters = c.waiters.filter((x) => x !== w);
      wakeOnce(w, null);
    },
  };
}

/** A publish opens the window when streams wait for frames (one subscription per store, O(1) per frame). */
function watchPublishes(store: TenantStore, c: Clock, ms: number): void {
  if (c.watching) return;
  c.watching = true;
  store.changes.subscribe(() => {
    if (!c.open && c.waiters.length) void openWindow(store, c, ms);
  });
}

/** A value computed once per burst for one query: the frames it covers (first and last LSN and epoch). */
interface Shared<T> {
  readonly first: number;
  readonly firstEpoch: number;
  readonly last: number;
  readonly lastEpoch: number;
  readonly value: T;
}

/** Events kept per shared query: the streams of a query work through the same few recent bursts. */
const EVENTS_KEPT = 8;

type Frame = { lsn: number; epoch: number };

/**
 * Values computed once per burst and query instance, the last EVENTS_KEPT kept: `get` answers
 * undefined when none is kept for these frames, `put` keeps one. A get and a put, not a call
 * with a `make` closure: the caller runs per stream and burst, and a closure (with its context)
 * per stream and burst was a third of the fan-out's own allocations in process.
 */
export interface PerBurst<T> {
  get(query: WatchQuery, first: Frame, last: Frame): T | undefined;
  put(query: WatchQuery, first: Frame, last: Frame, value: T): T;
}

function perBurst<T>(): PerBurst<T> {
  const kept = new WeakMap<WatchQuery, Shared<T>[]>();
  return {
    get: (query, first, last) => {
      const list = kept.get(query);
      if (list) for (const e of list) if (e.first === first.lsn && e.firstEpoch === first.epoch && e.last === last.lsn && e.lastEpoch === last.epoch) return e.value;
      return undefined;
    },
    put: (query, first, last, value) => {
      let list = kept.get(query);
      if (!list) kept.set(query, (list = []));
      list.push({ first: first.lsn, firstEpoch: first.epoch, last: last.lsn, lastEpoch: last.epoch, value });
      if (list.length > EVENTS_KEPT) list.shift();
      return value;
    },
  };
}

/**
 * What every subscriber of a shared row query (libs/sql watch/pool.ts) writes for the frames
 * first…last, made by the first of them to reach the burst: the event (one `SseChunk`: its text,
 * bytes and HTTP chunk framing made once, written to every socket; null: no change) and the
 * resume position it carries (one object for all of them). Only for row queries (stateless
 * matching).
 */
export interface BurstEvent {
  readonly chunk: SseChunk | null;
  readonly cursor: { readonly epoch: number; readonly lsn: number };
}

export const sharedEvents: PerBurst<BurstEvent> = perBurst<BurstEvent>();

/**
 * Where a burst of a query stops for a change of its table's schema (the index of the first frame
 * that changes it, or -1), scanned once per burst for all the subscribers of the instance (a scan
 * of every frame per subscriber was 400,000 checks a second with 200 subscribers at 2,000 rows/s).
 */
export const sharedSchemaCuts: PerBurst<number> = perBurst<number>();
