/** A slice of ../shared/datasets/mnist, read in place, with float64 brute-force ground truth. */
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { readFvecs, readIvecs, type VectorMetric } from '@mmdb/vector';

export const MNIST_DIR = join(__dirname, '../../../../shared/datasets/mnist');

export interface Slice {
  dim: number;
  base: number[][];
  queries: number[][];
  labels: number[];
}

let cache: { base: ReturnType<typeof readFvecs>; query: ReturnType<typeof readFvecs> } | undefined;

function load() {
  cache ??= { base: readFvecs(join(MNIST_DIR, 'base.fvecs')), query: readFvecs(join(MNIST_DIR, 'query.fvecs')) };
  return cache;
}

export function slice(nBase: number, nQuery: number): Slice {
  const { base, query } = load();
  const rows = (d: typeof base, n: number) => Array.from({ length: n }, (_, r) => Array.from(d.data.subarray(r * d.dim, (r + 1) * d.dim)));
  const labels = readFileSync(join(MNIST_DIR, 'labels_base.txt'), 'utf8').trim().split(/\s+/).map(Number).slice(0, nBase);
  return { dim: base.dim, base: rows(base, nBase), queries: rows(query, nQuery), labels };
}

export function shippedGroundTruth(metric: 'l2' | 'cosine', nQuery: number): number[][] {
  return readIvecs(join(MNIST_DIR, `groundtruth_${metric}_top100.ivecs`), nQuery);
}

/** Independent float64 distances (not the lib's kernels). */
export function refDistance(metric: VectorMetric, a: number[], b: number[]): number {
  let s = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; i++) {
    if (metric === 'l2') s += (a[i] - b[i]) ** 2;
    else if (metric === 'manhattan') s += Math.abs(a[i] - b[i]);
    else {
      s += a[i] * b[i];
      na += a[i] * a[i];
      nb += b[i] * b[i];
    }
  }
  if (metric === 'l2') return Math.sqrt(s);
  if (metric === 'manhattan') return s;
  if (metric === 'dot') return 1 - s;
  return 1 - s / Math.sqrt(na * nb);
}

/** Indices of the k nearest base rows (optionally only those passing `keep`). */
export function bruteForce(metric: VectorMetric, base: number[][], q: number[], k: number, keep?: (i: number) => boolean): number[] {
  const d: Array<[number, number]> = [];
  base.forEach((b, i) => {
    if (!keep || keep(i)) d.push([refDistance(metric, q, b), i]);
  });
  return d.sort((x, y) => x[0] - y[0] || x[1] - y[1]).slice(0, k).map((x) => x[1]);
}

export function recall(got: string[], truth: number[]): number {
  const t = new Set(truth.map(String));
  return got.filter((g) => t.has(g)).length / truth.length;
}
