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
import { PostingList } from './field-index';
import { NO_MORE, type Scorer } from './scorer';

export interface Hit {
  readonly ord: number;
  readonly score: number;
}

/**
 * The k best (score, doc) seen so far: a binary min-heap (worst on top) in two parallel
 * arrays, so an offer that enters allocates nothing (a scan may offer thousands).
 */
class TopK {
  private readonly ords: number[] = [];
  private readonly scores: number[] = [];
  /** k reaches every doc of the field (an unbounded search): nothing is ever evicted, so no heap is kept; `sorted` orders once. */
  private readonly all: boolean;
  constructor(
    readonly k: number,
    private readonly ids: readonly string[],
    /** With `all`: `sorted` answers the hits as found (ordinal order), for a caller that does not need them ranked. */
    private readonly unordered = false,
  ) {
    this.all = k >= ids.length;
  }

  /** Entry a ranks below entry b */
  private worse(a: number, b: number): boolean {
    const sa = this.scores[a];
    const sb = this.scores[b];
    return sa < sb || (sa === sb && this.ids[this.ords[a]] > this.ids[this.ords[b]]);
  }

  private swap(a: number, b: number): void {
    const o = this.ords[a];
    this.ords[a] = this.ords[b];
    this.ords[b] = o;
    const s = this.scores[a];
    this.scores[a] = this.scores[b];
    this.scores[b] = s;
  }

  get full(): boolean {
    return this.ords.length >= this.k;
  }

  /** The score a doc must reach to enter (−∞ until full). */
  get threshold(): number {
    return this.full && !this.all ? this.scores[0] : -Infinity;
  }

  offer(ord: number, score: number): boolean {
    const n = this.ords.length;
    if (this.all) {
      this.ords.push(ord);
      this.scores.push(score);
      return true;
    }
    if (n < this.k) {
      this.ords.push(ord);
      this.scores.push(score);
      let i = n;
      while (i > 0) {
        const p = (i - 1) >> 1;
        if (!this.worse(i, p)) break;
        this.swap(i, p);
        i = p;
      }
      return true;
    }
    const top = this.scores[0];
    if (score < top || (score === top && this.ids[ord] > this.ids[this.ords[0]])) return false;
    this.ords[0] = ord;
    this.scores[0] = score;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < n && this.worse(l, m)) m = l;
      if (r < n && this.worse(r, m)) m = r;
      if (m === i) break;
      this.swap(i, m);
      i = m;
    }
    return true;
  }

  sorted(): Hit[] {
    const { scores, ords, ids } = this;
    if (this.all && this.unordered) return ords.map((o, i) => ({ ord: o, score: scores[i] }));
    // best first, equal scores by doc id (one comparison of scores, ids only on ties)
    const at = ords.map((_, i) => i).sort((a, b) => scores[b] - scores[a] || (ids[ords[a]] < ids[ords[b]] ? -1 : ids[ords[a]] > ids[ords[b]] ? 1 : 0));
    return at.map((i) => ({ ord: this.ords[i], score: this.scores[i] }));
  }
}

/** Tuning knobs (tests lower them to exercise every path on small corpora). */
export const collectorTuning = { taatMinPostings: 50_000, taatMinEssential: 4096, tierSeedShare: 4, taatProbeCost: 16 };
/** Docs per window of the term-at-a-time pass: its score array (32 KB) stays in cache. */
export const TAAT_WINDOW = 4096;
/** Lists this long get champion tiers. */
const TIER_MIN = PostingList.TIER_MIN;
/**
 * Grow-only scratch arrays, reused by every search (collection is synchronous), handed out as
 * views of the first n. Typed arrays of more than a few bytes live outside the JS heap, and V8
 * answers a growing external allocation with full collections: a search allocating hundreds
 * of KB of them made the process mark-compact about once a second, 10–20 ms a time.
 */
const f64s: Float64Array[] = [];
const i32s: Int32Array[] = [];
const F64 = { acc: 0, pick: 1, part: 2, exact: 3 } as const;
const I32 = { docs: 0, seeds: 1, seeded: 2, cand: 3 } as const;
/** The term-at-a-time window's noted docs, stamped with the window's epoch. */
let mark = new Int32Array(0);
let windowEpoch = 0;
/** Seeds' membership stamps, one per doc ordinal (reused; a search stamps with its own epoch). */
let stamps = new Int32Array(0);
let epoch = 0;

/**
 * The docs a search has scored by random access (its seeds): a stamp per doc and a list,
 * both reused across searches — a Set of thousands of entries per search was most of a
 * search's garbage, and young-generation collections of it showed in the p99.
 */
class Seeds {
  n = 0;
  docs = (i32s[I32.seeded] ??= new Int32Array(1024));
  constructor(size: number) {
    if (stamps.length < size) stamps = new Int32Array(Math.max(size, stamps.length * 2));
    if (++epoch === 0x7fffffff) {
      stamps.fill(0);
      epoch = 1;
    }
  }
  has(d: number): boolean {
    return stamps[d] === epoch;
  }
  add(d: number): void {
    if (stamps[d] === epoch) return;
    stamps[d] = epoch;
    if (this.n === this.docs.length) {
      const g = new Int32Array(this.docs.length * 2);
      g.set(this.docs);
      i32s[I32.seeded] = this.docs = g;
    }
    this.docs[this.n++] = d;
  }
}
function f64(slot: number, n: number): Float64Array {
  let a = f64s[slot];
  if (!a || a.length < n) f64s[slot] = a = new Float64Array(Math.max(n, (a?.length ?? 0) * 2, 1024));
  return a.subarray(0, n);
}
function i32(slot: number, n: number): Int32Array {
  let a = i32s[slot];
  if (!a || a.length < n) i32s[slot] = a = new Int32Array(Math.max(n, (a?.length ?? 0) * 2, 1024));
  return a.subarray(0, n);
}

/**
 * Term-at-a-time for disjunctions of common terms (Lucene's MaxScoreBulkScorer): when their
 * postings are many, adding each list into a score array beats visiting doc by doc. The
 * docs go by in windows of TAAT_WINDOW; lists are added in the canonical order every path
 * sums in (best bound first), so scores (and ties) are identical to the other paths'.
 * `prefix[j]` is the bound of lists 0..j together (sc is in ascending bound order).
 */
function taat(sc: readonly Scorer[], prefix: Float64Array, mustNot: readonly Scorer[], top: TopK, size: number, stats: CollectStats, seeded: Seeds | null): Hit[] {
  const m = sc.length;
  stats.taat = (stats.taat ?? 0) + 1;
  // A floor of the final threshold (no doc below it can enter): the heap's, or the exact
  // scores of a few champion docs (thresholdFloor). It prunes from the first window on.
  const floor = top.full ? top.threshold : thresholdFloor(sc, mustNot, top.k);
  for (const s of sc) s.i = 0;
  for (const x of mustNot) x.i = 0;
  const W = TAAT_WINDOW;
  const win = f64(F64.acc, W);
  const cand = i32(I32.cand, W);
  if (mark.length < W) mark = new Int32Array(W);
  let th = top.full ? Math.max(floor, top.threshold) : floor;
  // MaxScore over windows of W docs (Lucene's MaxScoreBulkScorer): the lowest-bound lists whose
  // bounds together cannot reach the threshold are non-essential — they propose no candidate
  // and are only probed, by cursor, for docs the essential lists found. The essential lists
  // are added into a window-sized array (in cache: no array the size of the field to fill or
  // scan), list after list in the canonical summing order (best bound first), so a window
  // doc's sum is a prefix of its exact score's sum and the probes go on adding in that order.
  let ne = 0;
  let partial = false;
  let base = 0;
  let end = 0;
  const c = { n: 0 };
  const add = (j: number) => sc[j].addWindow(win, base, end, lowest(th, j > 0 ? prefix[j - 1] : 0), mark, windowEpoch, cand, c);
  while (base < size) {
    while (ne < m && below(prefix[ne], th)) ne++;
    if (ne === m) break; // no doc can reach the threshold any more
    if (ne > 0) partial = true;
    // the first doc an essential list holds: windows before it hold no candidate
    let first = NO_MORE;
    for (let j = ne; j < m; j++) {
      const d = sc[j].doc();
      if (d < first) first = d;
    }
    if (first === NO_MORE) break;
    if (first >= base + W) {
      base = first - (first % W);
      stats.skips = (stats.skips ?? 0) + 1;
    }
    end = Math.min(size, base + W);
    win.fill(0, 0, end - base);
    if (++windowEpoch === 0x7fffffff) {
      mark.fill(0);
      windowEpoch = 1;
    }
    // Each list, added in turn, notes the docs its add brings within reach: with the lists
    // after it (all of lower bound) a doc can still gain prefix[j − 1] at most. Once noted, a
    // doc stays within reach of every later list's limit (sums grow, limits fall).
    c.n = 0;
    for (let j = m - 1; j >= ne; j--) add(j);
    // excluded docs get −∞ (later adds keep it), so the check below drops them
    for (const x of mustNot) {
      if (x.doc() < base) x.advance(base);
      for (; x.i < x.n && x.docs[x.i] < end; x.i++) win[x.docs[x.i] - base] = -Infinity;
    }
    // Where the window's noted docs are many, probing a non-essential list for each costs more
    // than adding its postings here (a probe is a cursor jump and a score, ~taatProbeCost
    // adds): the best non-essential list is then added too — still the canonical order.
    let lo = ne;
    while (lo > 0 && c.n > 0) {
      const x = sc[lo - 1];
      if (x.doc() < base) x.advance(base);
      const from = x.i;
      x.advance(end);
      const postings = x.i - from;
      x.i = from;
      if (c.n * collectorTuning.taatProbeCost <= postings) break;
      add(--lo);
      stats.taatJoins = (stats.taatJoins ?? 0) + 1;
    }
    const found = cand.subarray(0, c.n).sort();
    const min = lowest(th, lo > 0 ? prefix[lo - 1] : 0);
    for (let ci = 0; ci < found.length; ci++) {
      const i = found[ci];
      let score = win[i];
      if (score === -Infinity || !(score >= min)) continue; // excluded, or out of reach
      const d = base + i;
      if (seeded?.has(d)) continue; // offered already
      stats.candidates++;
      let out = false;
      for (let j = lo - 1; j >= 0; j--) {
        if (below(score + prefix[j], th)) {
          out = true;
          break;
        }
        const x = sc[j];
        if (x.advance(d) === d) score += x.score();
      }
      if (!out && top.offer(d, score) && top.full && top.threshold > th) th = top.threshold;
    }
    base = end;
  }
  if (partial) stats.taatPartial = (stats.taatPartial ?? 0) + 1;
  return top.sorted();
}

/**
 * The exact score of `d`: every scorer's part, summed in the canonical order (best bound
 * first, sc from last to first) that every path uses. Cursors move forward to `d`.
 */
function scoreOf(sc: readonly Scorer[], d: number): number {
  let score = 0;
  for (let j = sc.length - 1; j >= 0; j--) {
    const x = sc[j];
    if (x.advance(d) === d) score += x.score();
  }
  return score;
}

/** A copy of `v` in a scratch slot. */
function copy(v: Float64Array, slot: number): Float64Array {
  const c = f64(slot, v.length);
  c.set(v);
  return c;
}

/** The k-th largest of `v` (1 ≤ k ≤ v.length); reorders `v` (quickselect). */
function kthLargest(v: Float64Array, k: number): number {
  let lo = 0;
  let hi = v.length - 1;
  const want = k - 1; // index in descending order
  while (lo < hi) {
    const pivot = v[(lo + hi) >>> 1];
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (v[i] > pivot) i++;
      while (v[j] < pivot) j--;
      if (i <= j) {
        const t = v[i];
        v[i] = v[j];
        v[j] = t;
        i++;
        j--;
      }
    }
    if (want <= j) hi = j;
    else if (want >= i) lo = i;
    else return v[want];
  }
  return v[want];
}

/**
 * A floor of the top-k threshold of a disjunction over `sc`: the k-th best exact score among
 * a few docs of the best-bounded long list's champion tier — those it scores best alone
 * (4k of them, at least 64), less any that an excluded clause holds. They are docs the query
 * can return, so the final threshold is not below it. −∞ when no list has a tier or fewer
 * than k of its docs remain.
 */
function thresholdFloor(sc: readonly Scorer[], mustNot: readonly Scorer[], k: number): number {
  let best: Scorer | null = null;
  let tier: Int32Array | null = null;
  for (const s of sc) {
    if (best && s.ub <= best.ub) continue;
    const t = s.n >= TIER_MIN ? s.tier() : null;
    if (t && t.docs.length >= k) {
      best = s;
      tier = t.docs;
    }
  }
  if (!best || !tier) return -Infinity;
  // this list's part of each tier doc (one cursor, ascending)
  const docs = i32(I32.docs, tier.length);
  const part = f64(F64.part, tier.length);
  let n = 0;
  best.i = 0;
  for (let i = 0; i < tier.length; i++) {
    const d = tier[i];
    if (best.advance(d) !== d) continue;
    let out = false;
    for (const x of mustNot) if (x.contains(d)) out = true;
    if (out) continue;
    docs[n] = d;
    part[n++] = best.score();
  }
  best.i = 0;
  if (n < k) return -Infinity;
  // the best of them by that part, scored exactly (every list, the fixed order)
  const want = Math.min(n, Math.max(4 * k, 64));
  const cut = kthLargest(copy(part.subarray(0, n), F64.pick), want);
  const exact = f64(F64.exact, n);
  let e = 0;
  for (let i = 0; i < n; i++) {
    if (part[i] < cut) continue;
    exact[e++] = scoreOf(sc, docs[i]);
  }
  for (const x of sc) x.i = 0;
  return kthLargest(exact.subarray(0, e), k);
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
  /** Block ranges skipped by their block-max bound, and term-at-a-time jumps over windows no essential list holds. */
  skips?: number;
  /** Searches finished by the champion tiers alone. */
  tierExits?: number;
  /** Searches run term-at-a-time. */
  taat?: number;
  /** Term-at-a-time searches that left non-essential lists out. */
  taatPartial?: number;
  /** Term-at-a-time windows where a non-essential list was added (dense candidates) instead of probed. */
  taatJoins?: number;
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
  /** When k reaches every doc: the hits in no particular order (the caller aggregates them). */
  unordered = false,
): Hit[] {
  const top = new TopK(k, ids, unordered);
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
  // prefix[j]: the bound of lists 0..j together (MaxScore's and term-at-a-time's essential split)
  const prefix = new Float64Array(m);
  let ubs = 0;
  for (let j = 0; j < m; j++) prefix[j] = ubs += sc[j].ub;
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
  let seeded = null as Seeds | null;
  const scoreSeeds = (...lists: ArrayLike<number>[]) => {
    const set = (seeded ??= new Seeds(ids.length));
    const from = set.n;
    for (const docs of lists) for (let i = 0; i < docs.length; i++) set.add(docs[i]);
    const list = i32(I32.seeds, set.n - from);
    list.set(set.docs.subarray(from, set.n));
    list.sort();
    // ascending walk: every cursor only moves forward (galloping), then all are rewound
    for (const d of list) {
      if (excluded(mustNot, d)) continue;
      const score = scoreOf(sc, d);
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
    if (taatPays(postingsOf(0))) return taat(sc, prefix, mustNot, top, ids.length, stats, null);
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
    //    long list is bounded by its tier's rest bound. A list whose bound is under a quarter
    //    of the best long list's is not seeded — its tier is the largest (it is the most
    //    common word) and its docs barely move the threshold; its whole bound counts as rest.
    if (sc.some((x) => x.n >= TIER_MIN)) {
      let bestLong = 0;
      for (const x of sc) if (x.n >= TIER_MIN && x.ub > bestLong) bestLong = x.ub;
      const seedTier = (x: Scorer) => x.n >= TIER_MIN && x.ub * collectorTuning.tierSeedShare >= bestLong;
      const tiers = sc.map((x) => (seedTier(x) ? x.tier() : null));
      if (tiers.every((t, j) => t || !seedTier(sc[j]))) {
        scoreSeeds(...tiers.filter((t) => t !== null).map((t) => (t as { docs: Int32Array }).docs));
        let rest = 0;
        for (let j = 0; j < m; j++) {
          const t = tiers[j];
          if (t) rest += t.restUb;
          else if (sc[j].n >= TIER_MIN) rest += sc[j].ub;
        }
        if (top.full && below(rest, top.threshold)) {
          stats.tierExits = (stats.tierExits ?? 0) + 1;
          return top.sorted();
        }
      }
    }
  }
  let fe = 0; // first essential scorer
  if (top.full) while (fe < m && below(prefix[fe], top.threshold)) fe++;
  // the lists that must still propose candidates decide whether a dense pass pays: MaxScore
  // visits every posting of its essential lists (~0.3–0.8 µs each at 1M docs, measured), a
  // term-at-a-time pass costs ~7 ns per posting added plus ~1 ns per doc (the array's fill) —
  // so past 1/256 of the docs (and taatMinEssential) the dense pass is the cheaper one
  const rest = postingsOf(fe);
  if ((seeds && seeds.length > 0 && taatPays(rest)) || (rest.postings > collectorTuning.taatMinEssential && rest.postings * 256 > ids.length))
    return taat(sc, prefix, mustNot, top, ids.length, stats, seeded);
  // per-scorer parts, summed in the one canonical order (best bound first: sc from last to
  // first, as every path sums) so a doc's score never depends on the pruning path
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
    for (let j = m - 1; j >= 0; j--) score += part[j];
    if (top.offer(cand, score) && top.full) {
      const nt = top.threshold;
      while (fe < m && below(prefix[fe], nt)) fe++;
    }
  }
  return top.sorted();
}
