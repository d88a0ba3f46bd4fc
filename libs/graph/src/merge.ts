/**
 * Building a relation's new CSR base from its old base plus overlay, in steps of bounded
 * work, so a merge at millions of edges never holds the event loop for long (issue 25: no
 * stall over 50 ms). The input is a consistent view: arrays no write touches while the build
 * runs (the incremental merge hands in copies of the ones writes change; see
 * `Adjacency.startMerge`). Overlay edges at or past `oLen` are ignored, so chains that grew
 * after the view was taken end where the view ends.
 */

/** The arrays a build reads: the base (`nb` nodes) and the first `oLen` overlay edges, over `n` nodes. */
export interface MergeInput {
  readonly n: number;
  readonly nb: number;
  readonly oLen: number;
  /** Live edges in the view: the new base's size. */
  readonly m: number;
  readonly fOff: Int32Array;
  readonly fTo: Int32Array;
  readonly fW: Float64Array;
  readonly fOwner: Int32Array;
  readonly fProps: readonly Float64Array[];
  readonly rOff: Int32Array;
  readonly rFrom: Int32Array;
  readonly rOwner: Int32Array;
  readonly oSrc: Int32Array;
  readonly oDst: Int32Array;
  readonly oW: Float64Array;
  readonly oOwner: Int32Array;
  readonly oDead: Uint8Array;
  readonly oProps: readonly Float64Array[];
  readonly oHeadF: Int32Array;
  readonly oNextF: Int32Array;
  readonly oHeadR: Int32Array;
  readonly oNextR: Int32Array;
}

/** The new base: `n + 1` offsets each way, `m` edge slots. */
export interface MergedBase {
  readonly fOff: Int32Array<ArrayBuffer>;
  readonly fTo: Int32Array<ArrayBuffer>;
  readonly fW: Float64Array<ArrayBuffer>;
  readonly fOwner: Int32Array<ArrayBuffer>;
  readonly fProps: Float64Array<ArrayBuffer>[];
  readonly rOff: Int32Array<ArrayBuffer>;
  readonly rFrom: Int32Array<ArrayBuffer>;
  readonly rOwner: Int32Array<ArrayBuffer>;
}

type Phase = 'countBase' | 'countOverlay' | 'prefix' | 'fill' | 'done';

/** A CSR build: `step(work)` advances by about `work` array entries and says whether it is done. */
export class CsrBuild {
  private phase: Phase = 'countBase';
  private at = 0;
  private readonly out: MergedBase;

  constructor(private readonly s: MergeInput) {
    const m = s.m;
    this.out = {
      fOff: new Int32Array(s.n + 1),
      rOff: new Int32Array(s.n + 1),
      fTo: new Int32Array(m),
      fW: new Float64Array(m),
      fOwner: new Int32Array(m),
      fProps: s.fProps.map(() => new Float64Array(m)),
      rFrom: new Int32Array(m),
      rOwner: new Int32Array(m),
    };
  }

  /** About how many array entries the whole build visits (what `step` budgets count). */
  static work(s: Pick<MergeInput, 'n' | 'oLen' | 'fOff' | 'nb'>): number {
    return 3 * s.n + 2 * s.fOff[s.nb] + 3 * s.oLen;
  }

  get done(): boolean {
    return this.phase === 'done';
  }

  result(): MergedBase {
    if (this.phase !== 'done') throw new Error('the CSR build has not finished');
    return this.out;
  }

  step(work: number): boolean {
    let left = work;
    while (left > 0 && this.phase !== 'done') left -= this.run(left);
    return this.phase === 'done';
  }

  /** Runs the current phase for up to about `work` entries; returns the entries visited. */
  private run(work: number): number {
    const s = this.s;
    const { fOff: nfOff, rOff: nrOff } = this.out;
    let spent = 0;
    switch (this.phase) {
      case 'countBase': {
        const { fOff, fTo, rOff, rFrom } = s;
        let u = this.at;
        for (; u < s.nb && spent < work; u++) {
          let c = 0;
          for (let k = fOff[u]; k < fOff[u + 1]; k++) if (fTo[k] >= 0) c++;
          nfOff[u + 1] = c;
          spent += 1 + fOff[u + 1] - fOff[u];
          c = 0;
          for (let k = rOff[u]; k < rOff[u + 1]; k++) if (rFrom[k] >= 0) c++;
          nrOff[u + 1] = c;
          spent += rOff[u + 1] - rOff[u];
        }
        this.advance(u, s.nb, 'countOverlay');
        return spent;
      }
      case 'countOverlay': {
        let e = this.at;
        for (; e < s.oLen && spent < work; e++, spent++) {
          if (s.oDead[e]) continue;
          nfOff[s.oSrc[e] + 1]++;
          nrOff[s.oDst[e] + 1]++;
        }
        this.advance(e, s.oLen, 'prefix');
        return spent;
      }
      case 'prefix': {
        let u = this.at;
        for (; u < s.n && spent < work; u++, spent++) {
          nfOff[u + 1] += nfOff[u];
          nrOff[u + 1] += nrOff[u];
        }
        this.advance(u, s.n, 'fill');
        return spent;
      }
      case 'fill': {
        let u = this.at;
        for (; u < s.n && spent < work; u++) spent += this.fillNode(u);
        this.advance(u, s.n, 'done');
        return spent;
      }
      default:
        return work;
    }
  }

  private advance(at: number, end: number, next: Phase): void {
    if (at >= end) {
      this.phase = next;
      this.at = 0;
    } else this.at = at;
  }

  /** Node `u`'s rows: live base edges in order, then its overlay chain in insertion order. */
  private fillNode(u: number): number {
    const s = this.s;
    const o = this.out;
    const P = o.fProps.length;
    const end = s.oLen;
    let spent = 1;
    let at = o.fOff[u];
    if (u < s.nb) {
      for (let k = s.fOff[u]; k < s.fOff[u + 1]; k++, spent++) {
        if (s.fTo[k] < 0) continue;
        o.fTo[at] = s.fTo[k];
        o.fW[at] = s.fW[k];
        o.fOwner[at] = s.fOwner[k];
        for (let p = 0; p < P; p++) o.fProps[p][at] = s.fProps[p][k];
        at++;
      }
    }
    for (let e = s.oHeadF[u]; e >= 0 && e < end; e = s.oNextF[e], spent++) {
      if (s.oDead[e]) continue;
      o.fTo[at] = s.oDst[e];
      o.fW[at] = s.oW[e];
      o.fOwner[at] = s.oOwner[e];
      for (let p = 0; p < P; p++) o.fProps[p][at] = s.oProps[p][e];
      at++;
    }
    at = o.rOff[u];
    if (u < s.nb) {
      for (let k = s.rOff[u]; k < s.rOff[u + 1]; k++, spent++) {
        if (s.rFrom[k] < 0) continue;
        o.rFrom[at] = s.rFrom[k];
        o.rOwner[at] = s.rOwner[k];
        at++;
      }
    }
    for (let e = s.oHeadR[u]; e >= 0 && e < end; e = s.oNextR[e], spent++) {
      if (s.oDead[e]) continue;
      o.rFrom[at] = s.oSrc[e];
      o.rOwner[at] = s.oOwner[e];
      at++;
    }
    return spent;
  }
}
