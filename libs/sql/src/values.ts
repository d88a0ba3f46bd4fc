/**
 * SQL values at run time, with SQLite's storage classes:
 * NULL → null, INTEGER → bigint (exact 64-bit), REAL → number, TEXT → string.
 * Keeping integers as bigint is what lets 1 and 1.0 stay distinct (integer vs real arithmetic).
 */
import { DbError, stringifyJson } from '@mmdb/core';
import type { Affinity } from '@mmdb/plan';

export type Value = null | bigint | number | string;
export type Tuple = Value[];

export const I64_MAX = 9223372036854775807n;
export const I64_MIN = -9223372036854775808n;

export function overflow(): never {
  throw new DbError('validation_failed', 'integer overflow');
}

export function checkInt(v: bigint): bigint {
  if (v > I64_MAX || v < I64_MIN) overflow();
  return v;
}

const NUM_PREFIX = /^[ \t\n\r\f\v]*([+-]?)(\d*)(\.\d*)?([eE][+-]?\d+)?/;
const WHOLE_NUM = /^[ \t\n\r\f\v]*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?[ \t\n\r\f\v]*$/;
const WHOLE_INT = /^[ \t\n\r\f\v]*[+-]?\d+[ \t\n\r\f\v]*$/;

/** Numeric value of a text's longest numeric prefix (SQLite's rule for arithmetic on text). */
export function textToNumeric(s: string): bigint | number {
  const m = NUM_PREFIX.exec(s);
  if (!m || (m[2] === '' && (!m[3] || m[3].length === 1))) return 0n;
  if (!m[3] && !m[4]) {
    const b = BigInt(m[1] + m[2]);
    if (b > I64_MAX || b < I64_MIN) return Number(b);
    return b;
  }
  const t = m[0].trim();
  const n = Number(t.endsWith('.') ? t + '0' : t);
  return Number.isNaN(n) ? 0n : n;
}

/** Value converted for arithmetic: NULL stays NULL, text becomes a number. */
export function toNumeric(v: Value): bigint | number | null {
  if (v === null) return null;
  if (typeof v === 'string') return textToNumeric(v);
  return v;
}

/** Real to integer as SQLite's CAST does (saturating, truncating). */
export function realToInt(n: number): bigint {
  if (Number.isNaN(n)) return 0n;
  if (n >= 9223372036854775807) return I64_MAX;
  if (n <= -9223372036854775808) return I64_MIN;
  return BigInt(Math.trunc(n));
}

export function toInteger(v: Value): bigint | null {
  if (v === null) return null;
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number') return realToInt(v);
  const n = textToNumeric(v);
  return typeof n === 'bigint' ? n : realToInt(n);
}

export function toReal(v: Value): number | null {
  if (v === null) return null;
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  return Number(textToNumeric(v));
}

/** SQLite's text form of a real: `%!.15g` (always a decimal point or exponent). */
export function realToText(n: number): string {
  if (Number.isNaN(n)) return '';
  if (!Number.isFinite(n)) return n > 0 ? 'Inf' : '-Inf';
  if (n === 0) return '0.0';
  const exp = Math.floor(Math.log10(Math.abs(n)));
  let s: string;
  if (exp < -4 || exp >= 15) {
    s = n.toExponential(14);
    const [mant0, e] = s.split('e');
    let mant = mant0;
    if (mant.includes('.')) mant = mant.replace(/0+$/, '').replace(/\.$/, '.0');
    const en = Number(e);
    s = `${mant}e${en < 0 ? '-' : '+'}${String(Math.abs(en)).padStart(2, '0')}`;
  } else {
    s = n.toPrecision(15);
    if (s.includes('e')) return realToText(Number(s));
    if (s.includes('.')) s = s.replace(/0+$/, '').replace(/\.$/, '.0');
    else s += '.0';
  }
  return s;
}

export function toText(v: Value): string | null {
  if (v === null) return null;
  if (typeof v === 'string') return v;
  if (typeof v === 'bigint') return v.toString();
  return realToText(v);
}

/** SQLite truthiness: NULL → null, otherwise numeric value ≠ 0. */
export function truthy(v: Value): boolean | null {
  if (v === null) return null;
  if (typeof v === 'bigint') return v !== 0n;
  if (typeof v === 'number') return v !== 0;
  const n = textToNumeric(v);
  return typeof n === 'bigint' ? n !== 0n : n !== 0;
}

export const bool = (b: boolean | null): Value => (b === null ? null : b ? 1n : 0n);

/** Applies a column affinity to a value (on store, or to a comparison operand). */
export function applyAffinity(v: Value, aff: Affinity | undefined): Value {
  if (v === null || aff === undefined || aff === 'blob') return v;
  if (aff === 'text') return typeof v === 'string' ? v : toText(v);
  if (typeof v === 'string') {
    if (!WHOLE_NUM.test(v)) return v;
    if (WHOLE_INT.test(v)) {
      const b = BigInt(v.trim());
      if (b <= I64_MAX && b >= I64_MIN) return aff === 'real' ? Number(b) : b;
    }
    v = Number(v.trim());
  }
  if (aff === 'real') return typeof v === 'bigint' ? Number(v) : v;
  if (typeof v === 'number' && Number.isInteger(v) && Math.abs(v) < 9.2e18) return BigInt(v);
  return v;
}

function classOf(v: Value): number {
  if (v === null) return 0;
  if (typeof v === 'string') return 2;
  return 1;
}

/** Total order of SQLite: NULL < numbers < text; numbers compare by value across int/real. */
export function compareValues(a: Value, b: Value): number {
  const ca = classOf(a);
  const cb = classOf(b);
  if (ca !== cb) return ca - cb;
  if (ca === 0) return 0;
  if (ca === 1) return a! < b! ? -1 : a! > b! ? 1 : 0;
  return a! < b! ? -1 : a! > b! ? 1 : 0;
}

const SAFE_MAX = BigInt(Number.MAX_SAFE_INTEGER);
const SAFE_MIN = -SAFE_MAX;

/** Key string used for hashing (grouping, distinct, hash joins): 1 and 1.0 share a key. */
export function hashKey(v: Value): string {
  if (v === null) return 'n';
  if (typeof v === 'string') return 's' + v;
  if (typeof v === 'bigint') return v <= SAFE_MAX && v >= SAFE_MIN ? 'i' + Number(v) : 'i' + v.toString();
  if (Number.isInteger(v) && Math.abs(v) < 9.2e18) return Math.abs(v) <= Number.MAX_SAFE_INTEGER ? 'i' + v : 'i' + BigInt(v).toString();
  return 'r' + v;
}

/**
 * A Map key for one value with hashKey's equality (1 and 1.0 share a key) that avoids building a
 * string for numbers: the number itself for integers within ±2^53 and for non-integers, else hashKey.
 * Numbers and strings never collide as Map keys, so the two forms can share a map.
 */
export function joinKey(v: Exclude<Value, null>): number | string {
  if (typeof v === 'bigint') return v <= SAFE_MAX && v >= SAFE_MIN ? Number(v) : hashKey(v);
  if (typeof v === 'number') return !Number.isInteger(v) || Math.abs(v) <= Number.MAX_SAFE_INTEGER ? v : hashKey(v);
  return hashKey(v);
}

export function tupleKey(t: readonly Value[]): string {
  if (t.length === 1) return hashKey(t[0]);
  let s = '';
  for (const v of t) s += hashKey(v) + '\u0001';
  return s;
}

/** Shared bigints of the small integers (SMALL_MIN ≤ n < SMALL_MAX), made on first use. */
const SMALL_MIN = -1024;
const SMALL_MAX = 65_536;
const small: bigint[] = [];

/**
 * `BigInt(n)` of an integer-valued number, shared for small integers. A bigint is a heap object
 * (a Smi is not): every integer cell of a decoded row was one, and the table cache keeps decoded
 * rows alive, so a 200,000-row table's versions, counts and codes were hundreds of thousands of
 * objects for each major GC to mark (tools/bench/stalls README, "Steady-state stalls"). Bigints
 * compare by value, so sharing one is not observable.
 */
export function bigOf(n: number): bigint {
  if (n >= SMALL_MIN && n < SMALL_MAX) return (small[n - SMALL_MIN] ??= BigInt(n));
  return BigInt(n);
}

/** Whether decoding shares `v` (bigOf's range): no heap of its own in a cached row. */
export function sharedBig(v: bigint): boolean {
  return v >= -1024n && v < 65_536n; // SMALL_MIN, SMALL_MAX
}

/** Converts a stored JSON value to a run-time value, given the column's affinity. */
export function fromJson(v: unknown, aff: Affinity | undefined): Value {
  if (v === null || v === undefined) return null;
  if (typeof v === 'number') {
    if (aff === 'real') return v;
    return Number.isInteger(v) ? bigOf(v) : v;
  }
  if (typeof v === 'string') return v;
  if (typeof v === 'boolean') return v ? 1n : 0n;
  if (typeof v === 'bigint') return aff === 'real' ? Number(v) : v;
  return stringifyJson(v);
}

/**
 * Converts a run-time value to plain JSON for storage or an HTTP answer: an integer is a
 * number within ±(2^53 − 1) and stays a bigint beyond (answers serialize it as an exact
 * JSON number; see README "Integers beyond 2^53").
 */
export function toJson(v: Value): null | number | bigint | string {
  if (typeof v === 'bigint') {
    if (v > SAFE_MAX || v < SAFE_MIN) return v;
    return Number(v);
  }
  return v;
}

export function typeName(v: Value): string {
  if (v === null) return 'null';
  if (typeof v === 'bigint') return 'integer';
  if (typeof v === 'number') return 'real';
  return 'text';
}
