/**
 * SQLite's collating sequences: which one a comparison, sort or grouping uses, and the form a
 * TEXT value takes under it.
 */
import type { Collation, Expr } from '@mmdb/plan';
import { tupleKey, type Tuple, type Value } from '../values';

/**
 * An operand's collating sequence, as SQLite finds it: `explicit` when a COLLATE names it (the
 * left-most COLLATE within the operand), else a column's declared one or BINARY (through CAST and
 * unary +); an operand that is no column and holds no COLLATE has none.
 */
function operandCollation(e: Expr): { coll: Collation; explicit: boolean } | undefined {
  switch (e.kind) {
    case 'collate': return { coll: e.collation, explicit: true };
    case 'col': return { coll: e.collation ?? 'binary', explicit: false }; // a column without one compares BINARY
    case 'cast': return operandCollation(e.arg);
    case 'unary': return e.op === '+' ? operandCollation(e.arg) : explicitWithin(e.arg);
    default: return explicitWithin(e);
  }
}
function explicitWithin(e: Expr): { coll: Collation; explicit: boolean } | undefined {
  if (e.kind === 'collate') return { coll: e.collation, explicit: true };
  if (e.kind === 'in_subquery' || e.kind === 'exists' || e.kind === 'subquery') return undefined;
  for (const v of Object.values(e)) {
    if (v && typeof v === 'object' && 'kind' in v) {
      const c = explicitWithin(v as Expr);
      if (c) return c;
    }
  }
  return undefined;
}

/** The collating sequence comparing `l` with `r`: an explicit COLLATE first (left's, then right's), then a column's. */
export function comparisonCollation(l: Expr, r: Expr | null): Collation | undefined {
  const a = operandCollation(l);
  const b = r ? operandCollation(r) : undefined;
  if (a?.explicit) return a.coll;
  if (b?.explicit) return b.coll;
  return a?.coll ?? b?.coll;
}

/**
 * A value as its collating sequence compares it: TEXT folded (ASCII A-Z lowered for NOCASE,
 * trailing spaces dropped for RTRIM), anything else as it is; null for BINARY (no folding).
 */
export function collationKey(coll: Collation | undefined): ((v: Value) => Value) | null {
  if (coll === 'nocase') return (v) => (typeof v === 'string' ? v.replace(/[A-Z]+/g, (m) => m.toLowerCase()) : v);
  if (coll === 'rtrim') return (v) => (typeof v === 'string' ? v.replace(/ +$/, '') : v);
  return null;
}

/** The collating sequence an output expression gives its column (a COLLATE's, or a column's declared one). */
export function outputCollation(e: Expr, resolved?: Collation): Collation | undefined {
  if (e.kind === 'collate') return e.collation;
  if (e.kind === 'col') return e.collation ?? resolved;
  return undefined;
}

/**
 * The key that tells rows apart (DISTINCT, UNION, INTERSECT, EXCEPT) with each column's collating
 * sequence: `tupleKey` itself when every column is BINARY.
 */
export function rowKeyer(colls: readonly (Collation | undefined)[]): (r: Tuple) => string {
  const folds = colls.map(collationKey);
  if (!folds.some((f) => f)) return tupleKey;
  return (r) => tupleKey(r.map((v, i) => (folds[i] ? folds[i]!(v) : v)));
}
