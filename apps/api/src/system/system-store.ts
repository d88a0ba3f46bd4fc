import * as crypto from 'crypto';
import * as fs from 'fs';
import * as path from 'path';
import { ClassicLevel } from 'classic-level';
import { DbError, isUlid, newUlid } from '@mmdb/core';

/** What a bearer token resolves to. */
export interface Principal {
  readonly tenant: string | null;
  readonly operator: boolean;
}

export interface TenantRecord {
  readonly tenant: string;
  readonly created: number;
}

interface TokenRecord {
  readonly tenant: string;
  readonly created: number;
}

/** sha256 of a token; only this is ever stored. Tokens are 256-bit random, so a fast hash suffices. */
export function hashToken(token: string): string {
  return crypto.createHash('sha256').update(token, 'utf8').digest('hex');
}

/** A fresh opaque token: `mmdb_` + 32 random bytes, base64url. */
export function newToken(): string {
  return 'mmdb_' + crypto.randomBytes(32).toString('base64url');
}

/**
 * The service's own small store (`<dataDir>/_system`, classic-level): tenants and the
 * hashes of their tokens. All token hashes are kept in memory for the auth path.
 */
export class SystemStore {
  private readonly tokens = new Map<string, TokenRecord>();
  private readonly tenants = new Map<string, TenantRecord>();
  /**
   * Tokens already resolved, token → tenant, so the auth path hashes a token once rather than
   * on every request. Only tenant tokens that resolved go in (unknown tokens are not kept, so
   * garbage cannot fill it); cleared when it reaches its cap; a revoked token is dropped.
   */
  private readonly resolved = new Map<string, string>();
  static readonly RESOLVED_CAP = 10_000;

  private constructor(private readonly db: ClassicLevel<string, string>) {}

  static async open(dataDir: string): Promise<SystemStore> {
    fs.mkdirSync(dataDir, { recursive: true });
    const db = new ClassicLevel<string, string>(path.join(dataDir, '_system'), { valueEncoding: 'utf8' });
    await db.open();
    const s = new SystemStore(db);
    for await (const [k, v] of db.iterator()) {
      if (k.startsWith('tenant:')) s.tenants.set(k.slice(7), JSON.parse(v));
      else if (k.startsWith('token:')) s.tokens.set(k.slice(6), JSON.parse(v));
    }
    return s;
  }

  async close(): Promise<void> {
    await this.db.close();
  }

  /** The tenant a token belongs to, or undefined (remembers a token that resolved). */
  tenantOfToken(token: string): string | undefined {
    const hit = this.resolved.get(token);
    if (hit !== undefined) return hit;
    const tenant = this.tokens.get(hashToken(token))?.tenant;
    if (tenant !== undefined) {
      if (this.resolved.size >= SystemStore.RESOLVED_CAP) this.resolved.clear();
      this.resolved.set(token, tenant);
    }
    return tenant;
  }

  /** The tenant of a token resolved before (no hashing), or undefined. */
  knownTenantToken(token: string): string | undefined {
    return this.resolved.get(token);
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

  /** Creates a tenant (a new ULID unless given) with one new token; the token is returned once. */
  async createTenant(tenant: string = newUlid()): Promise<{ tenant: string; token: string }> {
    tenant = tenant.toUpperCase();
    if (!isUlid(tenant)) throw new DbError('validation_failed', 'tenant must be a ULID');
    if (this.tenants.has(tenant)) throw new DbError('conflict', `tenant ${tenant} already exists`);
    const token = newToken();
    await this.ensureTenant(tenant, token);
    return { tenant, token };
  }

  /** Makes sure the tenant exists and the token is one of its tokens (idempotent). */
  async ensureTenant(tenant: string, token: string): Promise<{ created: boolean }> {
    tenant = tenant.toUpperCase();
    const hash = hashToken(token);
    const owner = this.tokens.get(hash);
    if (owner && owner.tenant !== tenant) throw new DbError('conflict', 'this token already belongs to another tenant');
    const created = !this.tenants.has(tenant);
    const now = Date.now();
    const ops: Array<{ type: 'put'; key: string; value: string }> = [];
    const tRec: TenantRecord = this.tenants.get(tenant) ?? { tenant, created: now };
    if (created) ops.push({ type: 'put', key: 'tenant:' + tenant, value: JSON.stringify(tRec) });
    const kRec: TokenRecord = owner ?? { tenant, created: now };
    if (!owner) ops.push({ type: 'put', key: 'token:' + hash, value: JSON.stringify(kRec) });
    if (ops.length) await this.db.batch(ops, { sync: true });
    this.tenants.set(tenant, tRec);
    this.tokens.set(hash, kRec);
    return { created };
  }

  /** Issues one more token for an existing tenant. */
  async issueToken(tenant: string): Promise<string> {
    tenant = tenant.toUpperCase();
    if (!this.tenants.has(tenant)) throw new DbError('not_found', `tenant ${tenant} does not exist`);
    const token = newToken();
    await this.ensureTenant(tenant, token);
    return token;
  }

  /** Revokes a token; returns whether it existed. */
  async revokeToken(token: string): Promise<boolean> {
    const hash = hashToken(token);
    if (!this.tokens.has(hash)) return false;
    await this.db.del('token:' + hash, { sync: true } as any);
    this.tokens.delete(hash);
    this.resolved.delete(token);
    return true;
  }
}
