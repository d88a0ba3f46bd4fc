import { DbError } from './errors';

/**
 * Column types a manifest may declare (libs/storage/MANIFEST.md documents each).
 * Stored values are plain JSON values:
 * - str: string; i64: integer in [-(2^53-1), 2^53-1] (a JS safe integer); f64: finite number;
 * - bool: boolean; timestamp: integer milliseconds since the UNIX epoch (an RFC 3339
 *   string is accepted on write and converted); json: any JSON value;
 * - vector: array of `dim` finite numbers.
 */
export const COLUMN_TYPES = ['str', 'i64', 'f64', 'bool', 'timestamp', 'json', 'vector'] as const;
export type ColumnType = (typeof COLUMN_TYPES)[number];

export function isColumnType(s: unknown): s is ColumnType {
  return typeof s === 'string' && (COLUMN_TYPES as readonly string[]).includes(s);
}

/** A JSON value as stored in a row. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [k: string]: JsonValue };
export type Row = Record<string, JsonValue>;

const RFC3339 = /^\d{4}-\d{2}-\d{2}([Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?)?$/;

function mismatch(field: string, ty: string, v: unknown): never {
  const shown = JSON.stringify(v);
  throw new DbError('type_mismatch', `column "${field}" expects ${ty}, got ${shown === undefined ? typeof v : shown.slice(0, 60)}`, { field });
}

/**
 * Checks a value written to a column of type `ty` and returns the stored form.
 * Throws `type_mismatch` naming the field. `null` is returned as is (the caller
 * decides whether the column may be null).
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
      if (typeof v !== 'number' || !Number.isSafeInteger(v)) mismatch(field, 'i64 (a safe integer)', v);
      return v;
    case 'f64':
      if (typeof v !== 'number' || !Number.isFinite(v)) mismatch(field, 'f64 (a finite number)', v);
      return v;
    case 'bool':
      if (typeof v !== 'boolean') mismatch(field, ty, v);
      return v;
    case 'timestamp': {
      if (typeof v === 'number' && Number.isSafeInteger(v)) return v;
      if (typeof v === 'string' && RFC3339.test(v)) {
        const t = Date.parse(v);
        if (Number.isFinite(t)) return t;
      }
      return mismatch(field, 'timestamp (epoch milliseconds or RFC 3339)', v);
    }
    case 'json':
      if (v === undefined || typeof v === 'function' || typeof v === 'symbol' || typeof v === 'bigint') mismatch(field, ty, v);
      return v as JsonValue;
    case 'vector': {
      if (!Array.isArray(v) || v.some((x) => typeof x !== 'number' || !Number.isFinite(x))) {
        mismatch(field, 'vector (an array of finite numbers)', v);
      }
      if (dim !== undefined && v.length !== dim) {
        throw new DbError('dim_mismatch', `column "${field}" expects a vector of ${dim} dimensions, got ${v.length}`, { field });
      }
      return v as number[];
    }
  }
}
