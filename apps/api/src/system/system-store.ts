import * as crypto from 'crypto';
import * as fs from 'fs';
import * as path from 'path';
import { ClassicLevel } from 'classic-level';
import { DbError, isUlid, newUlid, type JsonValue } from '@mmdb/core';
import type { IdempotencyRecord, StoredResponse } from '@mmdb/storage';
import { OWNER } from '../security/catalog';
import { CatalogChange, commitCatalogDirect, readTenantCatalog, tenantsOnDisk } from '../tenancy/store-port';

/** What a bearer token resolves to. */
export interface Principal {
  readonly tenant: string | null;
  readonly operator: boolean;
}

export interface TenantRecord {
  readonly tenant: string;
  readonly created: number;
}

/** A token as the API shows it: never the secret nor its hash. Times in ms since the epoch. */
export interface TokenInfo {
  readonly token_id: string;
  readonly created: number;
  /** When the token stops working (ms since the epoch), or null: it never expires. */
  readonly expires_at: number | null;
  /** The database user the token acts as; absent: `owner` (the tenant's full-access user). */
  readonly user?: string;
}

/** A newly issued token: the secret is in this answer only. */
export interface IssuedToken extends TokenInfo {
  readonly tenant: string;
  readonly token: string;
}

/**
 * A legacy record in `_system` at `token:<sha256 hex>` (before tokens lived in their tenant's
 * log; records written before token ids lack `id`/`expires_at`). Read at open and moved into
 * the tenant's log when its store opens.
 */
interface TokenRecord {
  tenant: string;
  created: number;
  id?: string;
  expires_at?: number | null;
}

/** A token in its tenant's catalogue (`{op: 'catalog', kind: 'token', id: token_id, record}`): the hash, never the secret. */
export interface TokenCatalogRecord {
  readonly hash: string;
  readonly created: number;
  readonly expires_at: number | null;
  /** The database user; absent: `owner`. */
  readonly user?: string;
}

/**
 * Where token changes are committed: the tenant's own log. The server fills it with its tenant
 * registry (stores already open); without a server, the store is opened for the commit. False:
 * the tenant has no store yet (the CLI with the server stopped): the change is kept as a
 * pending `_system` record, moved into the log when the server creates the store.
 */
export interface TenantCatalogPort {
  /**
   * `idempotency`: the request's Idempotency-Key record, committed in the same frame (spec 5.6).
   * Answers false (not committed, see above), or `{replayed}` when the store already held the
   * key for this request (nothing was written).
   */
  commitCatalog(tenant: string, changes: readonly CatalogChange[], actor: string, idempotency?: IdempotencyRecord): Promise<boolean | void | { replayed: StoredResponse }>;
}

/**
 * An Idempotency-Key of a token route: the record commits in the token change's frame, its
 * answer rendered from the route's result; `replayed` is set when the key already held this
 * request (then nothing changed: no token was issued, rotated or revoked).
 */
export interface TokenIdempotency {
  readonly key: string;
  readonly fingerprint: string;
  readonly expiresAt: number;
  answer(result: IssuedToken | { revoked: boolean }): StoredResponse;
  replayed?: StoredResponse;
}

/**
 * A token in memory: one mutable object per token, shared by every index (by hash, by id,
 * and the resolved-token cache), so an expiry set by a rotation or a revocation is seen
 * by the auth path at once without touching the cache.
 */
export class TokenEntry {
  /** Expiry in ms since the epoch; Infinity when the token never expires; -Infinity once revoked. */
  expires: number;
  revoked = false;
  /** The secret, while this entry is in the resolved-token cache (memory only), so a revocation can drop it. */
  cachedAs: string | undefined = undefined;
  /**
   * The rate limiter's state for this token (GCRA theoretical arrival time, in
   * performance.now() ms). Kept here so it lives and dies with the token: constant memory
   * per token, nothing to evict.
   */
  rateTat = 0;

  constructor(
    readonly hash: string,
    readonly tenant: string,
    readonly id: string,
    readonly created: number,
    expiresAt: number | null,
    readonly user: string = OWNER,
  ) {
    this.expires = expiresAt ?? Infinity;
  }

  get expiresAt(): number | null {
    return this.expires === Infinity ? null : this.expires;
  }

  info(): TokenInfo {
    return { token_id: this.id, created: this.created, expires_at: this.expiresAt, ...(this.user !== OWNER ? { user: this.user } : {}) };
  }

  record(): TokenRecord {
    return { tenant: this.tenant, created: this.created, id: this.id, expires_at: this.expiresAt };
  }

  /** This token as a catalogue change of its tenant's log (`expires` overrides its expiry; null removes it). */
  change(expiresAt: number | null = this.expiresAt, remove = false): CatalogChange {
    const record: TokenCatalogRecord = { hash: this.hash, created: this.created, expires_at: expiresAt, ...(this.user !== OWNER ? { user: this.user } : {}) };
    return { op: 'catalog', kind: 'token', id: this.id, record: remove ? null : (record as unknown as JsonValue) };
  }
}

/** Why a token did not resolve. */
export type TokenRefusal = 'unknown' | 'expired';

/** sha256 of a token; only this is ever stored. Tokens are 256-bit random, so a fast hash suffices. */
export function hashToken(token: string): string {
  return crypto.createHash('sha256').update(token, 'utf8').digest('hex');
}

/** A fresh opaque token: `mmdb_` + 32 random bytes, base64url. */
export function newToken(): string {
  return 'mmdb_' + crypto.randomBytes(32).toString('base64url');
}

/** Longest `ttl_seconds`: 10 years. */
export const MAX_TTL_SECONDS = 10 * 365 * 86400;
/** Longest `grace_seconds` on a rotation: 30 days. */
export const MAX_GRACE_SECONDS = 30 * 86400;
/** Default `grace_seconds` on a rotation: the old token keeps working this long. */
export const DEFAULT_GRACE_SECONDS = 300;
/**
 * An expired token's record is kept this long after it expired (so it answers
 * "token expired" rather than "unknown"), then purged on the next start or on the next
 * token change of its tenant.
 */
export const EXPIRED_RETENTION_MS = 7 * 86400 * 1000;

/**
 * The node's index of tenants and their tokens, kept in memory for the auth path.
 *
 * A tenant's tokens (hash, public id, expiry) live in the tenant's own log, as catalogue
 * changes, so a follower or a restored copy of the log authenticates them with nothing else.
 * At open the index is built from each tenant store's catalogue on this node; token changes are
 * committed into the tenant's log (through the `TenantCatalogPort`) before memory changes, and
 * catalogue changes arriving in frames (a follower applying its leader's log) update it too
 * (`applyTokenChange`). `<dataDir>/_system` (classic-level) keeps only which tenants this node
 * serves (placement, node configuration like the operator token), and legacy token records
 * from before, moved into their tenant's log when its store opens.
 */
export class SystemStore {
  private readonly byHash = new Map<string, TokenEntry>();
  private readonly byId = new Map<string, TokenEntry>();
  private readonly tenants = new Map<string, TenantRecord>();
  /**
   * Tokens already resolved, secret → entry, so the auth path hashes a token once rather than
   * on every request. Only live tenant tokens go in (unknown and expired tokens are not kept,
   * so garbage cannot fill it); cleared when it reaches its cap; a revoked token is dropped at
   * once; an expired one when it is next presented.
   */
  private readonly resolved = new Map<string, TokenEntry>();
  static readonly RESOLVED_CAP = 10_000;

  /** Token and tenant changes run one at a time (check, then write, then update memory). */
  private chain: Promise<unknown> = Promise.resolve();

  /** Hashes of tokens whose record is still the legacy one in `_system` (not yet in their tenant's log). */
  private readonly legacy = new Set<string>();
  private port: TenantCatalogPort;

  private constructor(
    private readonly db: ClassicLevel<string, string>,
    dataDir: string,
  ) {
    this.port = { commitCatalog: (tenant, changes, actor) => commitCatalogDirect(dataDir, tenant, changes, actor) };
  }

  /** Token changes go to the tenant's log through this port from now on (the server's tenant registry). */
  attachCatalog(port: TenantCatalogPort): void {
    this.port = port;
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(fn, fn);
    this.chain = run.catch(() => undefined);
    return run;
  }

  static async open(dataDir: string, now: number = Date.now()): Promise<SystemStore> {
    fs.mkdirSync(dataDir, { recursive: true });
    const db = new ClassicLevel<string, string>(path.join(dataDir, '_system'), { valueEncoding: 'utf8' });
    await db.open();
    const s = new SystemStore(db, dataDir);
    const ops: Array<{ type: 'put'; key: string; value: string } | { type: 'del'; key: string }> = [];
    for await (const [k, v] of db.iterator()) {
      if (k.startsWith('tenant:')) s.tenants.set(k.slice(7), JSON.parse(v));
      else if (k.startsWith('token:')) {
        const hash = k.slice(6);
        const rec = JSON.parse(v) as TokenRecord;
        const expiresAt = typeof rec.expires_at === 'number' ? rec.expires_at : null;
        if (expiresAt !== null && expiresAt + EXPIRED_RETENTION_MS <= now) {
          ops.push({ type: 'del', key: k });
          continue;
        }
        // A record from before token ids: give it one, persisted below.
        const id = typeof rec.id === 'string' && isUlid(rec.id) ? rec.id : newUlid();
        const e = new TokenEntry(hash, rec.tenant, id, rec.created, expiresAt);
        if (id !== rec.id) ops.push({ type: 'put', key: k, value: JSON.stringify(e.record()) });
        s.index(e);
        s.legacy.add(hash);
      }
    }
    // Every tenant store on this node: its tokens from its own catalogue (they win over a
    // legacy record of the same token); a store with no tenant record is a tenant of this node.
    for (const tenant of tenantsOnDisk(dataDir)) {
      if (!isUlid(tenant)) continue;
      if (!s.tenants.has(tenant)) {
        const rec: TenantRecord = { tenant, created: now };
        s.tenants.set(tenant, rec);
        ops.push({ type: 'put', key: 'tenant:' + tenant, value: JSON.stringify(rec) });
      }
      for (const { id, record } of await readTenantCatalog(dataDir, tenant, 'token')) {
        const r = record as unknown as TokenCatalogRecord;
        if (r.expires_at !== null && r.expires_at + EXPIRED_RETENTION_MS <= now) continue;
        s.applyTokenChange(tenant, id, record);
      }
    }
    if (ops.length) await db.batch(ops, { sync: true });
    return s;
  }

  /**
   * Applies one token change of a tenant's catalogue to the index (idempotent): a change
   * committed here, or one in a frame a follower applied. A token keeps its entry object
   * (and so its cached resolution and rate state) across changes of its expiry.
   */
  applyTokenChange(tenant: string, id: string, record: JsonValue | null): void {
    const e = this.byId.get(id);
    if (record === null) {
      if (e && e.tenant === tenant) this.unindex(e);
      return;
    }
    const r = record as unknown as TokenCatalogRecord;
    if (!r || typeof r.hash !== 'string') return;
    const expires = r.expires_at ?? Infinity;
    if (e && e.tenant === tenant && e.hash === r.hash) {
      e.expires = expires;
      if (expires <= Date.now() && e.cachedAs !== undefined) {
        this.resolved.delete(e.cachedAs);
        e.cachedAs = undefined;
      }
      this.legacy.delete(e.hash);
      return;
    }
    const owner = this.byHash.get(r.hash);
    if (owner && owner.tenant !== tenant) return; // one token cannot serve two tenants: the first keeps it
    if (owner) this.unindex(owner);
    if (e) this.unindex(e);
    this.legacy.delete(r.hash);
    this.index(new TokenEntry(r.hash, tenant, id, r.created, r.expires_at, typeof r.user === 'string' ? r.user : OWNER));
  }

  /**
   * Makes the index hold exactly `entries` as the tenant's logged tokens (its store was re-imaged
   * from a snapshot, e.g. a replication bootstrap): those are applied, and the tenant's other
   * logged tokens are dropped (revoked on the holder while this node did not follow). Pending
   * records not yet in the log (legacy) stay.
   */
  replaceTokens(tenant: string, entries: readonly { id: string; record: JsonValue | null }[]): void {
    const keep = new Set(entries.map((e) => e.id));
    for (const e of [...this.byId.values()]) if (e.tenant === tenant && !keep.has(e.id) && !this.legacy.has(e.hash)) this.unindex(e);
    for (const e of entries) this.applyTokenChange(tenant, e.id, e.record);
  }

  /**
   * Moves a tenant's legacy token records (`_system`) into its log, once, when its store
   * opens: `commit` writes the catalogue changes in one frame; the records are then deleted.
   */
  async migrateLegacy(tenant: string, commit: (changes: CatalogChange[]) => Promise<unknown>): Promise<number> {
    const entries = [...this.byId.values()].filter((e) => e.tenant === tenant && this.legacy.has(e.hash));
    if (!entries.length) return 0;
    await commit(entries.map((e) => e.change()));
    await this.db.batch(
      entries.map((e) => ({ type: 'del' as const, key: 'token:' + e.hash })),
      { sync: true },
    );
    for (const e of entries) this.legacy.delete(e.hash);
    return entries.length;
  }

  /** The system log (tokens, tenants) is open. */
  get mounted(): boolean {
    return this.db.status === 'open';
  }

  async close(): Promise<void> {
    await this.db.close();
  }

  /**
   * Indexes a token's entry; the entry already indexed for the same id and hash (the frame
   * observer may have indexed the commit first) stays, so there is one object per token.
   */
  private index(e: TokenEntry): TokenEntry {
    const had = this.byId.get(e.id);
    if (had && had.hash === e.hash) return had;
    this.byHash.set(e.hash, e);
    this.byId.set(e.id, e);
    return e;
  }

  private unindex(e: TokenEntry): void {
    e.revoked = true;
    e.expires = -Infinity;
    this.byHash.delete(e.hash);
    this.byId.delete(e.id);
    if (e.cachedAs !== undefined) {
      this.resolved.delete(e.cachedAs);
      e.cachedAs = undefined;
    }
  }

  /**
   * The live entry of a token resolved before (no hashing: one map lookup and a number
   * compared), or undefined (then call `resolveToken`). An entry that expired since is
   * dropped from the cache and reported as undefined.
   */
  knownToken(token: string, now: number): TokenEntry | undefined {
    const e = this.resolved.get(token);
    if (e === undefined) return undefined;
    if (e.expires > now) return e;
    this.resolved.delete(token);
    e.cachedAs = undefined;
    return undefined;
  }

  /** Hashes and looks up a token: its live entry (remembered for next time), or why not. */
  resolveToken(token: string, now: number): TokenEntry | TokenRefusal {
    const e = this.byHash.get(hashToken(token));
    if (e === undefined) return 'unknown';
    if (e.expires <= now) return 'expired';
    if (this.resolved.size >= SystemStore.RESOLVED_CAP) {
      for (const c of this.resolved.values()) c.cachedAs = undefined;
      this.resolved.clear();
    }
    this.resolved.set(token, e);
    e.cachedAs = token;
    return e;
  }

  /** The user a live token id acts as, or undefined. */
  tokenUser(tokenId: string): string | undefined {
    return this.byId.get(tokenId.toUpperCase())?.user;
  }

  hasTenant(tenant: string): boolean {
    return this.tenants.has(tenant);
  }

  listTenants(): TenantRecord[] {
    return [...this.tenants.values()];
  }

  get tenantCount(): number {
    return this.tenants.size;
  }

  private requireTenant(tenant: string): string {
    tenant = tenant.toUpperCase();
    if (!this.tenants.has(tenant)) throw new DbError('not_found', `tenant ${tenant} does not exist`);
    return tenant;
  }

  /** Creates a tenant (a new ULID unless given) with one new token; the token is returned once. */
  createTenant(tenant: string = newUlid()): Promise<IssuedToken> {
    return this.serial(async () => {
      tenant = tenant.toUpperCase();
      if (!isUlid(tenant)) throw new DbError('validation_failed', 'tenant must be a ULID');
      if (this.tenants.has(tenant)) throw new DbError('conflict', `tenant ${tenant} already exists`);
      const token = newToken();
      await this.ensureTenantNow(tenant, token);
      return this.issued(this.byHash.get(hashToken(token))!, token);
    });
  }

  /**
   * Makes sure the tenant exists and the token is one of its tokens (idempotent): the
   * bootstrap tenant at start. A token already present keeps its id and expiry; a revoked
   * (deleted) one comes back without expiry.
   */
  ensureTenant(tenant: string, token: string): Promise<{ created: boolean }> {
    return this.serial(() => this.ensureTenantNow(tenant, token));
  }

  private async ensureTenantNow(tenant: string, token: string): Promise<{ created: boolean }> {
    tenant = tenant.toUpperCase();
    const hash = hashToken(token);
    const owner = this.byHash.get(hash);
    if (owner && owner.tenant !== tenant) throw new DbError('conflict', 'this token already belongs to another tenant');
    const created = !this.tenants.has(tenant);
    const now = Date.now();
    const tRec: TenantRecord = this.tenants.get(tenant) ?? { tenant, created: now };
    if (created) await this.db.put('tenant:' + tenant, JSON.stringify(tRec), { sync: true });
    this.tenants.set(tenant, tRec);
    if (!owner) {
      const entry = new TokenEntry(hash, tenant, newUlid(now), now, null);
      await this.write(tenant, now, [entry.change()]);
      this.index(entry);
    }
    return { created };
  }

  /** The tenant's tokens that still work (expired and revoked ones are left out), oldest first. */
  listTokens(tenant: string, now: number = Date.now()): TokenInfo[] {
    tenant = this.requireTenant(tenant);
    const out: TokenInfo[] = [];
    for (const e of this.byId.values()) if (e.tenant === tenant && e.expires > now) out.push(e.info());
    return out.sort((a, b) => (a.token_id < b.token_id ? -1 : a.token_id > b.token_id ? 1 : 0));
  }

  /** Issues one more token for an existing tenant; `ttlSeconds` absent or null: no expiry. */
  issueToken(tenant: string, ttlSeconds: number | null = null, user: string = OWNER, idem?: TokenIdempotency): Promise<IssuedToken> {
    return this.serial(async () => {
      tenant = this.requireTenant(tenant);
      const now = Date.now();
      const { entry, token } = this.mint(tenant, now, ttlSeconds === null ? null : now + ttlSeconds * 1000, user);
      const answer = this.issued(entry, token);
      if (await this.write(tenant, now, [entry.change()], idem, answer)) return answer;
      this.index(entry);
      return answer;
    });
  }

  /**
   * Revokes a token by its id: it stops working at once. Returns whether a live token was
   * revoked (false for an unknown id, another tenant's id, or a token already revoked; an
   * expired token's record is removed and also answers false).
   */
  revokeTokenById(tenant: string, tokenId: string, now: number = Date.now(), idem?: TokenIdempotency): Promise<boolean> {
    return this.serial(async () => {
      tenant = this.requireTenant(tenant);
      const e = this.byId.get(tokenId.toUpperCase());
      if (e === undefined || e.tenant !== tenant) return false;
      const live = e.expires > now;
      if (await this.write(tenant, now, [e.change(null, true)], idem, { revoked: live })) return live;
      this.unindex(e);
      return live;
    });
  }

  /**
   * Rotates a live token: a new token for the same tenant, and the old one expires
   * `graceSeconds` from now (0: at once; never later than it would have anyway).
   * The new token lives `ttlSeconds` (null: no expiry; undefined: as long as the old one
   * was issued for). One sync write for both. Unknown, revoked or expired id → 404.
   */
  rotateToken(tenant: string, tokenId: string, graceSeconds: number, ttlSeconds?: number | null, idem?: TokenIdempotency): Promise<IssuedToken> {
    return this.serial(async () => {
      tenant = this.requireTenant(tenant);
      const now = Date.now();
      const old = this.byId.get(tokenId.toUpperCase());
      if (old === undefined || old.tenant !== tenant || old.expires <= now) {
        throw new DbError('not_found', `token ${tokenId} is not a live token of tenant ${tenant}`);
      }
      const ttlMs = ttlSeconds === undefined ? (old.expires === Infinity ? null : old.expires - old.created) : ttlSeconds === null ? null : ttlSeconds * 1000;
      const { entry, token } = this.mint(tenant, now, ttlMs === null ? null : now + ttlMs, old.user);
      const oldExpires = Math.min(old.expires, now + graceSeconds * 1000);
      const answer = this.issued(entry, token);
      if (await this.write(tenant, now, [entry.change(), old.change(oldExpires)], idem, answer)) return answer;
      old.expires = oldExpires;
      if (oldExpires <= now && old.cachedAs !== undefined) {
        this.resolved.delete(old.cachedAs);
        old.cachedAs = undefined;
      }
      this.index(entry);
      return answer;
    });
  }

  private mint(tenant: string, now: number, expiresAt: number | null, user: string = OWNER): { entry: TokenEntry; token: string } {
    const token = newToken();
    return { entry: new TokenEntry(hashToken(token), tenant, newUlid(now), now, expiresAt, user), token };
  }

  private issued(e: TokenEntry, token: string): IssuedToken {
    return { tenant: e.tenant, token_id: e.id, token, created: e.created, expires_at: e.expiresAt, ...(e.user !== OWNER ? { user: e.user } : {}) };
  }

  /**
   * One frame of the tenant's log: the given changes, the tenant's legacy token records not
   * moved yet, and the removal of its tokens that expired more than EXPIRED_RETENTION_MS ago
   * (so expired records cannot pile up). Then the legacy records are deleted from `_system`.
   * With an Idempotency-Key, its record (answering `answer`) is in the same frame; true when the
   * key already held this request: nothing was written and `idem.replayed` is set.
   */
  private async write(tenant: string, now: number, changes: CatalogChange[], idem?: TokenIdempotency, answer?: IssuedToken | { revoked: boolean }): Promise<boolean> {
    const named = new Set(changes.map((c) => c.id));
    const stale: TokenEntry[] = [];
    const moved: TokenEntry[] = [];
    for (const e of this.byId.values()) {
      if (e.tenant !== tenant || named.has(e.id)) continue;
      if (e.expires !== Infinity && e.expires + EXPIRED_RETENTION_MS <= now) stale.push(e);
      else if (this.legacy.has(e.hash)) moved.push(e);
    }
    for (const e of stale) changes.push(e.change(null, true));
    for (const e of moved) changes.push(e.change());
    const record: IdempotencyRecord | undefined = idem && answer ? { key: idem.key, fingerprint: idem.fingerprint, expiresAt: idem.expiresAt, render: () => idem.answer(answer) } : undefined;
    const committed = await this.port.commitCatalog(tenant, changes, 'tokens', record);
    if (idem && typeof committed === 'object' && committed.replayed) {
      idem.replayed = committed.replayed;
      return true;
    }
    if (committed === false) {
      // No store yet: pending records in _system (the legacy shape), moved into the log later.
      const ops: Array<{ type: 'put'; key: string; value: string } | { type: 'del'; key: string }> = [];
      for (const c of changes) {
        const e = this.byId.get(c.id);
        if (c.record === null) {
          if (e) ops.push({ type: 'del', key: 'token:' + e.hash });
          continue;
        }
        const r = c.record as unknown as TokenCatalogRecord;
        ops.push({ type: 'put', key: 'token:' + r.hash, value: JSON.stringify({ tenant, created: r.created, id: c.id, expires_at: r.expires_at }) });
        this.legacy.add(r.hash);
      }
      await this.db.batch(ops, { sync: true });
      for (const e of stale) this.unindex(e);
      return false;
    }
    // every legacy record of the tenant is in its log now (written, moved or removed)
    const gone = [...this.byId.values()].filter((e) => e.tenant === tenant && this.legacy.has(e.hash));
    if (gone.length) await this.db.batch(gone.map((e) => ({ type: 'del' as const, key: 'token:' + e.hash })), { sync: true });
    for (const e of gone) this.legacy.delete(e.hash);
    for (const e of stale) this.unindex(e);
    return false;
  }
}
