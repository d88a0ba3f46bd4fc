/**
 * Inverted-file indexes, our own (no maintained npm library does IVF-PQ):
 * - `ivf`:   k-means coarse quantizer; a query scans the `nprobe` nearest lists exactly.
 *            Serves every metric, manhattan included.
 * - `ivfpq`: the same lists hold product-quantised residuals (m sub-spaces × 256 centroids,
 *            one byte each: `dim/4` bytes a vector, 1/16 of float32); a query ranks the probed
 *            entries by asymmetric distance through per-query lookup tables, then re-ranks
 *            the best `rerank·k` exactly against the float vectors.
 * Every metric here is separable over sub-spaces (squared L2, L1, dot), so one table per
 * sub-space and list gives the approximate distance as a sum of m lookups.
 */
import type { AnnIndex, Hit, IndexContext, SearchParams } from './ann';
import { TopK } from './heap';
import { kmeans, nearest, norms, rng } from './kmeans';
import { scorer } from './metric';

export const IVF_DEFAULTS = {
  /** 0: √n at build time, clamped to [8, 4096]. */
  nlist: 0,
  nprobe_fast: 0, // 0: nlist/32, at least 2
  nprobe_high_recall: 0, // 0: nlist/8, at least 8
  /** Dimensions per PQ sub-space (dim must be a multiple; else the largest divisor ≤ this). */
  pq_dsub: 4,
  rerank_fast: 4,
  rerank_high_recall: 16,
  train_sample: 20000,
  /** Vectors the PQ codebooks are trained on (a prefix of the coarse sample). */
  pq_train: 8192,
  iters: 8,
  seed: 7,
};

class List {
  labels: Int32Array = new Int32Array(16);
  codes: Uint8Array;
  n = 0;
  constructor(private readonly m: number) {
    this.codes = new Uint8Array(16 * m);
  }
  push(label: number, code: Uint8Array | null): number {
    if (this.n === this.labels.length) {
      const l = new Int32Array(this.n * 2);
      l.set(this.labels);
      this.labels = l;
      if (this.m) {
        const c = new Uint8Array(this.n * 2 * this.m);
        c.set(this.codes);
        this.codes = c;
      }
    }
    this.labels[this.n] = label;
    if (code) this.codes.set(code, this.n * this.m);
    return this.n++;
  }
}

export class IvfIndex implements AnnIndex {
  readonly kind: 'ivf' | 'ivfpq';
  private readonly p: typeof IVF_DEFAULTS;
  nlist = 0;
  private centroids: Float32Array = new Float32Array(0);
  private cnorms: Float32Array = new Float32Array(0);
  /** PQ: m sub-spaces of dsub dims, ksub centroids each: book[(s·ksub + j)·dsub + i]. */
  private m = 0;
  private dsub = 0;
  private ksub = 0;
  private book: Float32Array = new Float32Array(0);
  /** l2/cosine: per list, ‖b‖² + 2·c_s·b for every sub-centroid b (so a query's table is one add per cell). */
  private listTerms: Float32Array | null = null;
  private lists: List[] = [];
  private listOf: Int32Array = new Int32Array(0);
  private posOf: Int32Array = new Int32Array(0);
  /** Number of vectors the quantisers were trained on (the table retrains when it grows far past it). */
  trainedOn = 0;

  constructor(private readonly ctx: IndexContext, pq: boolean, saved?: Buffer) {
    this.kind = pq ? 'ivfpq' : 'ivf';
    this.p = { ...IVF_DEFAULTS, ...ctx.params } as typeof IVF_DEFAULTS;
    if (saved) this.load(saved);
    else this.train();
  }

  /** Trains on a sample of the slab's live vectors and indexes all of them. */
  private train(): void {
    const { slab, dim } = this.ctx;
    const liveLabels: number[] = [];
    for (let l = 0; l < slab.high; l++) if (slab.live[l]) liveLabels.push(l);
    const n = liveLabels.length;
    this.trainedOn = n;
    this.nlist = this.p.nlist || Math.min(4096, Math.max(8, Math.round(Math.sqrt(n))));
    this.nlist = Math.max(1, Math.min(this.nlist, n || 1));
    const rand = rng(this.p.seed);
    const ns = Math.min(n, Math.max(this.p.train_sample, this.nlist * 8));
    // partial Fisher–Yates: the first ns of a shuffled copy
    const pool = liveLabels.slice();
    for (let i = 0; i < ns; i++) {
      const j = i + Math.floor(rand() * (pool.length - i));
      [pool[i], pool[j]] = [pool[j], pool[i]];
    }
    const sample = new Float32Array(ns * dim);
    for (let i = 0; i < ns; i++) sample.set(slab.get(pool[i]), i * dim);
    if (ns > 0) this.centroids = kmeans(sample, ns, dim, this.nlist, this.p.iters, this.p.seed);
    else this.centroids = new Float32Array(this.nlist * dim);
    this.cnorms = norms(this.centroids, dim, this.nlist);
    if (this.kind === 'ivfpq') this.trainPq(sample, Math.min(ns, this.p.pq_train));
    this.lists = Array.from({ length: this.nlist }, () => new List(this.m));
    this.listOf = new Int32Array(Math.max(1024, slab.capacity)).fill(-1);
    this.posOf = new Int32Array(this.listOf.length);
    for (const l of liveLabels) this.add(l);
  }

  private trainPq(sample: Float32Array, ns: number): void {
    const dim = this.ctx.dim;
    let dsub = Math.min(this.p.pq_dsub, dim);
    while (dim % dsub) dsub--;
    this.dsub = dsub;
    this.m = dim / dsub;
    this.ksub = Math.max(1, Math.min(256, ns));
    // residuals of the sample to its coarse centroid
    const res = new Float32Array(ns * dim);
    for (let r = 0; r < ns; r++) {
      const c = nearest(sample, r * dim, dim, this.centroids, this.cnorms, this.nlist);
      for (let i = 0; i < dim; i++) res[r * dim + i] = sample[r * dim + i] - this.centroids[c * dim + i];
    }
    this.book = new Float32Array(this.m * this.ksub * dsub);
    const sub = new Float32Array(ns * dsub);
    for (let s = 0; s < this.m; s++) {
      for (let r = 0; r < ns; r++) for (let i = 0; i < dsub; i++) sub[r * dsub + i] = res[r * dim + s * dsub + i];
      const cb = ns ? kmeans(sub, ns, dsub, this.ksub, this.p.iters, this.p.seed + s + 1) : new Float32Array(this.ksub * dsub);
      this.book.set(cb, s * this.ksub * dsub);
    }
  }

  private encode(v: Float32Array, list: number): Uint8Array {
    const { dim } = this.ctx;
    const { m, dsub, ksub, book } = this;
    const code = new Uint8Array(m);
    const co = list * dim;
    for (let s = 0; s < m; s++) {
      let best = 0;
      let bestD = Infinity;
      for (let j = 0; j < ksub; j++) {
        let d = 0;
        const bo = (s * ksub + j) * dsub;
        for (let i = 0; i < dsub; i++) {
          const t = v[s * dsub + i] - this.centroids[co + s * dsub + i] - book[bo + i];
          d += t * t;
        }
        if (d < bestD) {
          bestD = d;
          best = j;
        }
      }
      code[s] = best;
    }
    return code;
  }

  add(label: number): void {
    this.remove(label);
    if (label >= this.listOf.length) {
      let cap = this.listOf.length * 2;
      while (cap <= label) cap *= 2;
      const lo = new Int32Array(cap).fill(-1);
      lo.set(this.listOf);
      const po = new Int32Array(cap);
      po.set(this.posOf);
      this.listOf = lo;
      this.posOf = po;
    }
    const v = this.ctx.slab.get(label);
    const c = nearest(v, 0, this.ctx.dim, this.centroids, this.cnorms, this.nlist);
    const pos = this.lists[c].push(label, this.kind === 'ivfpq' ? this.encode(v, c) : null);
    this.listOf[label] = c;
    this.posOf[label] = pos;
  }

  remove(label: number): void {
    if (label >= this.listOf.length) return;
    const c = this.listOf[label];
    if (c < 0) return;
    const list = this.lists[c];
    const pos = this.posOf[label];
    const last = --list.n;
    if (pos !== last) {
      const moved = list.labels[last];
      list.labels[pos] = moved;
      if (this.m) list.codes.copyWithin(pos * this.m, last * this.m, (last + 1) * this.m);
      this.posOf[moved] = pos;
    }
    this.listOf[label] = -1;
  }

  /** Lists in probe order for `q`. */
  private probe(q: Float32Array, nprobe: number): number[] {
    const { dim, metric } = this.ctx;
    const top = new TopK(Math.min(nprobe, this.nlist));
    const c = this.centroids;
    for (let j = 0; j < this.nlist; j++) {
      let s = 0;
      const o = j * dim;
      if (metric === 'dot') for (let i = 0; i < dim; i++) s -= q[i] * c[o + i];
      else if (metric === 'manhattan') for (let i = 0; i < dim; i++) s += Math.abs(q[i] - c[o + i]);
      else
        for (let i = 0; i < dim; i++) {
          const t = q[i] - c[o + i];
          s += t * t;
        }
      top.push(s, j);
    }
    return top.sorted().map((h) => h.label);
  }

  search(q: Float32Array, p: SearchParams): Hit[] {
    const fast = p.mode === 'fast';
    const nprobe = fast ? this.p.nprobe_fast || Math.max(2, Math.ceil(this.nlist / 32)) : this.p.nprobe_high_recall || Math.max(8, Math.ceil(this.nlist / 8));
    const lists = this.probe(q, nprobe);
    const { slab, dim, metric } = this.ctx;
    const raw = scorer(metric).raw;
    if (this.kind === 'ivf') {
      const top = new TopK(p.k);
      for (const c of lists) {
        const L = this.lists[c];
        for (let i = 0; i < L.n; i++) {
          const l = L.labels[i];
          if (p.filter && !p.filter(l)) continue;
          top.push(raw(q, slab.data, l * dim), l);
        }
      }
      return top.sorted();
    }
    const R = p.k * (fast ? this.p.rerank_fast : this.p.rerank_high_recall);
    const cand = new TopK(R);
    const { m, ksub } = this;
    const table = new Float32Array(m * ksub);
    const terms = metric === 'manhattan' ? null : this.terms();
    let qTable: Float32Array | null = null;
    if (metric === 'dot') this.fillTable(table, q, -1);
    else if (terms) {
      // ‖q−c−b‖² = ‖q−c‖² + (‖b‖² + 2c·b) − 2q·b: the last term is shared by every list
      qTable = new Float32Array(m * ksub);
      this.fillTable(qTable, q, -1);
      for (let i = 0; i < qTable.length; i++) qTable[i] *= 2;
    }
    const cells = m * ksub;
    for (const c of lists) {
      const L = this.lists[c];
      if (L.n === 0) continue;
      let base = 0;
      if (metric === 'dot') {
        for (let i = 0; i < dim; i++) base -= q[i] * this.centroids[c * dim + i];
      } else if (terms && qTable) {
        for (let i = 0; i < dim; i++) base += (q[i] - this.centroids[c * dim + i]) ** 2;
        const o = c * cells;
        for (let i = 0; i < cells; i++) table[i] = terms[o + i] + qTable[i];
      } else this.fillTable(table, q, c);
      const codes = L.codes;
      for (let i = 0; i < L.n; i++) {
        const l = L.labels[i];
        if (p.filter && !p.filter(l)) continue;
        let s = base;
        const o = i * m;
        for (let t = 0; t < m; t++) s += table[t * ksub + codes[o + t]];
        if (s < cand.bound) cand.push(s, l);
      }
    }
    const top = new TopK(p.k);
    for (const h of cand.sorted()) top.push(raw(q, slab.data, h.label * dim), h.label);
    return top.sorted();
  }

  private terms(): Float32Array {
    if (this.listTerms) return this.listTerms;
    const { m, ksub, dsub, book, nlist } = this;
    const dim = this.ctx.dim;
    const t = new Float32Array(nlist * m * ksub);
    for (let c = 0; c < nlist; c++)
      for (let s = 0; s < m; s++)
        for (let j = 0; j < ksub; j++) {
          let v = 0;
          const bo = (s * ksub + j) * dsub;
          for (let i = 0; i < dsub; i++) v += book[bo + i] * (book[bo + i] + 2 * this.centroids[c * dim + s * dsub + i]);
          t[(c * m + s) * ksub + j] = v;
        }
    return (this.listTerms = t);
  }

  /** Lookup table of the query against every sub-space centroid; `list` < 0: the dot table (−q·b). */
  private fillTable(table: Float32Array, q: Float32Array, list: number): void {
    const { m, ksub, dsub, book } = this;
    const { dim, metric } = this.ctx;
    const co = list * dim;
    const l1 = metric === 'manhattan';
    for (let s = 0; s < m; s++) {
      for (let j = 0; j < ksub; j++) {
        let d = 0;
        const bo = (s * ksub + j) * dsub;
        for (let i = 0; i < dsub; i++) {
          const qi = q[s * dsub + i];
          if (list < 0) d -= qi * book[bo + i];
          else {
            const t = qi - this.centroids[co + s * dsub + i] - book[bo + i];
            d += l1 ? Math.abs(t) : t * t;
          }
        }
        table[s * ksub + j] = d;
      }
    }
  }

  memoryBytes(): number {
    let n = 0;
    for (const L of this.lists) n += L.n;
    return n * (this.m + 4) + this.centroids.byteLength + this.book.byteLength + (this.listTerms?.byteLength ?? 0);
  }

  /** Bytes of the PQ codes alone (m per vector). */
  codeBytes(): number {
    let n = 0;
    for (const L of this.lists) n += L.n;
    return n * this.m;
  }

  serialize(): Buffer {
    const sizes = this.lists.map((L) => L.n);
    const head = Buffer.from(JSON.stringify({ nlist: this.nlist, m: this.m, dsub: this.dsub, ksub: this.ksub, trainedOn: this.trainedOn, sizes }));
    const parts: Buffer[] = [u32(head.length), head, f32bytes(this.centroids), f32bytes(this.book)];
    for (const L of this.lists) {
      parts.push(Buffer.from(L.labels.buffer, L.labels.byteOffset, L.n * 4));
      if (this.m) parts.push(Buffer.from(L.codes.buffer, L.codes.byteOffset, L.n * this.m));
    }
    return Buffer.concat(parts);
  }

  private load(b: Buffer): void {
    const hl = b.readUInt32LE(0);
    const h = JSON.parse(b.subarray(4, 4 + hl).toString('utf8'));
    let o = 4 + hl;
    const { dim } = this.ctx;
    Object.assign(this, { nlist: h.nlist, m: h.m, dsub: h.dsub, ksub: h.ksub, trainedOn: h.trainedOn });
    const take = (bytes: number): Uint8Array => {
      const out = new Uint8Array(bytes);
      out.set(b.subarray(o, o + bytes));
      o += bytes;
      return out;
    };
    this.centroids = new Float32Array(take(this.nlist * dim * 4).buffer);
    this.cnorms = norms(this.centroids, dim, this.nlist);
    this.book = new Float32Array(take(this.m * this.ksub * this.dsub * 4).buffer);
    this.listOf = new Int32Array(Math.max(1024, this.ctx.slab.capacity)).fill(-1);
    this.posOf = new Int32Array(this.listOf.length);
    this.lists = (h.sizes as number[]).map((n, c) => {
      const L = new List(this.m);
      const labels = new Int32Array(take(n * 4).buffer);
      const codes = this.m ? take(n * this.m) : new Uint8Array(0);
      L.labels = n ? labels : new Int32Array(16);
      L.codes = this.m ? (n ? codes : new Uint8Array(16 * this.m)) : L.codes;
      L.n = n;
      for (let i = 0; i < n; i++) {
        this.listOf[labels[i]] = c;
        this.posOf[labels[i]] = i;
      }
      return L;
    });
  }
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
}

function f32bytes(a: Float32Array): Buffer {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength);
}
