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
}
export const graphPath = (n: Omit<GraphPathNode, 'op'>): GraphPathNode => ({ op: 'graph_path', ...n });
