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
 * When overlay edges plus tombstones pass `max(MIN_MERGE, base edges / 8)`, `compact()`
 * folds them into a new base (O(nodes + edges), amortised over as many writes).
 *
 * An edge is addressed by its **slot**: `0 .. baseEdges-1` in the base, `baseEdges + e` for
 * overlay edge `e`. Weights (`fW`, NaN when the row had none) and numeric props (one
 * Float64Array column per prop name, NaN when absent) are read by slot.
 *
 * Writes are idempotent by (src, dst, owner): `put` upserts, `remove` removes if present,
 * so re-applying a frame already seen in a snapshot is harmless.
 */
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
    const s = this.intern(e.src);
    const d = this.intern(e.dst);
    this.add(s, d, e.owner === null ? -1 : this.owners.intern(e.owner), e);
  }

  /** Removes the edge (src, dst, owner) if present. */
  remove(src: string, dst: string, owner: string | null): void {
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

  /** Folds the overlay and tombstones into a new base. */
  compact(): void {
    const n = this.nodes.size;
    const nb = this.baseNodes;
    const { fOff, fTo, fW, fOwner, rOff, rFrom, rOwner, oDead, oDst, oSrc, oNextF, oNextR, oHeadF, oHeadR } = this;
    const m = this.edges;
    const nfOff = new Int32Array(n + 1);
    const nrOff = new Int32Array(n + 1);
    // counts
    for (let u = 0; u < nb; u++) {
      let c = 0;
      for (let k = fOff[u]; k < fOff[u + 1]; k++) if (fTo[k] >= 0) c++;
      nfOff[u + 1] = c;
      c = 0;
      for (let k = rOff[u]; k < rOff[u + 1]; k++) if (rFrom[k] >= 0) c++;
      nrOff[u + 1] = c;
    }
    for (let e = 0; e < this.oLen; e++) {
      if (oDead[e]) continue;
      nfOff[oSrc[e] + 1]++;
      nrOff[oDst[e] + 1]++;
    }
    for (let u = 0; u < n; u++) {
      nfOff[u + 1] += nfOff[u];
      nrOff[u + 1] += nrOff[u];
    }
    const nfTo = new Int32Array(m);
    const nfW = new Float64Array(m);
    const nfOwner = new Int32Array(m);
    const nrFrom = new Int32Array(m);
    const nrOwner = new Int32Array(m);
    const P = this.propNames.length;
    const nfProps = this.propNames.map(() => new Float64Array(m));
    for (let u = 0; u < n; u++) {
      // forward: live base edges in order, then the overlay chain in insertion order
      let at = nfOff[u];
      if (u < nb) {
        for (let k = fOff[u]; k < fOff[u + 1]; k++) {
          if (fTo[k] < 0) continue;
          nfTo[at] = fTo[k];
          nfW[at] = fW[k];
          nfOwner[at] = fOwner[k];
          for (let p = 0; p < P; p++) nfProps[p][at] = this.fProps[p][k];
          at++;
        }
      }
      for (let e = oHeadF[u]; e >= 0; e = oNextF[e]) {
        if (oDead[e]) continue;
        nfTo[at] = oDst[e];
        nfW[at] = this.oW[e];
        nfOwner[at] = this.oOwner[e];
        for (let p = 0; p < P; p++) nfProps[p][at] = this.oProps[p][e];
        at++;
      }
      // reverse
      at = nrOff[u];
      if (u < nb) {
        for (let k = rOff[u]; k < rOff[u + 1]; k++) {
          if (rFrom[k] < 0) continue;
          nrFrom[at] = rFrom[k];
          nrOwner[at] = rOwner[k];
          at++;
        }
      }
      for (let e = oHeadR[u]; e >= 0; e = oNextR[e]) {
        if (oDead[e]) continue;
        nrFrom[at] = oSrc[e];
        nrOwner[at] = this.oOwner[e];
        at++;
      }
    }
    this.baseNodes = n;
    this.baseEdges = m;
    this.fOff = nfOff;
    this.fTo = nfTo;
    this.fW = nfW;
    this.fOwner = nfOwner;
    this.rOff = nrOff;
    this.rFrom = nrFrom;
    this.rOwner = nrOwner;
    this.fProps = nfProps;
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
    if (this.oLen + this.baseDead > this.threshold()) this.compact();
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
