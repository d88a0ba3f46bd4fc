/**
 * Follower acknowledgements on the holder: each follower reports the last LSN it has applied
 * durably; a write with a sync window waits until `n` followers are at or past its LSN.
 * A follower that has not acknowledged for `retentionMs` no longer counts (and its record is
 * dropped): a dead follower must not hold every write for the whole window forever.
 */
export interface FollowerAck {
  readonly follower: string;
  readonly lsn: number;
  readonly epoch: number;
  /** ms since the epoch of its last acknowledgement. */
  readonly at: number;
}

interface Waiter {
  readonly lsn: number;
  readonly n: number;
  readonly resolve: (ok: boolean) => void;
  readonly timer: NodeJS.Timeout;
}

export class AckTracker {
  private readonly acks = new Map<string, FollowerAck>();
  private waiters: Waiter[] = [];

  constructor(private readonly retentionMs: number) {}

  /** Records that `follower` has applied everything up to `lsn` (acks only move forward within an epoch). */
  ack(follower: string, lsn: number, epoch: number, at = Date.now()): FollowerAck {
    const prev = this.acks.get(follower);
    const a: FollowerAck = { follower, lsn: prev && prev.epoch === epoch ? Math.max(prev.lsn, lsn) : lsn, epoch, at };
    this.acks.set(follower, a);
    if (this.waiters.length) this.wake();
    return a;
  }

  /** Live acknowledgements (dropping those older than the retention period). */
  list(now = Date.now()): FollowerAck[] {
    for (const [k, a] of this.acks) if (now - a.at > this.retentionMs) this.acks.delete(k);
    return [...this.acks.values()].sort((a, b) => b.lsn - a.lsn);
  }

  /** How many live followers have applied `lsn`. */
  count(lsn: number, now = Date.now()): number {
    let n = 0;
    for (const a of this.list(now)) if (a.lsn >= lsn) n++;
    return n;
  }

  /** Resolves true once `n` followers have acknowledged `lsn`, or false after `ms`. */
  waitFor(lsn: number, n: number, ms: number): Promise<boolean> {
    if (n <= 0 || this.count(lsn) >= n) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const w: Waiter = {
        lsn,
        n,
        resolve,
        timer: setTimeout(() => {
          this.waiters = this.waiters.filter((x) => x !== w);
          resolve(false);
        }, ms),
      };
      this.waiters.push(w);
    });
  }

  private wake(): void {
    const now = Date.now();
    this.waiters = this.waiters.filter((w) => {
      if (this.count(w.lsn, now) < w.n) return true;
      clearTimeout(w.timer);
      w.resolve(true);
      return false;
    });
  }

  /** Drops a follower's acknowledgement (an operator removed it); true when it had one. */
  forget(follower: string): boolean {
    return this.acks.delete(follower);
  }

  /** Ends every wait (as not acknowledged), e.g. when the node stops leading. */
  clear(): void {
    for (const w of this.waiters) {
      clearTimeout(w.timer);
      w.resolve(false);
    }
    this.waiters = [];
    this.acks.clear();
  }
}
