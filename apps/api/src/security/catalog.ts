/**
 * A tenant's database users and row-level security (our design for spec §5.9), kept in the
 * tenant's own log as catalogue entries (`{op:'catalog', kind:'user', id:name, record}` and
 * `kind:'policy'`), so a follower or a restored copy of the log enforces them too. Loaded once per
 * open store and refreshed from every catalogue change a frame carries (committed here or applied
 * from a leader): a change takes effect on the next request.
 */
import { DbError, type JsonValue } from '@mmdb/core';
import type { CatalogChange, TenantStore } from '../tenancy/store-port';

export const PRIVILEGES = ['read', 'insert', 'update', 'delete', 'manage'] as const;
export type Privilege = (typeof PRIVILEGES)[number];

/** The implicit user of every token issued without one (the tenant's first tokens): full access. */
export const OWNER = 'owner';

/** A user's record in the catalogue. `grants`: schema id (or `*`) → privileges. */
export interface UserRecord {
  readonly grants: Readonly<Record<string, readonly Privilege[]>>;
  /** Values a policy reads with `user_attr('name')` (e.g. region). */
  readonly attributes: Readonly<Record<string, string>>;
  /** May issue, rotate and revoke tokens (never for a user broader than itself). */
  readonly manage_tokens: boolean;
  readonly created: number;
}

/** A row-level security policy: `using` filters reads, `check` must hold for a written row (SQL boolean text). */
export interface PolicyRecord {
  readonly schema: string;
  /** Users it applies to; `*` for every user but the owner. */
  readonly users: readonly string[];
  readonly using?: string;
  readonly check?: string;
  /** A column mask: what the users see in place of `column`'s stored value. */
  readonly mask?: ColumnMask;
}

export const MASK_KINDS = ['null', 'redact', 'hash', 'partial', 'expr'] as const;
/** `null`; `redact` ('****'); `hash` (hex SHA-256); `partial` ('****' + the last `n` characters); `expr` (SQL over the row). */
export interface ColumnMask {
  readonly column: string;
  readonly kind: (typeof MASK_KINDS)[number];
  readonly n?: number;
  readonly expr?: string;
}

export class SecurityCatalog {
  readonly users = new Map<string, UserRecord>();
  readonly policies = new Map<string, PolicyRecord>();
  /** Bumped by every change: part of the plan-cache key of policy-bound plans. */
  version = 0;
  /** Credits the operator granted (`kind:'credit', id:'grant'`), or null: unlimited (the default). */
  credits: number | null = null;
  /** Add-ons the operator switched (`kind:'addon', id:name, record:{enabled}`); absent: enabled. */
  readonly addons = new Map<string, boolean>();
  /**
   * Credits spent by successful requests, in total and per request class, in the current period.
   * Kept in the tenant's log as the entry `{kind:'credit', id:'usage', record:{used, by_class,
   * period}}`, written at most once per flush interval (billing.ts), so it survives a restart and
   * reaches followers; a serving node's memory runs ahead of the log by at most that interval.
   */
  used = 0;
  readonly usedBy = new Map<string, number>();
  /** The credit period: set by a grant with `reset` (its `period`); a usage entry of another period is ignored. */
  period = '';

  static async load(store: TenantStore): Promise<SecurityCatalog> {
    const c = new SecurityCatalog();
    for (const e of await store.catalogEntries('user')) c.apply({ op: 'catalog', kind: 'user', id: e.id, record: e.record });
    for (const kind of ['policy', 'credit', 'addon'] as const) {
      // the credit grant (its period) before the usage of that period
      const entries = (await store.catalogEntries(kind)).sort((a, b) => Number(a.id === 'usage') - Number(b.id === 'usage'));
      for (const e of entries) c.apply({ op: 'catalog', kind, id: e.id, record: e.record });
    }
    store.changes.subscribe((f) => {
      for (const ch of f.changes) if (ch.op === 'catalog') c.apply(ch as CatalogChange);
    });
    return c;
  }

  apply(ch: CatalogChange): void {
    if (ch.kind === 'credit' && ch.id === 'usage') {
      const r = ch.record as { used?: unknown; by_class?: Record<string, unknown>; period?: unknown } | null;
      if (!r || String(r.period ?? '') !== this.period) return;
      // totals of the period: never below what this node already counted (its own flush comes back behind it)
      if (typeof r.used === 'number') this.used = Math.max(this.used, r.used);
      for (const [k, v] of Object.entries(r.by_class ?? {})) if (typeof v === 'number') this.usedBy.set(k, Math.max(this.usedBy.get(k) ?? 0, v));
      return;
    }
    if (ch.kind === 'credit') {
      const r = ch.record as { credits?: unknown } | null;
      this.credits = r && typeof r.credits === 'number' ? r.credits : null;
      // a new grant starts a new period: what was spent before is not held against it
      if (r && (r as { reset?: unknown }).reset === true) {
        this.used = 0;
        this.usedBy.clear();
        this.period = String((r as { period?: unknown }).period ?? '');
      }
      return;
    }
    if (ch.kind === 'addon') {
      const r = ch.record as { enabled?: unknown } | null;
      if (r === null) this.addons.delete(ch.id);
      else this.addons.set(ch.id, r.enabled !== false);
      return;
    }
    if (ch.kind !== 'user' && ch.kind !== 'policy') return;
    const map = (ch.kind === 'user' ? this.users : this.policies) as Map<string, unknown>;
    if (ch.record === null) map.delete(ch.id);
    else map.set(ch.id, ch.record);
    this.version++;
  }

  user(name: string): UserRecord | undefined {
    return this.users.get(name);
  }

  /** The policies of a schema that bind a user (never the owner). */
  policiesFor(schema: string, user: string): PolicyRecord[] {
    const out: PolicyRecord[] = [];
    for (const p of this.policies.values()) if (p.schema === schema && (p.users.includes('*') || p.users.includes(user))) out.push(p);
    return out;
  }
}

/** The database user a request acts as (derived from its token: the token's `user`, else `owner`). */
export class Acting {
  constructor(
    readonly name: string,
    readonly record: UserRecord | null,
    readonly catalog: SecurityCatalog,
  ) {}

  get isOwner(): boolean {
    return this.name === OWNER;
  }

  can(schema: string, priv: Privilege): boolean {
    if (this.isOwner) return true;
    const g = this.record?.grants;
    if (!g) return false;
    return !!(g[schema]?.includes(priv) || g['*']?.includes(priv));
  }

  /** 403 forbidden unless the user holds `priv` on `schema`. */
  require(schema: string, priv: Privilege): void {
    if (!this.can(schema, priv)) throw new DbError('forbidden', `user ${this.name} has no ${priv} grant on schema ${schema}`, { schema, privilege: priv });
  }

  get manageTokens(): boolean {
    return this.isOwner || !!this.record?.manage_tokens;
  }

  /** Whether every grant of `other` is also one of this user's (a token minted for it is no broader). */
  covers(other: UserRecord | null): boolean {
    if (this.isOwner) return true;
    if (!other) return false; // only the owner mints owner tokens
    if (other.manage_tokens && !this.manageTokens) return false;
    for (const [schema, privs] of Object.entries(other.grants)) for (const p of privs) if (!this.can(schema, p)) return false;
    return true;
  }
}

/** Validates a user body `{name?, grants?, attributes?, manage_tokens?}`. */
export function parseUser(body: unknown, now: number, prev?: UserRecord): UserRecord {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw new DbError('validation_failed', 'body must be a JSON object');
  const b = body as Record<string, unknown>;
  const grants: Record<string, Privilege[]> = {};
  const g = b.grants ?? prev?.grants ?? {};
  if (typeof g !== 'object' || g === null || Array.isArray(g)) throw new DbError('validation_failed', 'grants must be an object {schema: [privilege]}', { field: 'grants' });
  for (const [schema, privs] of Object.entries(g)) {
    if (!Array.isArray(privs) || privs.some((p) => !(PRIVILEGES as readonly unknown[]).includes(p))) {
      throw new DbError('validation_failed', `grants.${schema} must be an array of ${PRIVILEGES.join(', ')}`, { field: `grants.${schema}` });
    }
    grants[schema] = [...new Set(privs as Privilege[])];
  }
  const a = b.attributes ?? prev?.attributes ?? {};
  if (typeof a !== 'object' || a === null || Array.isArray(a) || Object.values(a).some((v) => typeof v !== 'string')) {
    throw new DbError('validation_failed', 'attributes must be an object of strings', { field: 'attributes' });
  }
  const m = b.manage_tokens ?? prev?.manage_tokens ?? false;
  if (typeof m !== 'boolean') throw new DbError('validation_failed', 'manage_tokens must be a boolean', { field: 'manage_tokens' });
  return { grants, attributes: a as Record<string, string>, manage_tokens: m, created: prev?.created ?? now };
}

export const USER_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

export function userChange(name: string, rec: UserRecord | null): CatalogChange {
  return { op: 'catalog', kind: 'user', id: name, record: rec as unknown as JsonValue };
}
