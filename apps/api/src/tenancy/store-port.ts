/** The one place apps/api opens a TenantStore (libs/storage). */
import { TenantStore, type CommitParticipant } from '@mmdb/storage';

export { TenantStore };

export interface OpenStoreOptions {
  readonly dir: string;
  readonly participants: readonly unknown[];
  readonly sync: boolean;
  readonly queueLimit: number;
  readonly minFreeBytes: number;
  readonly writeBufferBytes: number;
  readonly checkpointFrames: number;
  readonly checkpointMs: number;
  readonly segmentFrames: number;
}

export function openTenantStore(opts: OpenStoreOptions): Promise<TenantStore> {
  return TenantStore.open({
    dir: opts.dir,
    participants: opts.participants as CommitParticipant[],
    sync: opts.sync,
    queueLimit: opts.queueLimit,
    minFreeBytes: opts.minFreeBytes,
    writeBufferBytes: opts.writeBufferBytes,
    checkpointFrames: opts.checkpointFrames,
    checkpointMs: opts.checkpointMs,
    segmentFrames: opts.segmentFrames,
  });
}

/** Writes a store image received from a replication holder into `dir` (see TenantStore.writeImage). */
export function writeStoreImage(dir: string, batches: AsyncIterable<ReadonlyArray<readonly [Buffer, Buffer]>>): Promise<{ keys: number }> {
  return TenantStore.writeImage(dir, batches);
}
