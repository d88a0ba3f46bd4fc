/** CREATE TABLE / INDEX, ALTER TABLE: SQL definitions → manifest TOML registered in the store. */
import { DbError, type ColumnType, type TableManifest } from '@mmdb/core';
import { stringify } from 'smol-toml';
import type { ColumnSpec, Stmt } from './front/ast';
import { affinityOf } from './affinity';
import { DEFAULT_NAMESPACE, findManifest, SQL_TYPE_PREFIX, sqlTable, type SqlStore } from './catalog';
import { toJson, type Value } from './values';

type CreateTable = Extract<Stmt, { kind: 'create_table' }>;

/** SQL declared type → manifest column type. Numeric and untyped columns take any value (json). */
export function columnType(sqlType: string): ColumnType {
  const u = sqlType.toUpperCase();
  if (/^(BOOL|BOOLEAN)$/.test(u)) return 'bool';
  if (/^(TIMESTAMP|DATETIME)/.test(u)) return 'timestamp';
  if (/^(JSON|JSONB)$/.test(u)) return 'json';
  switch (affinityOf(sqlType)) {
    case 'integer': return 'i64';
    case 'real': return 'f64';
    case 'text': return 'str';
    default: return 'json';
  }
}

interface ColOut { name: string; ty: ColumnType; required?: boolean; default?: unknown; description?: string; dim?: number }
interface DocOut {
  namespace: string;
  table: string;
  primary_key: string[];
  hidden_rowid?: boolean;
  columns: ColOut[];
  indexes?: { name: string; columns: string[]; unique: boolean }[];
  checks?: { name: string; expr: string }[];
  foreign_keys?: { name: string; columns: string[]; references: string; ref_columns?: string[] }[];
  vector?: { column: string; dim: number; metric: string; index: string; params?: Record<string, number> };
}

export function splitName(name: string): { namespace: string; table: string } {
  const i = name.indexOf('.');
  return i < 0 ? { namespace: DEFAULT_NAMESPACE, table: name } : { namespace: name.slice(0, i), table: name.slice(i + 1) };
}

export function createTableToml(st: CreateTable, store: SqlStore, evalDefault: (c: ColumnSpec) => Value): string {
  const { namespace, table } = splitName(st.name);
  const pkCols = st.primaryKey ?? st.columns.filter((c) => c.pk).map((c) => c.name);
  if (st.columns.filter((c) => c.pk).length > 1) throw new DbError('validation_failed', `table "${table}" has more than one primary key`);
  const doc: DocOut = { namespace, table, primary_key: pkCols.length ? pkCols : ['_rowid'], columns: [] };
  if (!pkCols.length) {
    doc.hidden_rowid = true;
    doc.columns.push({ name: '_rowid', ty: 'i64', required: true, description: `${SQL_TYPE_PREFIX}INTEGER` });
  }
  for (const c of st.columns) {
    // the declared type, and a COLLATE other than BINARY, ride in the description (`sql:TEXT COLLATE NOCASE`)
    // PostgreSQL's SERIAL / BIGSERIAL: an integer key the store assigns (SQLite's INTEGER PRIMARY KEY)
    const type = /^(SMALL|BIG)?SERIAL$/i.test(c.type) ? 'INTEGER' : c.type;
    const declared = c.collate && c.collate !== 'binary' ? `${type} COLLATE ${c.collate.toUpperCase()}` : type;
    const col: ColOut = { name: c.name, ty: columnType(type), description: `${SQL_TYPE_PREFIX}${declared}` };
    if (/^vector$/i.test(type)) {
      // pgvector's VECTOR(n): a vector column (JSON text inside SQL); CREATE INDEX … USING hnsw indexes it
      if (!c.dim || c.dim < 1) throw new DbError('validation_failed', `column ${c.name}: VECTOR needs a dimension, as VECTOR(3)`, { column: c.name });
      col.ty = 'vector';
      col.dim = c.dim;
    }
    if (c.notNull) col.required = true;
    if (c.default) {
      const v = toJson(evalDefault(c));
      if (v !== null) col.default = v;
    }
    doc.columns.push(col);
  }
  const idx: DocOut['indexes'] = [];
  st.columns.filter((c) => c.unique).forEach((c) => idx.push({ name: `${table}_${c.name}_unique`, columns: [c.name], unique: true }));
  st.uniques.forEach((u, i) => idx.push({ name: `${table}_unique_${i + 1}`, columns: u, unique: true }));
  if (idx.length) doc.indexes = idx;
  if (st.checks.length) doc.checks = st.checks.map((c, i) => ({ name: c.name ?? `${table}_check_${i + 1}`, expr: c.text.trim() }));
  if (st.foreignKeys.length) {
    doc.foreign_keys = st.foreignKeys.map((f, i) => {
      const target = findManifest(store, f.table);
      const ref = target ? target.id : f.table.includes('.') ? f.table : `${namespace}.${f.table}`;
      return { name: `${table}_fk_${i + 1}`, columns: f.columns, references: ref, ...(f.refColumns.length ? { ref_columns: f.refColumns } : {}) };
    });
  }
  return stringify(doc);
}

/** The TOML of an existing manifest with a change applied (indexes, columns). */
export function manifestToml(store: SqlStore, m: TableManifest, change: (d: DocOut) => void): string {
  const t = sqlTable(store, m);
  const doc: DocOut = {
    namespace: m.namespace,
    table: m.table,
    primary_key: [...m.primary_key],
    ...(m.hidden_rowid ? { hidden_rowid: true } : {}),
    columns: m.columns.map((c, i) => {
      const coll = t.columns[i].coll;
      const declared = coll ? `${t.sqlTypes[i]} COLLATE ${coll.toUpperCase()}` : t.sqlTypes[i];
      return {
        name: c.name,
        ty: c.ty,
        ...(c.required ? { required: true } : {}),
        ...(c.default !== undefined ? { default: c.default } : {}),
        ...(c.dim !== undefined ? { dim: c.dim } : {}),
        ...(declared !== c.ty ? { description: `${SQL_TYPE_PREFIX}${declared}` } : {}),
      };
    }),
    indexes: m.indexes.map((x) => ({ name: x.name, columns: [...x.columns], unique: x.unique })),
    checks: m.checks.map((c) => ({ name: c.name, expr: c.expr })),
    foreign_keys: m.foreign_keys.map((f) => ({ name: f.name, columns: [...f.columns], references: f.references, ...(f.ref_columns.length ? { ref_columns: [...f.ref_columns] } : {}) })),
  };
  if (m.vector) doc.vector = { column: m.vector.column, dim: m.vector.dim, metric: m.vector.metric, index: m.vector.index, ...(Object.keys(m.vector.params).length ? { params: { ...m.vector.params } } : {}) };
  change(doc);
  if (!doc.indexes?.length) delete doc.indexes;
  if (!doc.checks?.length) delete doc.checks;
  if (!doc.foreign_keys?.length) delete doc.foreign_keys;
  const extra = m.fulltext.length || m.relations.length;
  if (extra) throw new DbError('unsupported_sql', 'DDL on a table with fulltext or relations sections is done through the schemas endpoint', { construct: 'ALTER' });
  return stringify(doc as unknown as Record<string, unknown>);
}
