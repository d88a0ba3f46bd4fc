/**
 * The read-optimised, in-memory form of one relation, held in typed arrays only (no JS
 * object per node or per edge, so a graph of millions of edges adds next to nothing to
 * what the garbage collector traces or copies):
 *
 * - node strings interned to dense ids by a `NodeTable` (one UTF-16 arena + hash slots);
 * - the **base**: compressed sparse rows, forward (`fOff`/`fTo`/`fW`/`fOwner`) and reverse
 *   (`rOff`/`rFrom`/`rOwner`), built by `compact()`; a removed base edge is a tombstone
 *   (its `fTo`/`rFrom` entry set to -1);
 * - the **overlay**: edges added since the last compaction, in growable parallel arrays,
 *   chained per source (`oHeadF`/`oNextF`) and per target (`oHeadR`/`oNextR`); a removed
 *   overlay edge is marked dead.
 * When overlay edges plus tombstones pass `max(MIN_MERGE, base edges / 8)`, a merge folds
 * them into a new base (O(nodes + edges), amortised over as many writes); a large one runs
 * in steps between other work (`startMerge`, merge.ts), so it never stalls the event loop.
 *
 * An edge is addressed by its **slot**: `0 .. baseEdges-1` in the base, `baseEdges + e` for
 * overlay edge `e`. Weights (`fW`, NaN when the row had none) and numeric props (one
 * Float64Array column per prop name, NaN when absent) are read by slot.
 *
 * Writes are idempotent by (src, dst, owner): `put` upserts, `remove` removes if present,
 * so re-applying a frame already seen in a snapshot is harmless.
 */
import { CsrBuild, type MergedBase, type MergeInput } from './merge';
import { grow, NodeTable } from './node-table';

export interface EdgeInput {
  readonly src: string;
  readonly dst: string;
  readonly owner: string | null;
  readonly weight?: number;
  readonly props?: Readonly<Record<string, number>>;
}

/** Weight of an edge from node `from` to node `to` at `slot`; NaN means "no weight" (counts as 1). */
export type WeightFn = (from: number, to: number, slot: number) => number;

/** A write logged while a merge runs in steps, replayed onto the new base. */
type LoggedWrite = { put: EdgeInput } | { put: null; src: string; dst: string; owner: string | null };

interface Merge {
  readonly build: CsrBuild;
  readonly log: LoggedWrite[];
  /** Nodes and live edges in the view the build reads. */
  readonly n: number;
  readonly m: number;
}

/** Overlay edges (plus tombstones) below this never trigger a compaction on their own. */
export const MIN_MERGE = 4096;

const EMPTY_I32 = new Int32Array(0);
const EMPTY_F64 = new Float64Array(0);

export class Adjacency {
  private nodes = new NodeTable();
  private owners = new NodeTable();
  private edges = 0;

  // ---- base (CSR) ----
  /** Nodes covered by the base: `fOff`/`rOff` have `baseNodes + 1` entries. */
  baseNodes = 0;
  /** Edge slots in the base (live and tombstones). */
  baseEdges = 0;
  fOff = new Int32Array(1);
  fTo = EMPTY_I32;
  fW = EMPTY_F64;
  fOwner = EMPTY_I32;
  rOff = new Int32Array(1);
  rFrom = EMPTY_I32;
  rOwner = EMPTY_I32;
  private baseDead = 0;

  // ---- overlay ----
  /** Overlay edges (live and dead). */
  oLen = 0;
  oSrc = new Int32Array(64);
  oDst = new Int32Array(64);
  oW = new Float64Array(64);
  oOwner = new Int32Array(64);
  /** 1 = removed. */
  oDead = new Uint8Array(64);
  oNextF = new Int32Array(64);
  oNextR = new Int32Array(64);
  /** By node id: first/last overlay edge leaving (F) or entering (R) it; -1 = none. */
  oHeadF = new Int32Array(64).fill(-1);
  private oTailF = new Int32Array(64).fill(-1);
  oHeadR = new Int32Array(64).fill(-1);
  private oTailR = new Int32Array(64).fill(-1);
  private overlayDead = 0;

  // ---- numeric props, one column per name ----
  private readonly propNames: string[] = [];
  private fProps: Float64Array[] = [];
  private oProps: Float64Array[] = [];

  // ---- scratch for distinct neighbour lists ----
  private mark = new Int32Array(0);
  private markGen = 0;

  /** Compactions so far (tests, benchmark). */
  compactions = 0;
  /** Steps run by merges in steps (tests, benchmark). */
  mergeSteps = 0;
  /** Array entries a merge step visits (~1-2 ms of work); a smaller merge runs at once. */
  static mergeStepWork = 1 << 17;
  private merge: Merge | null = null;
  private readonly mergeWaiters: Array<() => void> = [];

  get nodeCount(): number {
    return this.nodes.size;
  }

  get edgeCount(): number {
    return this.edges;
  }

  /** Overlay edges and tombstones waiting for the next compaction. */
  get pendingChanges(): number {
    return this.oLen + this.baseDead;
  }

  /** Bytes held in typed arrays (the whole structure). */
  get bytes(): number {
    let b = this.nodes.bytes + this.owners.bytes;
    for (const a of [this.fOff, this.fTo, this.fW, this.fOwner, this.rOff, this.rFrom, this.rOwner, this.oSrc, this.oDst, this.oW, this.oOwner, this.oDead])
      b += a.byteLength;
    for (const a of [this.oNextF, this.oNextR, this.oHeadF, this.oTailF, this.oHeadR, this.oTailR, this.mark]) b += a.byteLength;
    for (const a of [...this.fProps, ...this.oProps]) b += a.byteLength;
    return b;
  }

  idOf(node: string): number | undefined {
    const id = this.nodes.idOf(node);
    return id < 0 ? undefined : id;
  }

  /** The node string of id `id`. */
  name(id: number): string {
    return this.nodes.name(id);
  }

  /** The node strings of ids[0, n), in order (NodeTable.names: the loads of many overlap). */
  names(ids: Int32Array, n: number): string[] {
    return this.nodes.names(ids, n);
  }

  /** Weight of the edge at `slot` (NaN: none). */
  weightOf(slot: number): number {
    return slot < this.baseEdges ? this.fW[slot] : this.oW[slot - this.baseEdges];
  }

  /** A weight function reading prop `field` of each edge (NaN where the edge has none). */
  propWeights(field: string): WeightFn {
    const p = this.propNames.indexOf(field);
    if (p < 0) return () => NaN;
    return (_u, _v, slot) => (slot < this.baseEdges ? this.fProps[p][slot] : this.oProps[p][slot - this.baseEdges]);
  }

  /** The weight column as a weight function. */
  weights(): WeightFn {
    return (_u, _v, slot) => (slot < this.baseEdges ? this.fW[slot] : this.oW[slot - this.baseEdges]);
  }

  // ---- writes ----

  /** Adds the edge, or updates its weight/props when (src, dst, owner) is already there. */
  put(e: EdgeInput): void {
    this.merge?.log.push({ put: e });
    const s = this.intern(e.src);
    const d = this.intern(e.dst);
    const o = e.owner === null ? -1 : this.owners.intern(e.owner);
    const slot = this.find(s, d, o);
    if (slot < 0) {
      this.add(s, d, o, e);
      this.maybeCompact();
      return;
    }
    if (slot < this.baseEdges) {
      this.fW[slot] = e.weight ?? NaN;
      this.setProps(this.fProps, slot, e.props);
    } else {
      this.oW[slot - this.baseEdges] = e.weight ?? NaN;
      this.setProps(this.oProps, slot - this.baseEdges, e.props);
    }
  }

  /**
   * Adds an edge known to be new (bulk load from the store's unique keys): no duplicate
   * scan and no compaction; call `compact()` after the load (traversals over a large
   * overlay are correct but walk linked chains instead of contiguous ranges).
   */
  append(e: EdgeInput): void {
    this.merge?.log.push({ put: e });
    const s = this.intern(e.src);
    const d = this.intern(e.dst);
    this.add(s, d, e.owner === null ? -1 : this.owners.intern(e.owner), e);
  }

  /** Removes the edge (src, dst, owner) if present. */
  remove(src: string, dst: string, owner: string | null): void {
    this.merge?.log.push({ put: null, src, dst, owner });
    const s = this.nodes.idOf(src);
    const d = this.nodes.idOf(dst);
    const o = owner === null ? -1 : this.owners.idOf(owner);
    if (s < 0 || d < 0 || (owner !== null && o < 0)) return;
    const slot = this.find(s, d, o);
    if (slot < 0) return;
    if (slot < this.baseEdges) {
      this.fTo[slot] = -1;
      const rFrom = this.rFrom;
      for (let j = this.rOff[d], end = this.rOff[d + 1]; j < end; j++) {
        if (rFrom[j] === s && this.rOwner[j] === o) {
          rFrom[j] = -1;
          break;
        }
      }
      this.baseDead++;
    } else {
      this.oDead[slot - this.baseEdges] = 1;
      this.overlayDead++;
    }
    this.edges--;
    this.maybeCompact();
  }

  /**
   * Folds the overlay and tombstones into a new base, now (a bulk load, tests). A merge in
   * steps that is still running is dropped: this one covers every write it would replay.
   */
  compact(): void {
    this.cancelMerge();
    const view = this.view(false);
    const build = new CsrBuild(view);
    build.step(Infinity);
    this.install(build.result(), view.n, view.m);
  }

  /**
   * `compact()` a step (`mergeStepWork` entries) per event-loop turn, for an adjacency nothing
   * else reads or writes meanwhile: the bulk load at a relation's first use (1M edges: ~0.25 s
   * at once).
   */
  async compactInSteps(): Promise<void> {
    this.cancelMerge();
    const view = this.view(false);
    const build = new CsrBuild(view);
    while (!build.step(Adjacency.mergeStepWork)) {
      this.mergeSteps++;
      await new Promise((r) => setImmediate(r));
    }
    this.install(build.result(), view.n, view.m);
  }

  /** Resolves once no merge is running (tests, benchmark). */
  merged(): Promise<void> {
    return this.merging ? new Promise((resolve) => this.mergeWaiters.push(resolve)) : Promise.resolve();
  }

  /** Whether a merge in steps is running. */
  get merging(): boolean {
    return this.merge !== null;
  }

  /**
   * Starts the merge the threshold asked for. One that fits in a step (`mergeStepWork`
   * entries) runs now; a larger one takes a consistent view (copies of the arrays writes
   * change in place: tombstones, weights, props, dead marks, chain links), builds the new
   * base a step per `setImmediate` turn while reads and writes go on against the old
   * structures, then installs it and replays the writes logged meanwhile (they are
   * idempotent upserts and removes, so the result equals a merge done at once).
   */
  private startMerge(): void {
    const whole = CsrBuild.work({ n: this.nodes.size, nb: this.baseNodes, oLen: this.oLen, fOff: this.fOff });
    if (whole <= Adjacency.mergeStepWork) {
      this.compact();
      return;
    }
    const view = this.view(true);
    const m: Merge = { build: new CsrBuild(view), log: [], n: view.n, m: view.m };
    this.merge = m;
    const step = (): void => {
      if (this.merge !== m) return; // dropped by a compact()
      this.mergeSteps++;
      if (!m.build.step(Adjacency.mergeStepWork)) {
        setImmediate(step);
        return;
      }
      this.merge = null;
      this.install(m.build.result(), m.n, m.m);
      for (const op of m.log) {
        if (op.put) this.put(op.put);
        else this.remove(op.src, op.dst, op.owner);
      }
      this.wakeWaiters();
    };
    setImmediate(step);
  }

  private cancelMerge(): void {
    if (!this.merge) return;
    this.merge = null;
    this.wakeWaiters();
  }

  private wakeWaiters(): void {
    if (this.merge) return;
    const w = this.mergeWaiters.splice(0);
    for (const f of w) f();
  }

  /** The arrays a build reads; `copy`: private copies of those writes change in place. */
  private view(copy: boolean): MergeInput {
    const n = this.nodes.size;
    const o = this.oLen;
    const be = this.baseEdges;
    const c = <T extends Int32Array | Float64Array | Uint8Array>(a: T, len: number): T => (copy ? (a.slice(0, len) as T) : a);
    return {
      n,
      nb: this.baseNodes,
      oLen: o,
      m: this.edges,
      fOff: this.fOff,
      fTo: c(this.fTo, be),
      fW: c(this.fW, be),
      fOwner: this.fOwner,
      fProps: this.fProps.map((a) => c(a, be)),
      rOff: this.rOff,
      rFrom: c(this.rFrom, be),
      rOwner: this.rOwner,
      oSrc: c(this.oSrc, o),
      oDst: c(this.oDst, o),
      oW: c(this.oW, o),
      oOwner: c(this.oOwner, o),
      oDead: c(this.oDead, o),
      oProps: this.oProps.map((a) => c(a, o)),
      oHeadF: c(this.oHeadF, n),
      oNextF: c(this.oNextF, o),
      oHeadR: c(this.oHeadR, n),
      oNextR: c(this.oNextR, o),
    };
  }

  /** Makes `b` (built over `n` nodes, `m` edges) the base, with an empty overlay. */
  private install(b: MergedBase, n: number, m: number): void {
    this.baseNodes = n;
    this.baseEdges = m;
    this.edges = m;
    this.fOff = b.fOff;
    this.fTo = b.fTo;
    this.fW = b.fW;
    this.fOwner = b.fOwner;
    this.rOff = b.rOff;
    this.rFrom = b.rFrom;
    this.rOwner = b.rOwner;
    // prop names first seen after the view was taken get a column of NaN (the replay fills it)
    this.fProps = this.propNames.map((_, p) => b.fProps[p] ?? new Float64Array(m).fill(NaN));
    this.baseDead = 0;
    this.oLen = 0;
    this.overlayDead = 0;
    // a bulk load leaves a large overlay behind: the next merge comes at `threshold` entries
    if (this.oSrc.length > 2 * (this.threshold() + 1)) this.resetOverlay(64);
    this.oHeadF.fill(-1);
    this.oTailF.fill(-1);
    this.oHeadR.fill(-1);
    this.oTailR.fill(-1);
    this.compactions++;
  }

  // ---- checkpoint image ----

  /** The adjacency as typed arrays and a small header, compacted first (graph-image.ts writes them). */
  toImage(): { header: { edges: number; baseNodes: number; baseEdges: number; propNames: string[] }; arrays: Array<Int32Array | Uint16Array | Float64Array> } {
    if (this.pendingChanges > 0 || this.baseNodes !== this.nodes.size) this.compact();
    const n = this.nodes.toArrays();
    const o = this.owners.toArrays();
    return {
      header: { edges: this.edges, baseNodes: this.baseNodes, baseEdges: this.baseEdges, propNames: [...this.propNames] },
      arrays: [n.arena, n.starts, n.hashes, n.slots, o.arena, o.starts, o.hashes, o.slots, this.fOff, this.fTo, this.fW, this.fOwner, this.rOff, this.rFrom, this.rOwner, ...this.fProps],
    };
  }

  /** An adjacency equal to the one imaged (`toImage`), its overlay empty. */
  static fromImage(header: { edges: number; baseNodes: number; baseEdges: number; propNames: string[] }, a: Array<Int32Array | Uint16Array | Float64Array>): Adjacency {
    const adj = new Adjacency();
    const i32 = (k: number) => a[k] as Int32Array<ArrayBuffer>;
    adj.nodes = NodeTable.fromArrays({ arena: a[0] as Uint16Array<ArrayBuffer>, starts: i32(1), hashes: i32(2), slots: i32(3) });
    adj.owners = NodeTable.fromArrays({ arena: a[4] as Uint16Array<ArrayBuffer>, starts: i32(5), hashes: i32(6), slots: i32(7) });
    adj.edges = header.edges;
    adj.baseNodes = header.baseNodes;
    adj.baseEdges = header.baseEdges;
    adj.fOff = i32(8);
    adj.fTo = i32(9);
    adj.fW = a[10] as Float64Array<ArrayBuffer>;
    adj.fOwner = i32(11);
    adj.rOff = i32(12);
    adj.rFrom = i32(13);
    adj.rOwner = i32(14);
    adj.propNames.push(...header.propNames);
    adj.fProps = a.slice(15) as Float64Array[];
    adj.oProps = header.propNames.map(() => new Float64Array(adj.oSrc.length).fill(NaN));
    const cap = Math.max(64, adj.nodes.size);
    adj.oHeadF = new Int32Array(cap).fill(-1);
    adj.oTailF = new Int32Array(cap).fill(-1);
    adj.oHeadR = new Int32Array(cap).fill(-1);
    adj.oTailR = new Int32Array(cap).fill(-1);
    return adj;
  }

  // ---- reads ----

  /** Distinct targets of `node`'s outgoing edges. */
  neighbors(node: string): string[] {
    return this.distinctEnds(node, this.fOff, this.fTo, this.oHeadF, this.oNextF, this.oDst);
  }

  /** Distinct sources of `node`'s incoming edges. */
  sources(node: string): string[] {
    return this.distinctEnds(node, this.rOff, this.rFrom, this.oHeadR, this.oNextR, this.oSrc);
  }

  /**
   * The distinct far ends of `node`'s edges in one direction: its CSR base row (`off`/`ends`,
   * -1 for a deleted edge), then its overlay chain (`head`/`next`, far end in `overlayEnd`).
   */
  private distinctEnds(node: string, off: Int32Array, ends: Int32Array, head: Int32Array, next: Int32Array, overlayEnd: Int32Array): string[] {
    const u = this.nodes.idOf(node);
    if (u < 0) return [];
    const gen = this.beginMark();
    const mark = this.mark;
    const out: string[] = [];
    if (u < this.baseNodes) {
      for (let k = off[u], end = off[u + 1]; k < end; k++) {
        const v = ends[k];
        if (v < 0 || mark[v] === gen) continue;
        mark[v] = gen;
        out.push(this.nodes.name(v));
      }
    }
    for (let e = head[u]; e >= 0; e = next[e]) {
      const v = overlayEnd[e];
      if (this.oDead[e] || mark[v] === gen) continue;
      mark[v] = gen;
      out.push(this.nodes.name(v));
    }
    return out;
  }

  // ---- internals ----

  private intern(node: string): number {
    const id = this.nodes.intern(node);
    if (id >= this.oHeadF.length) {
      const cap = Math.max(this.oHeadF.length * 2, id + 1);
      this.oHeadF = growFilled(this.oHeadF, cap);
      this.oTailF = growFilled(this.oTailF, cap);
      this.oHeadR = growFilled(this.oHeadR, cap);
      this.oTailR = growFilled(this.oTailR, cap);
    }
    return id;
  }

  /** Slot of edge (s, d, o), or -1. */
  private find(s: number, d: number, o: number): number {
    if (s < this.baseNodes) {
      const fTo = this.fTo;
      for (let k = this.fOff[s], end = this.fOff[s + 1]; k < end; k++) if (fTo[k] === d && this.fOwner[k] === o) return k;
    }
    for (let e = this.oHeadF[s]; e >= 0; e = this.oNextF[e]) {
      if (!this.oDead[e] && this.oDst[e] === d && this.oOwner[e] === o) return this.baseEdges + e;
    }
    return -1;
  }

  private add(s: number, d: number, o: number, e: EdgeInput): void {
    const i = this.oLen++;
    if (i >= this.oSrc.length) this.growOverlay(this.oSrc.length * 2);
    this.oSrc[i] = s;
    this.oDst[i] = d;
    this.oW[i] = e.weight ?? NaN;
    this.oOwner[i] = o;
    this.oDead[i] = 0;
    this.oNextF[i] = -1;
    this.oNextR[i] = -1;
    if (this.oTailF[s] >= 0) this.oNextF[this.oTailF[s]] = i;
    else this.oHeadF[s] = i;
    this.oTailF[s] = i;
    if (this.oTailR[d] >= 0) this.oNextR[this.oTailR[d]] = i;
    else this.oHeadR[d] = i;
    this.oTailR[d] = i;
    this.setProps(this.oProps, i, e.props);
    this.edges++;
  }

  private threshold(): number {
    return Math.max(MIN_MERGE, this.baseEdges >> 3);
  }

  private maybeCompact(): void {
    if (!this.merge && this.oLen + this.baseDead > this.threshold()) this.startMerge();
  }

  private resetOverlay(cap: number): void {
    this.oSrc = new Int32Array(cap);
    this.oDst = new Int32Array(cap);
    this.oW = new Float64Array(cap);
    this.oOwner = new Int32Array(cap);
    this.oDead = new Uint8Array(cap);
    this.oNextF = new Int32Array(cap);
    this.oNextR = new Int32Array(cap);
    this.oProps = this.oProps.map(() => new Float64Array(cap).fill(NaN));
  }

  private growOverlay(cap: number): void {
    this.oSrc = grow(this.oSrc, cap);
    this.oDst = grow(this.oDst, cap);
    this.oW = grow(this.oW, cap);
    this.oOwner = grow(this.oOwner, cap);
    this.oDead = grow(this.oDead, cap);
    this.oNextF = grow(this.oNextF, cap);
    this.oNextR = grow(this.oNextR, cap);
    this.oProps = this.oProps.map((a) => growNaN(a, cap));
  }

  /** Writes `props` at `at` of each prop column (NaN where absent), adding columns for new names. */
  private setProps(cols: Float64Array[], at: number, props: Readonly<Record<string, number>> | undefined): void {
    if (props) {
      for (const name of Object.keys(props)) {
        if (!this.propNames.includes(name)) {
          this.propNames.push(name);
          this.fProps.push(new Float64Array(this.baseEdges).fill(NaN));
          this.oProps.push(new Float64Array(this.oSrc.length).fill(NaN));
        }
      }
    }
    for (let p = 0; p < this.propNames.length; p++) {
      const v = props?.[this.propNames[p]];
      cols[p][at] = v === undefined ? NaN : v;
    }
  }

  private beginMark(): number {
    if (this.mark.length < this.nodes.size) {
      this.mark = new Int32Array(Math.max(this.nodes.size, this.mark.length * 2, 64));
      this.markGen = 0;
    }
    if (++this.markGen >= 0x7fffffff) {
      this.mark.fill(0);
      this.markGen = 1;
    }
    return this.markGen;
  }
}

function growFilled(a: Int32Array<ArrayBuffer>, n: number): Int32Array<ArrayBuffer> {
  const b = new Int32Array(n).fill(-1);
  b.set(a);
  return b;
}

function growNaN(a: Float64Array, n: number): Float64Array {
  const b = new Float64Array(n).fill(NaN);
  b.set(a);
  return b;
}

/** The weight column of `adj` as a weight function (benchmark, tests). */
export function edgeWeights(adj: Adjacency): WeightFn {
  return adj.weights();
}
