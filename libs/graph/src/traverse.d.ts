import type { Adjacency } from './adjacency';
export interface Visit {
    readonly node: string;
    readonly depth: number;
}
/** Nodes reachable from `src` within `maxDepth` hops, in visit order, `src` first at depth 0. */
export declare function bfs(adj: Adjacency, src: string, maxDepth: number): Visit[];
/** A shortest (fewest hops) path from `src` to `dst` of at most `maxDepth` hops, or null. */
export declare function shortestPath(adj: Adjacency, src: string, dst: string, maxDepth: number): string[] | null;
/** Weight of the k-th outgoing edge of node `from`; NaN means "no weight" (counts as 1). */
export type WeightFn = (from: number, k: number) => number;
export interface DijkstraResult {
    readonly path: string[];
    readonly total_weight: number | null;
}
/**
 * Least total weight path from `src` to `dst`. Missing weights count 1; a negative
 * or non-finite weight met on the way is a `validation_failed` (Dijkstra needs w ≥ 0).
 * Unreachable: an empty path and `total_weight: null`.
 */
export declare function dijkstra(adj: Adjacency, src: string, dst: string, weight: WeightFn): DijkstraResult;
//# sourceMappingURL=traverse.d.ts.map