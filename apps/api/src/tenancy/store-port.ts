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
