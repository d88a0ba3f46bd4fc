import type { Expr } from '../expr';
import type { PlanNode } from '../node';
import type { SortKey } from './sort';

/** One end of a window frame; `offset` is a constant expression (non-negative). */
export interface FrameBound {
  readonly type: 'unbounded_preceding' | 'preceding' | 'current_row' | 'following' | 'unbounded_following';
  readonly offset?: Expr;
}

/** ROWS / RANGE / GROUPS frame with SQLite's EXCLUDE options (default `no_others`). */
export interface WindowFrame {
  readonly unit: 'rows' | 'range' | 'groups';
  readonly start: FrameBound;
  readonly end: FrameBound;
  readonly exclude?: 'no_others' | 'current_row' | 'group' | 'ties';
}

/**
 * One window function: row_number, rank, dense_rank, percent_rank, cume_dist, ntile, lag, lead,
 * first_value, last_value, nth_value, or an aggregate (count, sum, total, avg, min, max,
 * group_concat, string_agg) over the frame. `filter` (aggregates only) is `FILTER (WHERE …)`.
 * With no `frame`: RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW (the whole partition
 * without `order`), as in SQLite.
 */
export interface WindowCall {
  readonly name: string;
  readonly fn: string;
  readonly args: readonly Expr[];
  readonly star?: boolean;
  readonly distinct?: boolean;
  readonly filter?: Expr;
  readonly partition: readonly Expr[];
  readonly order: readonly SortKey[];
  readonly frame?: WindowFrame;
}

/**
 * Computes window functions over `input` with SQLite's semantics. Output: the input's columns
 * then one column per function (named `name`). As SQLite, functions are computed last-listed
 * first, each over the previous one's order (which OVER () numbering sees); rows come out in the
 * first function's PARTITION BY then ORDER BY order (stable).
 */
export interface WindowNode { readonly op: 'window'; readonly input: PlanNode; readonly functions: readonly WindowCall[] }
export const windowNode = (input: PlanNode, functions: readonly WindowCall[]): WindowNode => ({ op: 'window', input, functions });
