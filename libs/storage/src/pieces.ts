/**
 * Background preparation in pieces (DESIGN.md "Background preparation in pieces"): the writer
 * prepares a background request's changes in pieces of about PIECE_MS, letting the event loop
 * run between them, so a foreground request that arrives meanwhile is queued (and a batch that
 * landed is answered) within a piece instead of after the whole frame.
 */

/** The most a background request's preparation runs before it lets the event loop go, ms (the default of the store's `backgroundPieceMs`). */
export const PIECE_MS = 0.5;

/** The most a background request waits for a foreground group in flight to be answered, ms (the default of the store's `backgroundHoldMs`: 0, off; DESIGN.md "Hold for the foreground"). */
export const HOLD_MS = 0;

export class PieceClock {
  private start = performance.now();

  constructor(private readonly ms: number) {}
  /** The time spent let go (the event loop ran other work), ms: not the request's preparation. */
  away = 0;

  /** Whether the current piece has run its time. */
  over(): boolean {
    return performance.now() - this.start >= this.ms;
  }

  /** Lets the event loop run once (its timers, I/O callbacks, then this), and starts a new piece. */
  async pause(): Promise<void> {
    const t = performance.now();
    await new Promise<void>((r) => setImmediate(r));
    this.start = performance.now();
    this.away += this.start - t;
  }
}
