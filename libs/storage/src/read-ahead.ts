/**
 * Reads ahead of the single writer (DESIGN.md "Background requests"): a background request's
 * row reads (its `getMany`) are issued when it is submitted, while it waits in the queue, so
 * the writer does not hold the queue for that I/O when it prepares the request.
 *
 * A value read that way may be older than the store by the time the request is prepared: a
 * group that became durable after the read was issued may have written the key. Groups
 * durable since then are remembered (their write sets) while a read ahead is outstanding, and
 * every key one of them wrote is dropped from the read's values (the writer reads it again).
 * Writes of the group in flight are layered above these values by the request context, as
 * above any read of the store. Frames joined to the log outside the writer (`exclusive`)
 * invalidate every outstanding read (`reset`).
 */
import type { Db } from './snapshot';
import type { WriteSet } from './context';

/**
 * Durable groups, and their key writes, remembered at most: a read older than what is kept is
 * dropped whole (read again by the writer), so a background request that waits behind many
 * foreground groups (a load) does not keep their write sets alive.
 */
const MAX_GROUPS = 64;
const MAX_KEYS = 65_536;

export interface ReadAheadEntry {
  /** The last durable LSN when the read was issued: groups after it may be missing from it. */
  readonly fromLsn: number;
  readonly gen: number;
  /** Values by latin1 key (undefined: absent), once read; null if the read failed. */
  values: Map<string, Buffer | undefined> | null;
  readonly ready: Promise<void>;
  settled: boolean;
}

export class ReadAhead {
  /** Groups durable after `since`, in LSN order (each by its last LSN). */
  private recent: Array<{ lsn: number; writes: WriteSet }> = [];
  private held = 0;
  private since = 0;
  private open = 0;
  private gen = 0;
  readonly stats = { reads: 0, keys: 0, dropped: 0 };

  constructor(private readonly db: Db) {}

  /** Starts reading `keys` (none: no entry) with `durableLsn` the store's last durable LSN now. */
  start(keys: readonly Buffer[], durableLsn: number): ReadAheadEntry | undefined {
    if (!keys.length) return undefined;
    if (this.open === 0) {
      this.recent = [];
      this.held = 0;
      this.since = durableLsn;
    }
    this.open++;
    this.stats.reads++;
    const entry: ReadAheadEntry = {
      fromLsn: durableLsn,
      gen: this.gen,
      values: null,
      settled: false,
      ready: this.db.getMany(keys as Buffer[]).then(
        (vals) => {
          const m = new Map<string, Buffer | undefined>();
          for (let i = 0; i < keys.length; i++) m.set(keys[i].toString('latin1'), vals[i]);
          entry.values = m;
          entry.settled = true;
        },
        () => {
          entry.settled = true;
        },
      ),
    };
    return entry;
  }

  /** A group became durable (its last LSN and its key writes). */
  written(lsn: number, writes: WriteSet): void {
    if (this.open === 0) return;
    this.recent.push({ lsn, writes });
    this.held += writes.size;
    while (this.recent.length > MAX_GROUPS || this.held > MAX_KEYS) {
      const old = this.recent.shift()!;
      this.since = old.lsn;
      this.held -= old.writes.size;
    }
  }

  /**
   * The entry's values still current (waiting for its read if it is still running), or null.
   * Each entry is taken exactly once.
   */
  async take(e: ReadAheadEntry): Promise<Map<string, Buffer | undefined> | null> {
    if (!e.settled) await e.ready;
    try {
      return this.current(e);
    } finally {
      this.release();
    }
  }

  private current(e: ReadAheadEntry): Map<string, Buffer | undefined> | null {
    const values = e.values;
    if (!values || e.gen !== this.gen || e.fromLsn < this.since) return null;
    for (const g of this.recent) {
      if (g.lsn <= e.fromLsn) continue;
      for (const k of values.keys()) {
        if (g.writes.lookupBin(k) !== undefined) {
          values.delete(k);
          this.stats.dropped++;
        }
      }
    }
    this.stats.keys += values.size;
    return values;
  }

  /** Frames were joined to the log outside the writer: no outstanding read is trusted. */
  reset(): void {
    this.gen++;
  }

  private release(): void {
    this.open = Math.max(0, this.open - 1);
    if (this.open === 0) {
      this.recent = [];
      this.held = 0;
    }
  }
}
