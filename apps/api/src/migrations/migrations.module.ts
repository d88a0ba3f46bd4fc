import { Logger, Module } from '@nestjs/common';
import { Migrations } from '@mmdb/migrations';
import { SqlEngine } from '@mmdb/sql';
import type { Row } from '@mmdb/core';
import type { TenantStore } from '@mmdb/storage';
import { Metrics } from '../health/metrics.service';
import { TenantRegistry } from '../tenancy/tenant-registry';
import { MigrationsController } from './migrations.controller';
import { sqlRowEvaluator } from './using';

/** A tenant's migrations: created when its store opens; resumes unfinished ones (backfill, cleanup). */
export class MigrationsEngine {
  migrations: Migrations | null = null;
  private readonly log = new Logger('Migrations');
  constructor(
    readonly tenant: string,
    private readonly metrics: Metrics,
  ) {}

  async attach(store: TenantStore): Promise<void> {
    let sql: SqlEngine | null = null;
    const m = new Migrations(store, {
      evaluate: (schema: string, expr: string, row: Row) => sqlRowEvaluator((sql ??= new SqlEngine(store, this.tenant)), store, schema, expr, row),
      onError: (id, e) => this.log.warn(`migration ${id}: ${(e as Error)?.message ?? String(e)}`),
      onRows: (n) => this.metrics.migrationRows.inc({ tenant: this.tenant }, n),
      onState: () => {
        for (const [state, n] of Object.entries(m.stateCounts())) this.metrics.migrationState.set({ tenant: this.tenant, state }, n);
      },
    });
    this.migrations = m;
    await m.attach();
  }

  async close(): Promise<void> {
    await this.migrations?.close();
  }
}

/** Online schema migrations (spec §2.8, §3.1, §4.12; apps/api/README.md). */
@Module({ controllers: [MigrationsController] })
export class MigrationsModule {
  constructor(tenants: TenantRegistry, metrics: Metrics) {
    tenants.registerEngine('migrations', (ctx) => new MigrationsEngine(ctx.tenant, metrics));
  }
}
