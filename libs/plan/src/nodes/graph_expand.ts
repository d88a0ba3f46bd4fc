import type { Expr } from '../expr';
import type { PlanNode } from '../node';

export type GraphDirection = 'forward' | 'reverse' | 'both';

/**
 * For each row of `input`, the rows reached from node `from` (an expression over the input row:
 * the start node's primary key, as text for a composite key's JSON) along relation `rel` of
 * `schema`, at depths `min_depth` (default 1) to `max_depth` (default `min_depth`; `null` =
 * transitive, unbounded). Breadth-first: each node once per input row, at its least depth
 * (cycle-safe); in visit order. `direction`: `forward` (source → target, default), `reverse`
 * (target → source; self-relations included), `both` (either way; only on a self-relation).
 * Output: the input's columns, then the reached row's columns (named `alias.col` when `alias` is
 * set), `_node` (the reached node's key text), `_depth`, and with `emit_path` `_path` (JSON array of
 * the node keys from the start to the reached node). A reached key naming no row gives NULL row
 * columns (the traversal routes list such nodes too).
 * With no `input` the start is one row with no columns (then `from` is a constant).
 */
export interface GraphExpandNode {
  readonly op: 'graph_expand';
  readonly input?: PlanNode;
  readonly schema: string;
  readonly rel: string;
  readonly from: Expr;
  readonly direction?: GraphDirection;
  readonly min_depth?: number;
  readonly max_depth?: number | null;
  readonly alias?: string;
  /** false: no row columns, only the traversal's (the routes use it; nothing is read but the adjacency). */
  readonly row_columns?: boolean;
  /**
   * A predicate over the reached table's row (`alias.col` with `alias`): a node whose row fails it,
   * or that names no row, is neither returned nor walked through (no path passes it). The Policy
   * port puts the user's row-level security here, so a traversal never hops through a hidden node.
   */
  readonly filter?: Expr;
  /** The same over the start table's row (the relation's other end): a failing start reaches nothing. */
  readonly start_filter?: Expr;
  readonly emit_path?: boolean;
}
export const graphExpand = (n: Omit<GraphExpandNode, 'op'>): GraphExpandNode => ({ op: 'graph_expand', ...n });
