import { Module } from '@nestjs/common';
import { SqlEngine } from '@mmdb/sql';
import type { TenantStore } from '@mmdb/storage';
import { TenantRegistry } from '../tenancy/tenant-registry';
import { QueryController } from './query.controller';
import { QueryRegistry } from './query.registry';

/** The SQL engine of a tenant: created when its store opens; registers the CHECK evaluator. */
export class SqlTenantEngine {
  engine: SqlEngine | null = null;
  constructor(readonly tenant: string) {}
  attach(store: TenantStore): void {
    this.engine = new SqlEngine(store, this.tenant);
    store.setCheckEvaluator(this.engine.checkEvaluator);
  }
}

/** Spec §4.4 and §4.5: POST /query (plan trees), POST /sql, POST /v1/queries/{id}/cancel. */
@Module({ controllers: [QueryController], providers: [QueryRegistry] })
export class QueryModule {
  constructor(tenants: TenantRegistry) {
    tenants.registerEngine('sql', (ctx) => new SqlTenantEngine(ctx.tenant));
  }
}
