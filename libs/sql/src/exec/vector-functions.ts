/**
 * pgvector's distance functions over vectors held as JSON arrays (a vector column's value, a
 * `$n` bound to an array, or pgvector's text `'[1,2,3]'`): `l2_distance` (`<->`),
 * `cosine_distance` (`<=>`), `negative_inner_product` (`<#>`), `inner_product`, `l1_distance`
 * (`<+>`). NULL in → NULL out; vectors of different lengths are `dim_mismatch`.
 */
import { DbError } from '@mmdb/core';
import type { Value } from '../values';
import { textDistance } from './vector-text';

/**
 * The last few vector texts parsed: a `$n` query vector is one string for every row a distance
 * is computed on. Kept small on purpose: a large cache (it held 4,096) kept every row's parsed
 * vector alive long enough to be promoted to the old generation (~25 KB per top-k statement whose
 * sort recomputes 20 distances), which is what drives major GC pauses; a row's text parsed
 * again costs a short-lived array that the young generation frees cheaply.
 */
const parsed = new Map<string, readonly number[] | null>();
const PARSED_MAX = 8;

/** A vector text's parsed array from the cache (made most recently used), or undefined when it is not there. */
function cachedText(v: string): readonly number[] | null | undefined {
  const a = parsed.get(v);
  if (a !== undefined && parsed.size > 1) {
    // most recently used last, so the query vector outlives the rows' texts met between its uses
    parsed.delete(v);
    parsed.set(v, a);
  }
  return a;
}

/** A vector text parsed (and remembered among the last few), or null when it is not a non-empty array of finite numbers. */
function parseText(v: string): readonly number[] | null {
  let a = cachedText(v);
  if (a === undefined) {
    try {
      const j = JSON.parse(v) as unknown;
      a = Array.isArray(j) && j.length > 0 && j.every((x) => typeof x === 'number' && Number.isFinite(x)) ? (j as number[]) : null;
    } catch {
      a = null;
    }
    if (parsed.size >= PARSED_MAX) parsed.delete(parsed.keys().next().value as string);
    parsed.set(v, a);
  }
  return a;
}

/**
 * Remembers `numbers` as the parse of `text` (its JSON text: a `$n` bound to an array), when
 * they are what JSON.parse would give: finite numbers and no −0 (written "0"). The array is
 * copied: the caller's stays its own.
 */
export function rememberVectorText(text: string, numbers: readonly unknown[]): void {
  if (numbers.length === 0 || parsed.has(text)) return;
  for (const x of numbers) if (typeof x !== 'number' || !Number.isFinite(x) || Object.is(x, -0)) return;
  if (parsed.size >= PARSED_MAX) parsed.delete(parsed.keys().next().value as string);
  parsed.set(text, (numbers as number[]).slice());
}

/** A vector text's numbers (read only, shared: never mutate), or undefined when it is not a vector. */
export function vectorOfText(v: string): readonly number[] | undefined {
  return parseText(v) ?? undefined;
}

/** A value as a vector (read only: arrays are not copied), or null when it is NULL; validation_failed when it is not one. */
export function vectorOfValue(v: Value): ArrayLike<number> | null {
  if (v === null) return null;
  const arr = v as unknown;
  if (Array.isArray(arr) || ArrayBuffer.isView(arr)) return arr as ArrayLike<number>;
  if (typeof v !== 'string') throw new DbError('validation_failed', `expected a vector (a JSON array of numbers), got ${typeof v === 'bigint' ? 'an integer' : 'a number'}`);
  const a = parseText(v);
  if (a === null) throw new DbError('validation_failed', `expected a vector (a JSON array of numbers), got ${JSON.stringify(v.slice(0, 40))}`);
  return a;
}

/** A value already usable as numbers without parsing: an array, or a text the cache holds. */
function ready(v: Value): ArrayLike<number> | undefined {
  const arr = v as unknown;
  if (Array.isArray(arr) || ArrayBuffer.isView(arr)) return arr as ArrayLike<number>;
  return typeof v === 'string' ? cachedText(v) ?? undefined : undefined;
}

type Metric = (a: ArrayLike<number>, b: ArrayLike<number>) => number;

const dot: Metric = (a, b) => { let s = 0; for (let i = 0; i < a.length; i++) s += a[i] * b[i]; return s; };
const METRICS: Record<string, Metric> = {
  l2_distance: (a, b) => { let s = 0; for (let i = 0; i < a.length; i++) { const d = a[i] - b[i]; s += d * d; } return Math.sqrt(s); },
  l1_distance: (a, b) => { let s = 0; for (let i = 0; i < a.length; i++) s += Math.abs(a[i] - b[i]); return s; },
  inner_product: dot,
  negative_inner_product: (a, b) => -dot(a, b),
  cosine_distance: (a, b) => {
    const na = Math.sqrt(dot(a, a));
    const nb = Math.sqrt(dot(b, b));
    if (na === 0 || nb === 0) return NaN;
    return 1 - dot(a, b) / (na * nb);
  },
};

/** The call names of `col @@ query` and `score()` in a bound plan (optimizer/fts-predicate.ts rewrites them into fts_search). */
export const FTS_MATCH = 'fts_match';
export const FTS_SCORE = 'fts_score';

/** pgvector operator → the function it means, and the vector metric an index answers it with. */
export const VECTOR_OPERATORS: Readonly<Record<string, { fn: string; metric: 'l2' | 'cosine' | 'dot' | 'manhattan' }>> = {
  '<->': { fn: 'l2_distance', metric: 'l2' },
  '<=>': { fn: 'cosine_distance', metric: 'cosine' },
  '<#>': { fn: 'negative_inner_product', metric: 'dot' },
  '<+>': { fn: 'l1_distance', metric: 'manhattan' },
};

export const VECTOR_FUNCTIONS: Record<string, { min: number; max: number; fn: (args: Value[]) => Value }> = Object.fromEntries(
  Object.entries(METRICS).map(([name, m]) => [name, {
    min: 2,
    max: 2,
    fn: (args: Value[]): Value => {
      // a row's vector text against a parsed query vector: the distance is read off the text (no array per row)
      const [x, y] = args;
      const rx = ready(x);
      const ry = rx === undefined ? ready(y) : undefined;
      const streamed = rx !== undefined && typeof y === 'string' ? textDistance(name, y, rx) : ry !== undefined && typeof x === 'string' ? textDistance(name, x, ry) : undefined;
      if (streamed !== undefined) return Number.isNaN(streamed) ? null : streamed;
      const a = vectorOfValue(args[0]);
      const b = vectorOfValue(args[1]);
      if (a === null || b === null) return null;
      if (a.length !== b.length) throw new DbError('dim_mismatch', `different vector dimensions ${a.length} and ${b.length}`, { field: 'vector' });
      const d = m(a, b);
      return Number.isNaN(d) ? null : d;
    },
  }]),
);

/** `@@` / `score()` left in a plan (the fts_predicate pass could not place them on a full-text leaf). */
const misplaced = (what: string) => (): Value => {
  throw new DbError('unsupported_sql', `${what} must be an AND term of the WHERE of one table with a [[fulltext]] field on that column (it becomes fts_search); elsewhere use fts_search(…) in FROM`, { construct: what });
};
VECTOR_FUNCTIONS[FTS_MATCH] = { min: 2, max: 2, fn: misplaced('col @@ query') };
VECTOR_FUNCTIONS[FTS_SCORE] = { min: 0, max: 1, fn: misplaced('score()') };
