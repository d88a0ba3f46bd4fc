/**
 * The breadth-first walk behind `graph_expand` (SQL, POST /query, GET /graph/bfs and neighbors):
 * each node once at its least depth, in adjacency order, along one direction or both, over integer
 * ids with a visited bitset (traverse.ts Scratch). Names are decoded by the caller, only for the
 * nodes it emits. Before, the executor walked node strings: a string array per expanded node
 * (every neighbour's name decoded, seen or not), a Set and a Map of strings per walk.
 */
import type { Adjacency } from './adjacency';
import { scratchOf, touchEdges, unsee } from './traverse';

export type WalkDirection = 'forward' | 'reverse' | 'both';

export interface WalkOptions {
  readonly direction: WalkDirection;
  /** Deepest level walked (Infinity: until no new node). */
  readonly maxDepth: number;
  /**
   * The start counts as visited from the beginning (SQL's min_depth 0). Otherwise a cycle back to
   * it reaches it like any node (listed again at that depth, not walked again).
   */
  readonly startSeen: boolean;
  /** A node the walk may reach and go through (absent: any); asked for each candidate not yet reached. */
  readonly pass?: (id: number) => boolean;
  /** Called after each level with the number of new nodes to walk from; may throw (query budgets). */
  readonly onLevel?: (depth: number, size: number) => void;
}

/** The nodes reached, in visit order: record 0 is the start at depth 0. */
export interface WalkResult {
  readonly length: number;
  readonly ids: Int32Array;
  readonly depths: Int32Array;
  /** The record a node was reached from (-1 for the start): its path is the chain of vias. */
  readonly vias: Int32Array;
}

/** Walks from `src`; null when `src` is no node of the adjacency (it has no edges). */
export function walk(adj: Adjacency, src: string, o: WalkOptions): WalkResult | null {
  const start = adj.idOf(src);
  if (start === undefined) return null;
  const s = scratchOf(adj);
  const seen = s.seen;
  let { queue: ids, depth: depths, via: vias } = s;
  const fwd = o.direction !== 'reverse';
  const rev = o.direction !== 'forward';
  const { fOff, fTo, rOff, rFrom, oHeadF, oNextF, oDst, oHeadR, oNextR, oSrc, oDead, baseNodes } = adj;
  const pass = o.pass;
  let tail = 0;
  ids[0] = start;
  depths[0] = 0;
  vias[0] = -1;
  tail = 1;
  if (o.startSeen) seen[start >>> 5] |= 1 << (start & 31);
  const reach = (v: number, d: number, via: number): void => {
    const w = v >>> 5;
    const b = 1 << (v & 31);
    if (seen[w] & b || (pass && !pass(v))) return;
    seen[w] |= b;
    if (tail === ids.length) {
      s.growQueue();
      ({ queue: ids, depth: depths, via: vias } = s);
    }
    ids[tail] = v;
    depths[tail] = d;
    vias[tail++] = via;
  };
  try {
    let lo = 0;
    for (let d = 1; d <= o.maxDepth; d++) {
      const hi = tail;
      // the level's edge ranges loaded first, many misses in flight at once (traverse.ts touchEdges)
      if (fwd) touchEdges(ids, lo, hi, fOff, fTo, baseNodes);
      if (rev) touchEdges(ids, lo, hi, rOff, rFrom, baseNodes);
      for (let k = lo; k < hi; k++) {
        const u = ids[k];
        if (k > 0 && u === start) continue; // the start reached again: listed, not walked again
        if (fwd) {
          if (u < baseNodes) for (let j = fOff[u], end = fOff[u + 1]; j < end; j++) if (fTo[j] >= 0) reach(fTo[j], d, k);
          for (let e = oHeadF[u]; e >= 0; e = oNextF[e]) if (!oDead[e]) reach(oDst[e], d, k);
        }
        if (rev) {
          if (u < baseNodes) for (let j = rOff[u], end = rOff[u + 1]; j < end; j++) if (rFrom[j] >= 0) reach(rFrom[j], d, k);
          for (let e = oHeadR[u]; e >= 0; e = oNextR[e]) if (!oDead[e]) reach(oSrc[e], d, k);
        }
      }
      let walked = tail - hi;
      for (let k = hi; k < tail; k++) if (ids[k] === start) walked--;
      o.onLevel?.(d, walked);
      if (walked === 0) break;
      lo = hi;
    }
    return { length: tail, ids: ids.slice(0, tail), depths: depths.slice(0, tail), vias: vias.slice(0, tail) };
  } finally {
    unsee(seen, ids, tail);
  }
}

/**
 * The names of a walk's ids by record index, decoded a chunk of 256 at a time at the first ask
 * (`Adjacency.names`: the loads of a chunk's names overlap instead of one miss after another).
 */
export function walkNames(adj: Adjacency, ids: Int32Array, n: number): (k: number) => string {
  const chunks: Array<string[] | undefined> = [];
  return (k: number): string => {
    const c = k >>> 8;
    let names = chunks[c];
    if (!names) {
      const from = c << 8;
      const len = Math.min(256, n - from);
      names = chunks[c] = adj.names(ids.subarray(from, from + len), len);
    }
    return names[k & 255];
  };
}
