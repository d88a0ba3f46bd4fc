/**
 * One LevelDB snapshot shared by every `store.snapshot()` taken while nothing was written.
 *
 * Creating and releasing a LevelDB snapshot runs on the calling thread (the event loop) under
 * LevelDB's database mutex, which its background thread holds while it switches log files and
 * deletes obsolete files after a flush or compaction: a read that creates one then waits,
 * blocked off the CPU, for tens of milliseconds (issue 25 §1, libs/storage DESIGN.md "Shared
 * read snapshots"). A snapshot is a point in LevelDB's sequence: two taken with no write
 * completed between them see the same data, so readers share the current one until the next
 * write completes (classic-level's `write` event, emitted after every put, del and batch).
 *
 *   const share = new SnapshotShare(db);
 *   const held = share.acquire('42:true');   // same key and no write since: the same snapshot
 *   await db.get(k, { snapshot: held.snap });
 *   await held.release();                     // closed once retired and unreferenced
 */
import type { ClassicLevel } from 'classic-level';

type Db = ClassicLevel<Buffer, Buffer>;
type LevelSnapshot = ReturnType<Db['snapshot']>;

interface Held {
  snap: LevelSnapshot;
  key: string;
  refs: number;
  retired: boolean;
}

export interface SharedSnapshot {
  readonly snap: LevelSnapshot;
  release(): Promise<void>;
}

export class SnapshotShare {
  private current: Held | undefined;
  private readonly onWrite = () => this.retire();

  constructor(private readonly db: Db) {
    db.on('write', this.onWrite);
  }

  /** The current snapshot if `key` (the store's read position) is unchanged and nothing was written since; else a new one. */
  acquire(key: string): SharedSnapshot {
    if (this.current && this.current.key !== key) this.retire();
    if (!this.current) this.current = { snap: this.db.snapshot(), key, refs: 0, retired: false };
    const h = this.current;
    h.refs++;
    let done = false;
    return {
      snap: h.snap,
      release: async () => {
        if (done) return;
        done = true;
        h.refs--;
        if (h.retired && h.refs === 0) await closeQuietly(h.snap);
      },
    };
  }

  /** Stops handing out the current snapshot; it closes when its last reader releases it. */
  retire(): void {
    const h = this.current;
    if (!h) return;
    this.current = undefined;
    h.retired = true;
    if (h.refs === 0) void closeQuietly(h.snap);
  }

  /** Before the database closes. */
  close(): void {
    this.db.off('write', this.onWrite);
    this.retire();
  }
}

async function closeQuietly(s: LevelSnapshot): Promise<void> {
  // a snapshot of a database closing (or closed) is closed with it
  await s.close().catch(() => undefined);
}
