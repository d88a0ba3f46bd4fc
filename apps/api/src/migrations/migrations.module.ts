import { Inject, Logger, Module } from '@nestjs/common';
import { Migrations, type MigrationRecord, type SubmitInput } from '@mmdb/migrations';
import type { SqlEngine } from '@mmdb/sql';
import type { EnginePeers } from '../tenancy/engines';
import type { SqlTenantEngine } from '../query/query.module';
import { DbError, ERROR_CATALOGUE, type JsonValue, type Row, type TableManifest } from '@mmdb/core';
import type { TenantStore } from '@mmdb/storage';
import { esRowFor } from '@mmdb/es-compat';
import { APP_CONFIG, type AppConfig } from '../config';
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
    private readonly cutover: AppConfig['migrationCutover'] = 'switch',
    private readonly inPlace = true,
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
      cutover: this.cutover,
      inPlace: this.inPlace,
      // An Elasticsearch mapping change over documents holding a new field: each row's typed columns by ES's rules.
      reshapers: { es: (row: Row, target: TableManifest) => esRowFor(row as Record<string, JsonValue>, target.id, target.description) as Row },
      onError: (id, e) => this.log.warn(`migration ${id}: ${(e as Error)?.message ?? String(e)}`),
      onRows: (n) => this.metrics.migrationRows.inc({ tenant: this.tenant }, n),
      onState: () => {
        for (const [state, n] of Object.entries(m.stateCounts())) this.metrics.migrationState.set({ tenant: this.tenant, state }, n);
      },
    });
    this.migrations = m;
    await m.attach();
    // ALTER TABLE through /sql runs as a migration with auto-cutover, answered when complete.
    const sql = peers.engine<SqlTenantEngine>('sql')?.engine;
    if (sql) sql.schemaChanger = async (c, o) => void (await this.runToCompletion({ schema: c.schema, ...(c.toml !== undefined ? { manifest: c.toml } : { operations: c.operations as never }) }, o.actor ?? 'sql'));
  }

  /**
   * A schema change (POST /schemas with a changed manifest, ALTER TABLE) as an online migration
   * with auto-cutover: resolves with it once Completed; a Failed or Aborted one is the error
   * its reason names (e.g. `check_violation`, with the offending keys).
   */
  async runToCompletion(input: SubmitInput, actor: string, internal: { readonly reshape?: string } = {}): Promise<MigrationRecord> {
    const m = this.migrations;
    if (!m) throw new DbError('service_unavailable', 'migrations are not attached yet', { retry: true });
    const r = await m.submit({ ...input, auto_cutover: true }, actor, undefined, internal);
    const end = await m.waitFor(r.id);
    if (end.state === 'Completed') return end;
    // The new shape's refusals name its shadow table: the user knows the table.
    const reason = end.shadow ? (end.reason ?? '').split(end.shadow).join(end.schema) : end.reason;
    const [code, ...rest] = (reason || 'conflict: the migration did not complete').split(': ');
    const known = Object.prototype.hasOwnProperty.call(ERROR_CATALOGUE, code);
    throw new DbError((known ? code : 'conflict') as never, `schema change ran as migration ${r.id}, which is ${end.state}: ${known ? rest.join(': ') : reason}`, {
      migration: r.id,
      offending_keys: end.offending_keys as JsonValue,
    });
  }

  async close(): Promise<void> {
    await this.migrations?.close();
  }
}

/** Online schema migrations (spec §2.8, §3.1, §4.12; apps/api/README.md). */
@Module({ controllers: [MigrationsController] })
export class MigrationsModule {
  constructor(tenants: TenantRegistry, metrics: Metrics, @Inject(APP_CONFIG) config: AppConfig) {
    tenants.registerEngine('migrations', (ctx) => new MigrationsEngine(ctx.tenant, metrics, config.migrationCutover, config.migrationInPlace));
  }
}
