/**
 * A tenant's replication settings: the sync window (followers a write waits for, how long)
 * and whether a missed window is an error (strict). Stored in the tenant's catalogue
 * (`{op: 'catalog', kind: 'replication', id: 'sync', record}`), so they travel in its log to
 * every follower and any later holder; a field left unset there takes the node's default
 * (DB_REPLICATION_SYNC_FOLLOWERS, DB_REPLICATION_SYNC_MS, DB_REPLICATION_SYNC_STRICT).
 *
 * @example
 *   const stored = mergeSyncSettings(current, parseSyncSettings({ strict: true }));
 *   effectiveSync(nodeDefaults, stored); // { sync_followers: 1, sync_ms: 1000, strict: true }
 */
import { DbError } from '@mmdb/core';

/** The catalogue entry's id (kind `replication`). */
export const SYNC_SETTINGS_ID = 'sync';

export interface SyncSettings {
  /** Follower acknowledgements a write waits for (0: asynchronous). */
  readonly sync_followers: number;
  /** How long a write waits for them, ms. */
  readonly sync_ms: number;
  /** Past the window: 504 gateway_timeout (true) or 2xx with `X-DB-Replication: degraded` (false). */
  readonly strict: boolean;
}

/** What the tenant stores: each field set, or null (the node's default applies). */
export type StoredSyncSettings = { readonly [K in keyof SyncSettings]: SyncSettings[K] | null };

export const NO_SYNC_SETTINGS: StoredSyncSettings = { sync_followers: null, sync_ms: null, strict: null };

const FIELDS = ['sync_followers', 'sync_ms', 'strict'] as const;

/**
 * A change request (`PUT /v1/replication/settings` body): fields absent stay as they are,
 * null goes back to the node's default. Throws validation_failed naming the field.
 */
export function parseSyncSettings(body: unknown): Partial<StoredSyncSettings> {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw new DbError('validation_failed', 'the body must be a JSON object');
  const b = body as Record<string, unknown>;
  for (const k of Object.keys(b)) {
    if (!(FIELDS as readonly string[]).includes(k)) throw new DbError('validation_failed', `unknown field "${k}" (allowed: ${FIELDS.join(', ')})`, { field: k });
  }
  const out: { -readonly [K in keyof StoredSyncSettings]?: StoredSyncSettings[K] } = {};
  const int = (k: 'sync_followers' | 'sync_ms', min: number, max: number): void => {
    const v = b[k];
    if (v === undefined) return;
    if (v !== null && (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min || v > max)) {
      throw new DbError('validation_failed', `"${k}" must be an integer from ${min} to ${max}, or null for the node's default`, { field: k });
    }
    out[k] = v;
  };
  int('sync_followers', 0, 64);
  int('sync_ms', 1, 600_000);
  if (b.strict !== undefined) {
    if (b.strict !== null && typeof b.strict !== 'boolean') throw new DbError('validation_failed', '"strict" must be true, false, or null for the node\'s default', { field: 'strict' });
    out.strict = b.strict;
  }
  return out;
}

/** The stored record after a change. */
export function mergeSyncSettings(current: StoredSyncSettings, change: Partial<StoredSyncSettings>): StoredSyncSettings {
  return { ...current, ...change };
}

/** A catalogue record as stored settings (unknown or malformed fields read as unset). */
export function storedSyncSettings(record: unknown): StoredSyncSettings {
  if (!record || typeof record !== 'object') return NO_SYNC_SETTINGS;
  const r = record as Record<string, unknown>;
  const num = (v: unknown): number | null => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : null);
  return { sync_followers: num(r.sync_followers), sync_ms: num(r.sync_ms) || null, strict: typeof r.strict === 'boolean' ? r.strict : null };
}

/** The settings in force: the tenant's where set, else the node's. */
export function effectiveSync(defaults: SyncSettings, stored: StoredSyncSettings): SyncSettings {
  return {
    sync_followers: stored.sync_followers ?? defaults.sync_followers,
    sync_ms: stored.sync_ms ?? defaults.sync_ms,
    strict: stored.strict ?? defaults.strict,
  };
}
