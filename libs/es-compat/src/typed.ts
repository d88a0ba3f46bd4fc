/**
 * Whether the plans may read an index's typed columns (columns.ts) instead of `_source`. This
 * surface writes them in the frame of each row, but a write through another surface (`/rows`,
 * `/sql` UPDATE of `_source`, an older index) can leave a row whose columns do not say what its
 * `_source` says. So per table and LSN we know: every row's columns agree with its `_source`
 * (checked by one plan over the table, each row's doc values recomputed here), and how many rows
 * hold several values per column (`_multi`). This surface's own commits carry that state to their
 * LSN (the rows it wrote are right by construction) when no other frame touched the table between
 * (the view's rule, writes.ts); any other change of the table LSN makes the next plan check again.
 */
import { parseJsonExact } from '@mmdb/core';
import { col, project, scan } from '@mmdb/plan';
import { MULTI, MV, columnLayout, columnName, typedCells, type ColumnTy } from './columns';
import { docValues, flatten, type Json, type JsonObject } from './mapping';
import type { IndexRef } from './indices';
import type { EsBackend } from './port';

/** `multi`: rows per `_multi` column; `mv`: rows per column whose several values the row holds in `_mv`. */
interface Typed { lsn: number; ok: boolean; multi: Map<string, number>; mv: Map<string, number> }

const states = new WeakMap<EsBackend, Map<string, Typed>>();
const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

function tables(backend: EsBackend): Map<string, Typed> {
  let m = states.get(backend);
  if (!m) states.set(backend, (m = new Map()));
  return m;
}

function same(ty: ColumnTy, stored: unknown, want: Json | undefined): boolean {
  if (stored === null || stored === undefined || want === null || want === undefined) return (stored ?? null) === (want ?? null);
  if (ty === 'str' || ty === 'ip') return stored === want;
  if (ty === 'bool') return (stored === true || stored === 1 || stored === 1n) === want;
  return Number(stored) === want;
}

/** Reads every row's `_source` and typed columns and compares them with the doc values the mapping gives. */
async function check(backend: EsBackend, ref: IndexRef, lsn: number): Promise<Typed> {
  const layout = columnLayout(ref.meta.mappings, ref.meta.values);
  const names = ['_source', MULTI, ...(ref.meta.mv ? [MV] : []), ...layout.map(([, c]) => c)];
  const rows = await backend.read(project(scan(ref.table.id), names.map((n) => ({ name: n, expr: col(n) }))));
  const fields = flatten(ref.meta.mappings);
  const multi = new Map<string, number>();
  const mv = new Map<string, number>();
  const bad = (): Typed => ({ lsn, ok: false, multi, mv });
  for (const r of rows) {
    let src: unknown = r._source;
    if (typeof src === 'string') {
      try { src = parseJsonExact(src); } catch { return bad(); }
    }
    // a `_source` that is not an object (a row written by another surface as a JSON string) is read leniently by the view
    if (!isObj(src)) return bad();
    const want: Record<string, Json> = {};
    const m = typedCells(layout, docValues(fields, src), want, ref.meta.mv);
    if ((r[MULTI] ?? null) !== (want[MULTI] ?? null)) return bad();
    for (const [, c, ty] of layout) if (!same(ty, r[c], want[c])) return bad();
    const held = heldValues(r[MV]);
    const wantHeld = (want[MV] ?? null) as Record<string, Json[]> | null;
    if (held === undefined || Object.keys(held ?? {}).length !== Object.keys(wantHeld ?? {}).length) return bad();
    for (const [, c, ty] of layout) {
      const a = held?.[c];
      const b = wantHeld?.[c];
      if (!a && !b) continue;
      if (!a || !b || !Array.isArray(a) || a.length !== b.length || a.some((x, i) => !same(ty, x, b[i]))) return bad();
      mv.set(c, (mv.get(c) ?? 0) + 1);
    }
    for (const c of m) multi.set(c, (multi.get(c) ?? 0) + 1);
  }
  return { lsn, ok: true, multi, mv };
}

/** A row's `_mv` cell as an object (null when none), undefined when it is not one. */
function heldValues(v: unknown): Record<string, unknown[]> | null | undefined {
  if (v === null || v === undefined) return null;
  let j: unknown = v;
  if (typeof v === 'string') {
    try { j = parseJsonExact(v); } catch { return undefined; }
  }
  return isObj(j) ? (j as Record<string, unknown[]>) : undefined;
}

async function stateAt(backend: EsBackend, ref: IndexRef, lsn: number): Promise<Typed> {
  const m = tables(backend);
  let s = m.get(ref.table.id);
  if (!s || s.lsn !== lsn) {
    s = await check(backend, ref, lsn);
    m.set(ref.table.id, s);
  }
  return s;
}

/**
 * How plans may read `paths` at the table's `lsn`: null when they may not (no column, a row whose
 * columns disagree with its `_source`, a value no cell holds), else the paths of which some row
 * holds several values in `_mv` (empty: every row holds at most one; plan-multi.ts unnests the others).
 */
export async function typedMulti(backend: EsBackend, ref: IndexRef, lsn: number, paths: Iterable<string>): Promise<string[] | null> {
  if (ref.readOnly || !ref.meta.values) return null;
  const fields = flatten(ref.meta.mappings);
  const cols: Array<[string, string]> = [];
  for (const p of paths) {
    const c = columnName({ fields, columns: ref.meta.values }, p);
    if (c === undefined) return null;
    cols.push([p, c]);
  }
  const s = await stateAt(backend, ref, lsn);
  if (!s.ok || cols.some(([, c]) => s.multi.get(c))) return null;
  return cols.filter(([, c]) => s.mv.get(c)).map(([p]) => p);
}

/**
 * Whether plans may read `paths` through their typed columns at the table's `lsn`: the index has
 * a column for each, every row's columns agree with its `_source`, and no row holds several values
 * of them (Elasticsearch counts each value of an array, a column holds one).
 */
export async function typedReady(backend: EsBackend, ref: IndexRef, lsn: number, paths: Iterable<string>): Promise<boolean> {
  if (ref.readOnly || !ref.meta.values) return false;
  const fields = flatten(ref.meta.mappings);
  const cols: string[] = [];
  for (const p of paths) {
    const c = columnName({ fields, columns: ref.meta.values }, p);
    if (c === undefined) return false;
    cols.push(c);
  }
  const s = await stateAt(backend, ref, lsn);
  return s.ok && cols.every((c) => !s.multi.get(c) && !s.mv.get(c));
}

/**
 * After this surface's own commit moved a table from `before` to `after` with no other frame in
 * between, the state follows: `delta` is the change of rows per `_multi` column (`mv:<column>`: per `_mv` one). Otherwise (or
 * when the manifest changed: `delta` null) it is dropped and the next plan checks again.
 */
export function carryTyped(backend: EsBackend, tid: string, before: number | undefined, after: number, delta: Map<string, number> | null): void {
  const m = tables(backend);
  const s = m.get(tid);
  // a failed check is not carried: the write may have fixed the rows it found, the next plan checks again
  if (!s || !s.ok || before === undefined || s.lsn !== before || !delta) return void m.delete(tid);
  for (const [k, d] of delta) {
    const [map, c] = k.startsWith('mv:') ? [s.mv, k.slice(3)] : [s.multi, k];
    const n = (map.get(c) ?? 0) + d;
    if (n < 0) return void m.delete(tid);
    map.set(c, n);
  }
  s.lsn = after;
}
