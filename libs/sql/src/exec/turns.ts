/**
 * Turns: how long-running queries share the one event loop with everything else.
 *
 * A running query gives the loop back (`nextTurn`) every SLICE_MS of its own work. Waiting queries
 * queue here and are resumed ONE PER LOOP ITERATION (one `setImmediate` at a time), so between two
 * slices of heavy work the loop always reaches its poll phase: a point read, `/health`, a cancel
 * or SIGTERM waits at most about one slice, however many heavy queries are in flight. (A plain
 * `setImmediate` per query would run every waiting query's slice in the same check phase: with 4
 * heavy queries, 4 slices back to back before any socket is read.) Heavy queries are served
 * round-robin, in the order they yielded.
 */

/** Longest stretch of one query's work between two turns (ms). */
export const SLICE_MS = 4;

const waiting: Array<() => void> = [];
let scheduled = false;
let taken = 0;

function pump(): void {
  scheduled = false;
  const next = waiting.shift();
  if (waiting.length) schedule();
  next?.();
}

function schedule(): void {
  if (scheduled) return;
  scheduled = true;
  setImmediate(pump);
}

/** Resolves on a later loop iteration, after the queries that yielded before this one. */
export function nextTurn(): Promise<void> {
  taken++;
  return new Promise<void>((res) => {
    waiting.push(res);
    schedule();
  });
}

/** Queries waiting for their turn right now (for metrics and tests). */
export function waitingTurns(): number {
  return waiting.length;
}

/** Turns handed back by all queries of this process so far (tests count them). */
export function turnsTaken(): number {
  return taken;
}
