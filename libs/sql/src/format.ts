/** Turns engine results into the HTTP envelope of spec §4.5. */
import { pkSegment } from '@mmdb/core';
import type { RawResult } from './engine';
import { answerCell, type OutKind } from './column-codec';
import { toJson, typeName, type Tuple } from './values';

export type SqlEnvelope =
  | { kind: 'select'; columns: { name: string; type: string }[]; rows: unknown[]; explain?: unknown }
  | { kind: 'insert'; schema: string; rows: unknown[]; returning?: unknown[] }
  | { kind: 'update'; schema: string; count: number; rows: unknown[] }
  | { kind: 'delete'; schema: string; pk?: string; pks?: unknown[]; note?: string }
  | { kind: 'ddl'; statement: string; schema?: string; created?: boolean }
  | { kind: 'transaction'; statement: string };

/** Distinct names for duplicate or unnamed output columns (`a`, `a_2`, …). */
function distinctNames(names: string[]): string[] {
  const seen = new Map<string, number>();
  return names.map((n0) => {
    const n = n0.replace(/:\d+$/, '') || 'column';
    const c = (seen.get(n) ?? 0) + 1;
    seen.set(n, c);
    return c === 1 ? n : `${n}_${c}`;
  });
}

/** Values of an answer: json/vector columns (kinds) as their JSON value, integers exact. */
function shape(names: string[], rows: Tuple[], format: 'objects' | 'arrays', kinds?: OutKind[]): unknown[] {
  const cell = (r: Tuple, i: number) => (kinds?.[i] ? answerCell(r[i], kinds[i]) : toJson(r[i]));
  if (format === 'arrays') return rows.map((r) => r.map((_, i) => cell(r, i)));
  return rows.map((r) => {
    const o: Record<string, unknown> = {};
    names.forEach((n, i) => (o[n] = cell(r, i)));
    return o;
  });
}

function columnTypes(names: string[], rows: Tuple[], kinds?: OutKind[]): { name: string; type: string }[] {
  return names.map((name, i) => {
    if (kinds?.[i]) return { name, type: kinds[i]! };
    const v = rows.find((r) => r[i] !== null)?.[i];
    return { name, type: v === undefined ? 'null' : typeName(v) };
  });
}

/**
 * Rows as JSON objects keyed by distinct output names (`a`, `a_2`, …), as POST /sql answers
 * them: with the columns' output kinds, a json/vector column is its value and a bool column
 * true/false (canonical forms), not the engine's text / 1-0.
 */
export function objectRows(names: readonly string[], rows: readonly Tuple[], kinds?: readonly OutKind[]): Record<string, unknown>[] {
  const n = distinctNames([...names]);
  return rows.map((r) => {
    const o: Record<string, unknown> = {};
    for (let i = 0; i < n.length; i++) o[n[i]] = kinds?.[i] ? answerCell(r[i], kinds[i]) : toJson(r[i]);
    return o;
  });
}

export function formatResult(r: RawResult, format: 'objects' | 'arrays' = 'objects'): SqlEnvelope {
  switch (r.kind) {
    case 'select': {
      const names = distinctNames(r.names);
      return { kind: 'select', columns: columnTypes(names, r.rows, r.kinds), rows: shape(names, r.rows, format, r.kinds), ...(r.explain ? { explain: r.explain } : {}) };
    }
    case 'insert':
      return { kind: 'insert', schema: r.schema, rows: r.rows, ...(r.names.length ? { returning: shape(distinctNames(r.names), r.returning, format, r.kinds) } : {}) };
    case 'update':
      return { kind: 'update', schema: r.schema, count: r.count, rows: shape(distinctNames(r.names), r.returning, format, r.kinds) };
    case 'delete': {
      // spec §4.5: DELETE is translated only; `pk` is the row route's {pk} segment (one row),
      // `pks` (our extension) every matched key as a tuple
      const note = r.translated
        ? `translated only: no row was removed. Re-issue DELETE /v1/tenants/{tenant}/rows/${r.schema}/{pk} for each of the ${r.pks.length} key(s) in pks (pk when there is one)`
        : undefined;
      return {
        kind: 'delete',
        schema: r.schema,
        ...(r.pks.length === 1 ? { pk: pkSegment(r.pks[0]) } : {}),
        pks: r.pks,
        ...(note ? { note } : {}),
      };
    }
    default:
      return r;
  }
}
