/**
 * One open watch stream: reads the store's resumable feed (`changesFrom`) from its start
 * position, coalesces the frames that arrive within the window into one burst, matches the
 * burst against its query and writes one `change` event per burst that changed the result.
 * No HTTP here beyond the `SseOut` it writes to (apps/api/README.md, "Watch streams").
 *
 * Backpressure: the session pulls the next burst only once the socket has taken the last
 * event. Meanwhile the feed keeps at most `bufferFrames` live frames for it and then drops
 * them and reads the log when the session asks again (libs/storage, "The change feed"), so a
 * stuck client costs a bounded buffer; past `maxLagFrames` behind (or once retention dropped
 * its frames) the feed answers `resync_required` and the session sends `reset`.
 */
import { DbError } from '@mmdb/core';
import type { ChangeCursor, ChangeFeed, CommittedFrame, FeedBatch, FeedEntry, TenantStore } from '@mmdb/storage';
import type { WatchQuery } from '@mmdb/sql';
import type { Metrics } from '../health/metrics.service';
import { formatId, SseChunk, sseComment, sseEvent } from './sse';
import { type BurstEvent, DELIVERED, endTurn, LOOP, sharedEvents, sharedSchemaCuts, TAKE_TURN, turn, windowTurn, type WindowWait } from './fanout';
import { traceCatchUp } from './turns';
import { cursorAt, rewindTo, snapshotRows } from './watch-start';

/** Where the session writes: the response stream. */
export interface SseOut {
  /** False when the socket's buffer is full (wait for `drained`). An `SseChunk` is one event shared by many streams (its bytes made once). */
  write(chunk: string | SseChunk): boolean;
  drained(): Promise<void>;
  readonly pendingBytes: number;
  end(): void;
}

export interface SessionOptions {
  /** False once the stream's token expired or was revoked: the stream then ends (`error`, unauthorized). */
  readonly authorized?: () => boolean;
  readonly coalesceMs: number;
  readonly heartbeatMs: number;
  readonly retryMs: number;
  readonly bufferFrames: number;
  readonly maxLagFrames: number;
  /** A restricted subscriber (not the owner): its policy can change while it listens. */
  readonly subscriber?: Subscriber;
}

/**
 * What a session needs of a restricted subscriber: a fingerprint of what its events depend on
 * (its grants on the followed table and its policies there, read from the live catalogue), and its
 * query compiled again under its current policy (403 `forbidden` once it lost its read grant).
 */
export interface Subscriber {
  fingerprint(): string;
  compile(): Promise<WatchQuery>;
}

/** How a stream starts: with a snapshot, from a resume position, or from now. */
export interface StartAt {
  readonly initial: boolean;
  readonly since: ChangeCursor | null;
}

/** Most frames coalesced into one event (a burst over it is split at a frame boundary). */
const MAX_BURST_FRAMES = 1024;

/** The index of the first of the frames that changes the query's table's schema, or -1. */
function schemaCut(q: WatchQuery, entries: readonly FeedEntry[]): number {
  for (let i = 0; i < entries.length; i++) if (q.schemaChanged(entries[i].frame)) return i;
  return -1;
}

/** The frames after a window's bound (fanout.ts), kept for the next burst. */
function cutAfter(bound: number, frames: readonly FeedEntry[]): FeedEntry[] {
  if (frames[frames.length - 1].frame.lsn <= bound) return [];
  return frames.slice(frames.findIndex((e) => e.frame.lsn > bound));
}

export class WatchSession {
  private feed: ChangeFeed | null = null;
  private closed = false;
  private blocked = false;
  /** The last frame covered (the resume position); `dirty` when no event has carried it yet. */
  private position: ChangeCursor = { epoch: 0, lsn: 0 };
  private dirty = false;
  private heartbeat: NodeJS.Timeout | null = null;
  /** The subscriber's policy fingerprint the query was compiled under. */
  private policyPrint: string | undefined;
  /** The window this stream waits for (close() ends the wait). */
  private waiting: WindowWait | null = null;
  /** Frames a synchronous delivery took before it found the rest behind the buffer (its loop goes on with them). */
  private stash: readonly FeedEntry[] | null = null;
  /** What stopped a synchronous delivery (a reset, a revoked token): its loop throws it. */
  private failure: unknown = undefined;

  constructor(
    readonly id: string,
    private readonly store: TenantStore,
    private query: WatchQuery,
    private readonly out: SseOut,
    private readonly opts: SessionOptions,
    private readonly metrics: Metrics,
    private readonly onClose: () => void,
  ) {}

  /** Live frames waiting in this subscriber's feed buffer. */
  get bufferedFrames(): number {
    return this.feed?.buffered ?? 0;
  }

  get pendingBytes(): number {
    return this.out.pendingBytes;
  }

  /** Runs until the client closes, the store closes or `close()` is called. */
  async run(start: StartAt): Promise<void> {
    this.write(`retry: ${this.opts.retryMs}\n\n`);
    this.heartbeat = setInterval(() => this.beat(), this.opts.heartbeatMs);
    this.policyPrint = this.opts.subscriber?.fingerprint();
    try {
      let cursor: ChangeCursor | null = null;
      while (!this.closed) {
        try {
          cursor ??= await this.open(start);
          await this.follow(cursor);
          return;
        } catch (e) {
          const reason = e instanceof DbError && e.code === 'resync_required' ? String((e.details as { reason?: unknown }).reason ?? 'retention') : null;
          if (this.closed) return;
          if (!reason) throw e;
          cursor = await this.reset(reason);
        }
      }
    } catch (e) {
      if (!this.closed) {
        const code = e instanceof DbError ? e.code : 'internal_error';
        this.write(sseEvent('error', null, { error: code, message: e instanceof DbError ? e.message : 'internal error' }));
      }
      if (!(e instanceof DbError)) throw e; // a fault: the caller logs it
    } finally {
      this.close();
      this.out.end();
    }
  }

  /** Ends the subscription: the feed cursor (and the log it held) is released. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.waiting?.cancel();
    this.feed?.close();
    this.onClose();
  }

  /** The first events, and the cursor the feed starts from. */
  private async open(start: StartAt): Promise<ChangeCursor> {
    if (start.since) {
      if (this.query.kind === 'aggregate') {
        // (its feed is this session's until it ends, so close() ends the rewind too)
        await rewindTo(this.store, this.query, start.since, { kind: 'watch', id: this.id, maxLagFrames: this.opts.maxLagFrames }, (f) => (this.feed = f));
      }
      this.position = start.since;
      return start.since;
    }
    if (start.initial || this.query.kind === 'aggregate') {
      const { cursor, rows } = await this.snapshotRows();
      if (start.initial) {
        this.send('snapshot', cursor, { lsn: cursor.lsn, epoch: cursor.epoch, rows });
        this.position = cursor;
        return cursor;
      }
      return this.moved(cursor, true);
    }
    return this.moved(cursorAt(this.store, this.store.lastLsn), true);
  }

  /** A start without a snapshot: a `position` event gives the client a resume point before any change. */
  private moved(cursor: ChangeCursor, announce: boolean): ChangeCursor {
    this.position = cursor;
    if (announce) this.send('position', cursor, { lsn: cursor.lsn, epoch: cursor.epoch });
    return cursor;
  }

  private snapshotRows(): Promise<{ cursor: ChangeCursor; rows: Record<string, unknown>[] }> {
    return snapshotRows(this.store, this.query);
  }

  /** The frames needed are gone (or the result must be rebuilt): a fresh result, then changes from its LSN. */
  private async reset(reason: string): Promise<ChangeCursor> {
    this.feed?.close();
    if (reason === 'policy') {
      this.policyPrint = this.opts.subscriber!.fingerprint();
      this.query = await this.opts.subscriber!.compile();
    } else if (reason === 'schema') this.query = this.query.recompile();
    const { cursor, rows } = await this.snapshotRows();
    return this.sendReset(cursor, reason, rows);
  }

  private sendReset(cursor: ChangeCursor, reason: string, rows: Record<string, unknown>[]): ChangeCursor {
    this.metrics.watchResets.inc({ reason });
    this.send('reset', cursor, { lsn: cursor.lsn, epoch: cursor.epoch, reason, rows });
    this.position = cursor;
    return cursor;
  }

  /** Reads the feed from `cursor` until closed; throws resync_required (and `schema`) for a reset. */
  private async follow(cursor: ChangeCursor): Promise<void> {
    if (this.closed) return; // closed while the start awaited a snapshot: no feed to open (none would be closed)
    const feed = this.store.changesFrom(cursor, { kind: 'watch', id: this.id, bufferFrames: this.opts.bufferFrames, maxLagFrames: this.opts.maxLagFrames });
    this.feed = feed;
    // the store closing its cursors ends a stream waiting for its window too (it awaits no next())
    feed.onClose(() => this.waiting?.cancel());
    try {
      if (this.opts.coalesceMs > 0) await this.followWindows(feed);
      else await this.followEach(feed);
    } finally {
      feed.close(); // a pending next() answers null (settled: nothing is left unhandled)
      this.waiting = null;
    }
  }

  /** Without a coalescing window: one event per batch the feed hands over. */
  private async followEach(feed: ChangeFeed): Promise<void> {
    for (;;) {
      const b = await feed.next();
      if (!b) return;
      const wait = turn();
      if (wait) await wait;
      try {
        if (this.closed) return;
        this.burstOrCut(b.entries);
      } finally {
        endTurn();
      }
      if (this.closed) return;
      if (this.blocked) {
        await this.out.drained();
        this.blocked = false;
      }
    }
  }

  /**
   * With the store's coalescing clock (fanout.ts): a live stream waits, without a promise on its
   * feed, for a window to close past its position; then, at its turn of the fan-out, it takes the
   * frames published up to the window's bound without waiting (`poll(bound)`), matches and writes
   * them, and ends its turn. Only a stream that must read the log (behind its buffer, or starting)
   * awaits its feed, outside any turn.
   */
  private async followWindows(feed: ChangeFeed): Promise<void> {
    /** Frames past the last window's bound: the start of the next burst. */
    let carry: FeedEntry[] = [];
    const deliver = (bound: number): number => this.deliverNow(feed, bound);
    const group = this.query.kind === 'rows' ? this.query : undefined;
    for (;;) {
      if (this.closed) return;
      if (this.failure !== undefined) {
        const f = this.failure;
        this.failure = undefined;
        throw f;
      }
      if (this.blocked) {
        await this.out.drained();
        this.blocked = false;
        if (this.closed) return;
      }
      let frames: readonly FeedEntry[] | null = null;
      if (carry.length) {
        frames = carry;
        carry = [];
      } else if (!feed.pollable && !feed.atEnd) {
        // the log (or the hub's recent frames) must be read: outside the fan-out's turn
        this.catchUp();
        const r = await feed.next();
        if (!r) return;
        frames = r.entries;
      }
      // (a live stream takes its frames at its turn, up to the window's bound: one slice of the
      // hub's buffer per window, and the frames after the bound stay there for the next)
      // frames (or, at the feed's end, the next one) wait for a window past them, then for this stream's turn
      // (with nothing in hand, it parks: its bursts are delivered in its group's turn, deliverNow)
      const wait = frames ? windowTurn(this.store, frames[0].frame.lsn, this.opts.coalesceMs) : windowTurn(this.store, feed.cursor.lsn + 1, this.opts.coalesceMs, deliver, group);
      this.waiting = wait;
      const bound = await wait.bound;
      this.waiting = null;
      // (closed; or its feed closed itself past its lag bound inside its group's turn: the reset)
      if (bound === null && this.failure === undefined) return;
      if (bound === DELIVERED || bound === null) continue; // (delivered in its group's turn; no turn held)
      let failure: unknown;
      let held = true;
      try {
        if (this.closed) return;
        // (at the feed's end, its frames are in its buffer now; none: no longer live, the log next time)
        let fs: readonly FeedEntry[] | undefined = frames ?? this.takeStash() ?? feed.poll(bound)?.entries;
        if (!fs) continue;
        while (fs.length < MAX_BURST_FRAMES && fs[fs.length - 1].frame.lsn < bound) {
          let b: FeedBatch | null;
          try {
            b = feed.poll(bound);
            if (!b && !feed.atEnd) {
              // the frames up to the bound are behind this reader's buffer (the hub's recent frames,
              // or the log): read outside the turn, then take it again, so that the burst still
              // ends at the window's bound, where its query's other subscribers end theirs (a burst
              // cut at a batch's end would be matched again for this stream alone, and every one after)
              endTurn();
              held = false;
              this.catchUp();
              b = await feed.next();
            }
          } catch (e) {
            failure = e; // (past the lag bound: the frames taken are sent first, then the reset)
            b = null;
          }
          if (!held) {
            const t = turn();
            if (t) await t;
            held = true;
          }
          if (!b || this.closed) break;
          fs = fs.concat(b.entries);
        }
        if (this.closed) return;
        carry = cutAfter(bound, fs);
        const take = fs.length - carry.length;
        if (take > 0) this.burstOrCut(take === fs.length ? fs : fs.slice(0, take));
      } finally {
        if (held) endTurn();
      }
      if (failure !== undefined) throw failure;
    }
  }

  /** A read of the feed behind its buffer: counted (`db_watch_catchups_total`) and traced. */
  private catchUp(): void {
    this.metrics.watchCatchUps.inc();
    traceCatchUp();
  }

  private takeStash(): readonly FeedEntry[] | undefined {
    const s = this.stash;
    this.stash = null;
    return s ?? undefined;
  }

  /**
   * A parked stream's burst, delivered synchronously in its group's turn of the fan-out (fanout.ts
   * `deliverDue`): the frames up to the window's bound from the hub's buffer, matched (once per
   * query: `sharedEvents`) and written. Answers the stream's next frame (it stays parked), or
   * TAKE_TURN when its own loop must do the burst at its own turn (not live, not writable, or the
   * rest behind its buffer: the frames taken are stashed for it), or LOOP when it has sent its
   * burst but its loop must go on (a reset or a revoked token: `failure`; a full socket; a burst
   * cut short of the bound).
   */
  private deliverNow(feed: ChangeFeed, bound: number): number {
    try {
      return this.deliverBurst(feed, bound);
    } catch (e) {
      // (past its lag bound the feed closed itself: its loop throws this, and resets; a fault
      // here must not leave the fan-out's turn held either)
      this.failure = e;
      return LOOP;
    }
  }

  private deliverBurst(feed: ChangeFeed, bound: number): number {
    if (this.closed || this.blocked || !feed.pollable) return TAKE_TURN;
    const fs0 = feed.poll(bound)?.entries;
    if (!fs0) return TAKE_TURN;
    let fs: readonly FeedEntry[] = fs0;
    let failure: unknown;
    while (fs.length < MAX_BURST_FRAMES && fs[fs.length - 1].frame.lsn < bound) {
      let b: FeedBatch | null;
      try {
        b = feed.poll(bound);
      } catch (e) {
        failure = e; // (the frames taken are sent first, then the reset)
        break;
      }
      if (!b) {
        if (feed.atEnd) break;
        this.stash = fs; // (the rest is behind its buffer: its loop reads it, outside the turn)
        return TAKE_TURN;
      }
      fs = fs.concat(b.entries);
    }
    try {
      this.burstOrCut(fs);
    } catch (e) {
      failure = e;
    }
    if (failure !== undefined) {
      this.failure = failure;
      return LOOP;
    }
    const next = fs[fs.length - 1].frame.lsn + 1;
    return this.closed || this.blocked || next <= bound ? LOOP : next;
  }

  /** One burst's event; a frame that needs the stream reset ends it with resync_required (reason `schema` or `policy`). */
  private burstOrCut(entries: readonly FeedEntry[]): void {
    const cut = this.burst(entries);
    if (cut) throw new DbError('resync_required', cut === 'schema' ? 'the followed table was registered again or dropped' : "the subscriber's grants or policies changed", { reason: cut });
  }

  private checkToken(): void {
    if (this.opts.authorized && !this.opts.authorized()) throw new DbError('unauthorized', 'the token of this stream expired or was revoked');
  }

  /** True when a frame changes a user or policy and the subscriber's fingerprint moved (its events after it need its new policy). */
  private policyChanged(frame: CommittedFrame): boolean {
    const sub = this.opts.subscriber;
    if (!sub) return false;
    if (!frame.changes.some((c) => c.op === 'catalog' && (c.kind === 'user' || c.kind === 'policy'))) return false;
    return sub.fingerprint() !== this.policyPrint;
  }

  /**
   * Matches one burst and sends its event. Events stop before a frame that changed the followed
   * table's manifest (`schema`) or the subscriber's policy (`policy`): the reason is returned.
   * A row query's subscribers compiled alike share the scan for schema changes, the match and
   * the event (one `SseChunk`, written to each socket), once per burst.
   */
  private burst(entries: readonly FeedEntry[]): 'schema' | 'policy' | null {
    this.checkToken();
    const q = this.query;
    const shared = q.kind === 'rows';
    // (no closure per stream and burst: a kept value, else computed here and kept)
    let s: number;
    if (shared) {
      const first = entries[0].frame;
      const last = entries[entries.length - 1].frame;
      s = sharedSchemaCuts.get(q, first, last) ?? sharedSchemaCuts.put(q, first, last, schemaCut(q, entries));
    } else s = schemaCut(q, entries);
    let n = s < 0 ? entries.length : s;
    let cut: 'schema' | 'policy' | null = s < 0 ? null : 'schema';
    // (a frame that changes both the schema and the policy counts as a schema change, as before)
    if (this.opts.subscriber) {
      for (let i = 0; i < n; i++) {
        if (this.policyChanged(entries[i].frame)) {
          n = i;
          cut = 'policy';
          break;
        }
      }
    }
    if (n > 0) {
      const first = entries[0].frame;
      const last = entries[n - 1].frame;
      let ev = shared ? sharedEvents.get(q, first, last) : undefined;
      if (ev === undefined) {
        ev = this.makeEvent(entries, n);
        if (shared) sharedEvents.put(q, first, last, ev);
      }
      this.position = ev.cursor;
      if (ev.chunk !== null) this.sendText('change', ev.chunk);
      else this.dirty = true;
    }
    return cut;
  }

  /** The event of the burst's first `n` frames, matched and serialized (once per shared query and burst: `burst`). */
  private makeEvent(entries: readonly FeedEntry[], n: number): BurstEvent {
    const q = this.query;
    const first = entries[0].frame;
    const last = entries[n - 1].frame;
    const cursor = { epoch: last.epoch, lsn: last.lsn };
    const ev0 = q.evaluations;
    const rc0 = q.rowChanges;
    const use: CommittedFrame[] = new Array<CommittedFrame>(n);
    for (let i = 0; i < n; i++) use[i] = entries[i].frame;
    const changes = q.match(use);
    this.metrics.watchEvaluations.inc(q.evaluations - ev0);
    this.metrics.watchRowChanges.inc(q.rowChanges - rc0);
    const chunk = changes.length ? new SseChunk(sseEvent('change', formatId(cursor), { lsn: last.lsn, epoch: last.epoch, first_lsn: first.lsn, changes })) : null;
    return { chunk, cursor };
  }

  private send(event: string, cursor: ChangeCursor, data: unknown): void {
    this.sendText(event, sseEvent(event, formatId(cursor), data));
  }

  private sendText(event: string, text: string | SseChunk): void {
    this.dirty = false;
    this.metrics.watchEventSent(event);
    this.write(text);
  }

  private write(chunk: string | SseChunk): void {
    if (this.closed) return;
    if (!this.out.write(chunk)) this.blocked = true;
  }

  /** A comment, or (when bursts changed nothing since the last event) a `position` event carrying the resume point. */
  private beat(): void {
    if (this.closed || this.blocked) return;
    if (this.opts.authorized && !this.opts.authorized()) {
      this.write(sseEvent('error', null, { error: 'unauthorized', message: 'the token of this stream expired or was revoked' }));
      this.close(); // the feed answers null: run() ends the response
      return;
    }
    if (this.dirty) this.send('position', this.position, { lsn: this.position.lsn, epoch: this.position.epoch });
    else this.write(sseComment('heartbeat'));
  }
}
