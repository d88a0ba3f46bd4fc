import { Logger, Module } from '@nestjs/common';
import { Migrations } from '@mmdb/migrations';
import type { SqlEngine } from '@mmdb/sql';
import type { EnginePeers } from '../tenancy/engines';
import type { SqlTenantEngine } from '../query/query.module';
import { DbError, type Row, type TableManifest } from '@mmdb/core';
import type { TenantStore } from '@mmdb/storage';
import { Metrics } from '../health/metrics.service';
import { TenantRegistry } from '../tenancy/tenant-registry';
import { MigrationsController } from './migrations.controller';

/** A tenant's migrations: created when its store opens; resumes unfinished ones (backfill, cleanup). */
export class MigrationsEngine {
  migrations: Migrations | null = null;
  private readonly log = new Logger('Migrations');
  constructor(
    readonly tenant: string,
    private readonly metrics: Metrics,
  ) {}

  async attach(store: TenantStore, peers: EnginePeers): Promise<void> {
    // The tenant's SQL engine (QueryModule attaches before this module), for `using` expressions.
    const sqlOf = (): SqlEngine => {
      const e = peers.engine<SqlTenantEngine>('sql')?.engine;
      if (!e) throw new DbError('internal_error', 'no SQL engine is attached to this store');
      return e;
    };
    const m = new Migrations(store, {
      // `using` over a row inside its commit (dual writes, backfill): the SQL engine's expression evaluator.
      evaluate: (expr: string, row: Row, manifest: TableManifest) => sqlOf().rowEvaluator(expr, row, manifest),
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
