/**
 * Self-calibration of an HNSW graph's high_recall ef (DESIGN.md "Filtered search and ef").
 *
 * The ef a graph needs for a recall depends on its size and on the data (how many points lie
 * about as close to a query as its true neighbours): 128 reaches recall@10 1.000 on a 100k
 * table of low intrinsic dimension and 0.92 on a 1M table of high intrinsic dimension. So the
 * index measures it on queries like a user's: each is a stored vector moved in a random
 * direction by the distance to its nearest stored neighbour, with that vector itself left out
 * of the truth and of the answers — a new point of the data's own neighbourhood, whose
 * neighbours the graph has not memorised (a stored vector as query finds its neighbours in its
 * own links: at 300k × 128 it needs half the ef a new vector needs for the same recall). Their
 * exact k nearest come from brute force; ef climbs a ×`step` ladder from the configured
 * ef_high_recall until the sample's recall@k meets `target` with a margin for the sample's
 * size, then the gap to the step below is halved `bisect` times. It runs in the background, a
 * slice per event-loop turn.
 */
import type { IndexContext } from './ann';
import { TopK } from './heap';
import { rng } from './kmeans';
import { normalize, scorer } from './metric';

/**
 * When and how a table calibrates (tests lower `min`). A table calibrates once it has `min`
 * vectors and again each time it has grown by `growth` since; `queries` held-out-like queries,
 * their `k` nearest, ef from the configured ef_high_recall up by ×`step` (then `bisect` halvings
 * of the last step) to `maxEf`: the smallest ef at which the sample shows recall@k ≥ `target`
 * (the documented 0.95) with `z` standard errors to spare — its mean recall less `z` times the
 * standard error of the per-query recalls (with 64 queries, about 0.97 on a spread sample, 0.96
 * on an even one). The brute force runs `labelsPerStep` labels at a time and gives the loop back
 * every `sliceMs`.
 */
export const efCalibration = { min: 10_000, growth: 1.25, queries: 64, k: 10, target: 0.95, z: 2, step: 1.5, bisect: 3, maxEf: 2048, labelsPerStep: 128, sliceMs: 2 };

/** A graph search: labels of the `k` nearest at `ef` (among those `only` accepts, when given), closest first. */
export type GraphSearch = (q: Float32Array, k: number, ef: number, only: ((label: number) => boolean) | undefined) => readonly number[];

export interface Calibration {
  /** The smallest ef found whose sample recall met the target with its margin (or `maxEf`). */
  readonly ef: number;
  /** The sample's mean recall at that ef, and at the configured one. */
  readonly recall: number;
  readonly recallAtBase: number;
  /** Live vectors when it started. */
  readonly size: number;
}

const turn = () => new Promise<void>((r) => setImmediate(r));

/** A standard normal draw (Box–Muller) from a uniform source. */
function gauss(r: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());
}

/**
 * Measures the ef this graph needs (see the file comment). `stop()` true ends it early (the
 * index was replaced): the answer is then null.
 */
export async function calibrateEf(ctx: IndexContext, base: number, search: GraphSearch, stop: () => boolean): Promise<Calibration | null> {
  const c = efCalibration;
  const { dim, slab } = ctx;
  const raw = scorer(ctx.metric).raw;
  const high = slab.high;
  const size = countLive(slab.live, high);
  const r = rng(high);
  const own: number[] = [];
  for (let tries = 0; own.length < Math.min(c.queries, size) && tries < c.queries * 64; tries++) {
    const l = Math.floor(r() * high);
    if (slab.live[l] && !own.includes(l)) own.push(l);
  }
  if (own.length === 0) return null;
  // vectors added since the sample was taken (a load goes on) are left out of the graph's answers too
  const known = (l: number) => l < high;
  const only = () => (slab.high === high ? undefined : known); // no filter callback (one JS call per candidate) while nothing was added
  const qs = own.map((l) => heldOutLike(ctx, l, search(slab.get(l), 2, base, only()), r));
  // exact k nearest of each query, its own vector left out, a slice of labels per turn
  const tops = qs.map(() => new TopK(c.k));
  let t0 = performance.now();
  for (let from = 0; from < high; from += c.labelsPerStep) {
    if (performance.now() - t0 >= c.sliceMs) {
      await turn();
      if (stop()) return null;
      t0 = performance.now();
    }
    const { data, live } = slab; // the slab grows by replacing its arrays: read them per step
    const to = Math.min(high, from + c.labelsPerStep);
    for (let j = 0; j < qs.length; j++) {
      const q = qs[j];
      const top = tops[j];
      for (let l = from; l < to; l++) if (live[l] && l !== own[j]) top.push(raw(q, data, l * dim), l);
    }
  }
  const truth = tops.map((t) => new Set(t.sorted().map((h) => h.label)));
  // per ef: the sample's mean recall, and whether it meets the target with z standard errors to spare
  const measured = new Map<number, { recall: number; met: boolean }>();
  const recallAt = async (ef: number): Promise<{ recall: number; met: boolean } | null> => {
    const had = measured.get(ef);
    if (had) return had;
    let sum = 0;
    let sq = 0;
    for (let j = 0; j < qs.length; j++) {
      if (stop()) return null;
      const got = search(qs[j], c.k + 1, ef, only()).filter((l) => l !== own[j]).slice(0, c.k);
      let hit = 0;
      for (const l of got) if (truth[j].has(l)) hit++;
      const rec = truth[j].size === 0 ? 1 : hit / truth[j].size;
      sum += rec;
      sq += rec * rec;
      await turn();
    }
    const n = qs.length;
    const recall = sum / n;
    const se = n > 1 ? Math.sqrt(Math.max(0, (sq - n * recall * recall) / (n - 1)) / n) : 0;
    const m = { recall, met: recall - c.z * se >= c.target };
    measured.set(ef, m);
    return m;
  };
  // the ladder: the first ef meeting the target, and the one below it that did not
  let lo = 0;
  let ef = Math.max(base, c.k);
  let at: { recall: number; met: boolean } | null;
  for (;;) {
    if ((at = await recallAt(ef)) === null) return null;
    if (at.met || ef >= c.maxEf) break;
    lo = ef;
    ef = Math.min(c.maxEf, Math.ceil(ef * c.step));
  }
  // halve the last step: the ladder's ×1.5 alone can overshoot what the target needs by half
  for (let i = 0; i < c.bisect && lo > 0 && at.met && ef - lo > 1; i++) {
    const mid = Math.ceil((lo + ef) / 2);
    const m = await recallAt(mid);
    if (m === null) return null;
    if (m.met) [ef, at] = [mid, m];
    else lo = mid;
  }
  return { ef, recall: at.recall, recallAtBase: measured.get(Math.max(base, c.k))!.recall, size };
}

/**
 * A query like a new vector near stored vector `l`: `l` moved in a random direction by its
 * distance to `near` (the graph's nearest hits of `l`: the first other than `l` is its nearest
 * stored neighbour, or nearly). For cosine the result is normalised, as queries are.
 */
function heldOutLike(ctx: IndexContext, l: number, near: readonly number[], r: () => number): Float32Array {
  const v = ctx.slab.get(l);
  const w = near.find((x) => x !== l);
  const q = v.slice();
  if (w === undefined) return q;
  const u = ctx.slab.get(w);
  let d = 0;
  for (let i = 0; i < v.length; i++) d += (v[i] - u[i]) ** 2;
  const g = Float64Array.from({ length: v.length }, () => gauss(r));
  let n = 0;
  for (let i = 0; i < g.length; i++) n += g[i] * g[i];
  const s = Math.sqrt(d / (n || 1));
  for (let i = 0; i < q.length; i++) q[i] += g[i] * s;
  return ctx.metric === 'cosine' ? normalize(q) : q;
}

function countLive(live: Uint8Array, high: number): number {
  let n = 0;
  for (let l = 0; l < high; l++) n += live[l];
  return n;
}
