/** Readers for the texmex .fvecs/.ivecs layout (int32 dim, then dim values, per row). */
import { readFileSync } from 'node:fs';

export function readFvecs(path: string, limit = Infinity): { dim: number; n: number; data: Float32Array } {
  const b = readFileSync(path);
  const dim = b.readInt32LE(0);
  const row = 4 + dim * 4;
  const n = Math.min(limit, Math.floor(b.length / row));
  const data = new Float32Array(n * dim);
  for (let r = 0; r < n; r++) for (let i = 0; i < dim; i++) data[r * dim + i] = b.readFloatLE(r * row + 4 + i * 4);
  return { dim, n, data };
}

export function readIvecs(path: string, limit = Infinity): number[][] {
  const b = readFileSync(path);
  const out: number[][] = [];
  let o = 0;
  while (o < b.length && out.length < limit) {
    const d = b.readInt32LE(o);
    const r: number[] = [];
    for (let i = 0; i < d; i++) r.push(b.readInt32LE(o + 4 + i * 4));
    out.push(r);
    o += 4 + d * 4;
  }
  return out;
}
