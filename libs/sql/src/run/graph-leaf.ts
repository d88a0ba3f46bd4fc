/**
 * A graph leaf's walk functions over a relation's adjacency and the reached rows (read by
 * run/multimodel.ts through a snapshot, or from the store as it is now: MultiModelReader.expandCurrent).
 */
import { DbError } from '@mmdb/core';
import type { Expr, NodeOf } from '@mmdb/plan';
import { walk as walkGraph, walkNames, type Adjacency } from '@mmdb/graph';
import type { GraphLeaf, GraphWalk } from '../exec/multimodel-leaf';
import type { Tuple } from '../values';

export type GraphNode = NodeOf<'graph_expand'> | NodeOf<'graph_path'> | NodeOf<'graph_dijkstra'>;
export type GraphLeafOf = GraphLeaf & { adj: Adjacency; forward: boolean };
export interface GraphEnds { reached: string; from: string; dir: 'forward' | 'reverse' | 'both' }
type Lookup = (node: string) => Tuple | undefined;

/** A graph leaf's direction, the schema it reaches and the one it starts from (a "both" walk needs a self-relation). */
export function graphEnds(n: GraphNode, def: { source: string; target: string }): GraphEnds {
  const dir = n.op === 'graph_dijkstra' ? 'forward' : n.direction ?? 'forward';
  if (dir === 'both' && def.source !== def.target) {
    const path = '$.direction';
    throw new DbError('validation_failed', `invalid plan at ${path}: direction "both" needs a self-relation; ${n.rel} links ${def.source} to ${def.target}`, { path });
  }
  return dir === 'reverse' ? { reached: def.source, from: def.target, dir } : { reached: def.target, from: def.source, dir };
}

/**
 * The leaf: `lookup` gives the reached table's rows (row columns, the `filter`), `fromLookup` the
 * start table's (its `start_filter`); `nodeFilter` compiles a filter over a table's rows into a
 * memoized node test.
 */
export function graphLeafOf(
  n: GraphNode, ends: GraphEnds, adj: Adjacency, lookup: Lookup | undefined, fromLookup: Lookup | undefined,
  nodeFilter: (e: Expr, lookup: Lookup, schema: string) => (node: string) => boolean,
): GraphLeafOf {
  const { dir, reached: schema } = ends;
  const row: Lookup = n.row_columns !== false && lookup ? lookup : () => undefined;
  const all = dir === 'forward' ? (x: string) => adj.neighbors(x)
    : dir === 'reverse' ? (x: string) => adj.sources(x)
    : (x: string) => [...new Set([...adj.neighbors(x), ...adj.sources(x)])];
  // under a filter (row-level security) a hidden node is neither reached nor walked through
  const visible = n.filter && lookup ? nodeFilter(n.filter, lookup, schema) : undefined;
  const next = visible ? (x: string) => all(x).filter(visible) : all;
  let start: ((node: string) => boolean) | undefined;
  if (n.start_filter && fromLookup) {
    if (ends.from === schema && n.start_filter === n.filter && visible) start = visible;
    else start = nodeFilter(n.start_filter, fromLookup, ends.from);
  }
  const pass = visible ? (id: number) => visible(adj.name(id)) : undefined;
  const walk = (src: string, maxDepth: number, startSeen: boolean, onLevel: (depth: number, size: number) => void): GraphWalk | null => {
    const w = walkGraph(adj, src, { direction: dir, maxDepth, startSeen, onLevel, ...(pass ? { pass } : {}) });
    return w && { length: w.length, depths: w.depths, vias: w.vias, name: walkNames(adj, w.ids, w.length) };
  };
  return { schema, next, row, adj, walk, forward: dir === 'forward' && !visible, ...(start ? { start } : {}), ...(visible ? { visible } : {}) };
}

/** What graph_expand's operator reads of a leaf. */
export function expandLeaf(leaf: GraphLeafOf): GraphLeaf {
  return { schema: leaf.schema, next: leaf.next, row: leaf.row, walk: leaf.walk, ...(leaf.start ? { start: leaf.start } : {}) };
}

/** Fewest-hops path along `next` (any direction), or null. */
export function bfsPath(next: (n: string) => readonly string[], src: string, dst: string, max: number): string[] | null {
  if (src === dst) return [src];
  const parent = new Map<string, string | null>([[src, null]]);
  let frontier = [src];
  for (let d = 0; d < max && frontier.length; d++) {
    const nf: string[] = [];
    for (const u of frontier) for (const v of next(u)) {
      if (parent.has(v)) continue;
      parent.set(v, u);
      if (v === dst) {
        const out = [v];
        for (let x = parent.get(v)!; x !== null; x = parent.get(x)!) out.push(x);
        return out.reverse();
      }
      nf.push(v);
    }
    frontier = nf;
  }
  return null;
}
