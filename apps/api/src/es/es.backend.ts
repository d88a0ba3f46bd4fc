import { type JsonValue, type TableManifest } from '@mmdb/core';
import type { PlanNode } from '@mmdb/plan';
import { formatResult } from '@mmdb/sql';
import type { EsBackend, EsChange, EsTable } from '@mmdb/es-compat';
import type { TenantHandle } from '../tenancy/tenant-registry';
import type { QueryRunner } from '../query/query.runner';

const DESCRIPTION = /^description\s*=\s*("(?:[^"\\]|\\.)*")\s*$/m;

/**
 * The composition-root implementation of the ES surface's port: manifests of the tenant store,
 * reads through the tenant's one plan executor (QueryRunner, surface "es"), commits through the tenant handle.
 */
export class StoreEsBackend implements EsBackend {
  private readonly tableCache = new WeakMap<TableManifest, EsTable>();

  constructor(private readonly t: TenantHandle, private readonly runner: QueryRunner) {}

  tables(): EsTable[] {
    return this.t.store.manifests().map((m) => {
      let e = this.tableCache.get(m);
      if (!e) {
        let description: string | undefined;
        const toml = this.t.store.schemaToml(m.id);
        const d = toml ? DESCRIPTION.exec(toml) : null;
        if (d) {
          try { description = JSON.parse(d[1]) as string; } catch { description = undefined; }
        }
        e = { id: m.id, description, columns: m.columns.map((c) => ({ name: c.name, ty: c.ty })), primaryKey: m.primary_key, fulltext: m.fulltext.map((f) => f.field),
          fulltextAllWords: m.fulltext.filter((f) => f.stopwords?.length === 0 && ['standard', 'simple', 'keyword'].includes(f.analyzer)).map((f) => f.field) };
        this.tableCache.set(m, e);
      }
      return e;
    });
  }

  async read(plan: PlanNode): Promise<Array<Record<string, JsonValue>>> {
    const r = await this.runner.run(this.t, 'es', (engine, opts) => engine.runPlan(plan, opts));
    return (formatResult(r) as { rows: Array<Record<string, JsonValue>> }).rows;
  }

  async commit(changes: EsChange[]): Promise<number> {
    const r = await this.t.commit({ changes: changes as never });
    return r.lsn;
  }

  async drop(id: string): Promise<void> {
    await this.t.write((s) => s.dropSchema(id));
  }

  lastLsn(): number {
    return this.t.store.lastLsn;
  }

  async tableLsn(id: string): Promise<number> {
    const s = this.t.store.snapshot();
    try {
      return s.tableLsn(id);
    } finally {
      await s.release();
    }
  }
}
