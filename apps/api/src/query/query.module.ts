import { Inject, Module } from '@nestjs/common';
import { APP_CONFIG, type AppConfig, type QueryLimitsConfig } from '../config';
import { SqlEngine, tableCachePool } from '@mmdb/sql';
import type { TenantStore } from '@mmdb/storage';
import type { FtsParticipant } from '@mmdb/fts';
import type { VectorParticipant } from '@mmdb/vector';
import type { GraphIndex } from '@mmdb/graph';
import type { EnginePeers } from '../tenancy/engines';
import { TenantRegistry } from '../tenancy/tenant-registry';
import { QueryController } from './query.controller';
import { QueryRegistry } from './query.registry';
import { QueryRunner } from './query.runner';

/**
 * The SQL engine of a tenant: created when its store opens, its executor's Sources port filled
 * with the tenant's full-text, vector and graph readers (the Policy port stays NO_POLICY until
 * row-level security); registers the CHECK evaluator.
 */
export class SqlTenantEngine {
  engine: SqlEngine | null = null;
  constructor(readonly tenant: string, readonly limits?: QueryLimitsConfig) {}
  attach(store: TenantStore, peers: EnginePeers): void {
    this.engine = new SqlEngine(store, this.tenant, {
      sources: { fts: peers.engine<FtsParticipant>('fts'), vector: peers.engine<VectorParticipant>('vector'), graph: peers.engine<GraphIndex>('graph') },
      limits: this.limits,
      ...(this.limits?.tableCacheBytes !== undefined ? { tableCacheBytes: this.limits.tableCacheBytes } : {}),
    });
    store.setCheckEvaluator(this.engine.checkEvaluator);
  }
}

/** Spec §4.4 and §4.5: POST /query (plan trees), POST /sql, POST /v1/queries/{id}/cancel. */
@Module({ controllers: [QueryController], providers: [QueryRegistry, QueryRunner], exports: [QueryRunner] })
export class QueryModule {
  constructor(tenants: TenantRegistry, @Inject(APP_CONFIG) config: AppConfig) {
    // one table-cache budget for the process (DB_TABLE_CACHE_BYTES), every tenant's cache draws from it
    tableCachePool.budgetBytes = config.tableCacheBytes;
    // the tenant's query limits: the server's, overridden per tenant (DB_TENANT_QUERY_LIMITS)
    const limitsOf = (tenant: string): QueryLimitsConfig => ({ ...config.queryLimits, ...config.tenantQueryLimits[tenant.toUpperCase()] });
    tenants.registerEngine('sql', (ctx) => new SqlTenantEngine(ctx.tenant, limitsOf(ctx.tenant)));
  }
}
