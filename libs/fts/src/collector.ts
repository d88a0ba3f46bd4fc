/**
 * Top-k over boolean clauses, document at a time.
 * - With required clauses: leapfrog over them (shortest list leads), optional
 *   clauses only add score, and a doc whose bound cannot reach the heap's
 *   threshold is not scored further.
 * - Without: MaxScore (Turtle & Flood). Optional scorers are sorted by upper bound;
 *   the cheapest prefix whose bounds sum below the threshold is "non-essential":
 *   it never proposes candidates, it is only probed for docs an essential scorer
 *   found, and probing stops as soon as the doc cannot reach the threshold. So
 *   common terms (small bounds) stop being scanned once the heap is full.
 * Ties go to the smaller doc id.
 */
import { NO_MORE, type Scorer } from './scorer';

export interface Hit {
  readonly ord: number;
  readonly score: number;
}

class TopK {
  private readonly h: Hit[] = [];
  constructor(
    private readonly k: number,
    private readonly ids: readonly string[],
  ) {}

  /** a ranks below b */
  private worse(a: Hit, b: Hit): boolean {
    return a.score < b.score || (a.score === b.score && this.ids[a.ord] > this.ids[b.ord]);
  }

  get full(): boolean {
    return this.h.length >= this.k;
  }

  /** The score a doc must reach to enter (−∞ until full). */
  get threshold(): number {
    return this.full ? this.h[0].score : -Infinity;
  }

  offer(ord: number, score: number): boolean {
    const h = this.h;
    if (h.length < this.k) {
      h.push({ ord, score });
      let i = h.length - 1;
      while (i > 0) {
        const p = (i - 1) >> 1;
        if (!this.worse(h[i], h[p])) break;
        [h[i], h[p]] = [h[p], h[i]];
        i = p;
      }
      return true;
    }
    // a rejected doc allocates nothing
    const top = h[0];
    if (score < top.score || (score === top.score && this.ids[ord] > this.ids[top.ord])) return false;
    h[0] = { ord, score };
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && this.worse(h[l], h[m])) m = l;
      if (r < h.length && this.worse(h[r], h[m])) m = r;
      if (m === i) break;
      [h[i], h[m]] = [h[m], h[i]];
      i = m;
    }
    return true;
  }

  /** A copy (same k, same hits). */
  clone(): TopK {
    const t = new TopK(this.k, this.ids);
    t.h.push(...this.h);
    return t;
  }

  sorted(): Hit[] {
    return [...this.h].sort((a, b) => (this.worse(a, b) ? 1 : this.worse(b, a) ? -1 : 0));
  }
}

/**
 * Term-at-a-time for disjunctions of several very common terms (as Lucene's BooleanScorer
 * does for top-level disjunctions): when their postings outnumber half the docs, bounds
 * prune little and a straight pass adding each list into a dense score array, then one scan
 * with the heap, is cheaper than document-at-a-time. Lists are added in the same order the
 * DAAT path sums them, so scores (and ties) are identical.
 */
/** Tuning knobs (tests lower them to exercise every path on small corpora). */
export const collectorTuning = { taatMinPostings: 50_000 };
let scratch = new Float64Array(0);

function taat(sc: readonly Scorer[], mustNot: readonly Scorer[], top: TopK, size: number, stats: CollectStats, seeded: Set<number> | null): Hit[] {
  if (scratch.length < size) scratch = new Float64Array(Math.max(size, scratch.length * 2));
  const acc = scratch;
  const m = sc.length;
  stats.taat = (stats.taat ?? 0) + 1;
  // MaxScore, term at a time (Turtle & Flood's original form): the lowest-bound lists whose
  // bounds together stay below the best list's bound are "non-essential" — not added. The
  // others are added into acc; a doc is then scored exactly (every list, in the fixed order)
  // only when its partial sum plus the non-essential bounds can reach the heap. A doc holding
  // only non-essential words can score at most their bound sum: if the final threshold is
  // above it, skipping such docs was safe; else the search is redone with every list.
  let ne = 0;
  let neUb = 0;
  while (ne < m - 1 && neUb + sc[ne].ub < sc[m - 1].ub) neUb += sc[ne++].ub;
  const clear = () => {
    for (const x of mustNot) for (let i = 0; i < x.n; i++) acc[x.docs[i]] = 0;
    if (seeded) for (const d of seeded) acc[d] = 0; // already offered
  };
  if (ne > 0) {
    stats.taatPartial = (stats.taatPartial ?? 0) + 1;
    // acc only bounds (every candidate is scored exactly below), so lists can be added in
    // any order: when the bound of the lists left out is not beaten, the best of them joins
    // acc and the scan runs again
    acc.fill(0, 0, size);
    for (let j = ne; j < m; j++) sc[j].addTo(acc);
    for (;;) {
      clear();
      for (const s of sc) s.i = 0;
      const trial = top.clone();
      let th = -Infinity;
      // a candidate costs a cursor step in every list (cache misses over long arrays), ~ the
      // price of adding ~1,000 postings: past that budget, adding the left-out lists
      // (the plain pass below) is cheaper
      let neP = 0;
      for (let j = 0; j < ne; j++) neP += sc[j].n;
      let budget = neP >> 10;
      let over = false;
      for (let d = nextAtLeast(acc, 0, size, -Infinity); d >= 0; d = nextAtLeast(acc, d + 1, size, lowest(th, neUb))) {
        if (--budget < 0) {
          over = true;
          break;
        }
        stats.candidates++;
        let score = 0;
        for (let j = 0; j < m; j++) {
          const x = sc[j];
          if (x.advance(d) === d) score += x.score();
        }
        if (trial.offer(d, score) && trial.full) th = trial.threshold;
      }
      for (const s of sc) s.i = 0;
      if (over) break;
      if (trial.full && below(neUb, trial.threshold)) return trial.sorted();
      stats.taatRedo = (stats.taatRedo ?? 0) + 1;
      if (ne <= 1) break; // what is left out is one list: add everything (below)
      ne--;
      neUb = 0;
      for (let j = 0; j < ne; j++) neUb += sc[j].ub;
      sc[ne].addTo(acc);
    }
  }
  acc.fill(0, 0, size);
  for (const s of sc) s.addTo(acc);
  clear();
  let th = -Infinity;
  for (let d = nextAtLeast(acc, 0, size, -Infinity); d >= 0; d = nextAtLeast(acc, d + 1, size, th)) {
    stats.candidates++;
    if (top.offer(d, acc[d]) && top.full) th = top.threshold;
  }
  return top.sorted();
}

/**
 * The first d ≥ from with acc[d] ≠ 0 and acc[d] ≥ min, or −1. The dense scans' inner loop,
 * kept apart so it stays small and monomorphic (optimized early, never deoptimized by the
 * scoring around it: a scan of 1M docs in unoptimized code costs tens of ms).
 */
function nextAtLeast(acc: Float64Array, from: number, size: number, min: number): number {
  for (let d = from; d < size; d++) {
    const v = acc[d];
    if (v !== 0 && v >= min) return d;
  }
  return -1;
}

/** The least partial sum that, with `rest` more, can still reach `threshold` (see `below`). */
const lowest = (threshold: number, rest: number): number => threshold - Math.abs(threshold) * 1e-12 - rest;

/** True when a bound cannot reach the threshold (a relative epsilon absorbs summation order). */
const below = (bound: number, threshold: number): boolean => bound < threshold - Math.abs(threshold) * 1e-12;

function excluded(mustNot: readonly Scorer[], d: number): boolean {
  for (const s of mustNot) if (s.advance(d) === d) return true;
  return false;
}

export interface CollectStats {
  /** Docs fully or partly scored. */
  candidates: number;
  /** Block ranges skipped by their block-max bound. */
  skips?: number;
  /** Searches finished by the champion tiers alone. */
  tierExits?: number;
  /** Searches run term-at-a-time. */
  taat?: number;
  /** Term-at-a-time searches that left non-essential lists out. */
  taatPartial?: number;
  /** Term-at-a-time searches redone with every list (the non-essential bound was not beaten). */
  taatRedo?: number;
  /** Searches whose heap was seeded with given docs (RM3's second round). */
  seeded?: number;
}

export function topK(
  must: readonly Scorer[],
  should: readonly Scorer[],
  mustNot: readonly Scorer[],
  k: number,
  ids: readonly string[],
  stats: CollectStats = { candidates: 0 },
  /** Doc ordinals to score first (disjunctions only): a starting threshold; the result is the same. */
  seeds?: readonly number[],
): Hit[] {
  const top = new TopK(k, ids);
  if (must.length > 0) {
    const req = [...must].sort((a, b) => a.n - b.n);
    const lead = req[0];
    const optUb = should.reduce((s, x) => s + x.ub, 0);
    let d = lead.doc();
    while (d !== NO_MORE) {
      let t = d;
      for (let j = 1; j < req.length; j++) {
        t = req[j].advance(d);
        if (t !== d) break;
      }
      if (t !== d) {
        d = lead.advance(t);
        continue;
      }
      if (!excluded(mustNot, d)) {
        stats.candidates++;
        let score = 0;
        for (const r of req) score += r.score();
        if (!below(score + optUb, top.threshold)) {
          for (const s of should) if (s.advance(d) === d) score += s.score();
          top.offer(d, score);
        }
      }
      d = lead.next();
    }
    return top.sorted();
  }

  const sc = [...should].sort((a, b) => a.ub - b.ub);
  const m = sc.length;
  const postingsOf = (from: number) => {
    let p = 0;
    let big1 = 0;
    let big2 = 0;
    for (let j = from; j < m; j++) {
      const n = sc[j].n;
      p += n;
      if (n > big1) [big1, big2] = [n, big1];
      else if (n > big2) big2 = n;
    }
    return { postings: p, second: big2, lists: m - from };
  };
  // term-at-a-time only when at least two lists are long: one common term among rare ones
  // is MaxScore's best case (it turns non-essential at once)
  const taatPays = (x: { postings: number; second: number; lists: number }) =>
    x.lists >= 2 && x.postings > collectorTuning.taatMinPostings && x.postings * 2 > ids.length && x.second * 8 > ids.length;
  // Docs scored first by random access ("seeds"), so the heap holds real contenders before
  // any scan; the scan then skips them. A doc outside every seed set can only score what the
  // lists that were not fully seeded allow, which often ends the search at once.
  let seeded = null as Set<number> | null;
  const scoreSeeds = (...lists: ArrayLike<number>[]) => {
    const set = (seeded ??= new Set<number>());
    const fresh: number[] = [];
    for (const docs of lists)
      for (let i = 0; i < docs.length; i++) {
        const d = docs[i];
        if (!set.has(d)) {
          set.add(d);
          fresh.push(d);
        }
      }
    const list = Int32Array.from(fresh).sort();
    // ascending walk: every cursor only moves forward (galloping), then all are rewound
    for (const d of list) {
      let skip = false;
      for (const x of mustNot) if (x.advance(d) === d) skip = true;
      if (skip) continue;
      let score = 0;
      for (let j = 0; j < m; j++) {
        const s = sc[j];
        if (s.advance(d) === d) score += s.score();
      }
      if (score > 0) {
        stats.candidates++;
        top.offer(d, score);
      }
    }
    for (const s of sc) s.i = 0;
    for (const x of mustNot) x.i = 0;
  };
  if (seeds && seeds.length > 0) {
    // given seeds (RM3's full second round: the first round's docs)
    scoreSeeds(seeds);
    stats.seeded = (stats.seeded ?? 0) + 1;
  } else {
    if (taatPays(postingsOf(0))) return taat(sc, mustNot, top, ids.length, stats, null);
    const TIER_MIN = 4096;
    if (m > 1 && sc.some((x) => x.n < TIER_MIN) && sc.some((x) => x.n >= TIER_MIN)) {
      // 1. short lists (rare words) entirely: MaxScore would offer each of their docs anyway.
      //    Any other doc holds only long lists' words: if their bounds cannot reach the
      //    threshold, the top-k is final (a rare word among common ones, small k).
      let longUb = 0;
      for (const x of sc) if (x.n >= TIER_MIN) longUb += x.ub;
      scoreSeeds(...sc.filter((x) => x.n < TIER_MIN).map((x) => x.docs.subarray(0, x.n)));
      if (top.full && below(longUb, top.threshold)) {
        stats.tierExits = (stats.tierExits ?? 0) + 1;
        return top.sorted();
      }
    }
    // 2. champion tiers of the long lists (below): their best postings; what is left of each
    //    long list is bounded by its tier's rest bound.
    if (sc.some((x) => x.n >= TIER_MIN)) {
      const tiers = sc.map((x) => (x.n >= TIER_MIN ? x.tier() : null));
      if (tiers.every((t, j) => t || sc[j].n < TIER_MIN)) {
        scoreSeeds(...tiers.filter((t) => t !== null).map((t) => (t as { docs: Int32Array }).docs));
        let rest = 0;
        for (let j = 0; j < m; j++) if (tiers[j]) rest += (tiers[j] as { restUb: number }).restUb;
        if (top.full && below(rest, top.threshold)) {
          stats.tierExits = (stats.tierExits ?? 0) + 1;
          return top.sorted();
        }
      }
    }
  }
  const prefix = new Float64Array(m);
  let acc = 0;
  for (let j = 0; j < m; j++) prefix[j] = acc += sc[j].ub;
  let fe = 0; // first essential scorer
  if (top.full) while (fe < m && below(prefix[fe], top.threshold)) fe++;
  // seeded: the lists that must still propose candidates decide whether a dense pass pays
  if (seeds && seeds.length > 0 && taatPays(postingsOf(fe))) return taat(sc, mustNot, top, ids.length, stats, seeded);
  // per-scorer parts, summed in one fixed order so a doc's score never depends on the pruning path
  const part = new Float64Array(m);
  let checkedUpto = -1;
  for (;;) {
    let cand = NO_MORE;
    for (let j = fe; j < m; j++) {
      const x = sc[j].doc();
      if (x < cand) cand = x;
    }
    if (cand === NO_MORE) break;
    if (top.full && cand > checkedUpto) {
      // block-max: bound every doc up to the nearest end of any scorer's current block
      // (non-essential scorers are moved to the candidate first: no doc before it is left)
      let upto = NO_MORE;
      for (let j = 0; j < m; j++) {
        const s = sc[j];
        if (j < fe) s.advance(cand);
        if (s.i >= s.n) continue;
        const last = s.docs[s.blockEnd(s.i) - 1];
        if (last < upto) upto = last;
      }
      let bound = 0;
      for (let j = 0; j < m; j++) {
        const s = sc[j];
        if (s.doc() <= upto) bound += s.blockUb(s.i);
      }
      if (below(bound, top.threshold)) {
        stats.skips = (stats.skips ?? 0) + 1;
        if (upto === NO_MORE) break;
        for (let j = fe; j < m; j++) sc[j].advance(upto + 1);
        continue;
      }
      checkedUpto = upto; // this window may hold a winner: score its docs without re-checking
    }
    let score = 0;
    part.fill(0);
    for (let j = fe; j < m; j++) {
      const s = sc[j];
      if (s.doc() === cand) {
        score += part[j] = s.score();
        s.next();
      }
    }
    if (excluded(mustNot, cand)) continue;
    if (seeded?.has(cand)) continue;
    stats.candidates++;
    let pruned = false;
    const th = top.threshold;
    for (let j = fe - 1; j >= 0; j--) {
      if (below(score + prefix[j], th)) {
        pruned = true;
        break;
      }
      const s = sc[j];
      if (s.advance(cand) === cand) score += part[j] = s.score();
    }
    if (pruned) continue;
    score = 0;
    for (let j = 0; j < m; j++) score += part[j];
    if (top.offer(cand, score) && top.full) {
      const nt = top.threshold;
      while (fe < m && below(prefix[fe], nt)) fe++;
    }
  }
  return top.sorted();
}
