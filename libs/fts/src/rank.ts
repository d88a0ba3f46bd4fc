/**
 * The ranking pipeline of a search: BM25 (optionally with RM3 feedback) as the first
 * phase, then term-proximity rescoring of its first ranks. Every stage can be switched
 * off, so plain BM25 stays reachable (`feedback: 'none', proximity: 'none'`).
 */
import type { CollectStats } from './collector';
import { PROXIMITY_WINDOW, rescoreProximity } from './proximity';
import { searchClauses, searchWithFeedback, type BooleanClause, type FeedbackOptions, type RankedDoc, type SearchContext } from './query';

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
}

/** What a search does when the caller does not say. */
export const RANKING_DEFAULTS: { readonly feedback: FeedbackMode; readonly proximity: ProximityMode } = {
  feedback: 'none',
  proximity: 'none',
};

export async function rankClauses(clauses: readonly BooleanClause[], ctx: SearchContext, k: number, opts: RankOptions = {}): Promise<RankedDoc[]> {
  const feedback = opts.feedback ?? RANKING_DEFAULTS.feedback;
  const proximity = opts.proximity ?? RANKING_DEFAULTS.proximity;
  const window = opts.proximityWindow ?? PROXIMITY_WINDOW;
  // a fixed window keeps the top k of a smaller limit a prefix of a larger one
  const depth = proximity === 'none' ? k : Math.max(k, window);
  const first =
    feedback === 'rm3' ? await searchWithFeedback(clauses, ctx, depth, opts.rm3, opts.stats) : await searchClauses(clauses, ctx, depth, opts.stats);
  if (proximity === 'none') return first;
  const out = await rescoreProximity(first, clauses, ctx, { window, weight: opts.proximityWeight });
  return out.slice(0, k);
}
