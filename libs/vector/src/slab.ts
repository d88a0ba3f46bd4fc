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

  set(label: number, v: Float32Array): void {
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

  /** Bytes of the used part: `high`-many vectors then their live flags. */
  serialize(): Buffer {
    const v = Buffer.from(this.data.buffer, this.data.byteOffset, this.high * this.dim * 4);
    const l = Buffer.from(this.live.buffer, this.live.byteOffset, this.high);
    return Buffer.concat([v, l]);
  }

  static deserialize(dim: number, high: number, buf: Buffer): VectorSlab {
    const s = new VectorSlab(dim, Math.max(1024, high));
    const bytes = high * dim * 4;
    // copy through a Uint8Array view: buf may not be 4-byte aligned
    new Uint8Array(s.data.buffer, 0, bytes).set(buf.subarray(0, bytes));
    s.live.set(buf.subarray(bytes, bytes + high));
    s.high = high;
    return s;
  }
}
