/** Turns engine results into the HTTP envelope of spec §4.5. */
import type { RawResult } from './engine';
import { toJson, typeName, type Tuple } from './values';

export type SqlEnvelope =
  | { kind: 'select'; columns: { name: string; type: string }[]; rows: unknown[]; explain?: unknown }
  | { kind: 'insert'; schema: string; rows: unknown[]; returning?: unknown[] }
  | { kind: 'update'; schema: string; count: number; rows: unknown[] }
  | { kind: 'delete'; schema: string; pk?: unknown; pks?: unknown[] }
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

function shape(names: string[], rows: Tuple[], format: 'objects' | 'arrays'): unknown[] {
  if (format === 'arrays') return rows.map((r) => r.map(toJson));
  return rows.map((r) => {
    const o: Record<string, unknown> = {};
    names.forEach((n, i) => (o[n] = toJson(r[i])));
    return o;
  });
}

function columnTypes(names: string[], rows: Tuple[]): { name: string; type: string }[] {
  return names.map((name, i) => {
    const v = rows.find((r) => r[i] !== null)?.[i];
    return { name, type: v === undefined ? 'null' : typeName(v) };
  });
}

/** Rows as JSON objects keyed by distinct output names (`a`, `a_2`, …), as POST /sql answers them. */
export function objectRows(names: readonly string[], rows: readonly Tuple[]): Record<string, unknown>[] {
  const n = distinctNames([...names]);
  return rows.map((r) => {
    const o: Record<string, unknown> = {};
    for (let i = 0; i < n.length; i++) o[n[i]] = toJson(r[i]);
    return o;
  });
}

export function formatResult(r: RawResult, format: 'objects' | 'arrays' = 'objects'): SqlEnvelope {
  switch (r.kind) {
    case 'select': {
      const names = distinctNames(r.names);
      return { kind: 'select', columns: columnTypes(names, r.rows), rows: shape(names, r.rows, format), ...(r.explain ? { explain: r.explain } : {}) };
    }
    case 'insert':
      return { kind: 'insert', schema: r.schema, rows: r.rows, ...(r.names.length ? { returning: shape(distinctNames(r.names), r.returning, format) } : {}) };
    case 'update':
      return { kind: 'update', schema: r.schema, count: r.count, rows: shape(distinctNames(r.names), r.returning, format) };
    case 'delete':
      return r.pks.length === 1 ? { kind: 'delete', schema: r.schema, pk: r.pks[0], pks: r.pks } : { kind: 'delete', schema: r.schema, pks: r.pks };
    default:
      return r;
  }
}
