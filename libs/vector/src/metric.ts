/**
 * Metrics and the distance each returns. For every metric a smaller distance is closer:
 * - `cosine`:    1 − cos(a, b), in [0, 2] (vectors are normalised on write and on query);
 * - `dot`:       1 − a·b (the inner product turned into a distance; may be negative);
 * - `l2`:        the Euclidean distance √Σ(aᵢ − bᵢ)² (not its square);
 * - `manhattan`: Σ|aᵢ − bᵢ|.
 */
import { VECTOR_METRICS, type VectorMetric } from '@mmdb/core';

export { VECTOR_METRICS };
export type { VectorMetric };

export function isMetric(s: unknown): s is VectorMetric {
  return typeof s === 'string' && (VECTOR_METRICS as readonly string[]).includes(s);
}

/** Normalises in place to unit length (a zero vector stays zero). */
export function normalize(v: Float32Array): Float32Array {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i] * v[i];
  if (s > 0) {
    const inv = 1 / Math.sqrt(s);
    for (let i = 0; i < v.length; i++) v[i] *= inv;
  }
  return v;
}

/** Dot product of `q` with the vector stored at `off` in `slab`. */
export function dotAt(q: Float32Array, slab: Float32Array, off: number): number {
  // unrolled by 4 with independent sums: about twice as fast in V8 as the plain loop
  let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  const d = q.length;
  const d4 = d - (d % 4);
  let i = 0;
  for (; i < d4; i += 4) {
    s0 += q[i] * slab[off + i];
    s1 += q[i + 1] * slab[off + i + 1];
    s2 += q[i + 2] * slab[off + i + 2];
    s3 += q[i + 3] * slab[off + i + 3];
  }
  for (; i < d; i++) s0 += q[i] * slab[off + i];
  return s0 + s1 + s2 + s3;
}

export function sqL2At(q: Float32Array, slab: Float32Array, off: number): number {
  let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  const d = q.length;
  const d4 = d - (d % 4);
  let i = 0;
  for (; i < d4; i += 4) {
    const a = q[i] - slab[off + i];
    const b = q[i + 1] - slab[off + i + 1];
    const c = q[i + 2] - slab[off + i + 2];
    const e = q[i + 3] - slab[off + i + 3];
    s0 += a * a;
    s1 += b * b;
    s2 += c * c;
    s3 += e * e;
  }
  for (; i < d; i++) {
    const t = q[i] - slab[off + i];
    s0 += t * t;
  }
  return s0 + s1 + s2 + s3;
}

export function l1At(q: Float32Array, slab: Float32Array, off: number): number {
  let s = 0;
  const d = q.length;
  for (let i = 0; i < d; i++) s += Math.abs(q[i] - slab[off + i]);
  return s;
}

/**
 * A "raw" score cheap to compare (smaller is closer) and its map to the public distance.
 * l2 ranks by the squared distance and takes the root only for the results.
 */
export interface Scorer {
  raw(q: Float32Array, slab: Float32Array, off: number): number;
  finish(raw: number): number;
}

const SCORERS: Record<VectorMetric, Scorer> = {
  // vectors are stored normalised, so 1 − dot is 1 − cos; float32 rounding can put it a hair
  // outside [0, 2] (−4e-8 for a vector against itself), and the documented range is [0, 2]
  cosine: { raw: (q, s, o) => 1 - dotAt(q, s, o), finish: (r) => Math.min(2, Math.max(0, r)) },
  dot: { raw: (q, s, o) => 1 - dotAt(q, s, o), finish: (r) => r },
  l2: { raw: sqL2At, finish: (r) => Math.sqrt(Math.max(0, r)) },
  manhattan: { raw: l1At, finish: (r) => r },
};

export function scorer(metric: VectorMetric): Scorer {
  return SCORERS[metric];
}

/** The public distance between two plain vectors (test and benchmark helper). */
export function distance(metric: VectorMetric, a: ArrayLike<number>, b: ArrayLike<number>): number {
  const qa = Float32Array.from(a);
  const qb = Float32Array.from(b);
  if (metric === 'cosine') {
    normalize(qa);
    normalize(qb);
  }
  const s = scorer(metric);
  return s.finish(s.raw(qa, qb, 0));
}
