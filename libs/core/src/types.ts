import { DbError } from './errors';
import { isLosslessNumber, LosslessNumber, stringifyJson } from './json';

/**
 * Column types a manifest may declare (libs/storage/MANIFEST.md documents each).
 * Stored values are plain JSON values:
 * - str: string; i64: 64-bit signed integer (a JS number within ±(2^53-1), a bigint beyond);
 *   f64: finite number (−0 stored as 0);
 * - bool: boolean; timestamp: integer milliseconds since the UNIX epoch (an RFC 3339
 *   string is accepted on write and converted); json: any JSON value;
 * - vector: array of `dim` finite numbers.
 */
export const COLUMN_TYPES = ['str', 'i64', 'f64', 'bool', 'timestamp', 'json', 'vector'] as const;
export type ColumnType = (typeof COLUMN_TYPES)[number];

export function isColumnType(s: unknown): s is ColumnType {
  return typeof s === 'string' && (COLUMN_TYPES as readonly string[]).includes(s);
}

/**
 * A JSON value as stored in a row. Integers beyond ±(2^53 − 1) are `bigint` (exact); every
 * other number is a double. Serialize with `stringifyJson`, parse with `parseJsonExact`.
 */
export type JsonValue = null | boolean | number | bigint | string | JsonValue[] | { [k: string]: JsonValue };
export type Row = Record<string, JsonValue>;

const RFC3339 = /^\d{4}-\d{2}-\d{2}([Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?)?$/;

export const I64_MAX = 9223372036854775807n;
export const I64_MIN = -9223372036854775808n;

/** The value as it was sent, for an error message (exact numbers, at most 60 characters). */
export function quoteValue(v: unknown): string {
  let shown: string | undefined;
  try {
    shown = stringifyJson(v);
  } catch {
    shown = undefined;
  }
  return shown === undefined ? typeof v : shown.length > 60 ? shown.slice(0, 57) + '...' : shown;
}

function mismatch(field: string, ty: string, v: unknown): never {
  throw new DbError('type_mismatch', `column "${field}" expects ${ty}, got ${quoteValue(v)}`, { field });
}

/** A double for a number literal an f64 (or a vector) takes: rounded to the nearest, never out of range. */
function toDouble(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isFinite(v) ? (v === 0 ? 0 : v) : undefined;
  if (typeof v === 'bigint') return Number(v);
  if (isLosslessNumber(v)) {
    const n = Number(v.value);
    // out of range (1e400 → Infinity) or a non-zero literal that underflows to 0 is refused
    if (!Number.isFinite(n) || (n === 0 && /[1-9]/.test(v.value.replace(/[eE].*$/, '')))) return undefined;
    return n === 0 ? 0 : n;
  }
  return undefined;
}

/** The first number inside a json value that does not fit a double exactly (and is no integer). */
function unfitNumber(v: unknown): LosslessNumber | undefined {
  if (v === null || typeof v !== 'object') return undefined;
  if (isLosslessNumber(v)) return v;
  if (Array.isArray(v)) {
    for (const x of v) {
      const u = unfitNumber(x);
      if (u) return u;
    }
    return undefined;
  }
  for (const k in v as Record<string, unknown>) {
    const u = unfitNumber((v as Record<string, unknown>)[k]);
    if (u) return u;
  }
  return undefined;
}

/**
 * Checks a value written to a column of type `ty` and returns the stored (canonical) form.
 * Throws `type_mismatch` naming the field and quoting the value as sent. `null` is returned
 * as is (the caller decides whether the column may be null).
 *
 * @example coerceValue('age', 'i64', 42) // 42
 */
export function coerceValue(field: string, ty: ColumnType, v: unknown, dim?: number): JsonValue {
  if (v === null) return null;
  switch (ty) {
    case 'str':
      if (typeof v !== 'string') mismatch(field, ty, v);
      return v;
    case 'i64':
      if (typeof v === 'number') {
        if (!Number.isSafeInteger(v)) mismatch(field, 'i64 (a 64-bit integer)', v);
        return v === 0 ? 0 : v;
      }
      if (typeof v === 'bigint') {
        if (v > I64_MAX || v < I64_MIN) mismatch(field, 'i64 (a 64-bit integer)', v);
        return Number.isSafeInteger(Number(v)) && BigInt(Number(v)) === v ? Number(v) : v;
      }
      return mismatch(field, 'i64 (a 64-bit integer)', v);
    case 'f64': {
      const n = toDouble(v);
      if (n === undefined) mismatch(field, 'f64 (a finite number)', v);
      return n;
    }
    case 'bool':
      if (typeof v !== 'boolean') mismatch(field, ty, v);
      return v;
    case 'timestamp': {
      if (typeof v === 'number' && Number.isSafeInteger(v)) return v === 0 ? 0 : v;
      if (typeof v === 'string' && RFC3339.test(v)) {
        const t = Date.parse(v);
        if (Number.isFinite(t)) return t;
      }
      return mismatch(field, 'timestamp (epoch milliseconds or RFC 3339)', v);
    }
    case 'json': {
      if (v === undefined || typeof v === 'function' || typeof v === 'symbol') mismatch(field, ty, v);
      const u = unfitNumber(v);
      if (u) {
        throw new DbError('type_mismatch', `column "${field}" (json) holds the number ${u.value}, which a double cannot hold exactly; send integers of any size, or decimals of at most 15 significant digits within ±1.8e308`, { field });
      }
      return v as JsonValue;
    }
    case 'vector': {
      if (!Array.isArray(v)) return mismatch(field, 'vector (an array of finite numbers)', v);
      let out: number[] | undefined;
      for (let i = 0; i < v.length; i++) {
        const x = v[i];
        if (typeof x === 'number' && Number.isFinite(x) && x !== 0) continue;
        const n = toDouble(x);
        if (n === undefined) mismatch(field, 'vector (an array of finite numbers)', v);
        if (!Object.is(n, x)) (out ??= v.slice())[i] = n;
      }
      if (dim !== undefined && v.length !== dim) {
        throw new DbError('dim_mismatch', `column "${field}" expects a vector of ${dim} dimensions, got ${v.length}`, { field });
      }
      return out ?? (v as number[]);
    }
  }
}
