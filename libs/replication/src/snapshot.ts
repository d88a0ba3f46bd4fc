/**
 * Bootstrap: the holder streams every key of one consistent snapshot of the tenant's store
 * (`GET /v1/replication/snapshot`); a new, far-behind or diverged follower writes them into a
 * fresh store (`TenantStore.writeImage`), opens it, and tails from the snapshot's LSN. The
 * image holds the log the holder still keeps, the checkpoints and every derived entry, so the
 * follower's recovery is the ordinary one. Keys local to the holder (its followers' retention
 * records) stay out.
 */
import { DbError } from '@mmdb/core';
import { KEYSPACE, prefixRange, type Snapshot, type TenantStore } from '@mmdb/storage';

/** One line of the snapshot stream (NDJSON). */
export type SnapshotLine =
  | { readonly type: 'start'; readonly tenant: string; readonly lsn: number; readonly epoch: number; readonly segment_frames: number }
  /** Key/value pairs, each hex-encoded. */
  | { readonly type: 'keys'; readonly kv: ReadonlyArray<readonly [string, string]> }
  | { readonly type: 'end'; readonly lsn: number; readonly keys: number };

const ALL = { gte: Buffer.from([0]), lt: Buffer.from([0xff]) };
const HOLDER_LOCAL = [prefixRange(KEYSPACE.meta, ['follower'])];

const local = (k: Buffer) => HOLDER_LOCAL.some((r) => Buffer.compare(k, r.gte) >= 0 && Buffer.compare(k, r.lt) < 0);

/** A snapshot taken when no commit group is between its batch and its apply (so it holds exactly the frames up to its LSN). */
export async function stableSnapshot(store: TenantStore): Promise<Snapshot> {
  let snap = store.snapshot();
  for (let i = 0; !snap.stable; i++) {
    await snap.release();
    if (i > 1000) throw new DbError('service_unavailable', 'the store is too busy to take a consistent snapshot; retry');
    await new Promise((r) => setTimeout(r, 2));
    snap = store.snapshot();
  }
  return snap;
}

/** The snapshot's lines. */
export async function* snapshotLines(tenant: string, store: TenantStore, batchKeys = 512): AsyncIterable<SnapshotLine> {
  const snap = await stableSnapshot(store);
  try {
    const lsn = snap.lsn;
    yield { type: 'start', tenant, lsn, epoch: lsn > 0 ? (store.epochAt(lsn) ?? 0) : 0, segment_frames: store.segments.framesPerSegment };
    let keys = 0;
    for await (const batch of snap.rawRange({ ...ALL, batchSize: batchKeys })) {
      const kv = batch.filter(([k]) => !local(k)).map(([k, v]) => [k.toString('hex'), v.toString('hex')] as const);
      keys += kv.length;
      if (kv.length) yield { type: 'keys', kv };
    }
    yield { type: 'end', lsn, keys };
  } finally {
    await snap.release();
  }
}

/** Turns a received snapshot stream into key batches for `TenantStore.writeImage`, checking its framing. */
export async function* imageBatches(lines: AsyncIterable<SnapshotLine[]>, onStart?: (s: Extract<SnapshotLine, { type: 'start' }>) => void): AsyncIterable<Array<[Buffer, Buffer]>> {
  let started = false;
  let ended = false;
  let count = 0;
  for await (const chunk of lines) {
    for (const l of chunk) {
      if (l.type === 'start') {
        started = true;
        onStart?.(l);
      } else if (l.type === 'keys') {
        if (!started || ended) throw new DbError('validation_failed', 'snapshot stream: keys outside start/end');
        count += l.kv.length;
        yield l.kv.map(([k, v]) => [Buffer.from(k, 'hex'), Buffer.from(v, 'hex')]);
      } else if (l.type === 'end') {
        if (l.keys !== count) throw new DbError('validation_failed', `snapshot stream: ${count} keys received, ${l.keys} sent`);
        ended = true;
      }
    }
  }
  if (!ended) throw new DbError('service_unavailable', 'snapshot stream ended early; retry the bootstrap');
}
