/**
 * Credits and add-ons (spec §7.1 402 codes; our design, see apps/api/README.md "Credits and
 * add-ons"). Every tenant route has a request class with a documented cost; a request whose cost
 * exceeds the tenant's remaining credit gets 402 `quota_exceeded` (after auth and the rate
 * limit); a route of a disabled add-on gets 402 `addon_required` naming it. A request is charged
 * only when it succeeds (status < 400): refused and failed requests cost nothing.
 */
import { DbError } from '@mmdb/core';
import { forEachNode, type PlanNode } from '@mmdb/plan';
import type { LeafNode, Policy } from '@mmdb/sql';
import type { CatalogChange } from '../tenancy/store-port';
import type { SecurityCatalog } from './catalog';

/** The add-ons: surfaces the operator can switch per tenant (all enabled until switched off). */
export const ADDONS = ['vector', 'es', 'ask'] as const;
export type Addon = (typeof ADDONS)[number];

/** Request classes and their cost in credits. */
export const COSTS = { free: 0, read: 1, write: 2, query: 3, search: 3, es: 3, ask: 5 } as const;
export type RequestClass = keyof typeof COSTS;

/** The class and add-on of a tenant route from its method and path after `/v1/tenants/{tenant}/`. */
export function classify(method: string, rest: string): { cls: RequestClass; addon?: Addon } {
  // the first segment, up to a '/' or '?' (no arrays made: every tenant request runs this)
  let end = rest.length;
  for (let i = 0; i < rest.length; i++) {
    const c = rest.charCodeAt(i);
    if (c === 47 || c === 63) {
      end = i;
      break;
    }
  }
  const seg = rest.slice(0, end);
  const read = method === 'GET' || method === 'HEAD';
  switch (seg) {
    case 'rows':
    case 'schemas':
      return { cls: read ? 'read' : 'write' };
    case 'sql':
    case 'query':
      return { cls: 'query' };
    case 'vector':
      return { cls: rest.includes('/topk') ? 'search' : 'write', addon: 'vector' };
    case 'fts':
      return { cls: read ? 'search' : 'write' };
    case 'graph':
      return { cls: 'search' };
    case 'es':
      return { cls: 'es', addon: 'es' };
    case 'ask':
      return { cls: 'ask', addon: 'ask' };
    default:
      // tokens, users, policies, usage, credits, addons, watch setup: management is free
      return { cls: 'free' };
  }
}

/** 402 when the add-on is off or the credit cannot cover the cost. */
export function admit(c: SecurityCatalog, cls: RequestClass, addon?: Addon): void {
  if (addon && c.addons.get(addon) === false) throw new DbError('addon_required', `this endpoint needs the "${addon}" add-on, which is not enabled for this tenant`, { addon });
  const cost = COSTS[cls];
  if (cost > 0 && c.credits !== null && c.used + cost > c.credits) {
    throw new DbError('quota_exceeded', `credit exhausted: ${c.credits - c.used} of ${c.credits} credits left, a ${cls} request costs ${cost}`, { credits: c.credits, used: c.used, cost });
  }
}

export function charge(c: SecurityCatalog, cls: RequestClass): number {
  const cost = COSTS[cls];
  if (cost === 0) return 0;
  c.used += cost;
  c.usedBy.set(cls, (c.usedBy.get(cls) ?? 0) + cost);
  return cost;
}

/** `GET /v1/tenants/{tenant}/usage`. */
export function usage(c: SecurityCatalog) {
  return {
    credits: c.credits,
    used: c.used,
    remaining: c.credits === null ? null : Math.max(0, c.credits - c.used),
    by_class: Object.fromEntries(c.usedBy),
    costs: COSTS,
    addons: Object.fromEntries(ADDONS.map((a) => [a, c.addons.get(a) !== false])),
  };
}

/** `base` with vector_topk leaves refused (402 addon_required): the vector add-on is off, on every plan surface. */
export function withoutVector(base: Policy): Policy {
  return {
    leafFilter(leaf: LeafNode) {
      if (leaf.op === 'vector_topk') throw new DbError('addon_required', 'vector search needs the "vector" add-on, which is not enabled for this tenant', { addon: 'vector' });
      return base.leafFilter(leaf);
    },
    ...(base.leafMasks ? { leafMasks: (leaf: LeafNode) => base.leafMasks!(leaf) } : {}),
    ...(base.writeCheck ? { writeCheck: (schema: string) => base.writeCheck!(schema) } : {}),
    // a top-k the optimizer chose (SQL `ORDER BY emb <-> $1 LIMIT k`) is vector search too
    checkPlan(plan: PlanNode) {
      forEachNode(plan, (n) => {
        if (n.op === 'vector_topk') throw new DbError('addon_required', 'vector search needs the "vector" add-on, which is not enabled for this tenant', { addon: 'vector' });
      });
      base.checkPlan?.(plan);
    },
  };
}

/** How often a tenant's spent credits are written to its log (at most one frame per interval, only after a charge). */
export const USAGE_FLUSH_MS = 1000;
const pending = new WeakSet<SecurityCatalog>();

/** The usage entry of the catalogue's current totals. */
export function usageChange(c: SecurityCatalog): CatalogChange {
  return { op: 'catalog', kind: 'credit', id: 'usage', record: { used: c.used, by_class: Object.fromEntries(c.usedBy), period: c.period } };
}

/**
 * After a charge: writes the totals to the tenant's log within USAGE_FLUSH_MS (one entry for every
 * charge of the interval). A node that cannot commit (a follower) keeps its count in memory only.
 */
export function scheduleUsageFlush(c: SecurityCatalog, commit: (changes: CatalogChange[]) => Promise<unknown>, ms = USAGE_FLUSH_MS): void {
  if (pending.has(c)) return;
  pending.add(c);
  setTimeout(() => {
    pending.delete(c);
    commit([usageChange(c)]).catch(() => undefined);
  }, ms).unref();
}
