/**
 * The resumable change feed: `store.changesFrom(cursor)` replays the log from the cursor,
 * then follows live frames, with no gap, no duplicate, in LSN order (DESIGN.md, "The change
 * feed").
 *
 * One shared buffer, a cursor per reader. The hub appends each published frame once to one
 * buffer of the last published frames, consecutive (the commit path: O(1) per frame, whatever
 * the number of readers; it wakes only readers with a `next()` pending). A reader is a position
 * in it: a live reader takes the frames after its position from the buffer, a copy of the
 * slice it takes and no more. The buffer holds what some reader has not taken yet, bounded
 * (frames: the larger of `TailLimits.frames` and the largest `bufferFrames` of its readers;
 * bytes: `TailLimits.bytes`), whatever the number or the speed of the readers: a
 * reader more than its `bufferFrames` behind the last published frame, or behind the buffer's
 * start, has overflowed: it is no longer live and reads the log from where it is (or, while the
 * buffer still holds its next frame, the buffer), then goes live again at the log's end. Frames
 * are published after their batch is durable, so a frame the buffer no longer holds is in the
 * log (or retention dropped it: `resync_required`); a read of the log and the buffer meet at the
 * reader's position, with no gap and no duplicate.
 *
 * Before this, each reader had its own array the commit path appended every frame to: with 200
 * watch readers, 200 appends per frame inside the commit (and arrays grown and dropped per
 * reader and window); and with hundreds of readers falling behind together (a loaded host),
 * a read of the log each was hundreds of decodes of the same frames.
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
  /** Takes its next frames from the hub's buffer (false: from the log first). */
  private live = false;
  private wake: (() => void) | null = null;
  private closed = false;
  private checked = false;
  private reading = false;
  private overflowCount = 0;
  /** Reads of the stored log (frames the hub's buffer no longer held). */
  logReads = 0;
  readonly bufferFrames: number;
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

  /** The last LSN delivered. */
  get lsn(): number {
    return this.position;
  }

  /** The cursor after the last frame delivered. */
  get cursor(): ChangeCursor {
    return { epoch: this.epoch, lsn: this.position };
  }

  /** Live frames published after this reader's position, waiting for it (bounded by `bufferFrames`: past it, the reader overflows). */
  get buffered(): number {
    this.checkOverflow();
    return this.live ? Math.max(0, this.hub.published - this.position) : 0;
  }

  /** Times the reader fell more than its buffer behind (or behind the hub's buffer) and went back to the log; counted when observed. */
  get overflows(): number {
    this.checkOverflow();
    return this.overflowCount;
  }

  /** The LSN this reader holds the log at (frames after it are kept for it). */
  holdLsn(lastLsn: number, bytesAfter: (lsn: number) => number): number {
    if (this.kind === 'follower') return this.position;
    const byFrames = Math.max(this.position, lastLsn - this.opts.maxLagFrames);
    return bytesAfter(byFrames) > this.opts.maxLagBytes ? lastLsn : byFrames;
  }

  /** Called by the hub at a publish when this reader waits in `next()`. */
  wakeUp(): void {
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
      this.checkOverflow();
      if (!this.live) {
        const batch = await this.fromLog();
        if (batch) return batch;
        continue;
      }
      if (this.position < this.hub.published) {
        const batch = this.fromHub(this.batchFrames);
        if (batch) return batch;
        continue;
      }
      await new Promise<void>((r) => {
        this.wake = r;
        this.hub.wait(this);
      });
    }
  }

  /**
   * The live frames published after the position, without waiting and without a promise: null
   * when none are (the reader is at the log's end, or not live: it must read the log, so call
   * `next()`), or when a `next()` is pending. Throws `resync_required` as `next()` would for a
   * reader past its lag bound. A watch fan-out takes its burst with it at its turn, so hundreds
   * of readers cost no promise chain per window (apps/api DESIGN, "Many subscribers"). `upTo`:
   * none after that LSN (a window's bound: the frames after it stay in the hub's buffer).
   */
  poll(upTo = Infinity): FeedBatch | null {
    if (this.reading || this.closed || !this.checked || !this.live || this.position >= this.hub.published || upTo <= this.position) return null;
    this.checkLag();
    this.checkOverflow();
    return this.live ? this.fromHub(Math.min(this.batchFrames, upTo - this.position)) : null;
  }

  /** True when `poll()` would hand over frames now: live, within its buffer, frames published after its position. */
  get pollable(): boolean {
    this.checkOverflow();
    return !this.reading && !this.closed && this.checked && this.live && this.position < this.hub.published;
  }

  /** True when `next()` would wait for a commit: live, nothing published after the position (a `poll()` answers null until one is). */
  get atEnd(): boolean {
    return this.live && !this.closed && this.checked && this.position >= this.hub.published;
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
    this.hub.remove(this);
    this.wakeUp();
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

  /** A live reader more than its buffer behind the last published frame goes back to the log (an overflow). */
  private checkOverflow(): void {
    if (this.live && this.hub.published - this.position > this.bufferFrames) this.overflow();
  }

  private overflow(): void {
    this.live = false;
    this.overflowCount++;
  }

  /** Reads the hub's buffer (when it still holds the next frame) or the log from the position, and goes live at the log's end. */
  private async fromLog(): Promise<FeedBatch | null> {
    const from = this.position + 1;
    if (from < this.source.firstLsn()) {
      this.close();
      throw resync('retention', `frame ${from} is no longer in the log (it starts at ${this.source.firstLsn()})`, this.cursor);
    }
    let entries: readonly FeedEntry[] | null = this.hub.recent(from, this.batchFrames);
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
    // A full batch: more may follow in the log; read it again. Else what follows is published
    // after it: the reader is live (the hub's buffer holds every frame published from now on).
    this.live = entries.length < this.batchFrames;
    if (!entries.length) return null;
    if (entries[0].frame.lsn !== from) {
      this.close();
      throw resync('retention', `frame ${from} is no longer in the log`, this.cursor);
    }
    return this.deliver(entries);
  }

  /** The frames after the position from the hub's buffer; null (an overflow) when it no longer holds the next one. */
  private fromHub(limit: number): FeedBatch | null {
    const entries = this.hub.recent(this.position + 1, limit);
    if (!entries || !entries.length) {
      this.overflow();
      return null;
    }
    return this.deliver(entries, this.hub.batchOf(entries));
  }

  private deliver(entries: readonly FeedEntry[], batch?: FeedBatch): FeedBatch {
    const last = entries[entries.length - 1].frame;
    this.position = last.lsn;
    this.epoch = last.epoch;
    return batch ?? { entries, cursor: { epoch: last.epoch, lsn: last.lsn } };
  }
}

/** How many of the last published frames the hub keeps (at least the largest `bufferFrames` of its readers). */
export interface TailLimits {
  /** Default 4,096. */
  readonly frames?: number;
  /** Their stored size (default 8 MiB): past it a reader reads the log even within its `bufferFrames`. */
  readonly bytes?: number;
}

/**
 * The open cursors of one store: the one buffer of the last published frames they all read, what
 * they hold of the log, and the readers to wake at a publish.
 */
export class FeedHub {
  private readonly readers = new Set<ChangeFeed>();
  /** Readers with a `next()` waiting for a publish. */
  private waiting: ChangeFeed[] = [];
  /** The last published frames, consecutive, from `tail[tailFrom]` on (kept only while a reader is open). */
  private tail: FeedEntry[] = [];
  private tailFrom = 0;
  private tailBytes = 0;
  private readonly maxTailFrames: number;
  private readonly maxTailBytes: number;
  /** The largest `bufferFrames` of the open readers: the buffer keeps at least that many frames. */
  private readerFrames = 0;
  /** The last LSN published (the store sets it to its log's end when it opens). */
  published = 0;
  /** Frames appended, and the time, since the buffer last dropped what every reader has taken. */
  private sinceTrim = 0;
  private trimmedAt = 0;

  constructor(limits: TailLimits = {}) {
    this.maxTailFrames = Math.max(0, limits.frames ?? 4096);
    this.maxTailBytes = Math.max(0, limits.bytes ?? 8 * 1024 * 1024);
  }

  add(r: ChangeFeed): void {
    this.readers.add(r);
    this.readerFrames = Math.max(this.readerFrames, r.bufferFrames);
  }

  remove(r: ChangeFeed): void {
    if (!this.readers.delete(r)) return;
    if (this.waiting.includes(r)) this.waiting = this.waiting.filter((w) => w !== r);
    if (this.readers.size === 0) {
      this.forget();
      this.readerFrames = 0;
    } else if (r.bufferFrames >= this.readerFrames) {
      this.readerFrames = 0;
      for (const x of this.readers) this.readerFrames = Math.max(this.readerFrames, x.bufferFrames);
    }
  }

  /** `r` waits in `next()` for the next publish (it is woken then, once). */
  wait(r: ChangeFeed): void {
    this.waiting.push(r);
  }

  /** Frames and stored bytes the buffer holds now (bounded whatever the readers do). */
  get held(): { frames: number; bytes: number } {
    return { frames: this.tail.length - this.tailFrom, bytes: this.tailBytes };
  }

  /**
   * Up to `limit` buffered frames from lsn `from` on, when the buffer still holds `from` (else
   * null: read the log). Readers at the same position asking for the same frames get the same
   * array (the last one handed out is kept while the buffer holds its frames): a watch fan-out's
   * streams all take the same window's frames, so one slice per window instead of one per stream.
   * Callers never change it (`FeedBatch.entries` is read-only).
   */
  recent(from: number, limit: number): readonly FeedEntry[] | null {
    const n = this.tail.length - this.tailFrom;
    if (!n) return null;
    const i = from - this.tail[this.tailFrom].frame.lsn;
    if (i < 0 || i >= n) return null;
    const at = this.tailFrom + i;
    const end = Math.min(this.tail.length, at + limit);
    const m = this.lastSlice;
    if (m && m.from === from && m.entries.length === end - at) return m.entries;
    const entries = this.tail.slice(at, end);
    this.lastSlice = { from, entries };
    this.lastBatch = null;
    return entries;
  }

  /** The last slice `recent` handed out (its first LSN): the same frames asked again get it. Dropped with its first frame. */
  private lastSlice: { readonly from: number; readonly entries: readonly FeedEntry[] } | null = null;
  /** The batch of the last slice (`batchOf`). */
  private lastBatch: FeedBatch | null = null;

  /**
   * The batch (the frames and the cursor after them) of a slice `recent` handed out: one for every
   * reader taking the same slice, as the slice is (a watch fan-out's streams each took two new
   * objects per window for the same frames). Callers never change it (`FeedBatch` is read-only).
   */
  batchOf(entries: readonly FeedEntry[]): FeedBatch {
    const b = this.lastBatch;
    if (b && b.entries === entries) return b;
    const last = entries[entries.length - 1].frame;
    const batch: FeedBatch = { entries, cursor: { epoch: last.epoch, lsn: last.lsn } };
    if (this.lastSlice?.entries === entries) this.lastBatch = batch;
    return batch;
  }

  private remember(entries: readonly FeedEntry[]): void {
    const keep = Math.max(this.maxTailFrames, this.readerFrames);
    if (!keep) return;
    const end = this.tail.length > this.tailFrom ? this.tail[this.tail.length - 1].frame.lsn : null;
    if (end !== null && entries[0].frame.lsn !== end + 1) this.forget(); // not consecutive: never mix two runs
    for (const e of entries) {
      this.tail.push(e);
      this.tailBytes += e.bytes.length;
    }
    // bounded by frames and by bytes (a reader whose next frame went reads it from the log)
    while (this.tail.length - this.tailFrom > keep || (this.tailBytes > this.maxTailBytes && this.tail.length - this.tailFrom > 1)) {
      this.tailBytes -= this.tail[this.tailFrom].bytes.length;
      this.tail[this.tailFrom++] = undefined as unknown as FeedEntry;
    }
    // frames every reader has taken go (at most every 64 frames or 20 ms: a pass over the readers),
    // so that the buffer holds what someone still needs, not always its bound: a frame kept for
    // seconds is promoted to the old generation and paid for again by a major GC
    this.sinceTrim += entries.length;
    const now = performance.now();
    if (this.sinceTrim >= 64 || now - this.trimmedAt >= 20) {
      this.sinceTrim = 0;
      this.trimmedAt = now;
      let min = Infinity;
      for (const r of this.readers) if (r.lsn < min) min = r.lsn;
      while (this.tail.length > this.tailFrom && this.tail[this.tailFrom].frame.lsn <= min) {
        this.tailBytes -= this.tail[this.tailFrom].bytes.length;
        this.tail[this.tailFrom++] = undefined as unknown as FeedEntry;
      }
    }
    if (this.lastSlice && (this.tailFrom === this.tail.length || this.lastSlice.from < this.tail[this.tailFrom].frame.lsn)) this.lastSlice = this.lastBatch = null;
    if (this.tailFrom === this.tail.length) this.forget();
    else if (this.tailFrom > 1024 && this.tailFrom * 2 > this.tail.length) {
      this.tail = this.tail.slice(this.tailFrom);
      this.tailFrom = 0;
    }
  }

  private forget(): void {
    this.lastSlice = this.lastBatch = null;
    this.tail = [];
    this.tailFrom = 0;
    this.tailBytes = 0;
  }

  /** Called by the store after a group is durable and applied: frames in LSN order with their bytes. O(frames), whatever the readers. */
  publish(frames: readonly CommittedFrame[], bytes: readonly Buffer[]): void {
    if (frames.length) this.published = frames[frames.length - 1].lsn;
    if (this.readers.size === 0) return;
    if (frames.length) this.remember(frames.map((frame, i): FeedEntry => ({ frame, bytes: bytes[i] })));
    if (!this.waiting.length) return;
    const woken = this.waiting;
    this.waiting = [];
    for (const r of woken) r.wakeUp();
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
