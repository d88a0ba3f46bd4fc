/**
 * The float32 vectors of one table in one growable array, addressed by label (slot).
 * Exact search, IVF lists and re-ranking read from here without copies.
 */
export class VectorSlab {
  data: Float32Array;
  /** 1 where the slot holds a live vector. */
  live: Uint8Array;
  /** One past the highest slot ever used. */
  high = 0;

  constructor(readonly dim: number, capacity = 1024) {
    this.data = new Float32Array(dim * capacity);
    this.live = new Uint8Array(capacity);
  }

  get capacity(): number {
    return this.live.length;
  }

  /** A copy being taken in steps (see `copyInSteps`): old vectors of labels written meanwhile. */
  private copying: { readonly high: number; upTo: number; readonly saved: Map<number, Float32Array> } | null = null;

  set(label: number, v: Float32Array): void {
    const c = this.copying;
    // copy-on-write: a label the copy has not reached keeps its vector as of the copy's start
    if (c && label >= c.upTo && label < c.high && !c.saved.has(label)) c.saved.set(label, this.get(label).slice());
    if (label >= this.capacity) this.grow(label + 1);
    this.data.set(v, label * this.dim);
    this.live[label] = 1;
    if (label >= this.high) this.high = label + 1;
  }

  clear(label: number): void {
    if (label < this.capacity) this.live[label] = 0;
  }

  get(label: number): Float32Array {
    return this.data.subarray(label * this.dim, (label + 1) * this.dim);
  }

  private grow(min: number): void {
    let cap = Math.max(this.capacity * 2, 1024);
    while (cap < min) cap *= 2;
    const d = new Float32Array(cap * this.dim);
    d.set(this.data.subarray(0, this.high * this.dim));
    const l = new Uint8Array(cap);
    l.set(this.live.subarray(0, this.high));
    this.data = d;
    this.live = l;
  }

  /**
   * A copy of the vectors of the used part as of this call, made `step` floats per event-loop
   * turn (a 100k × 128 slab is 51 MB: one copy at once holds the loop for 50-150 ms, page
   * faults included). Vectors written meanwhile are saved first (copy-on-write) and put back.
   * One copy at a time.
   */
  copyInSteps(step = 1 << 20): Promise<Float32Array> {
    if (this.copying) throw new Error('a slab copy is already being taken');
    const c = { high: this.high, upTo: 0, saved: new Map<number, Float32Array>() };
    this.copying = c;
    const dim = this.dim;
    const out = new Float32Array(c.high * dim);
    const perStep = Math.max(1, Math.floor(step / dim));
    return (async () => {
      try {
        while (c.upTo < c.high) {
          const end = Math.min(c.high, c.upTo + perStep);
          out.set(this.data.subarray(c.upTo * dim, end * dim), c.upTo * dim);
          c.upTo = end;
          if (end < c.high) await new Promise((r) => setImmediate(r));
        }
        for (const [label, v] of c.saved) out.set(v, label * dim);
        return out;
      } finally {
        this.copying = null;
      }
    })();
  }

  /** Bytes of the used part: `high`-many vectors then their live flags. */
  serialize(): Buffer {
    const v = Buffer.from(this.data.buffer, this.data.byteOffset, this.high * this.dim * 4);
    const l = Buffer.from(this.live.buffer, this.live.byteOffset, this.high);
    return Buffer.concat([v, l]);
  }

  /** A slab from its `serialize()` bytes, given whole or as the pieces of a chunked image (no concatenation). */
  static deserialize(dim: number, high: number, buf: Buffer | readonly Buffer[]): VectorSlab {
    const pieces = Buffer.isBuffer(buf) ? [buf] : buf;
    const s = new VectorSlab(dim, Math.max(1024, high));
    const bytes = high * dim * 4;
    // vectors then live flags, one contiguous run in the image: copied through byte views (a
    // piece need not be 4-byte aligned)
    const vectors = new Uint8Array(s.data.buffer, 0, bytes);
    let at = 0;
    for (const p of pieces) {
      if (at >= bytes + high) break;
      const inVectors = Math.max(0, Math.min(p.length, bytes - at));
      if (inVectors > 0) vectors.set(p.subarray(0, inVectors), at);
      const rest = Math.min(p.length, bytes + high - at);
      if (rest > inVectors) s.live.set(p.subarray(inVectors, rest), at + inVectors - bytes);
      at += p.length;
    }
    s.high = high;
    return s;
  }
}
