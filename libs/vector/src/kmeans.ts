/** Seeded k-means (L2) on rows of a flat Float32Array: the IVF coarse quantizer and the PQ codebooks. */

/** mulberry32: a small seeded PRNG, so builds are reproducible. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Index of the centroid nearest (L2) to row `off` of `x`; `cn[j]` = ‖c_j‖². */
export function nearest(x: Float32Array, off: number, dim: number, cents: Float32Array, cn: Float32Array, k: number): number {
  let best = 0;
  let bestD = Infinity;
  for (let j = 0; j < k; j++) {
    let dot = 0;
    const co = j * dim;
    for (let i = 0; i < dim; i++) dot += x[off + i] * cents[co + i];
    const d = cn[j] - 2 * dot;
    if (d < bestD) {
      bestD = d;
      best = j;
    }
  }
  return best;
}

export function norms(cents: Float32Array, dim: number, k: number): Float32Array {
  const cn = new Float32Array(k);
  for (let j = 0; j < k; j++) {
    let s = 0;
    for (let i = 0; i < dim; i++) s += cents[j * dim + i] ** 2;
    cn[j] = s;
  }
  return cn;
}

/**
 * `n` rows of `dim` in `x` → `k` centroids (k ≤ n). Initialised from distinct random rows;
 * an emptied cluster is re-seeded from a random row.
 */
export function kmeans(x: Float32Array, n: number, dim: number, k: number, iters: number, seed: number): Float32Array {
  const rand = rng(seed);
  const cents = new Float32Array(k * dim);
  const picked = new Set<number>();
  for (let j = 0; j < k; j++) {
    let r = Math.floor(rand() * n);
    for (let t = 0; t < 10 && picked.has(r); t++) r = Math.floor(rand() * n);
    picked.add(r);
    cents.set(x.subarray(r * dim, (r + 1) * dim), j * dim);
  }
  const assign = new Int32Array(n);
  const sums = new Float64Array(k * dim);
  const counts = new Int32Array(k);
  for (let it = 0; it < iters; it++) {
    const cn = norms(cents, dim, k);
    sums.fill(0);
    counts.fill(0);
    for (let r = 0; r < n; r++) {
      const c = nearest(x, r * dim, dim, cents, cn, k);
      assign[r] = c;
      counts[c]++;
      const so = c * dim;
      const xo = r * dim;
      for (let i = 0; i < dim; i++) sums[so + i] += x[xo + i];
    }
    for (let j = 0; j < k; j++) {
      if (counts[j] === 0) {
        const r = Math.floor(rand() * n);
        cents.set(x.subarray(r * dim, (r + 1) * dim), j * dim);
        continue;
      }
      for (let i = 0; i < dim; i++) cents[j * dim + i] = sums[j * dim + i] / counts[j];
    }
  }
  return cents;
}
