/**
 * Scorers: cursors over sorted doc ordinals that score the current doc, with an
 * upper bound of any score they can give (used by MaxScore to skip work).
 */
import { PostingList } from './field-index';

const BLOCK = PostingList.BLOCK;
import { bm25, type Bm25Params } from './similarity';

export const NO_MORE = 0x7fffffff;

export abstract class Scorer {
  i = 0;
  constructor(
    readonly docs: Int32Array,
    readonly n: number,
    /** No call of `score()` returns more. */
    readonly ub: number,
  ) {}

  doc(): number {
    return this.i < this.n ? this.docs[this.i] : NO_MORE;
  }

  next(): number {
    this.i++;
    return this.doc();
  }

  /** Moves to the first doc ≥ target and returns it. */
  advance(target: number): number {
    const d = this.docs;
    let lo = this.i;
    if (lo >= this.n || d[lo] >= target) return this.doc();
    let step = 1;
    let hi = this.n;
    while (lo + step < hi && d[lo + step] < target) {
      lo += step;
      step *= 2;
    }
    hi = Math.min(hi, lo + step + 1);
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (d[mid] < target) lo = mid + 1;
      else hi = mid;
    }
    this.i = lo;
    return this.doc();
  }

  abstract score(): number;

  /**
   * Adds the scores of the postings from the cursor up to (not including) doc `end` into
   * win[doc − base] (a window of a term-at-a-time pass; the cursor is at a doc ≥ base) and
   * leaves the cursor on the first doc ≥ end. Each doc whose sum reaches `min` is noted once:
   * its window index goes to cand[c.n++] unless mark[index] already holds `epoch`. The same
   * values as score().
   */
  addWindow(win: Float64Array, base: number, end: number, min: number, mark: Int32Array, epoch: number, cand: Int32Array, c: { n: number }): void {
    for (; this.i < this.n && this.docs[this.i] < end; this.i++) {
      const w = this.docs[this.i] - base;
      const v = (win[w] += this.score());
      if (v >= min && mark[w] !== epoch) {
        mark[w] = epoch;
        cand[c.n++] = w;
      }
    }
  }

  /** The first position whose doc is ≥ `doc` (`n` if none); the cursor does not move. */
  private lowerBound(doc: number): number {
    let lo = 0;
    let hi = this.n;
    const d = this.docs;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (d[mid] < doc) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Whether `doc` is in the list (random access; the cursor does not move). */
  contains(doc: number): boolean {
    const lo = this.lowerBound(doc);
    return lo < this.n && this.docs[lo] === doc;
  }

  /** Score of `doc` by random access (0 when absent); the cursor does not move. */
  scoreDoc(doc: number): number {
    const lo = this.lowerBound(doc);
    if (lo >= this.n || this.docs[lo] !== doc) return 0;
    const at = this.i;
    this.i = lo;
    const s = this.score();
    this.i = at;
    return s;
  }

  /** Champion docs and a bound for every doc outside them (null: no tier, use `ub`). */
  tier(): { docs: Int32Array; restUb: number } | null {
    return null;
  }

  /** Index one past the last posting of the block holding posting i (block-max skipping). */
  blockEnd(_i: number): number {
    return this.n;
  }

  /** A bound of the scores in the block holding posting i. */
  blockUb(_i: number): number {
    return this.ub;
  }
}

/** BM25 of one term over its in-memory posting list. */
export class TermScorer extends Scorer {
  private readonly tfs: Int32Array;
  /** The list's skip entries (last doc per block; PostingList.skips). */
  private readonly skips: Int32Array;
  private readonly k1: number;
  private readonly kb: number;
  private readonly num: number;
  constructor(
    private readonly list: PostingList,
    private readonly idfValue: number,
    private readonly docLen: Int32Array,
    avgdl: number,
    minLen: number,
    p: Bm25Params,
  ) {
    // bound: score grows with tf and shrinks with dl
    super(list.docs, list.n, bm25(idfValue, list.maxTf, Math.min(minLen, avgdl), avgdl, p));
    this.tfs = list.tfs;
    list.ensureBlocks(docLen);
    list.ensureSkips();
    this.skips = list.skips;
    this.k1 = p.k1 * (1 - p.b);
    this.kb = (p.k1 * p.b) / avgdl;
    this.num = idfValue * (p.k1 + 1);
  }

  /**
   * Moves to the first doc ≥ target through the skip entries: the block that holds it is
   * found among the blocks' last docs (galloping from the current block), then the doc
   * within that block — a long jump touches a few cache lines, not one per halving of the
   * whole list.
   */
  override advance(target: number): number {
    const d = this.docs;
    const n = this.n;
    let i = this.i;
    if (i >= n || d[i] >= target) return this.doc();
    const sk = this.skips;
    let b = i >> 6; // BLOCK = 64
    if (sk[b] < target) {
      const nb = (n + 63) >> 6;
      // the first block b' > b whose last doc is ≥ target
      let lo = b + 1;
      let step = 1;
      while (lo + step < nb && sk[lo + step - 1] < target) {
        lo += step;
        step *= 2;
      }
      let hi = Math.min(nb, lo + step);
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (sk[mid] < target) lo = mid + 1;
        else hi = mid;
      }
      if (lo >= nb) {
        this.i = n;
        return NO_MORE;
      }
      b = lo;
      i = b << 6;
    }
    let hi = Math.min(n, (b + 1) << 6);
    while (i < hi) {
      const mid = (i + hi) >>> 1;
      if (d[mid] < target) i = mid + 1;
      else hi = mid;
    }
    this.i = i;
    return d[i];
  }

  score(): number {
    const tf = this.tfs[this.i];
    return (this.num * tf) / (tf + this.k1 + this.kb * this.docLen[this.docs[this.i]]);
  }

  override addWindow(win: Float64Array, base: number, end: number, min: number, mark: Int32Array, epoch: number, cand: Int32Array, c: { n: number }): void {
    // score() inlined (same expression, so the same doubles), no call per posting
    const docs = this.docs;
    const tfs = this.tfs;
    const dl = this.docLen;
    const num = this.num;
    const c0 = this.k1;
    const c1 = this.kb;
    const n = this.n;
    let i = this.i;
    let nc = c.n;
    for (; i < n; i++) {
      const d = docs[i];
      if (d >= end) break;
      const tf = tfs[i];
      const w = d - base;
      const v = (win[w] += (num * tf) / (tf + c0 + c1 * dl[d]));
      if (v >= min && mark[w] !== epoch) {
        mark[w] = epoch;
        cand[nc++] = w;
      }
    }
    this.i = i;
    c.n = nc;
  }

  override tier(): { docs: Int32Array; restUb: number } | null {
    if (!this.list.ensureTier(this.docLen, this.k1, this.kb)) return null;
    const l = this.list;
    // num·saturation, with num = idf·(k1+1); rounding up a hair keeps it a bound
    const restUb = Math.min(this.ub, this.num * l.restSaturation(this.k1, this.kb) * (1 + 1e-12));
    return { docs: l.tierDocs as Int32Array, restUb };
  }

  override blockEnd(i: number): number {
    return Math.min(this.n, (Math.floor(i / BLOCK) + 1) * BLOCK);
  }

  override blockUb(i: number): number {
    const b = Math.floor(i / BLOCK);
    const l = this.list;
    // this.k1 is c0 = k1·(1−b), this.kb is c1 = k1·b/avgdl: see PostingList.blocks
    const c0 = this.k1;
    const c1 = this.kb;
    const at = b * 4;
    const bl = l.blocks;
    let s = 1 / (1 + c0 + c1 * bl[at]);
    const s2 = 2 / (2 + c0 + c1 * bl[at + 1]);
    if (s2 > s) s = s2;
    const mt = bl[at + 2];
    if (mt > 0) {
      const s3 = 1 / (1 + c0 / mt + c1 * l.blockRatio[at + 3]);
      if (s3 > s) s = s3;
    }
    return this.num * s * (1 + 1e-12);
  }
}

/** Precomputed scores (phrases, prefix expansions, exclusions). */
export class ListScorer extends Scorer {
  constructor(
    docs: Int32Array,
    private readonly scores: Float64Array,
  ) {
    let ub = 0;
    for (let i = 0; i < scores.length; i++) if (scores[i] > ub) ub = scores[i];
    super(docs, docs.length, ub);
  }
  score(): number {
    return this.scores[this.i];
  }
}
