import type { Expr } from '../expr';
import type { GraphDirection } from './graph_expand';

/**
 * A fewest-hops path from `src` to `dst` (constant expressions: node keys) along `rel` of
 * `schema`, within `max_depth` hops (default 64). Output: one row per node on the path, in order:
 * `_step` (0 for `src`), `_node`, then the node's row columns (`alias.col` with `alias`; NULL when
 * the key names no row). No path: no rows. The path route answers `{reachable: rows > 0, path: _node…}`.
 */
export interface GraphPathNode {
  readonly op: 'graph_path';
  readonly schema: string;
  readonly rel: string;
  readonly src: Expr;
  readonly dst: Expr;
  readonly max_depth?: number;
  readonly direction?: GraphDirection;
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
export const graphPath = (n: Omit<GraphPathNode, 'op'>): GraphPathNode => ({ op: 'graph_path', ...n });
