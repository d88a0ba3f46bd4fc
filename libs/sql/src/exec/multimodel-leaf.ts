/** What a graph leaf prepared before the operators run (filled by run/multimodel.ts, read by exec/multimodel-ops.ts). */
import type { Tuple } from '../values';

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
}
