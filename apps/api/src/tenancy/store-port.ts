/**
 * The one place apps/api touches the storage lib's TenantStore class.
 * (Kept separate so the rest of the app imports the store type from here.)
 */
import * as storage from '@mmdb/storage';

/** The per-tenant store (libs/storage `TenantStore`). */
// Until @mmdb/storage exports the class, the type is opaque here.
export type TenantStore = any;

export interface OpenStoreOptions {
  readonly dir: string;
  readonly participants: readonly unknown[];
  readonly sync: boolean;
}

export async function openTenantStore(opts: OpenStoreOptions): Promise<TenantStore> {
  const cls = (storage as any).TenantStore;
  if (!cls) throw new Error('@mmdb/storage does not export TenantStore yet');
  return cls.open({ dir: opts.dir, participants: [...opts.participants], sync: opts.sync });
}
