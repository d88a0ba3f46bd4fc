/**
 * Query-parameter checks of the graph routes (spec §4.10). Each failure is a 400
 * `validation_failed` naming the parameter.
 */
import { DbError } from '@mmdb/core';
import { DEFAULT_DEPTH, MAX_DEPTH } from '@mmdb/graph';

export type Query = Record<string, unknown>;

function bad(param: string, why: string): never {
  throw new DbError('validation_failed', `query parameter "${param}" ${why}`, { param });
}

export function required(q: Query, name: string): string {
  const v = q[name];
  if (v === undefined || v === '') bad(name, 'is required');
  if (typeof v !== 'string') bad(name, 'must be given once, as a string');
  return v;
}

export function optional(q: Query, name: string): string | undefined {
  const v = q[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') bad(name, 'must be given once, as a string');
  if (v === '') bad(name, 'must not be empty when given');
  return v;
}

export function depth(q: Query, name: string, dflt: number): number {
  const v = optional(q, name);
  if (v === undefined) return dflt;
  if (!/^\d{1,6}$/.test(v)) bad(name, `must be an integer from 0 to ${MAX_DEPTH}, got "${v}"`);
  const n = Number(v);
  if (n > MAX_DEPTH) bad(name, `must be at most ${MAX_DEPTH} (the documented cap), got ${n}`);
  return n;
}

/** `weights_json`: a JSON object of "<from>|<to>" → finite weight >= 0. */
export function weights(q: Query): Record<string, number> | undefined {
  const v = optional(q, 'weights_json');
  if (v === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(v);
  } catch {
    bad('weights_json', 'is not valid JSON');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) bad('weights_json', 'must be a JSON object mapping "<from>|<to>" to a number');
  for (const [k, w] of Object.entries(parsed as Record<string, unknown>)) {
    if (!k.includes('|')) bad('weights_json', `key "${k}" must be "<from>|<to>"`);
    if (typeof w !== 'number' || !Number.isFinite(w)) bad('weights_json', `weight of "${k}" must be a finite number, got ${JSON.stringify(w)}`);
    if (w < 0) bad('weights_json', `weight of "${k}" must not be negative (dijkstra), got ${w}`);
  }
  return parsed as Record<string, number>;
}

export { DEFAULT_DEPTH, MAX_DEPTH };
