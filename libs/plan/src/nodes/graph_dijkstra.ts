import type { Expr } from '../expr';

/**
 * The least-weight path from `src` to `dst` along `rel` of `schema`. Edge weight:
 * `weights["<from>|<to>"]` when given, else the row's `weight_field` column (default the
 * relation's weight column), else 1. Output: one row per node on the path: `_step`, `_node`,
 * `_cost` (the weight from `src` to this node), then the node's row columns (`alias.col` with
 * `alias`). No path: no rows. The dijkstra route answers `{path: _node…, total_weight: last _cost}`.
 */
export interface GraphDijkstraNode {
  readonly op: 'graph_dijkstra';
  readonly schema: string;
  readonly rel: string;
  readonly src: Expr;
  readonly dst: Expr;
  readonly weight_field?: string;
  readonly weights?: Readonly<Record<string, number>>;
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
}
export const graphDijkstra = (n: Omit<GraphDijkstraNode, 'op'>): GraphDijkstraNode => ({ op: 'graph_dijkstra', ...n });
