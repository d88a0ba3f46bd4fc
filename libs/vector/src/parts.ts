/**
 * A checkpoint image as the store holds it: chunks of at most 8 MiB, read in place. Ranges of
 * their concatenation are taken without concatenating them (a 100k × 128 table's image is
 * ~120 MB: one `Buffer.concat` of it was a copy, and page faults, on every open).
 */
export class Parts {
  private readonly starts: number[] = [];
  readonly length: number;

  constructor(private readonly parts: readonly Buffer[]) {
    let at = 0;
    for (const p of parts) {
      this.starts.push(at);
      at += p.length;
    }
    this.length = at;
  }

  /** The views of the parts that [start, end) spans, in order. */
  pieces(start: number, end: number): Buffer[] {
    if (start < 0 || end > this.length || start > end) throw new RangeError(`image range [${start}, ${end}) outside its ${this.length} bytes`);
    const out: Buffer[] = [];
    for (let i = 0; i < this.parts.length && start < end; i++) {
      const s = this.starts[i];
      const p = this.parts[i];
      if (start >= s + p.length) continue;
      const to = Math.min(end, s + p.length);
      out.push(p.subarray(start - s, to - s));
      start = to;
    }
    return out;
  }

  /** [start, end) as one buffer: a view when it lies in one part, else a copy. */
  slice(start: number, end: number): Buffer {
    const ps = this.pieces(start, end);
    return ps.length === 1 ? ps[0] : Buffer.concat(ps);
  }
}

/** Copies `pieces` one after another into `target` from byte `at`; returns the offset after them. */
export function copyPieces(pieces: readonly Buffer[], target: Uint8Array, at = 0): number {
  for (const p of pieces) {
    target.set(p, at);
    at += p.length;
  }
  return at;
}
