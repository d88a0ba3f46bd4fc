/**
 * Where a watch stream starts: the query's result at a stable snapshot (a `snapshot` or `reset`
 * event, and an aggregate's groups), and an aggregate resuming at an earlier position, whose
 * groups are built at a snapshot now and taken back through the log's frames after that position.
 */
import { DbError } from '@mmdb/core';
import type { ChangeCursor, ChangeFeed, FeedOptions, Snapshot, TenantStore } from '@mmdb/storage';
import type { WatchQuery } from '@mmdb/sql';

/** The cursor of a frame of this store (its epoch, from the store's epoch history). */
export function cursorAt(store: TenantStore, lsn: number): ChangeCursor {
  return { epoch: store.epochOf(lsn) ?? store.epoch, lsn };
}

/** A store snapshot holding exactly the frames up to its LSN (retried past an in-flight group). */
async function stableSnapshot(store: TenantStore): Promise<Snapshot> {
  for (;;) {
    const s = store.snapshot();
    if (s.stable) return s;
    await s.release();
    await new Promise((r) => setImmediate(r));
  }
}

/** The query's result at a stable snapshot, and that snapshot's cursor (an aggregate also rebuilds its groups there). */
export async function snapshotRows(store: TenantStore, query: WatchQuery): Promise<{ cursor: ChangeCursor; rows: Record<string, unknown>[] }> {
  const snap = await stableSnapshot(store);
  try {
    const rows = await query.snapshot(snap);
    return { cursor: cursorAt(store, snap.lsn), rows };
  } finally {
    await snap.release();
  }
}

/**
 * An aggregate resuming at `since`: its groups are built from a snapshot now, then taken back
 * through the log's frames after `since` (each row change undone), so the replay from `since`
 * sends exactly the result rows each missed frame changed. Frames gone, another history, or the
 * table registered again in between: resync_required (a reset). `opened`: the feed it reads
 * (closing it ends the rewind).
 */
export async function rewindTo(store: TenantStore, query: WatchQuery, since: ChangeCursor, opts: FeedOptions, opened: (f: ChangeFeed) => void): Promise<void> {
  const { cursor } = await snapshotRows(store, query);
  const at = cursor.lsn;
  if (since.lsn === at && since.epoch === cursor.epoch) return;
  const feed = store.changesFrom(since, opts);
  opened(feed);
  try {
    for (;;) {
      const b = await feed.next();
      if (!b) return;
      const frames = b.entries.map((e) => e.frame).filter((f) => f.lsn <= at);
      if (frames.some((f) => query.schemaChanged(f))) throw new DbError('resync_required', 'the followed table was registered again or dropped', { reason: 'schema' });
      query.rewind(frames, b.cursor.lsn >= at);
      if (b.cursor.lsn >= at) return;
    }
  } finally {
    feed.close();
  }
}
