import type { JsonValue } from '@mmdb/core';
import type { Expr } from '../expr';

export type VectorMetricName = 'cosine' | 'dot' | 'l2' | 'manhattan';

/**
 * The `k` rows nearest to `vector` in `column` (the manifest's `[vector]` column; a standalone
 * vector table reads as the implicit table `{id TEXT PRIMARY KEY, metadata JSON}` and needs no
 * column), nearest first, ties by id. Output: the row's columns (`alias.col` with `alias`) plus
 * `_distance`.
 * - `vector`: a literal array of numbers, a `$n` parameter bound to one, or pgvector's text `'[1,2,3]'`.
 * - `mode`: `fast` or `high_recall` (default), as on the topk route.
 * - `metric`: the distance to rank by; default the table's locked metric. Another metric is
 *   answered exactly (an exact scan), never refused.
 * - `filter`: any expression over the row's columns. Meaning: the k nearest among the rows that
 *   pass (every result passes, and k results come back whenever k rows pass).
 * - `strategy` is set by the executor for explain (`index`, `exact`, `filtered_index`, `filtered_exact`).
 */
export interface VectorTopkNode {
  readonly op: 'vector_topk';
  readonly schema: string;
  readonly alias?: string;
  readonly column?: string;
  readonly vector: Expr;
  readonly k: number;
  readonly mode?: 'fast' | 'high_recall';
  readonly metric?: VectorMetricName;
  readonly filter?: Expr;
  /** Equalities on the vector entry's metadata (the topk route's `filter`); with `filter`, both hold. */
  readonly metadata?: Readonly<Record<string, JsonValue>>;
}
export const vectorTopk = (n: Omit<VectorTopkNode, 'op'>): VectorTopkNode => ({ op: 'vector_topk', ...n });
