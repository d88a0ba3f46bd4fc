/**
 * Exact numbers on the Elasticsearch surface (libs/storage/MANIFEST.md, "Numbers"; DESIGN.md,
 * "Numbers"). Bodies are parsed by the app with `parseJsonExact` (libs/core), the parser the
 * row routes use: an integer beyond ±(2^53 − 1) arrives as a `bigint`, a decimal literal a
 * double does not hold exactly as a lossless-json `LosslessNumber`.
 *
 * - A document (index, create, update's `doc`/`upsert`, `_bulk` sources) keeps its bigints, so
 *   `_source` answers them digit for digit (a `long` holds the full signed 64-bit range), and
 *   one holding an inexact decimal is refused (`refuseInexact`), as a `json` column refuses it.
 * - Every other body (queries, mappings, settings, aggregations…) holds parameters, not stored
 *   values: its numbers become doubles (`asDoubles`), which is what the translation computes with.
 */
import { isLosslessNumber } from '@mmdb/core';
import { EsError } from './errors';

/** `v` with every bigint and LosslessNumber replaced by the nearest double (a copy only where one is found). */
export function asDoubles<T>(v: T): T {
  if (typeof v === 'bigint') return Number(v) as T;
  if (v === null || typeof v !== 'object') return v;
  if (isLosslessNumber(v)) return Number((v as { value: string }).value) as T;
  if (Array.isArray(v)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < v.length; i++) {
      const x = asDoubles(v[i]);
      if (x !== v[i]) (out ??= v.slice())[i] = x;
    }
    return (out ?? v) as T;
  }
  let out: Record<string, unknown> | undefined;
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    const y = asDoubles(x);
    if (y !== x) (out ??= { ...(v as Record<string, unknown>) })[k] = y;
  }
  return (out ?? v) as T;
}

/** The path and literal of the first decimal in `v` that a double does not hold exactly, if any. */
function inexact(v: unknown, path: string): { path: string; literal: string } | undefined {
  if (v === null || typeof v !== 'object') return undefined;
  if (isLosslessNumber(v)) return { path, literal: (v as { value: string }).value };
  if (Array.isArray(v)) {
    for (const x of v) {
      const r = inexact(x, path);
      if (r) return r;
    }
    return undefined;
  }
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    const r = inexact(x, path ? `${path}.${k}` : k);
    if (r) return r;
  }
  return undefined;
}

/**
 * Refuses a document holding a decimal a double does not hold exactly (`0.10000000000000000001`,
 * `1e400`): storing it would change it (the `json` column rule). Elasticsearch's shape: a
 * mapper_parsing_exception naming the field and quoting the literal.
 */
export function refuseInexact(source: unknown, id: string): void {
  const bad = inexact(source, '');
  if (!bad) return;
  throw new EsError(400, 'mapper_parsing_exception', `failed to parse field [${bad.path}] in document with id '${id}'. Preview of field's value: '${bad.literal}'`, {
    caused_by: { type: 'illegal_argument_exception', reason: `the number ${bad.literal} does not fit a double exactly; documents are kept exactly, so it is refused (send at most 17 significant digits within ±1.8e308)` },
  });
}
