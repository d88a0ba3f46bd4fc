/**
 * One explicit LevelDB snapshot shared by the store's point reads (`getRow`, `getRowJson` on a
 * row-cache miss) and its queries' snapshots (`readSnapshot`) while no commit group is applied
 * (issue 25 §1).
 *
 * classic-level's `get` without a snapshot creates an implicit one in the read's constructor, on
 * the calling thread (the event loop), under LevelDB's database mutex; its background thread
 * holds that mutex while it deletes obsolete files after a flush or compaction (LevelDB 1.20 does
 * the unlinks under it). Every point read that missed the row cache could then block the event
 * loop off the CPU (`tools/bench/stalls/http.js --natives`: single `db_get` calls blocked
 * 7-19 ms). A `get` given an explicit snapshot takes no mutex on the event loop, so the reads
 * share one snapshot per applied group: the mutex is taken on the event loop about twice per
 * applied group (create, release) instead of once per read.
 *
 * Keyed by the store's apply counter, never by a write listener (nothing is added to the write
 * path): a snapshot made while no group was between its batch and its apply, at apply count N,
 * holds exactly the rows committed up to N, and serves every read that starts while the count is
 * still N, also while a later group is being written (its writer is not acknowledged yet, so
 * the read is ordered before it). A read that finds no current snapshot while a group is being
 * written reads without one, as before. A snapshot is retired at the first read after the count
 * moved, or POINT_SNAPSHOT_MAX_AGE_MS after it was made (so none pins old versions for long).
 *
 *   const held = reads.acquire(applySeq, !writing);  // undefined: read without a snapshot
 *   try { v = await db.get(key, { snapshot: held.snap }); } finally { held.release(); }
 */
import type { ClassicLevel } from 'classic-level';

type Db = ClassicLevel<Buffer, Buffer>;
type LevelSnapshot = ReturnType<Db['snapshot']>;

/** What the store knew when a shared snapshot was made: its last LSN and every table's LSN. */
export interface SnapshotAt {
  readonly lsn: number;
  readonly tableLsns: ReadonlyMap<string, number>;
}

interface Shared {
  readonly snap: LevelSnapshot;
  readonly seq: number;
  readonly at: SnapshotAt;
  refs: number;
  retired: boolean;
}

export interface HeldSnapshot {
  readonly snap: LevelSnapshot;
  /** The store's position when the snapshot was made (a stable one: exactly the frames up to `at.lsn`). */
  readonly at: SnapshotAt;
  release(): void;
}

/**
 * A shared snapshot is retired this long after it was made even when no group was applied since:
 * a snapshot pins the versions it can see, so one left open through a long run of writes with no
 * point read to retire it would keep every overwritten row's old version out of compaction.
 */
export const POINT_SNAPSHOT_MAX_AGE_MS = 1000;

export class PointReadSnapshot {
  private current: Shared | undefined;
  /** LevelDB snapshots this made (tests and diagnostics). */
  created = 0;

  constructor(
    private readonly db: Db,
    /** The store's position, read when a snapshot is made. */
    private readonly position: () => SnapshotAt,
    private readonly maxAgeMs = POINT_SNAPSHOT_MAX_AGE_MS,
  ) {}

  /**
   * The shared snapshot at apply count `seq`: the current one when it was made at `seq`, else a
   * new one when `mayCreate` (no group is being written), else undefined.
   */
  acquire(seq: number, mayCreate: boolean): HeldSnapshot | undefined {
    if (this.current && this.current.seq !== seq) this.retire();
    if (!this.current) {
      if (!mayCreate || this.db.status !== 'open') return undefined;
      const made: Shared = { snap: this.db.snapshot(), seq, at: this.position(), refs: 0, retired: false };
      this.current = made;
      this.created++;
      setTimeout(() => this.current === made && this.retire(), this.maxAgeMs).unref();
    }
    const s = this.current;
    s.refs++;
    let done = false;
    return {
      snap: s.snap,
      at: s.at,
      release: () => {
        if (done) return;
        done = true;
        s.refs--;
        if (s.retired && s.refs === 0) closeQuietly(s.snap);
      },
    };
  }

  /** Stops handing out the current snapshot; it is closed when its last read releases it. */
  retire(): void {
    const s = this.current;
    if (!s) return;
    this.current = undefined;
    s.retired = true;
    if (s.refs === 0) closeQuietly(s.snap);
  }
}

function closeQuietly(s: LevelSnapshot): void {
  // a snapshot of a closing database is closed with it
  s.close().catch(() => undefined);
}
