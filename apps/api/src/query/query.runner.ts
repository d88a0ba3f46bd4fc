import { Injectable } from '@nestjs/common';
import { DbError, newUlid } from '@mmdb/core';
import { NO_POLICY, type QueryOptions, type SqlEngine } from '@mmdb/sql';
import { Metrics } from '../health/metrics.service';
import type { TenantHandle } from '../tenancy/tenant-registry';
import type { SqlTenantEngine } from './query.module';
import { QueryRegistry } from './query.registry';
import { userPolicy } from '../security/policy';
import { withoutVector } from '../security/billing';

/**
 * Runs a query of any surface on the tenant's one plan executor (the SQL engine), measured the
 * same way for all of them: `db_query_latency_ms{surface}`, `db_plan_cache_hits_total{surface}`,
 * and registered for POST /v1/queries/{id}/cancel under its query id.
 */
@Injectable()
export class QueryRunner {
  constructor(private readonly registry: QueryRegistry, private readonly metrics: Metrics) {}

  engine(t: TenantHandle): SqlEngine {
    const e = t.engine<SqlTenantEngine>('sql').engine;
    if (!e) throw new DbError('service_unavailable', 'SQL engine not attached yet');
    return e;
  }

  /**
   * The query options of a request: the acting user's policy (grants and row-level security) on
   * every leaf, unless the user is the owner. Plans prepared under a policy are cached per user
   * and catalogue version, so a change to users or policies takes effect on the next request.
   */
  options(t: TenantHandle, engine: SqlEngine, queryId: string): QueryOptions {
    const a = t.acting;
    const vectorOff = a?.catalog.addons.get('vector') === false;
    if (!a) return { queryId };
    // the acting user names who ran what a statement records (ALTER TABLE's migration audit)
    if (a.isOwner && !vectorOff) return { queryId, actor: a.name };
    const base = a.isOwner ? NO_POLICY : userPolicy(a, engine);
    return { queryId, actor: a.name, policy: vectorOff ? withoutVector(base) : base, policyKey: `${a.name}#${a.catalog.version}${vectorOff ? '#novector' : ''}` };
  }

  async run<T>(t: TenantHandle, surface: string, fn: (engine: SqlEngine, opts: QueryOptions) => Promise<T>, queryId: string = newUlid()): Promise<T> {
    const engine = this.engine(t);
    const t0 = performance.now();
    const hits = engine.planCache.hits;
    this.registry.begin(queryId, t.tenant, engine);
    try {
      return await fn(engine, this.options(t, engine, queryId));
    } finally {
      this.registry.end(queryId);
      this.metrics.queryLatency.observe({ surface }, performance.now() - t0);
      if (engine.planCache.hits > hits) this.metrics.planCacheHits.inc({ surface }, engine.planCache.hits - hits);
    }
  }
}
