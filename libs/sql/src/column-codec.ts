/**
 * Values of `json` and `vector` columns in SQL (libs/sql/README.md, "Column types in SQL").
 *
 * - Read: such a column's value is its JSON text (`'["x","y"]'`, `'[0.5,1]'`, `'"hi"'`), so
 *   SQLite's JSON functions and text operators work on it. An output column that is a plain
 *   reference to one answers the JSON value itself and is typed `json` / `vector`.
 * - Write (INSERT, UPDATE): TEXT must be JSON text (pgvector's `'[1,2,3]'` for a vector; a `$n`
 *   array parameter arrives as its JSON text); INTEGER/REAL store the number in a json column.
 *
 * Columns made by SQL `CREATE TABLE` with an untyped/NUMERIC/BLOB type are manifest `json`
 * columns too, but hold SQL values (the declared type rides in the description): only a
 * manifest `json` column, or one declared `JSON`/`JSONB`, reads and writes as JSON.
 * A manifest `bool` column is INTEGER 1/0 inside SQL and answers `true`/`false` typed `bool`
 * (a SQL-declared BOOLEAN column answers 1/0, as SQLite does).
 */
import { children as planChildren, type PlanNode } from '@mmdb/plan';
import { coerceValue, DbError, parseJsonExact, quoteValue, stringifyJson, type ColumnDef, type JsonValue } from '@mmdb/core';
import type { SqlTable } from './catalog';
import { toJson, type Value } from './values';

export type CellKind = 'json' | 'vector' | undefined;
/** How an answer shows a column: as JSON (json/vector) or as a boolean (manifest bool). */
export type OutKind = CellKind | 'bool';

const kindsOf = new WeakMap<SqlTable, CellKind[]>();

/** Per manifest column: 'json', 'vector' or undefined (plain SQL values). */
export function cellKinds(t: SqlTable): CellKind[] {
  let k = kindsOf.get(t);
  if (!k) {
    k = t.manifest.columns.map((c, i) => {
      if (c.ty === 'vector') return 'vector';
      if (c.ty === 'json' && /^(json|jsonb)$/i.test(t.sqlTypes[i])) return 'json';
      return undefined;
    });
    kindsOf.set(t, k);
  }
  return k;
}

/** A stored json/vector value as its SQL value: the JSON text (NULL stays NULL). */
export function decodeCell(v: unknown): Value {
  return v === null || v === undefined ? null : stringifyJson(v);
}

/** A SQL value written to a json/vector column → the stored value (type_mismatch naming the column). */
export function encodeCell(c: ColumnDef, kind: 'json' | 'vector', v: Exclude<Value, null>): JsonValue {
  if (typeof v === 'string') {
    let parsed: unknown;
    try {
      parsed = parseJsonExact(v);
    } catch {
      const want = kind === 'vector' ? `a vector: pgvector text like '[1,2,3]' or a $n array` : 'JSON text';
      throw new DbError('type_mismatch', `column "${c.name}" expects ${want}, got ${quoteValue(v)}`, { field: c.name });
    }
    return coerceValue(c.name, c.ty, parsed, c.dim);
  }
  if (kind === 'vector') {
    throw new DbError('type_mismatch', `column "${c.name}" expects a vector: pgvector text like '[1,2,3]' or a $n array, got ${quoteValue(toJson(v))}`, { field: c.name });
  }
  return coerceValue(c.name, 'json', toJson(v));
}

/** A SQL value compared with a json/vector column → the stored value it equals (undefined: none can). */
export function keyOfCell(c: ColumnDef, v: Exclude<Value, null>): JsonValue | undefined {
  try {
    return encodeCell(c, c.ty === 'vector' ? 'vector' : 'json', v);
  } catch {
    return undefined;
  }
}

/**
 * The declared kind of each output column of a plan: 'json'/'vector' when the column is a
 * plain reference (through projections, sorts, joins, ...) to such a table column.
 */
export function outputKinds(plan: PlanNode, names: readonly string[], table: (id: string) => SqlTable): OutKind[] {
  return names.map((n) => resolve(plan, n, table, 0));
}

/** A column's kind in answers. */
export function outKind(t: SqlTable, i: number): OutKind {
  const k = cellKinds(t)[i];
  if (k) return k;
  return t.manifest.columns[i].ty === 'bool' && t.sqlTypes[i] === 'bool' ? 'bool' : undefined;
}

function resolve(node: PlanNode, name: string, table: (id: string) => SqlTable, depth: number): OutKind {
  if (depth > 64) return undefined;
  const n = node as PlanNode & { schema?: string; alias?: string; columns?: { name: string; expr: { kind: string; name?: string } }[] };
  if (n.op === 'scan' || n.op === 'get' || n.op === 'index_scan' || n.op === 'fts_search' || n.op === 'vector_topk') {
    const t = table(n.schema!);
    const dot = name.lastIndexOf('.');
    const col = dot >= 0 && n.alias !== undefined && name.slice(0, dot) === n.alias ? name.slice(dot + 1) : dot < 0 ? name : undefined;
    if (col === undefined) return undefined;
    const i = t.manifest.columns.findIndex((c) => c.name === col);
    return i >= 0 ? outKind(t, i) : undefined;
  }
  if (n.op === 'project') {
    const c = n.columns!.find((x) => x.name === name);
    if (!c) return undefined;
    return c.expr.kind === 'col' && c.expr.name ? resolve((n as { input: PlanNode }).input, c.expr.name, table, depth + 1) : undefined;
  }
  if (n.op === 'aggregate' || n.op === 'values' || n.op === 'cte_ref' || n.op === 'with') return undefined;
  const kids = n.op === 'set_op' ? [(n as { left: PlanNode }).left] : planChildren(node);
  for (const k of kids) {
    const r = resolve(k, name, table, depth + 1);
    if (r) return r;
  }
  return undefined;
}

/** A json/vector column's JSON text (or a bool column's 1/0) → the value an answer carries. */
export function answerCell(v: Value, kind: OutKind): unknown {
  if (kind === 'bool') return v === null ? null : typeof v === 'bigint' || typeof v === 'number' ? v != 0 : toJson(v);
  if (typeof v !== 'string') return toJson(v);
  try {
    return parseJsonExact(v);
  } catch {
    return v;
  }
}
