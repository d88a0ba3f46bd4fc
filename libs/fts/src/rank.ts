/**
 * The ranking pipeline of a search (defaults in RANKING_DEFAULTS: plain BM25, as spec 4.9 says):
 *  1. BM25 of the query's words, its first PROXIMITY_WINDOW ranks rescored by term
 *     proximity (BM25TP, proximity.ts) when `proximity: 'bm25tp'`;
 *  2. with `feedback: 'rm3'`, RM3 pseudo-relevance feedback: the best docs of step 1 expand
 *     the query, and a plain BM25 round over the expanded query reranks the first round's pool.
 * With both off (the default, and no query stop words at compile time) a search is plain BM25.
 */
import type { CollectStats } from './collector';
import { PROXIMITY_WINDOW, rescoreProximity } from './proximity';
import { RM3_DOCS, searchClauses, searchWithFeedback, type BooleanClause, type FeedbackOptions, type RankedDoc, type SearchContext } from './query';

export type FeedbackMode = 'none' | 'rm3';
export type ProximityMode = 'none' | 'bm25tp';

export interface RankOptions {
  /** Pseudo-relevance feedback (default RANKING_DEFAULTS.feedback). */
  readonly feedback?: FeedbackMode;
  readonly rm3?: FeedbackOptions;
  /** Term-proximity rescoring (default RANKING_DEFAULTS.proximity). */
  readonly proximity?: ProximityMode;
  /** First-phase ranks rescored by proximity (default PROXIMITY_WINDOW). */
  readonly proximityWindow?: number;
  /** Multiplier of the proximity score (default 1). */
  readonly proximityWeight?: number;
  readonly stats?: CollectStats;
  /** Hits of the query's own words carry their ordinals (`RankedDoc.ord`). */
  readonly ordinals?: boolean;
  /** Every match of a plain BM25 search (no proximity, no feedback), in no particular order. */
  readonly unordered?: boolean;
}

/**
 * What a search does when the caller does not say: plain BM25 (spec 4.9). Proximity + RM3
 * (`RERANKED`) rank better on Cranfield (+12% nDCG@10) but cost 5–6× the CPU per query and
 * missed the 20 ms p99 at 1M docs on their first pass; their scores are not BM25's. They stay
 * one parameter away (DESIGN.md "Ranking defaults").
 */
export const RANKING_DEFAULTS: { readonly feedback: FeedbackMode; readonly proximity: ProximityMode; readonly queryStopwords: 'auto' | 'none' } = {
  feedback: 'none',
  proximity: 'none',
  queryStopwords: 'none',
};

/** The quality-first ranking (opt-in): BM25TP proximity rescoring, then the RM3 rerank. */
export const RERANKED: { readonly feedback: FeedbackMode; readonly proximity: ProximityMode } = { feedback: 'rm3', proximity: 'bm25tp' };

export async function rankClauses(clauses: readonly BooleanClause[], ctx: SearchContext, k: number, opts: RankOptions = {}): Promise<RankedDoc[]> {
  const feedback = opts.feedback ?? RANKING_DEFAULTS.feedback;
  const proximity = opts.proximity ?? RANKING_DEFAULTS.proximity;
  // With RM3 the first round's order only chooses the feedback docs (its best rm3.docs; the
  // second round reranks the pool), so proximity rescoring needs a margin above them, not 100
  // ranks: 3 × the feedback docs (measured on Cranfield: windows of 20–100 give the same quality).
  const window = opts.proximityWindow ?? (feedback === 'rm3' ? Math.min(PROXIMITY_WINDOW, 3 * (opts.rm3?.docs ?? RM3_DOCS)) : PROXIMITY_WINDOW);
  // a fixed window (not the limit) keeps the top k of a smaller limit a prefix of a larger one
  // The query's own words ranked by BM25 (+ proximity): the final ranking without feedback,
  // the choice of feedback docs with it (the expanded second round is plain BM25: measured on
  // Cranfield, rescoring it by the original words' proximity as well did not help).
  const own = async (n: number) => {
    const plain = proximity === 'none' && feedback === 'none';
    const hits = await searchClauses(clauses, ctx, proximity === 'none' ? n : Math.max(n, window), opts.stats, undefined, opts.ordinals, plain && opts.unordered === true);
    return proximity === 'none' ? hits : rescoreProximity(hits, clauses, ctx, { window, weight: opts.proximityWeight });
  };
  let round = 0;
  const out =
    feedback === 'rm3'
      ? await searchWithFeedback(clauses, ctx, k, opts.rm3, opts.stats, (c, n, seeds) => (round++ === 0 ? own(n) : searchClauses(c, ctx, n, opts.stats, seeds)))
      : await own(k);
  return out.slice(0, k);
}
