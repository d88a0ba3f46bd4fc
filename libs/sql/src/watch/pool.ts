/**
 * Row subscriptions compiled alike share one compiled query: the same source (SQL text or plan,
 * and the values of its `$n`), the same policy (its plan-cache key: the user and catalogue
 * version) and the same manifest of the followed table (by identity, as the plan cache checks
 * freshness). Matching a burst is a function of the query and the burst's frames alone, so
 * subscribers holding the same instance can share one result per burst (apps/api memoizes the
 * event it serializes on the instance). Aggregate subscriptions hold per-subscriber groups and
 * are never shared. Entries are weak: a query no stream holds any more is collected and its
 * entry dropped.
 */
export interface Shareable {
  /** What its result depends on besides the frames (identity-compared). */
  readonly manifest: unknown;
}

const pools = new WeakMap<object, Map<string, WeakRef<Shareable>>>();
const cleanup = new FinalizationRegistry<{ pool: Map<string, WeakRef<Shareable>>; key: string; ref: WeakRef<Shareable> }>(({ pool, key, ref }) => {
  if (pool.get(key) === ref) pool.delete(key);
});

/** The instance already compiled under `key` for `owner` (an engine) if it is still fresh, else `q` (which becomes it). */
export function intern<T extends Shareable>(owner: object, key: string, q: T): T {
  let pool = pools.get(owner);
  if (!pool) pools.set(owner, (pool = new Map()));
  const have = pool.get(key)?.deref() as T | undefined;
  if (have && have.manifest === q.manifest) return have;
  const ref = new WeakRef<Shareable>(q);
  pool.set(key, ref);
  cleanup.register(q, { pool, key, ref });
  return q;
}
