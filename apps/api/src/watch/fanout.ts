/**
 * What the watch streams of one process share so that many subscribers cost the event loop
 * little and never hold a commit up behind a whole fan-out (apps/api/DESIGN.md, "Watch streams"):
 *
 * - `burstTick`: one coalescing clock per store. Every live session of a store sleeps through the
 *   same window and is woken by the same timer, which ends it at the last LSN the store had
 *   published (`bound`: every live reader's buffer holds the frames up to it). Each session's
 *   burst stops there (frames committed since open its next one), so subscribers that are caught
 *   up cover exactly the same frames per event, however late in the fan-out they run.
 * - `sharedEvent`: the last event text of a shared row query (libs/sql watch/pool.ts: subscribers
 *   compiled alike hold one instance), keyed by the frames it covers: a burst is matched and
 *   serialized once per distinct query, then written to each of its sockets.
 * - `sliceTurn`: bursts run in slices of at most SLICE_MS of work per turn of the event loop;
 *   a session past the slice waits for the next turn, so between two slices the loop reaches its
 *   poll phase (a commit's durable write, a request) instead of waiting for every subscriber.
 */
import type { TenantStore } from '@mmdb/storage';
import type { WatchQuery } from '@mmdb/sql';

/** One coalescing window: `bound` is the last LSN the store had published when it ended (frames after it wait for the next one). */
export interface Tick {
  bound: number;
}

const clocks = new WeakMap<TenantStore, { at: Promise<Tick> }>();

/** The store's current window (it ends `ms` after the first session asked for it). */
export function burstTick(store: TenantStore, ms: number): Promise<Tick> {
  let c = clocks.get(store);
  if (!c) {
    const at = new Promise<Tick>((r) =>
      setTimeout(() => {
        clocks.delete(store);
        r({ bound: store.publishedLsn });
      }, ms),
    );
    clocks.set(store, (c = { at }));
  }
  return c.at;
}

/** A burst's event for one query: the frames it covers (first and last LSN and epoch) and its SSE text (null: no change). */
interface SharedEvent {
  readonly first: number;
  readonly firstEpoch: number;
  readonly last: number;
  readonly lastEpoch: number;
  readonly text: string | null;
}

const events = new WeakMap<WatchQuery, SharedEvent>();

/**
 * The SSE text of `query`'s event for the frames first…last (`make` matches and serializes it when
 * no subscriber of the same instance has yet). Only for row queries (stateless matching).
 */
export function sharedEvent(query: WatchQuery, first: { lsn: number; epoch: number }, last: { lsn: number; epoch: number }, make: () => string | null): string | null {
  const e = events.get(query);
  if (e && e.first === first.lsn && e.firstEpoch === first.epoch && e.last === last.lsn && e.lastEpoch === last.epoch) return e.text;
  const text = make();
  events.set(query, { first: first.lsn, firstEpoch: first.epoch, last: last.lsn, lastEpoch: last.epoch, text });
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
