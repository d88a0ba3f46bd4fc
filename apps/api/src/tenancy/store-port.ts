/** The one place apps/api opens a TenantStore (libs/storage). */
import * as fs from 'fs';
import * as path from 'path';
import { TenantStore, type CatalogChange, type CatalogEntry, type CatalogKind, type CommitParticipant } from '@mmdb/storage';

export { TenantStore };
export type { CatalogChange, CatalogEntry };

/** A tenant's data directory under the node's data directory (its store is `<dir>/store`). */
export function tenantDir(dataDir: string, tenant: string): string {
  return path.join(dataDir, 'tenants', tenant);
}

/** The tenants whose stores are on this node: the ULID-named directories holding a store. */
export function tenantsOnDisk(dataDir: string): string[] {
  const root = path.join(dataDir, 'tenants');
  if (!fs.existsSync(root)) return [];
  return fs.readdirSync(root).filter((t) => fs.existsSync(path.join(root, t, 'store', 'CURRENT')));
}

/** A tenant's catalogue entries of one kind, read from its store while no process has it open. */
export function readTenantCatalog(dataDir: string, tenant: string, kind: CatalogKind): Promise<CatalogEntry[]> {
  return TenantStore.readCatalog(path.join(tenantDir(dataDir, tenant), 'store'), kind);
}

/**
 * Commits catalogue changes into a tenant's log with no server running: opens its store (no
 * participants: a catalogue change derives nothing; they replay the frame from their own
 * checkpoints when the server opens it), commits, closes. False when the tenant has no store
 * yet: the server creates it, with its own options (a store keeps its segment size for life).
 */
export async function commitCatalogDirect(dataDir: string, tenant: string, changes: readonly CatalogChange[], actor: string): Promise<boolean> {
  const dir = path.join(tenantDir(dataDir, tenant), 'store');
  if (!fs.existsSync(path.join(dir, 'CURRENT'))) return false;
  const store = await TenantStore.open({ dir, checkpointFrames: 0, checkpointMs: 0, idempotencyPurgeMs: 0 });
  try {
    await store.commit({ changes, actor, route: 'provision' });
  } finally {
    await store.close();
  }
  return true;
}

export interface OpenStoreOptions {
  readonly dir: string;
  readonly participants: readonly unknown[];
  readonly sync: boolean;
  readonly deferRedoableSync?: boolean;
  /** A background request's preparation piece, ms (0: whole). */
  readonly backgroundPieceMs?: number;
  /** How long a background request waits for a foreground group in flight, ms (0: not held). */
  readonly backgroundHoldMs?: number;
  readonly queueLimit: number;
  readonly minFreeBytes: number;
  readonly writeBufferBytes: number;
  readonly tableFileBytes?: number;
  readonly checkpointFrames: number;
  readonly checkpointMs: number;
  readonly segmentFrames: number;
}

export function openTenantStore(opts: OpenStoreOptions): Promise<TenantStore> {
  return TenantStore.open({
    dir: opts.dir,
    participants: opts.participants as CommitParticipant[],
    sync: opts.sync,
    deferRedoableSync: opts.deferRedoableSync,
    backgroundPieceMs: opts.backgroundPieceMs,
    backgroundHoldMs: opts.backgroundHoldMs,
    queueLimit: opts.queueLimit,
    minFreeBytes: opts.minFreeBytes,
    writeBufferBytes: opts.writeBufferBytes,
    tableFileBytes: opts.tableFileBytes,
    checkpointFrames: opts.checkpointFrames,
    checkpointMs: opts.checkpointMs,
    segmentFrames: opts.segmentFrames,
  });
}

/** Writes a store image received from a replication holder into `dir` (see TenantStore.writeImage). */
export function writeStoreImage(dir: string, batches: AsyncIterable<ReadonlyArray<readonly [Buffer, Buffer]>>): Promise<{ keys: number }> {
  return TenantStore.writeImage(dir, batches);
}
