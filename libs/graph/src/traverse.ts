/**
 * Traversals over an Adjacency's typed arrays (its CSR base, then its overlay
 * chain, for each node): breadth-first visit, shortest hop path, and Dijkstra with
 * a pluggable edge weight. Scratch arrays are kept per adjacency and reset by a
 * generation stamp, so a traversal costs what it visits, not the size of the graph,
 * and allocates nothing but its answer (and Dijkstra's heap).
 */
import { DbError } from '@mmdb/core';
import type { Adjacency, WeightFn } from './adjacency';

export type { WeightFn } from './adjacency';

export interface Visit {
  readonly node: string;
  readonly depth: number;
}

class Scratch {
  /**
   * Visited marks of the breadth-first walks, one bit a node (a million nodes: 128 KB, which stays
   * in the CPU's cache and TLB reach), cleared after each walk through its queue (O(visits)). An
   * Int32 stamp per node (4 MB a million nodes) was a cache and TLB miss per edge examined once the
   * graph outgrew the caches: BFS per visit cost grew ~3x from 1M to 8M edges (DESIGN.md).
   */
  seen = new Uint32Array(0);
  /**
   * The walk's queue (visit order), each visit's depth and the record it was reached from: sized
   * to the walk, not the graph (grown by doubling as it goes: `growQueue`). Sized to the node
   * count they cost 12 bytes a node for every adjacency ever walked, while a depth-3 BFS visits
   * ~1,000 nodes.
   */
  queue = new Int32Array(QUEUE_MIN);
  depth = new Int32Array(QUEUE_MIN);
  via = new Int32Array(QUEUE_MIN);
  /** Per node, for the fewest-hops path and Dijkstra only (allocated at their first use: `nodeArrays`). */
  stamp = new Int32Array(0);
  gen = 0;
  parent = new Int32Array(0);
  dist = new Float64Array(0);
  private nodes = 0;

  /** Starts a traversal over `n` nodes: every node reads as unvisited. */
  begin(n: number): void {
    this.nodes = n;
    // one slot more than nodes: a walk may list its start twice (walk.ts, a cycle back to it)
    if (this.seen.length * 32 < n + 1) this.seen = new Uint32Array(Math.max((n + 1) >>> 5, this.seen.length * 2, 2) + 1);
    if (++this.gen >= 0x7fffffff) {
      this.stamp.fill(0);
      this.gen = 1;
    }
  }

  /** Doubles the queue, depth and via arrays, keeping their contents. */
  growQueue(): void {
    const cap = this.queue.length * 2;
    const g = (a: Int32Array): Int32Array<ArrayBuffer> => {
      const x = new Int32Array(cap);
      x.set(a);
      return x;
    };
    this.queue = g(this.queue);
    this.depth = g(this.depth);
    this.via = g(this.via);
  }

  /** The per-node arrays (parent, and Dijkstra's stamp and dist), sized to the node count now. */
  nodeArrays(): void {
    const n = this.nodes + 1;
    if (this.parent.length >= n) return;
    const cap = Math.max(n, this.parent.length * 2, 64);
    this.parent = new Int32Array(cap);
    this.stamp = new Int32Array(cap);
    this.dist = new Float64Array(cap);
    this.gen = 1;
  }

  /** Bytes held (diagnostics and the memory tests). */
  get bytes(): number {
    return this.seen.byteLength + this.queue.byteLength * 3 + this.parent.byteLength + this.stamp.byteLength + this.dist.byteLength;
  }
}

const QUEUE_MIN = 1024;

const scratches = new WeakMap<Adjacency, Scratch>();

/** Bytes of an adjacency's traversal scratch (0 before its first traversal). */
export function scratchBytes(adj: Adjacency): number {
  return scratches.get(adj)?.bytes ?? 0;
}

/** The adjacency's scratch arrays, begun for a traversal (walk.ts shares them). */
export function scratchOf(adj: Adjacency): Scratch {
  let s = scratches.get(adj);
  if (!s) scratches.set(adj, (s = new Scratch()));
  s.begin(adj.nodeCount);
  return s;
}

/** Nodes reachable from `src` within `maxDepth` hops, in visit order, `src` first at depth 0. */
export function bfs(adj: Adjacency, src: string, maxDepth: number): Visit[] {
  const start = adj.idOf(src);
  if (start === undefined) return [{ node: src, depth: 0 }];
  const s = scratchOf(adj);
  const seen = s.seen;
  let { queue, depth } = s;
  const { fOff, fTo, oHeadF, oNextF, oDst, oDead, baseNodes } = adj;
  let head = 0;
  let tail = 0;
  queue[tail] = start;
  depth[tail++] = 0;
  seen[start >>> 5] |= 1 << (start & 31);
  let levelEnd = 0;
  while (head < tail) {
    if (head === levelEnd) {
      // a new level: load its nodes' edge ranges first, many misses in flight at once (as NodeTable.names)
      levelEnd = tail;
      if (depth[head] < maxDepth) touchEdges(queue, head, tail, fOff, fTo, baseNodes);
    }
    const u = queue[head];
    const du = depth[head++];
    if (du >= maxDepth) continue;
    if (u < baseNodes) {
      for (let k = fOff[u], end = fOff[u + 1]; k < end; k++) {
        const v = fTo[k];
        if (v < 0) continue;
        const w = v >>> 5;
        const b = 1 << (v & 31);
        if (seen[w] & b) continue;
        seen[w] |= b;
        if (tail === queue.length) {
          s.growQueue();
          ({ queue, depth } = s);
        }
        queue[tail] = v;
        depth[tail++] = du + 1;
      }
    }
    for (let e = oHeadF[u]; e >= 0; e = oNextF[e]) {
      const v = oDst[e];
      const w = v >>> 5;
      const b = 1 << (v & 31);
      if (oDead[e] || seen[w] & b) continue;
      seen[w] |= b;
      if (tail === queue.length) {
        s.growQueue();
        ({ queue, depth } = s);
      }
      queue[tail] = v;
      depth[tail++] = du + 1;
    }
  }
  unsee(seen, queue, tail);
  const names = adj.names(queue, tail);
  const visits = new Array<Visit>(tail);
  for (let k = 0; k < tail; k++) visits[k] = { node: names[k], depth: depth[k] };
  return visits;
}

/** A shortest (fewest hops) path from `src` to `dst` of at most `maxDepth` hops, or null. */
export function shortestPath(adj: Adjacency, src: string, dst: string, maxDepth: number): string[] | null {
  if (src === dst) return [src];
  const start = adj.idOf(src);
  const goal = adj.idOf(dst);
  if (start === undefined || goal === undefined) return null;
  const s = scratchOf(adj);
  s.nodeArrays();
  const { seen, parent } = s;
  let { queue, depth } = s;
  const { fOff, fTo, oHeadF, oNextF, oDst, oDead, baseNodes } = adj;
  let head = 0;
  let tail = 0;
  queue[tail] = start;
  depth[tail++] = 0;
  seen[start >>> 5] |= 1 << (start & 31);
  parent[start] = -1;
  while (head < tail) {
    const u = queue[head];
    const du = depth[head++];
    if (du >= maxDepth) continue;
    const kEnd = u < baseNodes ? fOff[u + 1] : 0;
    // base edges, then overlay edges (e = -1 ends the chain)
    for (let k = u < baseNodes ? fOff[u] : 0, e = oHeadF[u]; k < kEnd || e >= 0; ) {
      let v: number;
      if (k < kEnd) v = fTo[k++];
      else {
        v = oDead[e] ? -1 : oDst[e];
        e = oNextF[e];
      }
      if (v < 0) continue;
      const w = v >>> 5;
      const b = 1 << (v & 31);
      if (seen[w] & b) continue;
      seen[w] |= b;
      parent[v] = u;
      if (v === goal) {
        unsee(seen, queue, tail);
        seen[w] = 0;
        return unwind(adj, parent, goal);
      }
      if (tail === queue.length) {
        s.growQueue();
        ({ queue, depth } = s);
      }
      queue[tail] = v;
      depth[tail++] = du + 1;
    }
  }
  unsee(seen, queue, tail);
  return null;
}

const touched = { sink: 0 }; // where the loads of touchEdges go (kept so they are not dropped as dead)
/** Loads the offsets of queue[from, to) and the first entry of each range (values unused), so a level's misses overlap before it is walked: see `bfs`. */
export function touchEdges(queue: Int32Array, from: number, to: number, fOff: Int32Array, fTo: Int32Array, baseNodes: number): void {
  let x = 0;
  for (let k = from; k < to; k++) {
    const u = queue[k];
    if (u < baseNodes) x |= fOff[u];
  }
  for (let k = from; k < to; k++) {
    const u = queue[k];
    if (u >= baseNodes) continue;
    const a = fOff[u];
    if (a < fOff[u + 1]) x |= fTo[a]; // (an empty range's start may be past the end)
  }
  touched.sink = x;
}

/** Clears the visited bits of the first `n` queued nodes (every node a walk marked is queued). */
export function unsee(seen: Uint32Array, queue: Int32Array, n: number): void {
  for (let k = 0; k < n; k++) seen[queue[k] >>> 5] = 0;
}

function unwind(adj: Adjacency, parent: Int32Array, goal: number): string[] {
  const ids: number[] = [];
  for (let v = goal; v !== -1; v = parent[v]) ids.push(v);
  ids.reverse();
  return ids.map((i) => adj.name(i));
}

export interface DijkstraResult {
  readonly path: string[];
  readonly total_weight: number | null;
}

/**
 * Least total weight path from `src` to `dst`. Missing weights count 1; a negative
 * or non-finite weight met on the way is a `validation_failed` (Dijkstra needs w ≥ 0).
 * Unreachable: an empty path and `total_weight: null`.
 */
/** `pass`: a node it may enter (absent: any); a path never goes through one that fails it. */
export function dijkstra(adj: Adjacency, src: string, dst: string, weight: WeightFn, pass?: (v: number) => boolean): DijkstraResult {
  if (src === dst) return { path: [src], total_weight: 0 };
  const start = adj.idOf(src);
  const goal = adj.idOf(dst);
  if (start === undefined || goal === undefined) return { path: [], total_weight: null };
  const s = scratchOf(adj);
  s.nodeArrays();
  const { stamp, parent, dist } = s;
  // stamp === gen: dist/parent valid for this run; settled nodes are recognised by stale heap keys.
  const gen = s.gen;
  const { fOff, fTo, oHeadF, oNextF, oDst, oDead, baseNodes, baseEdges } = adj;
  const heap = new MinHeap();
  stamp[start] = gen;
  dist[start] = 0;
  parent[start] = -1;
  heap.push(0, start);
  while (heap.size > 0) {
    const d = heap.topKey();
    const u = heap.pop();
    if (d > dist[u]) continue; // stale entry
    if (u === goal) return { path: unwind(adj, parent, goal), total_weight: d };
    const kEnd = u < baseNodes ? fOff[u + 1] : 0;
    for (let k = u < baseNodes ? fOff[u] : 0, e = oHeadF[u]; k < kEnd || e >= 0; ) {
      let v: number;
      let slot: number;
      if (k < kEnd) {
        slot = k;
        v = fTo[k++];
      } else {
        slot = baseEdges + e;
        v = oDead[e] ? -1 : oDst[e];
        e = oNextF[e];
      }
      if (v < 0 || (pass && !pass(v))) continue;
      let w = weight(u, v, slot);
      if (Number.isNaN(w)) w = 1;
      else if (!(w >= 0) || w === Infinity) {
        throw new DbError('validation_failed', `edge ${adj.name(u)}|${adj.name(v)} has weight ${w}: dijkstra needs finite weights >= 0`, {
          field: 'weight',
        });
      }
      const nd = d + w;
      if (stamp[v] !== gen || nd < dist[v]) {
        stamp[v] = gen;
        dist[v] = nd;
        parent[v] = u;
        heap.push(nd, v);
      }
    }
  }
  return { path: [], total_weight: null };
}

/** A binary min-heap of (key, node) on growable parallel arrays. */
class MinHeap {
  private keys: number[] = [];
  private vals: number[] = [];

  get size(): number {
    return this.keys.length;
  }

  topKey(): number {
    return this.keys[0];
  }

  push(key: number, val: number): void {
    const keys = this.keys;
    const vals = this.vals;
    let i = keys.length;
    keys.push(key);
    vals.push(val);
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (keys[p] <= key) break;
      keys[i] = keys[p];
      vals[i] = vals[p];
      i = p;
    }
    keys[i] = key;
    vals[i] = val;
  }

  pop(): number {
    const keys = this.keys;
    const vals = this.vals;
    const top = vals[0];
    const lastKey = keys.pop() as number;
    const lastVal = vals.pop() as number;
    const n = keys.length;
    if (n > 0) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= n) break;
        const r = l + 1;
        const c = r < n && keys[r] < keys[l] ? r : l;
        if (keys[c] >= lastKey) break;
        keys[i] = keys[c];
        vals[i] = vals[c];
        i = c;
      }
      keys[i] = lastKey;
      vals[i] = lastVal;
    }
    return top;
  }
}
