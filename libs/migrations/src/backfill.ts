/**
 * The backfill's two helpers: where it reads (a key cursor over the table's primary keys,
 * kept open across slices) and how much it copies per frame (the time-sliced throttle).
 */
import type { JsonValue } from '@mmdb/core';
import { decodeTuple, KEYSPACE, keyIdOf, keyOf, prefixRange, rowKey, type Change, type CommitRequest, type Snapshot, type TenantStore } from '@mmdb/storage';
import type { Throttle } from './record';

/** Rows read from the store per iterator step (a slice takes as many of them as it needs). */
const READ_AHEAD = 512;
/** A key cursor's snapshot is renewed after this long, so a long backfill does not pin old versions. */
const SNAPSHOT_MS = 30_000;

/**
 * The primary keys of a table after a cursor, in key order, read from one snapshot through one
 * iterator kept open across slices (not a snapshot and a seek per frame), keys only: the copy
 * itself re-reads each row inside its commit (the `mirror` change). A row missing from the
 * snapshot was written after it, hence after the mirror was installed: dual-written.
 */
export class KeyCursor {
  private snap: Snapshot | null = null;
  private it: AsyncIterator<Array<[Buffer, Buffer]>> | null = null;
  private buf: JsonValue[][] = [];
  private opened = 0;
  private ended = false;

  constructor(
    private readonly store: TenantStore,
    private readonly schema: string,
    /** The last primary key copied (exclusive), or undefined from the start. */
    private after: JsonValue[] | undefined,
  ) {}

  /** Up to `n` primary keys after the last one taken; fewer only at the end of the table. */
  async take(n: number): Promise<JsonValue[][]> {
    if (this.snap && Date.now() - this.opened > SNAPSHOT_MS) await this.close();
    if (!this.snap) this.open();
    while (this.buf.length < n && !this.ended) {
      const r = await this.it!.next();
      if (r.done) {
        this.ended = true;
        break;
      }
      const head = this.head!;
      for (const [k] of r.value) {
        const pk = decodeTuple(k, head) as JsonValue[];
        this.buf.push(pk);
      }
    }
    const out = this.buf.length <= n ? this.buf : this.buf.slice(0, n);
    this.buf = this.buf.length <= n ? [] : this.buf.slice(n);
    if (out.length) this.after = out[out.length - 1];
    return out;
  }

  async close(): Promise<void> {
    const snap = this.snap;
    const it = this.it;
    this.snap = null;
    this.it = null;
    // Keys read ahead but not taken are read again from the next snapshot.
    if (this.buf.length) this.buf = [];
    this.ended = false;
    if (it?.return) await it.return(undefined).catch(() => undefined);
    if (snap) await snap.release();
  }

  private head: number | null = null;

  private open(): void {
    const m = this.store.manifest(this.schema);
    const id = keyIdOf(m!);
    this.head = keyOf(KEYSPACE.row, [id]).length;
    const range = prefixRange(KEYSPACE.row, [id]);
    // After the cursor: from its key on, skipping the key itself (a primary key has all its columns, so no other key extends it).
    const from = this.after ? rowKey(id, this.after) : range.gte;
    this.snap = this.store.snapshot();
    this.opened = Date.now();
    const skip = this.after ? from : null;
    const src = this.snap.rawRange({ gte: from, lt: range.lt, batchSize: READ_AHEAD })[Symbol.asyncIterator]();
    this.it = {
      next: async () => {
        const r = await src.next();
        if (!r.done && skip && r.value.length && r.value[0][0].equals(skip)) return { done: false, value: r.value.slice(1) };
        return r;
      },
      return: (v?: unknown) => (src.return ? src.return(v) : Promise.resolve({ done: true as const, value: undefined })),
    };
  }
}

/**
 * One backfill frame's commit: a `mirror` change per primary key (the store copies each row as
 * it is inside the commit), then the `backfill` step with the new cursor, `done` (rows copied
 * once it lands) and the cursor its predecessor left (`expect_cursor`). `background`: prepared
 * in a group of its own once no foreground request is queued; `redoable`: written without its
 * own fsync (a lost frame is copied again from the cursor); `split`: the store may cut it after
 * any row for a foreground request that arrives while it is prepared: the head's step moves the
 * cursor to that row, and the tail is the same kind of frame for the rest, expecting it.
 */
export function frameRequest(schema: string, migration: string, pks: readonly JsonValue[][], done: number, expect: JsonValue[] | null): CommitRequest {
  const step = (cursor: JsonValue[], d: number, after: JsonValue[] | null): Change => ({ op: 'migration', migration, step: 'backfill', cursor, state: { done: d }, expect_cursor: after });
  const changes: Change[] = pks.map((pk) => ({ op: 'mirror', schema, pk }));
  changes.push(step(pks[pks.length - 1], done, expect));
  return {
    changes,
    actor: 'system',
    route: 'migration backfill',
    background: true,
    redoable: true,
    split: (k) => {
      if (k < 1 || k >= pks.length) return null;
      const at = pks[k - 1];
      return { head: [...changes.slice(0, k), step(at, done - (pks.length - k), expect)], tail: frameRequest(schema, migration, pks.slice(k), done, at) };
    },
  };
}

/** Counts a table's rows in one snapshot, keys only (the progress total); `stop` ends it early. */
export async function countRows(store: TenantStore, schema: string, stop: () => boolean = () => false): Promise<number> {
  const m = store.manifest(schema);
  if (!m) return 0;
  const snap = store.snapshot();
  let n = 0;
  try {
    for await (const entries of snap.rawRange({ ...prefixRange(KEYSPACE.row, [keyIdOf(m)]), batchSize: 1024 })) {
      n += entries.length;
      if (stop()) break;
    }
  } finally {
    await snap.release();
  }
  return n;
}

/** The foreground's longest waits since the previous frame (the store's `fg_wait_ms`, `fg_queue_ms`). */
export interface ForegroundWait {
  readonly waitMs: number;
  readonly queueMs?: number;
}

/** The longest rest between two frames, ms. */
const MAX_REST_MS = 50;

/** Default time budget of one backfill frame, ms (the ceiling of the adaptive budget). */
export const DEFAULT_SLICE_MS = 3;

/**
 * The least budget the throttle shrinks a frame to: a quarter of `slice_ms`, at least 0.5 ms
 * (smaller frames would multiply the frames' fsyncs per row, which the foreground waits for too).
 */
export const MIN_SLICE_MS = 0.5;

/**
 * How many rows the next backfill frame copies, and how long to wait before it.
 *
 * Time-sliced: a frame is prepared by the store's single writer, so a foreground write queued
 * behind it waits for that preparation (the store reports its length, `prepare_ms`). Each
 * frame therefore holds the rows that fit in the current budget at the measured preparation
 * time per row (a moving average), never more than `batch_size`. Frames follow each other at
 * once while the foreground keeps its latency.
 *
 * Adaptive (AIMD) on the foreground's wait: each frame's result says how long the foreground
 * writes committed since the previous frame waited for the writer's other work (`fg_wait_ms`:
 * queued to their own batch issued) and how much of it was before their preparation began
 * (`fg_queue_ms`: behind another group's preparation, a frame's). The target is twice
 * `slice_ms`. A queue wait above it means a frame held the writer too long: the budget halves
 * (down to a quarter of `slice_ms`, at least 0.5 ms), then, at that floor, rests follow. A
 * wait above it spent on the group in flight (a log write) is not shortened by smaller frames
 * (more frames, more fsyncs): frames are spaced by a rest instead, so fewer are in the way.
 * The rest doubles (1 ms up to 50 ms). Each frame below the target halves the rest (under 1 ms:
 * none), then grows the budget back by a sixteenth of `slice_ms` (its ceiling). Ceiling: the
 * average never exceeds `max_rows_per_s`.
 */
export class Slicer {
  /** Preparation ms per row, moving average (null until the first frame). */
  private msPerRow: number | null = null;
  private rate = 0;
  private lastAt: number | null = null;
  /** The current budget of a frame (ms) and the rest between frames (ms). */
  private level: number;
  private gap = 0;

  constructor(private readonly t: Throttle) {
    this.level = this.ceiling;
  }

  /** The configured budget: the most a frame may take. */
  get ceiling(): number {
    return this.t.slice_ms ?? DEFAULT_SLICE_MS;
  }

  /** The current budget of a frame (ms). */
  get budget(): number {
    return this.level;
  }

  /** The current rest between frames (ms). */
  get rest(): number {
    return this.gap;
  }

  /** Rows for the next frame. */
  next(): number {
    const cap = Math.max(1, this.t.batch_size);
    // The first frame is small: the cost per row is not known yet.
    if (this.msPerRow === null) return Math.min(cap, 32);
    return Math.max(1, Math.min(cap, Math.floor(this.level / Math.max(this.msPerRow, 1e-3))));
  }

  /**
   * Records a frame of `rows` whose commit took `wallMs`, `prepareMs` of it prepared by the
   * writer (undefined: unknown, the whole commit counts), with `fg` the foreground's longest
   * waits since the frame before (undefined: unknown, no signal); returns the ms to wait
   * before the next.
   */
  done(rows: number, wallMs: number, prepareMs?: number, fg?: ForegroundWait): number {
    if (rows <= 0) return 0;
    const prep = Math.min(prepareMs ?? wallMs, wallMs);
    const per = Math.max(prep, 0.01) / rows;
    this.msPerRow = this.msPerRow === null ? per : 0.7 * this.msPerRow + 0.3 * per;
    // The rate over wall time (frames and the waits between them), for the progress and its ETA.
    const now = performance.now();
    const r = (rows * 1000) / Math.max(this.lastAt === null ? wallMs : now - this.lastAt, 0.05);
    this.lastAt = now;
    this.rate = this.rate === 0 ? r : 0.9 * this.rate + 0.1 * r;
    const target = 2 * this.ceiling;
    const least = Math.max(MIN_SLICE_MS, this.ceiling / 4);
    if (fg && (fg.queueMs ?? 0) > target && this.level > least) {
      // Multiplicative decrease of the slice: the writer was held by a preparation too long.
      this.level = Math.max(least, this.level / 2);
    } else if (fg && ((fg.queueMs ?? 0) > target || fg.waitMs > target)) {
      // Or frames spaced: fewer log writes (and slices) in the foreground's way.
      this.gap = Math.min(MAX_REST_MS, Math.max(1, this.gap * 2));
    } else if (this.gap > 0) {
      this.gap = this.gap / 2 >= 1 ? this.gap / 2 : 0;
    } else {
      this.level = Math.min(this.ceiling, this.level + this.ceiling / 16);
    }
    // The ceiling: `rows` may take no less than rows / max_rows_per_s seconds.
    const floor = (rows * 1000) / this.t.max_rows_per_s - wallMs;
    return Math.max(this.gap, floor, 0);
  }

  /** Copied rows per second (recent frames, with the waits between them). */
  get rowsPerS(): number {
    return this.rate;
  }
}
