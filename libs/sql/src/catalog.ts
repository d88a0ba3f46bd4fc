/** Tables as SQL sees them: manifests of the store, with SQLite affinities and hidden columns. */
import { COLLATIONS, type Affinity, type Collation } from '@mmdb/plan';
import type { CommitRequest, CommitResult, Snapshot } from '@mmdb/storage';
import { isInternalTable, type ColumnDef, type TableManifest } from '@mmdb/core';
import { parse as parseToml } from 'smol-toml';
import type { TableInfo } from './exec/context';
import { affinityOf } from './affinity';

/** The part of the store the engine uses (TenantStore satisfies it). */
export interface SqlStore {
  manifest(id: string): TableManifest | undefined;
  manifests(): TableManifest[];
  schemaToml(id: string): string | undefined;
  registerSchema(toml: string): Promise<{ id: string; created: boolean }>;
  dropSchema(id: string): Promise<boolean>;
  commit(req: CommitRequest): Promise<CommitResult>;
  snapshot(): Snapshot;
  /** Every group applied to the indexes has been published to the table cache (TenantStore `settled`); absent: taken as true. */
  readonly settled?: boolean;
  /**
   * A snapshot for a query's reads (TenantStore.readSnapshot: the one LevelDB snapshot the store's
   * readers share until the next applied group, so a query creates none on the event loop).
   */
  readSnapshot?(): Snapshot;
}

/** The snapshot a query reads from: the store's shared one when it has one (SqlStore.readSnapshot). */
export function querySnapshot(store: SqlStore): Snapshot {
  return store.readSnapshot ? store.readSnapshot() : store.snapshot();
}

export const DEFAULT_NAMESPACE = 'main';
export const SQL_TYPE_PREFIX = 'sql:';

export function tyAffinity(c: ColumnDef): Affinity {
  switch (c.ty) {
    case 'i64': case 'timestamp': case 'bool': return 'integer';
    case 'f64': return 'real';
    case 'str': return 'text';
    default: return 'blob';
  }
}

/** A table as the binder and the executor see it (satisfies front/binder's BindTable). */
export interface SqlTable extends TableInfo {
  /** Visible columns in order, then hidden ones (`_rowid`). */
  readonly columns: ReadonlyArray<{ readonly name: string; readonly aff?: Affinity; readonly coll?: Collation; readonly hidden?: boolean }>;
  /** Column that `rowid` names, when there is one. */
  readonly rowid?: string;
  readonly manifest: TableManifest;
  /** Affinity per manifest column, in manifest order. */
  readonly affs: readonly Affinity[];
  /** Declared SQL type per column (from the column description `sql:TYPE`, else the manifest type). */
  readonly sqlTypes: readonly string[];
}

const cache = new WeakMap<TableManifest, SqlTable>();

export function sqlTable(store: SqlStore, m: TableManifest): SqlTable {
  const hit = cache.get(m);
  if (hit) return hit;
  let descs: Record<string, string> = {};
  const toml = store.schemaToml(m.id);
  if (toml && toml.includes(SQL_TYPE_PREFIX)) {
    try {
      const doc = parseToml(toml, { integersAsBigInt: 'asNeeded' }) as { columns?: Array<{ name: string; description?: string }> };
      for (const c of doc.columns ?? []) if (c.description?.startsWith(SQL_TYPE_PREFIX)) descs[c.name] = c.description.slice(SQL_TYPE_PREFIX.length);
    } catch {
      descs = {};
    }
  }
  // `sql:TYPE COLLATE NAME`: the declared type, then the column's collating sequence
  const colls = new Map<string, Collation>();
  for (const [name, d] of Object.entries(descs)) {
    const m = /\s+COLLATE\s+(\w+)$/i.exec(d);
    if (!m) continue;
    descs[name] = d.slice(0, m.index);
    const c = m[1].toLowerCase() as Collation;
    if (COLLATIONS.includes(c)) colls.set(name, c);
  }
  const sqlTypes = m.columns.map((c) => descs[c.name] ?? c.ty);
  const affs = m.columns.map((c) => (descs[c.name] !== undefined ? affinityOf(descs[c.name]) : tyAffinity(c)));
  const hidden = !!m.hidden_rowid;
  const intPk = m.primary_key.length === 1 && affs[m.columns.findIndex((c) => c.name === m.primary_key[0])] === 'integer' ? m.primary_key[0] : undefined;
  const t: SqlTable = {
    id: m.id,
    manifest: m,
    affs,
    sqlTypes,
    pk: m.primary_key,
    hiddenRowid: hidden,
    cols: [...m.columns.map((c, i) => ({ name: c.name, aff: affs[i] })), { name: '#version' }],
    columns: m.columns.map((c, i) => ({ name: c.name, aff: affs[i], ...(colls.has(c.name) ? { coll: colls.get(c.name) } : {}), ...(hidden && c.name === '_rowid' ? { hidden: true } : {}) })),
    rowid: hidden ? '_rowid' : intPk,
  };
  cache.set(m, t);
  return t;
}

/** The user's tables: every manifest but internal ones (a migration's shadow, core's isInternalTable). */
export function userManifests(store: SqlStore): TableManifest[] {
  return store.manifests().filter((m) => !isInternalTable(m.table));
}

/** Finds a manifest by SQL name: `ns.t`, or `t` in the default namespace; case-insensitive. */
export function findManifest(store: SqlStore, name: string): TableManifest | undefined {
  const id = name.includes('.') ? name : `${DEFAULT_NAMESPACE}.${name}`;
  // A migration's shadow (an internal table) is no table of the user's: never found by name.
  if (isInternalTable(id)) return undefined;
  const exact = store.manifest(id);
  if (exact) return exact;
  const lower = id.toLowerCase();
  return userManifests(store).find((m) => m.id.toLowerCase() === lower);
}
