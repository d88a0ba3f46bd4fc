/** What a graph leaf prepared before the operators run (filled by run/multimodel.ts, read by exec/multimodel-ops.ts). */
import type { Tuple } from '../values';

/** The nodes a walk reached (libs/graph walk.ts), names decoded on demand. */
export interface GraphWalk {
  readonly length: number;
  readonly depths: Int32Array;
  /** The record each was reached from (-1: the start). */
  readonly vias: Int32Array;
  /** The node key of record k. */
  name(k: number): string;
}

export interface GraphLeaf {
  /** The schema whose rows the traversal reaches (the relation's target, or its source in reverse). */
  readonly schema: string;
  /** Neighbours of a node along the node's direction, distinct, in adjacency order. */
  readonly next: (node: string) => readonly string[];
  /** The reached table's row of a node key text (undefined when none, or without row columns). */
  readonly row: (node: string) => Tuple | undefined;
  /** Whether a start node may be walked from (the leaf's `start_filter`); absent: any. */
  readonly start?: (node: string) => boolean;
  /** Whether a reached node is visible (the leaf's `filter`); absent: every node. `next` already skips the others. */
  readonly visible?: (node: string) => boolean;
  /**
   * graph_expand's breadth-first walk from a start node over the adjacency's integer ids (the
   * leaf's direction, hidden nodes skipped): null when the start has no edges. `startSeen`: the
   * start counts as visited from depth 0; `onLevel` gets each level's new nodes (budgets).
   */
  readonly walk?: (start: string, maxDepth: number, startSeen: boolean, onLevel: (depth: number, size: number) => void) => GraphWalk | null;
}
