/**
 * Mapped fields as typed columns of the index's table (DESIGN.md "Typed columns"). Every mapped
 * field of a keyword, numeric, boolean or date type (multi-fields and copy_to targets included)
 * gets a column `v_<path>` (`columnOf`) holding the field's one doc value as the mapping computes it
 * (`docValues`: coerced, normalized, `null_value` applied, `ignore_above` dropped); a document
 * holding several values leaves it null and holds them in the row's `_mv` column (a table made
 * without it, or a value no cell holds exactly, a long beyond ±2^53: names it in `_multi`). The writer fills them in the frame of the row, so aggregate, count, sort and
 * filter plans read columns as SQL does instead of parsing `_source`.
 */
import { col, type Expr } from '@mmdb/plan';
import { flatten, type Field, type Json, type JsonObject } from './mapping';
import type { IndexView } from './doc';
import { ipToBig } from './ip';

/** `ip`: a `str` column holding the address as 32 hex digits of its 128-bit number (`ipKey`), so it sorts as addresses do. */
export type ColumnTy = 'str' | 'i64' | 'f64' | 'bool' | 'timestamp' | 'ip';

/** The storage type of a column type (the manifest's `ty`). */
export const storedTy = (ty: ColumnTy): string => (ty === 'ip' ? 'str' : ty);

/** An IP address as its column's cell: its 128-bit number (IPv4 mapped, ip.ts) as 32 hex digits; undefined when not an address. */
export function ipKey(v: string): string | undefined {
  const n = ipToBig(v);
  return n === null ? undefined : n.toString(16).padStart(32, '0');
}

const TY: Record<string, ColumnTy> = {
  keyword: 'str', constant_keyword: 'str', wildcard: 'str', version: 'str',
  long: 'i64', integer: 'i64', short: 'i64', byte: 'i64', token_count: 'i64',
  double: 'f64', float: 'f64', half_float: 'f64', scaled_float: 'f64', unsigned_long: 'f64',
  boolean: 'bool', date: 'timestamp', date_nanos: 'timestamp', ip: 'ip',
};

/** The column name listing, per row, the typed fields whose column is null because the value is not one plain value. */
export const MULTI = '_multi';

/**
 * The json column holding, per row, the doc values of the typed fields of which the document holds
 * several (each value a plain cell): `{"<column>": [values in document order]}`, null when none.
 * Such a field's typed column is null; the `unnest` plan node reads the values from here
 * (plan-multi.ts). Only in tables made with it (`IndexMeta.mv`): elsewhere `_multi` names them.
 */
export const MV = '_mv';

/** The column type of a field's values, or undefined when it has no typed column (text, objects, stored-only types, aliases). */
export function columnTy(f: Field): ColumnTy | undefined {
  return f.aliasOf === undefined ? TY[f.type] : undefined;
}

/**
 * The column of a field path, the same for every index (so a plan names it from the path alone):
 * `v_` + the path with letters and digits kept, `_` as `__`, `.` as `_d`, any other character as
 * `_x<hex>_` (`tag` → `v_tag`, `title.keyword` → `v_title_dkeyword`, `user_id` → `v_user__id`):
 * distinct paths get distinct names.
 */
export function columnOf(path: string): string {
  let out = 'v_';
  for (const ch of path) {
    if (/[A-Za-z0-9]/.test(ch)) out += ch;
    else if (ch === '_') out += '__';
    else if (ch === '.') out += '_d';
    else out += `_x${ch.codePointAt(0)!.toString(16)}_`;
  }
  return out;
}

/** Adds the column of every typed field not yet listed (a field's column never changes). */
export function valueColumns(mappings: JsonObject, cur: Record<string, string>): Record<string, string> {
  const out = { ...cur };
  for (const f of flatten(mappings).values()) if (!out[f.path] && columnTy(f)) out[f.path] = columnOf(f.path);
  return out;
}

/** The typed columns of an index as (path, column, type), cached per mappings object. */
const layouts = new WeakMap<JsonObject, WeakMap<Record<string, string>, Array<[string, string, ColumnTy]>>>();

export function columnLayout(mappings: JsonObject, values: Record<string, string> | undefined): Array<[string, string, ColumnTy]> {
  if (!values) return [];
  let byValues = layouts.get(mappings);
  if (!byValues) layouts.set(mappings, (byValues = new WeakMap()));
  let l = byValues.get(values);
  if (!l) {
    const fields = flatten(mappings);
    l = [];
    for (const [path, c] of Object.entries(values)) {
      const f = fields.get(path);
      const ty = f && columnTy(f);
      if (ty) l.push([path, c, ty]);
    }
    byValues.set(values, l);
  }
  return l;
}

/** One doc value as its column's cell, or undefined when the column cannot hold it exactly. */
function cell(ty: ColumnTy, v: Json): Json | undefined {
  switch (ty) {
    case 'str': return typeof v === 'string' ? v : undefined;
    case 'ip': return typeof v === 'string' ? ipKey(v) : undefined;
    case 'bool': return typeof v === 'boolean' ? v : undefined;
    case 'f64': return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
    default: return typeof v === 'number' && Number.isSafeInteger(v) ? v : undefined;
  }
}

/**
 * Sets the typed columns of a row from the document's doc values (per field path) and answers
 * the columns left null because the value is not one plain value (also written to `_multi`).
 */
export function typedCells(layout: Array<[string, string, ColumnTy]>, values: Map<string, Json[]>, row: Record<string, Json>, mv = false): string[] {
  const multi: string[] = [];
  let held: Record<string, Json[]> | undefined;
  for (const [path, c, ty] of layout) {
    const vs = values.get(path);
    if (!vs || !vs.length) continue;
    if (vs.length > 1 && mv) {
      const cells = vs.map((x) => cell(ty, x));
      if (cells.every((x) => x !== undefined)) {
        (held ??= {})[c] = cells as Json[];
        continue;
      }
    }
    const v = vs.length === 1 ? cell(ty, vs[0]) : undefined;
    if (v === undefined) multi.push(c);
    else row[c] = v;
  }
  if (multi.length) row[MULTI] = multi.join(' ');
  if (held) row[MV] = held;
  return multi;
}

/** The typed column of a field path (an alias: its target's), or undefined. */
export function columnName(ix: Pick<IndexView, 'fields' | 'columns'>, path: string): string | undefined {
  const f = ix.fields.get(path);
  if (!f || !ix.columns) return undefined;
  // an alias of a multi-field names its parent in aliasOf: only a target of the same type is read
  if (f.aliasOf !== undefined && ix.fields.get(f.aliasOf)?.type !== f.type) return undefined;
  return ix.columns[f.aliasOf ?? path];
}

/**
 * The one way a plan reads a mapped field: its typed column, or null when the index has none for
 * it (a read-only table, an index made before typed columns, a text or stored-only field). A
 * field alias reads its target's column. Callers check `typedReady` (typed.ts) before relying on it.
 */
export function fieldColumn(ix: Pick<IndexView, 'fields' | 'columns'>, path: string): Expr | null {
  const name = columnName(ix, path);
  return name === undefined ? null : col(name);
}
