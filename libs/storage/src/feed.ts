/**
 * The resumable change feed: `store.changesFrom(cursor)` replays the log from the cursor,
 * then follows live frames, with no gap, no duplicate, in LSN order (DESIGN.md, "The change
 * feed").
 *
 * A reader is registered for live frames *before* each read of the log: a frame published
 * after that lands in its buffer, and a frame published before it is already in the log
 * (frames are published after their batch is durable), so the two overlap and never leave a
 * gap; the overlap is dropped by LSN. The buffer is bounded: when it fills (a slow reader),
 * it is dropped and the reader goes back to reading the log from where it is. The commit
 * path only ever appends to a reader's array, so a reader never makes it wait.
 *
 * The hub also keeps the last published frames (`tailFrames` / `tailBytes`), once for all
 * readers: a reader whose buffer overflowed, or that starts a little behind, reads them from
 * there instead of reading and decoding the log. With hundreds of watch readers falling behind
 * together (a loaded host), a read of the log each was hundreds of decodes of the same frames,
 * which only put them further behind.
 */
import { DbError, type Lsn } from '@mmdb/core';
import type { CommittedFrame } from './api';

/** A position in a tenant's log: the last frame a reader has, and the epoch that frame was written under. */
export interface ChangeCursor {
  readonly epoch: number;
  /** 0: from the beginning of the log. */
  readonly lsn: Lsn;
}

/**
 * How a reader holds log retention. `follower`: the log keeps every frame it has not read
 * while its cursor is open; a follower cursor with an `id` also records its starting LSN as a
 * registered follower (`registerFollower`), so the log keeps what it needs across reconnects
 * until it is past them (a later `registerFollower`) or removed (`removeFollower`). `watch`: the log keeps at most `maxLagFrames` / `maxLagBytes` for it; a reader
 * further behind is told to resnapshot (`resync_required`).
 */
export type ReaderKind = 'follower' | 'watch';
export const READER_KINDS: readonly ReaderKind[] = ['follower', 'watch'];

export interface FeedOptions {
  /** Default `watch`. */
  readonly kind?: ReaderKind;
  /** A name for metrics and errors (e.g. the follower's node id). */
  readonly id?: string;
  /** Watch readers: most frames behind the log's end before `resync_required` (default: the store's `feedHoldFrames`). */
  readonly maxLagFrames?: number;
  /** Watch readers: most log bytes behind the log's end before `resync_required` (default: the store's `feedHoldBytes`). */
  readonly maxLagBytes?: number;
  /** Live frames kept for this reader before it falls back to reading the log (default 1,024). */
  readonly bufferFrames?: number;
  /** Most frames in one batch (default 256). */
  readonly batchFrames?: number;
}

/** One frame as the feed delivers it: decoded, and its stored bytes (what `applyFrames` takes). */
export interface FeedEntry {
  readonly frame: CommittedFrame;
  readonly bytes: Buffer;
}

export interface FeedBatch {
  /** Consecutive frames, in LSN order. */
  readonly entries: readonly FeedEntry[];
  /** The cursor after the last of them (resume from it). */
  readonly cursor: ChangeCursor;
}

/** What the feed needs from its store. */
export interface FeedSource {
  readonly lastLsn: Lsn;
  /** Up to `limit` frames with lsn >= from, as stored, in order (fewer at the log's end). */
  readLog(from: Lsn, limit: number): Promise<FeedEntry[]>;
  /** The first LSN the log still holds (lastLsn + 1 when it holds none). */
  firstLsn(): Lsn;
  /** The epoch the frame at `lsn` was written under, or undefined when the log never had it. */
  epochAt(lsn: Lsn): number | undefined;
  /** Log bytes held after `lsn` (segment granularity). */
  bytesAfter(lsn: Lsn): number;
}

export function resync(reason: string, message: string, cursor: ChangeCursor): DbError {
  return new DbError('resync_required', `${message}: start again from a snapshot`, { reason, cursor });
}

/** One open cursor on the feed. Iterate it (`for await`), or call `next()`; `close()` ends it. */
export class ChangeFeed implements AsyncIterable<FeedBatch> {
  readonly kind: ReaderKind;
  readonly id: string;
  /** Last LSN delivered. */
  private position: number;
  private epoch: number;
  private live = false;
  private buf: FeedEntry[] = [];
  private wake: (() => void) | null = null;
  private closed = false;
  private checked = false;
  private reading = false;
  /** Times the buffer filled and the reader went back to the log (or the hub's recent frames). */
  overflows = 0;
  /** Reads of the stored log (frames the hub's recent ones no longer held). */
  logReads = 0;
  private readonly bufferFrames: number;
  private readonly batchFrames: number;

  constructor(
    private readonly source: FeedSource,
    private readonly hub: FeedHub,
    cursor: ChangeCursor,
    private readonly opts: FeedOptions & { readonly maxLagFrames: number; readonly maxLagBytes: number },
  ) {
    this.kind = opts.kind ?? 'watch';
    this.id = opts.id ?? '';
    this.position = cursor.lsn;
    this.epoch = cursor.epoch;
    this.bufferFrames = Math.max(1, opts.bufferFrames ?? 1024);
    this.batchFrames = Math.max(1, opts.batchFrames ?? 256);
  }

  /** The cursor after the last frame delivered. */
  get cursor(): ChangeCursor {
    return { epoch: this.epoch, lsn: this.position };
  }

  /** Live frames waiting in this reader's buffer (bounded by `bufferFrames`). */
  get buffered(): number {
    return this.buf.length;
  }

  /** The LSN this reader holds the log at (frames after it are kept for it). */
  holdLsn(lastLsn: number, bytesAfter: (lsn: number) => number): number {
    if (this.kind === 'follower') return this.position;
    const byFrames = Math.max(this.position, lastLsn - this.opts.maxLagFrames);
    return bytesAfter(byFrames) > this.opts.maxLagBytes ? lastLsn : byFrames;
  }

  /**
   * Live frames in LSN order, from the store's publish (the commit path): O(1) per frame, never
   * waits. The entry is the hub's, shared by every reader (no allocation per reader and frame).
   */
  push(entry: FeedEntry): void {
    if (!this.live) return;
    if (this.buf.length >= this.bufferFrames) {
      this.live = false;
      this.buf = [];
      this.overflows++;
    } else this.buf.push(entry);
    const w = this.wake;
    if (w) {
      this.wake = null;
      w();
    }
  }

  /** The next batch of frames; waits for a commit when the reader is at the log's end. Null once closed. One call at a time. */
  async next(): Promise<FeedBatch | null> {
    if (this.reading) throw new DbError('internal_error', 'ChangeFeed.next() called while another next() is pending');
    this.reading = true;
    try {
      return await this.nextBatch();
    } finally {
      this.reading = false;
    }
  }

  private async nextBatch(): Promise<FeedBatch | null> {
    if (!this.checked) this.checkCursor();
    for (;;) {
      if (this.closed) return null;
      this.checkLag();
      if (!this.live) {
        const batch = await this.fromLog();
        if (batch) return batch;
        continue;
      }
      if (this.buf.length) {
        const batch = this.fromBuffer();
        if (batch) return batch;
        continue;
      }
      await new Promise<void>((r) => (this.wake = r));
    }
  }

  /**
   * The live frames buffered now, without waiting and without a promise: null when none are
   * (the reader is at the log's end, or not live: it must read the log, so call `next()`), or
   * when a `next()` is pending. Throws `resync_required` as `next()` would for a reader past its
   * lag bound. A watch fan-out takes its burst with it at its turn, so hundreds of readers cost
   * no promise chain per window (apps/api DESIGN, "Many subscribers").
   */
  poll(): FeedBatch | null {
    if (this.reading || this.closed || !this.checked || !this.live || !this.buf.length) return null;
    this.checkLag();
    return this.fromBuffer();
  }

  /** True when `next()` would wait for a commit: live, nothing buffered (a `poll()` answers null until one publishes). */
  get atEnd(): boolean {
    return this.live && !this.closed && this.checked && !this.buf.length;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<FeedBatch> {
    try {
      for (;;) {
        const b = await this.next();
        if (!b) return;
        yield b;
      }
    } finally {
      this.close();
    }
  }

  /** Ends the cursor: it stops holding retention, a pending `next()` answers null and `onClose` hooks run. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.live = false;
    this.buf = [];
    this.hub.remove(this);
    const w = this.wake;
    this.wake = null;
    w?.();
    const hooks = this.closeHooks;
    this.closeHooks = [];
    for (const h of hooks) h();
  }

  private closeHooks: Array<() => void> = [];

  /**
   * Runs `fn` when the cursor closes (by its reader, or by the store closing every cursor): for a
   * reader that waits elsewhere than in `next()` (a watch stream waiting for its window). At once
   * when it is closed already.
   */
  onClose(fn: () => void): void {
    if (this.closed) fn();
    else this.closeHooks.push(fn);
  }

  /** A cursor names a frame of this log's history, under the epoch it was written in. */
  private checkCursor(): void {
    this.checked = true;
    const c = this.cursor;
    if (c.lsn === 0) return;
    if (!Number.isSafeInteger(c.lsn) || c.lsn < 0) throw new DbError('validation_failed', `a cursor's lsn is a non-negative integer, not ${String(c.lsn)}`);
    if (c.lsn > this.source.lastLsn) {
      this.close();
      throw resync('ahead', `cursor lsn ${c.lsn} is past this log's end (${this.source.lastLsn}); its history was rewritten`, c);
    }
    const at = this.source.epochAt(c.lsn);
    if (at !== undefined && at !== c.epoch) {
      this.close();
      throw resync('epoch', `frame ${c.lsn} of this log was written under epoch ${at}, not ${c.epoch}: history was rewritten after the cursor`, c);
    }
  }

  private checkLag(): void {
    if (this.kind !== 'watch') return;
    const last = this.source.lastLsn;
    const lag = last - this.position;
    if (lag > this.opts.maxLagFrames) {
      this.close();
      throw resync('lag', `the reader is ${lag} frames behind, over its bound of ${this.opts.maxLagFrames}`, this.cursor);
    }
    if (lag > 0 && !this.live && this.source.bytesAfter(this.position) > this.opts.maxLagBytes) {
      this.close();
      throw resync('lag', `the reader is over ${this.opts.maxLagBytes} log bytes behind`, this.cursor);
    }
  }

  /** Registers for live frames, then reads the log from the position (the two overlap; see the file comment). */
  private async fromLog(): Promise<FeedBatch | null> {
    this.live = true;
    this.buf = [];
    const from = this.position + 1;
    if (from < this.source.firstLsn()) {
      this.close();
      throw resync('retention', `frame ${from} is no longer in the log (it starts at ${this.source.firstLsn()})`, this.cursor);
    }
    let entries = this.hub.recent(from, this.batchFrames);
    if (!entries) {
      this.logReads++;
      try {
        entries = await this.source.readLog(from, this.batchFrames);
      } catch (e) {
        if (this.closed) return null; // the store closed under the read
        throw e;
      }
    }
    if (this.closed) return null;
    // A full batch: more may follow in the log; read it again rather than buffer meanwhile.
    if (entries.length === this.batchFrames) {
      this.live = false;
      this.buf = [];
    }
    if (!entries.length) return null;
    if (entries[0].frame.lsn !== from) {
      this.close();
      throw resync('retention', `frame ${from} is no longer in the log`, this.cursor);
    }
    return this.deliver(entries);
  }

  private fromBuffer(): FeedBatch | null {
    const buf = this.buf;
    let i = 0;
    while (i < buf.length && buf[i].frame.lsn <= this.position) i++;
    let j = i;
    let expect = this.position + 1;
    while (j < buf.length && j - i < this.batchFrames && buf[j].frame.lsn === expect) {
      j++;
      expect++;
    }
    // the whole buffer, as it usually is: handed over without a copy
    const take = i === 0 && j === buf.length ? buf : buf.slice(i, j);
    this.buf = j >= buf.length ? [] : buf.slice(j);
    if (!take.length) {
      // not the next frame: read the log instead (cannot happen while frames publish in order)
      if (this.buf.length) {
        this.live = false;
        this.buf = [];
      }
      return null;
    }
    return this.deliver(take);
  }

  private deliver(entries: FeedEntry[]): FeedBatch {
    const last = entries[entries.length - 1].frame;
    this.position = last.lsn;
    this.epoch = last.epoch;
    return { entries, cursor: { epoch: last.epoch, lsn: last.lsn } };
  }
}

/** How many of the last published frames the hub keeps for readers behind their buffer. */
export interface TailLimits {
  /** Default 4,096. */
  readonly frames?: number;
  /** Their stored size (default 8 MiB). */
  readonly bytes?: number;
}

/** The open cursors of one store: fan-out of live frames, the last frames published, and what they hold of the log. */
export class FeedHub {
  private readonly readers = new Set<ChangeFeed>();
  /** The last published frames, consecutive, from `tail[tailFrom]` on (kept only while a reader is open). */
  private tail: FeedEntry[] = [];
  private tailFrom = 0;
  private tailBytes = 0;
  private readonly maxTailFrames: number;
  private readonly maxTailBytes: number;
  /** The last LSN published (the store sets it to its log's end when it opens). */
  published = 0;

  constructor(limits: TailLimits = {}) {
    this.maxTailFrames = Math.max(0, limits.frames ?? 4096);
    this.maxTailBytes = Math.max(0, limits.bytes ?? 8 * 1024 * 1024);
  }

  add(r: ChangeFeed): void {
    this.readers.add(r);
  }

  remove(r: ChangeFeed): void {
    this.readers.delete(r);
    if (this.readers.size === 0) this.forget();
  }

  /** Up to `limit` recent frames from lsn `from` on, when the hub still holds `from` (else null: read the log). */
  recent(from: number, limit: number): FeedEntry[] | null {
    const n = this.tail.length - this.tailFrom;
    if (!n) return null;
    const i = from - this.tail[this.tailFrom].frame.lsn;
    if (i < 0 || i >= n) return null;
    const at = this.tailFrom + i;
    return this.tail.slice(at, Math.min(this.tail.length, at + limit));
  }

  private remember(entries: readonly FeedEntry[]): void {
    if (!this.maxTailFrames) return;
    const end = this.tail.length > this.tailFrom ? this.tail[this.tail.length - 1].frame.lsn : null;
    if (end !== null && entries[0].frame.lsn !== end + 1) this.forget(); // not consecutive: never mix two runs
    for (const e of entries) {
      this.tail.push(e);
      this.tailBytes += e.bytes.length;
    }
    while (this.tail.length - this.tailFrom > this.maxTailFrames || (this.tailBytes > this.maxTailBytes && this.tail.length - this.tailFrom > 1)) {
      this.tailBytes -= this.tail[this.tailFrom].bytes.length;
      this.tail[this.tailFrom++] = undefined as unknown as FeedEntry;
    }
    if (this.tailFrom > 1024 && this.tailFrom * 2 > this.tail.length) {
      this.tail = this.tail.slice(this.tailFrom);
      this.tailFrom = 0;
    }
  }

  private forget(): void {
    this.tail = [];
    this.tailFrom = 0;
    this.tailBytes = 0;
  }

  /** Called by the store after a group is durable and applied: frames in LSN order with their bytes. */
  publish(frames: readonly CommittedFrame[], bytes: readonly Buffer[]): void {
    if (frames.length) this.published = frames[frames.length - 1].lsn;
    if (this.readers.size === 0) return;
    // one entry object per frame, shared by every reader: with hundreds of watch streams a
    // per-reader copy was hundreds of thousands of short-lived objects a second (GC pauses
    // that every commit in flight then waits through)
    const entries = frames.map((frame, i): FeedEntry => ({ frame, bytes: bytes[i] }));
    if (entries.length) this.remember(entries);
    for (const r of this.readers) for (const e of entries) r.push(e);
  }

  closeAll(): void {
    for (const r of [...this.readers]) r.close();
    this.forget();
  }

  /** The LSN each kind of open reader holds the log at (lastLsn: holds nothing). */
  holds(lastLsn: number, bytesAfter: (lsn: number) => number): Record<ReaderKind, number> {
    const out: Record<ReaderKind, number> = { follower: lastLsn, watch: lastLsn };
    for (const r of this.readers) out[r.kind] = Math.min(out[r.kind], r.holdLsn(lastLsn, bytesAfter));
    return out;
  }

  counts(): Record<ReaderKind, number> {
    const out: Record<ReaderKind, number> = { follower: 0, watch: 0 };
    for (const r of this.readers) out[r.kind]++;
    return out;
  }
}
