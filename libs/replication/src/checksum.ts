/**
 * A checksum of what a tenant's store holds, for comparing a follower with its holder: SHA-256
 * over every key and value of the row, index, full-text, vector and edge keyspaces, read from
 * one stable snapshot (so it names the LSN it covers). Left out: the log and metadata (a node's
 * own checkpoints, retention records and epoch) and the vector checkpoint images
 * (`V ‖ null …`), which each node takes on its own schedule.
 */
import { createHash } from 'crypto';
import { KEYSPACE, keyOf, prefixRange, type TenantStore } from '@mmdb/storage';
import { stableSnapshot } from './snapshot';

const SPACES = [KEYSPACE.row, KEYSPACE.index, KEYSPACE.fts, KEYSPACE.vector, KEYSPACE.edge];
const VECTOR_IMAGES = prefixRange(KEYSPACE.vector, [null]);

export interface StoreChecksum {
  readonly lsn: number;
  readonly keys: number;
  readonly sha256: string;
}

export async function storeChecksum(store: TenantStore): Promise<StoreChecksum> {
  const snap = await stableSnapshot(store);
  const h = createHash('sha256');
  let keys = 0;
  try {
    for (const space of SPACES) {
      const head = keyOf(space, []);
      for await (const batch of snap.rawRange({ gte: head, lt: Buffer.from([head[0] + 1]) })) {
        for (const [k, v] of batch) {
          if (Buffer.compare(k, VECTOR_IMAGES.gte) >= 0 && Buffer.compare(k, VECTOR_IMAGES.lt) < 0) continue;
          const len = Buffer.alloc(8);
          len.writeUInt32BE(k.length, 0);
          len.writeUInt32BE(v.length, 4);
          h.update(len).update(k).update(v);
          keys++;
        }
      }
    }
    return { lsn: snap.lsn, keys, sha256: h.digest('hex') };
  } finally {
    await snap.release();
  }
}
