/**
 * The holder's side of `GET /v1/replication/frames`: checks a follower's request against the
 * log (dropped segments, diverged or stale epochs) and streams the log as NDJSON lines, each
 * frame's stored bytes hex-encoded (the shape is in README.md, "The frames stream").
 */
import { DbError } from '@mmdb/core';
import { decodeFrame, type TenantStore } from '@mmdb/storage';

export interface FramesQuery {
  /** Log segment to start from (segment n holds LSNs n·size+1 … (n+1)·size). */
  readonly sinceSegment: number;
  /** The epoch of the follower's frame at `afterLsn` (or the highest epoch it has seen). */
  readonly epoch?: number;
  /** The follower's last applied LSN: frames after it are sent (default: from the segment's start). */
  readonly afterLsn?: number;
  /** Keep the stream open and send new frames as they commit (heartbeats while idle). */
  readonly follow?: boolean;
  /** Idle heartbeat period in follow mode (default 1000 ms). */
  readonly heartbeatMs?: number;
}

/** One line of the stream. */
export type FramesLine =
  | {
      readonly type: 'start';
      readonly tenant: string;
      readonly holder: string;
      readonly epoch: number;
      readonly since_segment: number;
      readonly segment_frames: number;
      readonly from_lsn: number;
      readonly last_lsn: number;
    }
  | { readonly type: 'frame'; readonly lsn: number; readonly epoch: number; readonly segment: number; readonly hex: string }
  | { readonly type: 'heartbeat'; readonly last_lsn: number; readonly epoch: number; readonly time: number }
  | { readonly type: 'end'; readonly last_lsn: number; readonly reason: string };

export interface FramesSource {
  readonly tenant: string;
  readonly holder: string;
  readonly store: TenantStore;
  /** Told the epoch a request names (the node re-checks its lease when it is above its own). */
  observeEpoch?(epoch: number): void;
  /** False ends a follow stream (e.g. the node stopped serving the tenant). */
  active?(): boolean;
}

/** The epoch of the stored frame at `lsn`, or undefined when it is not in the log. */
async function epochAt(store: TenantStore, lsn: number): Promise<number | undefined> {
  for await (const f of store.frameBytes(lsn)) return f.lsn === lsn ? decodeFrame(f.bytes).epoch : undefined;
  return undefined;
}

/** The first stored LSN (after retention), or lastLsn + 1 for an empty log. */
function firstStoredLsn(store: TenantStore): number {
  const s = store.segments.list();
  return s.length ? s[0].first : store.lastLsn + 1;
}

/**
 * Validates the request and returns the stream's lines. Throws before streaming:
 * `validation_failed` for bad parameters, `log_gone` (410) when the frames asked for were
 * dropped by retention (bootstrap from a snapshot), `stale_epoch` (409) when the follower's
 * log diverges from this one or it has seen a newer epoch than this node (re-sync).
 */
export async function openFrames(src: FramesSource, q: FramesQuery): Promise<AsyncIterable<FramesLine>> {
  const store = src.store;
  const size = store.segments.framesPerSegment;
  const segStart = q.sinceSegment * size + 1;
  if (q.afterLsn !== undefined && q.afterLsn < segStart - 1) {
    throw new DbError('validation_failed', `after_lsn ${q.afterLsn} lies before segment ${q.sinceSegment} (which starts at lsn ${segStart})`);
  }
  const from = q.afterLsn !== undefined ? q.afterLsn + 1 : segStart;
  const last = store.lastLsn;
  const ownEpoch = store.epoch;
  if (q.epoch !== undefined) {
    src.observeEpoch?.(q.epoch);
    if (q.epoch > ownEpoch) {
      throw new DbError('stale_epoch', `this node's log is at epoch ${ownEpoch}, behind the follower's epoch ${q.epoch}: it is not the current holder; find the holder in GET /v1/replication/lease`, {
        epoch: ownEpoch,
      });
    }
  }
  if (from - 1 > last) {
    throw new DbError('stale_epoch', `the follower is at lsn ${from - 1}, past this log's last lsn ${last}: its frames after ${last} were never confirmed by this holder; discard them and re-sync from a snapshot`, {
      last_lsn: last,
      epoch: ownEpoch,
    });
  }
  if (q.afterLsn !== undefined && q.afterLsn > 0 && q.epoch !== undefined) {
    const e = await epochAt(store, q.afterLsn);
    if (e !== undefined && e !== q.epoch) {
      throw new DbError('stale_epoch', `the follower's frame at lsn ${q.afterLsn} has epoch ${q.epoch}, this log's has ${e}: the logs diverged at a failover; re-sync from a snapshot`, {
        last_lsn: last,
        epoch: ownEpoch,
      });
    }
  }
  if (from <= last && from < firstStoredLsn(store)) {
    throw new DbError('log_gone', `frames from lsn ${from} (segment ${q.sinceSegment}) were dropped by log retention; bootstrap from GET /v1/replication/snapshot`, {
      first_lsn: firstStoredLsn(store),
      last_lsn: last,
    });
  }
  return lines(src, q, from, size);
}

async function* lines(src: FramesSource, q: FramesQuery, from: number, size: number): AsyncIterable<FramesLine> {
  const store = src.store;
  yield { type: 'start', tenant: src.tenant, holder: src.holder, epoch: store.epoch, since_segment: q.sinceSegment, segment_frames: size, from_lsn: from, last_lsn: store.lastLsn };
  let next = from;
  let wake: (() => void) | null = null;
  const sub = q.follow
    ? store.changes.subscribe({
        next: () => wake?.(),
        complete: () => wake?.(),
      })
    : null;
  try {
    for (;;) {
      // Read from the log itself, so nothing committed while we were sending is skipped.
      const upTo = store.lastLsn;
      for await (const f of store.frameBytes(next)) {
        if (f.lsn > upTo) break;
        if (f.lsn !== next) {
          yield { type: 'end', last_lsn: store.lastLsn, reason: `frame ${next} is no longer in the log (retention); bootstrap` };
          return;
        }
        const epoch = decodeFrame(f.bytes).epoch;
        yield { type: 'frame', lsn: f.lsn, epoch, segment: Math.floor((f.lsn - 1) / size), hex: f.bytes.toString('hex') };
        next = f.lsn + 1;
      }
      if (!q.follow) {
        yield { type: 'end', last_lsn: store.lastLsn, reason: 'caught up' };
        return;
      }
      if (src.active && !src.active()) {
        yield { type: 'end', last_lsn: store.lastLsn, reason: 'this node stopped serving the tenant' };
        return;
      }
      if (store.lastLsn >= next) continue;
      const woke = await new Promise<boolean>((resolve) => {
        const t = setTimeout(() => resolve(false), q.heartbeatMs ?? 1000);
        wake = () => {
          clearTimeout(t);
          resolve(true);
        };
      });
      wake = null;
      if (!woke) yield { type: 'heartbeat', last_lsn: store.lastLsn, epoch: store.epoch, time: Date.now() };
    }
  } finally {
    sub?.unsubscribe();
  }
}
