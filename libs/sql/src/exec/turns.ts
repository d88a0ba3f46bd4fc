/**
 * Turns: how long-running queries share the one event loop with everything else.
 *
 * A running query gives the loop back (`nextTurn`) after each slice of its own work. Waiting
 * queries queue here and are resumed ONE PER LOOP ITERATION (one `setImmediate` at a time), so
 * between two slices the loop always reaches its poll phase: a point read, `/health`, a cancel or
 * SIGTERM waits for at most about one slice, however many queries are in flight. (A plain
 * `setImmediate` per query would run every waiting query's slice in the same check phase.)
 *
 * Two classes, a multilevel feedback queue: a query's first SHORT_TURNS turns are **short** class
 * (slices of SHORT_SLICE_MS), later ones **long** class (slices of LONG_SLICE_MS). A waiting short
 * turn is always resumed before any long one, so a query that needs a few slices (an index range, a
 * small join) is not stuck behind the round-robin of the heavy queries in flight, and the heavy
 * ones hold the loop for the shortest slices. Within a class, turns are resumed in the order they
 * were asked for (round-robin). So that a stream of short queries cannot starve the long ones, a
 * long turn passed over by STARVE_TURNS resumptions goes next.
 */

/**
 * Slice of a query in its first SHORT_TURNS turns (ms). 2 ms was measured too (fairness bench,
 * same host): point-read p50 with 4 heavy queries 3.3-3.8 ms against 2.0-2.1 ms at 1 ms.
 */
export const SHORT_SLICE_MS = 1;
/** Slice of a query past its first SHORT_TURNS turns (ms). */
export const LONG_SLICE_MS = 1;
/** Turns a query takes in the short class before it drops to the long class. */
export const SHORT_TURNS = 4;
/** Resumptions a waiting long turn may be passed over by before it goes next (no starvation). */
export const STARVE_TURNS = 8;
/** Longest slice of any class: an operator's own loop yields at least this often (op-kit YIELD_MS). */
export const SLICE_MS = LONG_SLICE_MS;

/** What the scheduler knows of a query: the turns it has taken (ExecCtx.yields). */
export interface TurnTaker {
  yields: number;
}

export type TurnClass = 'short' | 'long';

/** The class of a query's next turn. */
export function turnClass(q: TurnTaker | undefined): TurnClass {
  return q && q.yields < SHORT_TURNS ? 'short' : 'long';
}

/** How long a query may run before it asks for its next turn (ms). */
export function sliceMs(q: TurnTaker | undefined): number {
  return turnClass(q) === 'short' ? SHORT_SLICE_MS : LONG_SLICE_MS;
}

interface Waiter { resume: () => void; who: TurnTaker | undefined; cls: TurnClass; at: number }

const short: Waiter[] = [];
const long: Waiter[] = [];
let scheduled = false;
let taken = 0;
let resumed = 0;
let listener: ((who: TurnTaker | undefined, cls: TurnClass) => void) | null = null;

function pump(): void {
  scheduled = false;
  const starved = long.length > 0 && resumed - long[0].at >= STARVE_TURNS;
  const next = (starved ? long.shift() : short.shift()) ?? long.shift();
  if (short.length || long.length) schedule();
  if (!next) return;
  resumed++;
  listener?.(next.who, next.cls);
  next.resume();
}

function schedule(): void {
  if (scheduled) return;
  scheduled = true;
  setImmediate(pump);
}

/**
 * Resolves on a later loop iteration: after the short turns asked for before this one, and, for a
 * long turn, after every short turn waiting then. Counts the turn on `who` (its `yields`).
 */
export function nextTurn(who?: TurnTaker): Promise<void> {
  const cls = turnClass(who);
  if (who) who.yields++;
  taken++;
  return new Promise<void>((resume) => {
    (cls === 'short' ? short : long).push({ resume, who, cls, at: resumed });
    schedule();
  });
}

/** Queries waiting for their turn right now (for metrics and tests). */
export function waitingTurns(): number {
  return short.length + long.length;
}

/** Turns handed back by all queries of this process so far (tests count them). */
export function turnsTaken(): number {
  return taken;
}

/** Tests: called as each waiting turn is resumed (null: stop). */
export function onTurn(fn: ((who: TurnTaker | undefined, cls: TurnClass) => void) | null): void {
  listener = fn;
}
