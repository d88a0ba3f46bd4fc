/**
 * The holder's side of `GET /v1/replication/frames`: a cursor on the store's one change feed
 * (`changesFrom`; kind "follower" for a named follower, so retention keeps what it still needs),
 * written out as NDJSON lines with each frame's stored bytes hex-encoded (the shape is in
 * README.md, "The frames stream").
 */
import { DbError } from '@mmdb/core';
import type { ChangeFeed, FeedBatch, TenantStore } from '@mmdb/storage';

export interface FramesQuery {
  /** Log segment to start from (segment n holds LSNs n·size+1 … (n+1)·size). */
  readonly sinceSegment: number;
  /** The epoch of the follower's frame at `afterLsn` (checked against this log's history). */
  readonly epoch?: number;
  /** The follower's last applied LSN: frames after it are sent (default: from the segment's start). */
  readonly afterLsn?: number;
  /** Keep the stream open and send new frames as they commit (heartbeats while idle). */
  readonly follow?: boolean;
  /** The follower's node name: its cursor holds log retention while open. */
  readonly follower?: string;
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
}

type Early = { batch: FeedBatch | null } | { error: unknown } | null;

/**
 * Validates the request and opens the stream: its lines come in batches, one per feed batch
 * (the frames committed together), so the route writes each batch to the socket at once.
 * Throws before anything is sent:
 * `validation_failed` for bad parameters; `stale_epoch` (409) when the follower has seen a
 * newer epoch than this node (this node is not the holder); `resync_required` (410, with
 * `reason`) when the follower must bootstrap from a snapshot: the frames it needs were dropped
 * (`retention`), its frame at `after_lsn` was written under another epoch (`epoch`: the logs
 * diverged at a failover), or it is past this log's end (`ahead`).
 */
export async function openFrames(src: FramesSource, q: FramesQuery): Promise<AsyncIterable<FramesLine[]>> {
  const store = src.store;
  const size = store.segments.framesPerSegment;
  const segStart = q.sinceSegment * size + 1;
  if (q.afterLsn !== undefined && q.afterLsn < segStart - 1) {
    throw new DbError('validation_failed', `after_lsn ${q.afterLsn} lies before segment ${q.sinceSegment} (which starts at lsn ${segStart})`);
  }
  const after = q.afterLsn ?? segStart - 1;
  if (q.epoch !== undefined) {
    src.observeEpoch?.(q.epoch);
    if (q.epoch > store.epoch) {
      throw new DbError('stale_epoch', `this node's log is at epoch ${store.epoch}, behind the follower's epoch ${q.epoch}: it is not the current holder; find the holder in GET /v1/replication/lease`, {
        epoch: store.epoch,
      });
    }
  }
  // Without an epoch the follower is taken at its word: its cursor gets this log's epoch there.
  const epoch = q.epoch ?? (after > 0 ? (store.epochAt(after) ?? 0) : 0);
  const upTo = store.lastLsn;
  // A named follower holds retention while its stream is open; an anonymous reader (a backup, a
  // probe) holds it only up to the store's watch bound, so polling cannot keep the log forever.
  const feed = store.changesFrom({ epoch, lsn: after }, q.follower ? { kind: 'follower', id: q.follower } : { kind: 'watch', id: 'frames-request' });
  // The cursor is checked (epoch, retention) as the first batch is asked for: an error there
  // is the HTTP answer, not a line in a stream already started.
  const first = feed.next();
  const early = await Promise.race<Early>([
    first.then(
      (batch) => ({ batch }),
      (error: unknown) => ({ error }),
    ),
    new Promise<null>((r) => setImmediate(() => r(null))),
  ]);
  if (early && 'error' in early) {
    feed.close();
    throw early.error;
  }
  return lines(src, q, feed, first, after, upTo, size);
}

async function* lines(src: FramesSource, q: FramesQuery, feed: ChangeFeed, first: Promise<FeedBatch | null>, after: number, upTo: number, size: number): AsyncIterable<FramesLine[]> {
  const store = src.store;
  yield [{ type: 'start', tenant: src.tenant, holder: src.holder, epoch: store.epoch, since_segment: q.sinceSegment, segment_frames: size, from_lsn: after + 1, last_lsn: store.lastLsn }];
  let at = after;
  let pending: Promise<FeedBatch | null> | null = first;
  try {
    for (;;) {
      if (!q.follow && at >= upTo) {
        yield [{ type: 'end', last_lsn: store.lastLsn, reason: 'caught up' }];
        return;
      }
      const next: Promise<FeedBatch | null> = pending ?? feed.next();
      pending = next;
      let timer: NodeJS.Timeout | undefined;
      const got = await Promise.race([next, new Promise<'idle'>((r) => (timer = setTimeout(() => r('idle'), q.heartbeatMs ?? 1000)))]);
      clearTimeout(timer);
      if (got === 'idle') {
        yield [{ type: 'heartbeat', last_lsn: store.lastLsn, epoch: store.epoch, time: Date.now() }];
        continue;
      }
      pending = null;
      if (got === null) {
        yield [{ type: 'end', last_lsn: store.lastLsn, reason: 'the store closed' }];
        return;
      }
      const batch: FramesLine[] = [];
      for (const e of got.entries) {
        batch.push({ type: 'frame', lsn: e.frame.lsn, epoch: e.frame.epoch, segment: Math.floor((e.frame.lsn - 1) / size), hex: e.bytes.toString('hex') });
        at = e.frame.lsn;
      }
      if (batch.length) yield batch;
    }
  } finally {
    feed.close();
  }
}
