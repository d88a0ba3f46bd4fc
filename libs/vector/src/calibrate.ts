/**
 * Self-calibration of an HNSW graph's high_recall ef (DESIGN.md "Filtered search and ef").
 *
 * The ef a graph needs for a recall depends on its size and on the data (how many points lie
 * about as close to a query as its true neighbours): 128 reaches recall@10 1.000 on a 100k
 * table of low intrinsic dimension and 0.92 on a 1M table of high intrinsic dimension. So the
 * index measures it on its own vectors: a sample of stored vectors is searched (each leaving
 * itself out) against exact brute force, and ef grows by `step` until the sample's recall
 * reaches `target`. It runs in the background, a slice per event-loop turn.
 */
import type { IndexContext } from './ann';
import { TopK } from './heap';
import { rng } from './kmeans';
import { scorer } from './metric';

/**
 * When and how a table calibrates (tests lower `min`). A table calibrates once it has `min`
 * vectors and again each time it has grown by `growth` since; `queries` sampled vectors, their
 * `k` nearest, ef from the configured ef_high_recall up by ×`step` to `maxEf`, until the
 * sample's recall@k is at least `target` (above the documented 0.95: the sample is small). The
 * brute force runs `labelsPerStep` labels at a time and gives the loop back every `sliceMs`.
 */
export const efCalibration = { min: 10_000, growth: 1.25, queries: 32, k: 10, target: 0.99, step: 1.5, maxEf: 2048, labelsPerStep: 128, sliceMs: 2 };

/** A graph search: labels of the `k` nearest at `ef` (among those `only` accepts, when given), closest first. */
export type GraphSearch = (q: Float32Array, k: number, ef: number, only: ((label: number) => boolean) | undefined) => readonly number[];

export interface Calibration {
  /** The smallest ef of the ladder whose sample recall reached the target (or `maxEf`). */
  readonly ef: number;
  /** The sample's recall at that ef, and at the configured one. */
  readonly recall: number;
  readonly recallAtBase: number;
  /** Live vectors when it started. */
  readonly size: number;
}

const turn = () => new Promise<void>((r) => setImmediate(r));

/**
 * Measures the ef this graph needs (see the file comment). `stop()` true ends it early (the
 * index was replaced): the answer is then null.
 */
export async function calibrateEf(ctx: IndexContext, base: number, search: GraphSearch, stop: () => boolean): Promise<Calibration | null> {
  const c = efCalibration;
  const { dim } = ctx;
  const raw = scorer(ctx.metric).raw;
  const high = ctx.slab.high;
  const size = countLive(ctx.slab.live, high);
  const r = rng(high);
  const own: number[] = [];
  for (let tries = 0; own.length < Math.min(c.queries, size) && tries < c.queries * 64; tries++) {
    const l = Math.floor(r() * high);
    if (ctx.slab.live[l] && !own.includes(l)) own.push(l);
  }
  if (own.length === 0) return null;
  const qs = own.map((l) => ctx.slab.get(l).slice());
  // exact k nearest of each sampled vector, itself left out, a slice of labels per turn
  const tops = qs.map(() => new TopK(c.k));
  let t0 = performance.now();
  for (let from = 0; from < high; from += c.labelsPerStep) {
    if (performance.now() - t0 >= c.sliceMs) {
      await turn();
      if (stop()) return null;
      t0 = performance.now();
    }
    const { data, live } = ctx.slab; // the slab grows by replacing its arrays: read them per step
    const to = Math.min(high, from + c.labelsPerStep);
    for (let j = 0; j < qs.length; j++) {
      const q = qs[j];
      const top = tops[j];
      for (let l = from; l < to; l++) if (live[l] && l !== own[j]) top.push(raw(q, data, l * dim), l);
    }
  }
  const truth = tops.map((t) => new Set(t.sorted().map((h) => h.label)));
  // vectors added since the truth was taken (a load goes on) are left out of the graph's answers too
  const known = (l: number) => l < high;
  let ef = Math.max(base, c.k);
  let recallAtBase = -1;
  for (;;) {
    let hit = 0;
    let want = 0;
    for (let j = 0; j < qs.length; j++) {
      if (stop()) return null;
      // no filter callback (one JS call per candidate) while nothing was added since the truth
      const got = search(qs[j], c.k + 1, ef, ctx.slab.high === high ? undefined : known).filter((l) => l !== own[j]).slice(0, c.k);
      for (const l of got) if (truth[j].has(l)) hit++;
      want += truth[j].size;
      await turn();
    }
    const recall = want === 0 ? 1 : hit / want;
    if (recallAtBase < 0) recallAtBase = recall;
    if (recall >= c.target || ef >= c.maxEf) return { ef, recall, recallAtBase, size };
    ef = Math.min(c.maxEf, Math.ceil(ef * c.step));
  }
}

function countLive(live: Uint8Array, high: number): number {
  let n = 0;
  for (let l = 0; l < high; l++) n += live[l];
  return n;
}
