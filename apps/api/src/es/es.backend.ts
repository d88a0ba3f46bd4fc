import { AsyncLocalStorage } from 'async_hooks';
import { DbError, stringifyJson, type JsonValue, type TableManifest } from '@mmdb/core';
import { checkRows, rowVisible } from '../security/row-gate';
import type { PlanNode } from '@mmdb/plan';
import { formatResult } from '@mmdb/sql';
import type { EsBackend, EsChange, EsTable } from '@mmdb/es-compat';
import type { PkTuple, StoredRow } from '@mmdb/storage';
import type { TenantHandle } from '../tenancy/tenant-registry';
import type { QueryRunner } from '../query/query.runner';
import type { MigrationsEngine } from '../migrations/migrations.module';

const DESCRIPTION = /^description\s*=\s*("(?:[^"\\]|\\.)*")\s*$/m;

/**
 * The composition-root implementation of the ES surface's port: manifests of the tenant store,
 * reads through the tenant's one plan executor (QueryRunner, surface "es"), commits through the tenant handle.
 */
export class StoreEsBackend implements EsBackend {
  private readonly tableCache = new WeakMap<TableManifest, EsTable>();
  /**
   * The request's handle (carrying its acting database user): the service is shared by every
   * request of the tenant, so the user travels with the async context (`EsController` runs each
   * request inside `StoreEsBackend.request.run(handle, …)`). Reads then run under that user's
   * policy (grants, row-level security) and writes are checked against its grants.
   */
  static readonly request = new AsyncLocalStorage<TenantHandle>();

  constructor(private readonly t0: TenantHandle, private readonly runner: QueryRunner) {}

  private get t(): TenantHandle {
    return StoreEsBackend.request.getStore() ?? this.t0;
  }

  tables(): EsTable[] {
    const a = this.t.acting;
    // an index the user may not read does not exist for it (as in the schema list); nor does a
    // migration's shadow (store.tables() leaves internal tables out)
    return this.t.store.tables().filter((m) => !a || a.can(m.id, 'read')).map((m) => {
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

  /** A mapping change over stored documents: an online migration, every row reshaped by the ES surface (esRowFor). */
  async migrate(id: string, toml: string): Promise<void> {
    const t = this.t;
    const engine = t.engine<MigrationsEngine>('migrations');
    if (!engine?.migrations) throw new DbError('service_unavailable', 'migrations are not attached yet', { retry: true });
    await engine.runToCompletion({ schema: id, manifest: toml }, t.acting?.name ?? 'es', { reshape: 'es' });
  }

  async read(plan: PlanNode): Promise<Array<Record<string, JsonValue>>> {
    const r = await this.runner.run(this.t, 'es', (engine, opts) => engine.runPlan(plan, opts));
    return (formatResult(r) as { rows: Array<Record<string, JsonValue>> }).rows;
  }

  async commit(changes: EsChange[]): Promise<number> {
    const t = this.t;
    const a = t.acting;
    if (a && !a.isOwner) {
      for (const c of changes) {
        if (c.op === 'schema_put') throw new DbError('forbidden', `user ${a.name} may not create indices (owner only)`);
        if (c.op === 'delete') {
          a.require(c.schema, 'delete');
          if (!(await rowVisible(t, a, c.schema, c.pk))) throw new DbError('forbidden', `the row-level security policy of ${c.schema} does not let user ${a.name} delete this row`);
        } else {
          a.require(c.schema, 'insert');
          a.require(c.schema, 'update');
          const pk = t.store.manifest(c.schema)?.primary_key.map((k) => c.row[k] ?? null);
          if (pk && !(await rowVisible(t, a, c.schema, pk)) && (await t.store.getRowJson(c.schema, pk))) {
            throw new DbError('forbidden', `the row-level security policy of ${c.schema} does not let user ${a.name} write this row`);
          }
        }
      }
      for (const c of changes) if (c.op === 'put') await checkRows(t, a, c.schema, [c.row]);
    }
    try {
      const r = await t.commit({ changes: (await this.preconditions(changes)) as never });
      return r.lsn;
    } catch (e) {
      // an `insert` precondition met by a row another surface wrote meanwhile
      if (e instanceof DbError && e.code === 'conflict' && e.details.current_version !== undefined) throw new DbError('write_conflict', e.message, { ...e.details });
      throw e;
    }
  }

  /**
   * Each change's `expect` (the document the ES write read) as a storage precondition: a row the
   * write found absent must still be absent at commit (`insert`, no read here: a bulk of new
   * documents costs no point reads); a row it read must still be that document now, and the
   * commit must find it at the row version read now (`if_match`). So a write through /rows or
   * /sql landing between the ES write's read and its frame fails the commit (write_conflict)
   * instead of being overwritten.
   */
  private async preconditions(changes: EsChange[]): Promise<unknown[]> {
    const t = this.t;
    const INSERT = { kind: 'insert' };
    // a new document (the common _bulk item) needs no read: no promise per change
    if (changes.every((c) => c.op === 'schema_put' || !c.expect)) {
      return changes.map((c) => (c.op === 'schema_put' || c.expect === undefined ? c : c.op === 'put' ? { op: 'put', schema: c.schema, row: c.row, precondition: INSERT } : { op: 'delete', schema: c.schema, pk: c.pk, precondition: INSERT }));
    }
    // the rows the writes read, one store read per table (a replace batch: one getMany, not a get each)
    const pkOf = (c: Exclude<EsChange, { op: 'schema_put' }>): PkTuple => (c.op === 'delete' ? c.pk : (t.store.manifest(c.schema)?.primary_key ?? ['_id']).map((k) => c.row[k] ?? null));
    const reads = new Map<string, { pks: PkTuple[]; rows?: Array<StoredRow | undefined> }>();
    const at = changes.map((c) => {
      if (c.op === 'schema_put' || !c.expect || !t.store.manifest(c.schema)) return -1;
      let r = reads.get(c.schema);
      if (!r) reads.set(c.schema, (r = { pks: [] }));
      return r.pks.push(pkOf(c)) - 1;
    });
    await Promise.all([...reads].map(async ([schema, r]) => void (r.rows = await t.store.getRows(schema, r.pks))));
    return changes.map((c, i) => {
      if (c.op === 'schema_put' || c.expect === undefined) return c;
      const { expect, ...change } = c;
      if (expect === null) return { ...change, precondition: INSERT };
      const cur = at[i] < 0 ? undefined : reads.get(c.schema)!.rows![at[i]];
      const same = cur !== undefined && Number(cur.values._version ?? 1) === expect.version && Number(cur.values._seq_no ?? 0) === expect.seqNo;
      if (!same) throw new DbError('write_conflict', `row ${c.schema}/${stringifyJson(pkOf(c))} changed since the ES write read it`, cur ? { current_version: cur.version } : {});
      return { ...change, precondition: { kind: 'if_match', version: cur.version } };
    });
  }

  async drop(id: string): Promise<void> {
    const a = this.t.acting;
    if (a) a.require(id, 'manage');
    await this.t.write((s) => s.dropSchema(id));
  }

  lastLsn(): number {
    return this.t.store.lastLsn;
  }

  async tableLsn(id: string): Promise<number> {
    // the store's own table LSN, not a snapshot's: a LevelDB snapshot per search took LevelDB's
    // mutex on the event loop twice (libs/storage point-snapshot.ts)
    return this.t.store.tableLsn(id);
  }
}
