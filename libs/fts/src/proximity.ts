/**
 * Term-proximity rescoring (Büttcher, Clarke & Lushman, "Term proximity scoring for ad-hoc
 * retrieval on very large text collections", SIGIR 2006 — "BM25TP").
 *
 * The query's scored words are merged, by position, over one document; every time an
 * occurrence follows an occurrence of a *different* query word at distance d, both words'
 * accumulators grow: acc(a) += idf(b)/d², acc(b) += idf(a)/d². The proximity score is
 *
 *   Σ_t min(1, idf(t)) · acc(t)·(k1 + 1) / (acc(t) + k1·(1 − b + b·dl/avgdl))
 *
 * i.e. BM25's saturation applied to the accumulators, in the same units as BM25, and added
 * to the BM25 score. It has no parameter of its own beyond the field's k1 and b.
 *
 * It is applied as a second phase (as Lucene/Elasticsearch rescorers are) to the first
 * `window` results of the first phase: positions live in the doc entries of the store,
 * so only those are read. Results past the window keep their first-phase order below it.
 * A query with fewer than two distinct scored words is returned unchanged.
 */
import type { BooleanClause, RankedDoc, SearchContext } from './query';
import { TermQuery } from './query';
import { idf } from './similarity';

/** Documents rescored by default (the first ranks of the first phase). */
export const PROXIMITY_WINDOW = 100;

export interface ProximityOptions {
  /** First-phase results rescored (default PROXIMITY_WINDOW). */
  readonly window?: number;
  /** Multiplier of the proximity score (default 1: Büttcher's formula as published). */
  readonly weight?: number;
}

/** The distinct words of the positive term clauses (required or optional), in query order. */
export function proximityTerms(clauses: readonly BooleanClause[]): string[] {
  const out: string[] = [];
  for (const c of clauses) if (c.occur !== 'must_not' && c.query instanceof TermQuery && !out.includes(c.query.term)) out.push(c.query.term);
  return out;
}

/** BM25TP's proximity score of one document, from each term's positions (undefined = absent). */
export function proximityScore(
  positions: ReadonlyArray<readonly number[] | undefined>,
  weights: readonly number[],
  dl: number,
  avgdl: number,
  k1: number,
  b: number,
): number {
  let n = 0;
  for (const p of positions) if (p && p.length) n++;
  if (n < 2) return 0;
  // merge (position, term) by position
  const occ: Array<[number, number]> = [];
  positions.forEach((ps, t) => {
    if (ps) for (const p of ps) occ.push([p, t]);
  });
  occ.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  const acc = new Float64Array(weights.length);
  for (let i = 1; i < occ.length; i++) {
    const [p0, a] = occ[i - 1];
    const [p1, c] = occ[i];
    if (a === c) continue;
    const d = p1 - p0;
    if (d <= 0) continue;
    const inv = 1 / (d * d);
    acc[a] += weights[c] * inv;
    acc[c] += weights[a] * inv;
  }
  const K = k1 * (1 - b + (b * dl) / avgdl);
  let s = 0;
  for (let t = 0; t < acc.length; t++) if (acc[t] > 0) s += (Math.min(1, weights[t]) * acc[t] * (k1 + 1)) / (acc[t] + K);
  return s;
}

/** Adds the proximity score to the first `window` hits and re-sorts them (ties by doc id). */
export async function rescoreProximity(
  hits: readonly RankedDoc[],
  clauses: readonly BooleanClause[],
  ctx: SearchContext,
  opts: ProximityOptions = {},
): Promise<RankedDoc[]> {
  const terms = proximityTerms(clauses);
  const window = Math.min(hits.length, opts.window ?? PROXIMITY_WINDOW);
  const weight = opts.weight ?? 1;
  if (terms.length < 2 || window === 0 || weight === 0) return hits.slice();
  const ix = ctx.index;
  const lists = terms.map((t) => ix.list(t));
  const weights = lists.map((l) => (l && l.n ? idf(Math.max(ix.docs, l.n), l.n) : 0));
  const avgdl = (ix.docs > 0 ? ix.total / ix.docs : 1) || 1;
  const { k1, b } = ctx.params;
  const head = await Promise.all(
    hits.slice(0, window).map(async (h) => {
      const ord = ix.ordinal(h.doc_id);
      if (ord === undefined) return h;
      // a doc with fewer than two of the words has no proximity score: the in-memory lists
      // tell, so its entry is not read
      let present = 0;
      for (const l of lists) {
        if (!l) continue;
        const at = l.seek(ord);
        if (at < l.n && l.docs[at] === ord && ++present === 2) break;
      }
      if (present < 2) return h;
      const pos = ctx.positionsOf ? await ctx.positionsOf(h.doc_id, terms) : await Promise.all(terms.map((t) => ctx.positions(t, h.doc_id)));
      const p = proximityScore(pos, weights, ix.docLen[ord], avgdl, k1, b);
      return p > 0 ? { doc_id: h.doc_id, score: h.score + weight * p } : h;
    }),
  );
  head.sort((x, y) => y.score - x.score || (x.doc_id < y.doc_id ? -1 : x.doc_id > y.doc_id ? 1 : 0));
  return head.concat(hits.slice(window));
}
