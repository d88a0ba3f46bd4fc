/**
 * The watch fan-out's turns (apps/api DESIGN.md, "Many subscribers"): one stream at a time does
 * its burst's synchronous work, in FIFO order, in slices of the event loop's time; between two
 * slices the loop reaches its poll phase, so a commit's next step waits at most a slice.
 */
import { channel } from 'node:diagnostics_channel';

/**
 * Each turn of the fan-out, for a diagnostic that aligns slow requests with what held the event
 * loop (tools/bench/watch/trace.js): `{start, ms}` (performance.now() clock) per turn, published
 * only while someone subscribes (no cost otherwise).
 */
export const TURN_CHANNEL = 'mmdb:watch:turn';
const turnChannel = channel(TURN_CHANNEL);

/** A stream's read of its feed behind its buffer (`db_watch_catchups_total`), for the same diagnostic: `{at}`. */
export const CATCHUP_CHANNEL = 'mmdb:watch:catchup';
const catchUpChannel = channel(CATCHUP_CHANNEL);

/** Publishes a catch-up on CATCHUP_CHANNEL when traced. */
export function traceCatchUp(): void {
  if (catchUpChannel.hasSubscribers) catchUpChannel.publish({ at: performance.now() });
}

/** Longest stretch of burst work (matching, serializing, socket writes) between two turns of the loop, in ms. */
export const SLICE_MS = 2;

/** The stretch while requests are being served (default): their next step (an fsync's completion, a response) waits at most this. */
export const BUSY_SLICE_MS = 0.5;

let serving: () => boolean = () => false;
let busySliceMs = BUSY_SLICE_MS;

/**
 * Gives requests priority over the fan-out: while `busy()` (requests in flight or just served:
 * the server's hooks count them) a slice lasts BUSY_SLICE_MS instead of SLICE_MS, so a commit
 * crossing several turns of the loop (its body, its durable write, its response) waits little
 * at each.
 */
export function fanoutYieldsTo(busy: () => boolean, sliceMs = BUSY_SLICE_MS): void {
  serving = busy;
  busySliceMs = sliceMs;
}

function sliceLeft(t: number): boolean {
  return t - sliceStart < (serving() ? busySliceMs : SLICE_MS);
}

/** For the holder of the turn that serves many streams in it (a group's delivery, fanout.ts): true once the slice is spent (yield: the rest at a later turn). */
export function sliceSpent(): boolean {
  return !sliceLeft(performance.now());
}

/** Main-thread time spent holding the turn (ms) and the turns taken, since the process started: the fan-out's cost (`db_watch_fanout_*`). */
const spent = { ms: 0, turns: 0, grouped: 0 };
/** The longest turn since `takeLongestTurn()` last read it (ms): a long one holds every request up for its length. */
let longest = 0;

/** The longest turn of the fan-out since the last call (ms), then starts over (read at each scrape of /metrics). */
export function takeLongestTurn(): number {
  const l = longest;
  longest = 0;
  return l;
}
let turnStart = 0;

/** The fan-out's work so far: ms of main-thread time in turns, turns (counted as one per stream's burst: a group's delivery counts each stream it served), and the bursts delivered in a group's turn (parked streams: no promise, no turn of their own). */
export function fanoutSpent(): { readonly ms: number; readonly turns: number; readonly grouped: number } {
  return spent;
}

/** Counts the `n` stream bursts a group's delivery served inside the current turn (the turn itself counts one). */
export function countBursts(n: number): void {
  if (n <= 0) return;
  spent.turns += n - 1;
  spent.grouped += n;
}

function hold(t: number): void {
  holder = true;
  turnStart = t;
}

let sliceOpen = false;
let sliceStart = 0;
/** A stream holds the fan-out's turn (between `turn()` and `endTurn()`). */
let holder = false;
/** Streams waiting for their turn, in order: each grants the turn when called. */
const queue: Array<() => void> = [];
let drainArmed = false;

function openSlice(t: number): void {
  sliceOpen = true;
  sliceStart = t;
  setImmediate(() => (sliceOpen = false));
}

/** Queues `grant` for a turn (called with the turn held: the grantee must `endTurn()`). */
export function enqueue(grant: () => void): void {
  queue.push(grant);
  if (!holder && queue.length === 1) {
    // nobody is working: start now if the slice allows, else at the next turn of the loop
    const t = performance.now();
    if (!sliceOpen || sliceLeft(t)) {
      if (!sliceOpen) openSlice(t);
      hold(t);
      queue.shift()!();
      return;
    }
  }
  armDrain();
}

/**
 * The next slice: while requests are served, at the start of the next turn of the loop (its timers
 * phase), so that everything the poll phase queues for the check phase runs before the fan-out
 * goes on: the commit coordinator starts each group after a `setImmediate` (to let the requests
 * of the turn join it), which an immediate of ours, queued a turn earlier, would put behind a
 * whole slice every time. Without requests, at once after the poll phase (`setImmediate`).
 */
function armDrain(): void {
  if (drainArmed) return;
  drainArmed = true;
  if (serving()) setTimeout(drain, 0);
  else setImmediate(drain);
}

/** A later turn of the loop (after its poll phase: commits' completions and new requests first): a new slice. */
function drain(): void {
  drainArmed = false;
  if (holder || !queue.length) return; // (endTurn() re-arms)
  const t = performance.now();
  openSlice(t);
  hold(t);
  queue.shift()!();
}

/**
 * The fan-out's turn: null when the caller holds it now, else a promise resolved when it does.
 * One stream at a time does its burst's synchronous work (take its frames, match, serialize,
 * write its socket) and then calls `endTurn()`; the next one in line starts at once while the slice
 * (SLICE_MS) lasts, else at a later turn of the event loop, so a commit's I/O waits at most a
 * slice, and a window's fan-out never runs as one block.
 */
export function turn(): Promise<void> | null {
  const t = performance.now();
  if (!holder && !queue.length && (!sliceOpen || sliceLeft(t))) {
    if (!sliceOpen) openSlice(t);
    hold(t);
    return null;
  }
  return new Promise<void>((r) => {
    queue.push(r);
    armDrain();
  });
}

/** Ends the caller's turn: the next stream in line starts now (the slice lasts) or at a later turn of the loop. */
export function endTurn(): void {
  const t = performance.now();
  if (holder) {
    spent.ms += t - turnStart;
    spent.turns++;
    if (t - turnStart > longest) longest = t - turnStart;
    if (turnChannel.hasSubscribers) turnChannel.publish({ start: turnStart, ms: t - turnStart });
  }
  holder = false;
  if (!queue.length) return;
  if (sliceOpen && sliceLeft(t)) {
    hold(t);
    queue.shift()!();
  } else armDrain();
}

/**
 * Null when the caller may run its burst now (the slice lasts and no stream is waiting), else a
 * promise of its turn at a later turn of the loop: call again after it. A turn that ends at once.
 */
export function sliceTurn(): Promise<void> | null {
  const w = turn();
  if (!w) {
    endTurn();
    return null;
  }
  return w.then(endTurn);
}
