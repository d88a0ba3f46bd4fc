import type { Affinity } from '@mmdb/plan';

/** Declared SQL type → SQLite affinity (§3.1 of SQLite's datatype rules). */
export function affinityOf(type: string): Affinity {
  const t = type.toUpperCase();
  if (t.includes('INT')) return 'integer';
  if (t.includes('CHAR') || t.includes('CLOB') || t.includes('TEXT')) return 'text';
  if (t.includes('BLOB') || t === '') return 'blob';
  if (t.includes('REAL') || t.includes('FLOA') || t.includes('DOUB')) return 'real';
  return 'numeric';
}
