/** Input checks shared by every caller (HTTP, SQL): they throw the spec's codes. */
import { DbError, isLosslessNumber, type JsonValue } from '@mmdb/core';
import { SEARCH_MODES, type SearchMode } from './ann';
import { isMetric, type VectorMetric } from './metric';

/** Largest `k` a top-k accepts. */
export const MAX_K = 1000;
/** Largest dimension a table may lock. */
export const MAX_DIM = 4096;

/**
 * Checks that `v` is a finite, non-empty array of numbers of length `dim` (when known:
 * `dim_mismatch`), without copying it: the query path hands it straight to
 * `VectorTable.topk`, which copies it into the table's query buffer.
 */
export function checkVector(field: string, v: unknown, dim?: number): readonly number[] {
  if (!Array.isArray(v)) throw new DbError('validation_failed', `"${field}" must be an array of numbers`, { field });
  const n = v.length;
  if (n === 0) throw new DbError('validation_failed', `"${field}" must not be empty`, { field });
  if (n > MAX_DIM) throw new DbError('validation_failed', `"${field}" has ${n} components; at most ${MAX_DIM}`, { field });
  // one tight loop: `x - x` is 0 for a finite number, NaN for ±Infinity and NaN
  let out: unknown[] = v;
  for (let i = 0; i < n; i++) {
    const x = v[i];
    if (typeof x === 'number' && x - x === 0) continue;
    // an integer literal beyond 2^53 arrives exact (a bigint): a component is a float, so its nearest
    if (typeof x === 'bigint') {
      if (out === v) out = v.slice();
      out[i] = Number(x);
      continue;
    }
    throw badComponent(field, i, x);
  }
  v = out;
  if (dim !== undefined && n !== dim)
    throw new DbError('dim_mismatch', `"${field}" has ${n} dimensions; the table is locked to ${dim}`, { field, expected: dim, got: n });
  return v as number[];
}

/**
 * Cosine compares directions: a vector whose float32 components are all zero has none, so a
 * cosine table refuses it (`validation_failed`: no direction) at put and at top-k.
 */
export function checkDirection(field: string, v: ArrayLike<number>, metric: VectorMetric): void {
  if (metric !== 'cosine') return;
  for (let i = 0; i < v.length; i++) if (Math.fround(v[i]) !== 0) return;
  throw new DbError('validation_failed', `"${field}" is a zero vector: it has no direction, so cosine distance is undefined for it`, { field });
}

function badComponent(field: string, i: number, x: unknown): DbError {
  if (isLosslessNumber(x)) return new DbError('validation_failed', `"${field}[${i}]" is ${x.value}: not a finite number a float holds`, { field });
  if (typeof x !== 'number') return new DbError('validation_failed', `"${field}[${i}]" is not a number`, { field });
  return new DbError('validation_failed', `"${field}[${i}]" is not finite`, { field });
}

/** A finite, non-empty array of numbers → Float32Array; `dim`, when known, must match (`dim_mismatch`). */
export function parseVector(field: string, v: unknown, dim?: number): Float32Array {
  const a = checkVector(field, v, dim);
  const out = new Float32Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = a[i];
  return out;
}

/** A Float32Array as a plain array of numbers (`Array.from` on a typed array allocates ~80 bytes per element). */
export function toNumbers(v: Float32Array): number[] {
  const out = new Array<number>(v.length);
  for (let i = 0; i < v.length; i++) out[i] = v[i];
  return out;
}

export function parseK(v: unknown): number {
  if (v === undefined || v === null) return 10;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > MAX_K)
    throw new DbError('validation_failed', `"k" must be an integer from 1 to ${MAX_K}`, { field: 'k' });
  return v;
}

export function parseMode(v: unknown): SearchMode {
  if (v === undefined || v === null) return 'high_recall';
  if (typeof v !== 'string' || !(SEARCH_MODES as readonly string[]).includes(v))
    throw new DbError('validation_failed', `"mode" must be one of ${SEARCH_MODES.join(', ')}`, { field: 'mode' });
  return v as SearchMode;
}

export function parseMetric(v: unknown): VectorMetric | undefined {
  if (v === undefined || v === null) return undefined;
  if (!isMetric(v)) throw new DbError('validation_failed', `"metric" must be one of cosine, dot, l2, manhattan`, { field: 'metric' });
  return v;
}

export type Metadata = { [k: string]: JsonValue };

export function parseMetadata(field: string, v: unknown): Metadata | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'object' || Array.isArray(v)) throw new DbError('validation_failed', `"${field}" must be an object`, { field });
  return v as Metadata;
}

export function parseId(v: unknown): string {
  if (typeof v !== 'string' || v.length === 0 || v.length > 512)
    throw new DbError('validation_failed', '"id" must be a non-empty string (at most 512 characters)', { field: 'id' });
  return v;
}

/** Standalone vector table names: letters, digits, `_`, `-`, `.` (a manifest's `ns.table` included). */
export function parseTableName(v: unknown): string {
  if (typeof v !== 'string' || !/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/.test(v))
    throw new DbError('validation_failed', 'table name must be 1–128 letters, digits, "_", "-" or "."', { field: 'table' });
  return v;
}
