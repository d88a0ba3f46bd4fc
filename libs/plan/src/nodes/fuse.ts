import type { PlanNode } from '../node';

/**
 * Fused ranking of several ranked inputs (each input's row order is its ranking, best first).
 * Rows are identified across inputs by the `key` columns (names as each input outputs them).
 * - `rrf`: score = Σ 1 / (k + rank) over the inputs holding the row (rank from 1; `k` default 60),
 *   times the input's weight (default 1).
 * - `weighted`: score = Σ weight × normalized score, where an input's score is its `scores[i]`
 *   column (default `_score`, else `-_distance`), normalized per input by `normalization`:
 *   `min_max` (default; all equal → 1) or `z_score`; a row missing from an input adds 0.
 * Output: the first input's columns (a row found only in a later input takes that input's values
 * for the columns it has, NULL for the rest), `_score`, then `_rank_1` … `_rank_n` (the row's rank
 * in each input, NULL when absent); best `_score` first, ties by the first rank seen; at most `limit`.
 */
export interface FuseNode {
  readonly op: 'fuse';
  readonly inputs: readonly PlanNode[];
  readonly method: 'rrf' | 'weighted';
  readonly key: readonly string[];
  readonly k?: number;
  readonly weights?: readonly number[];
  readonly scores?: readonly string[];
  readonly normalization?: 'min_max' | 'z_score';
  readonly limit?: number;
}
export const fuse = (n: Omit<FuseNode, 'op'>): FuseNode => ({ op: 'fuse', ...n });
