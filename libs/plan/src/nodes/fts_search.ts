import type { Expr } from '../expr';

/**
 * A structured full-text query (the same meaning as our query syntax, libs/fts README):
 * `terms` (optional words, `operator: "and"` makes every one required), a `phrase` with `slop`
 * (each later word within `slop` positions of its place, either side: `"a b"~n` in the syntax),
 * a `prefix`, and `bool` with must / should / must_not and `minimum_should_match` (how many
 * `should` clauses must match; default 1 when there is no `must`, else 0). The engine answers one
 * level of bool over leaf clauses with those defaults; other forms are refused naming their path.
 */
export type FtsQuery =
  | { readonly terms: readonly string[]; readonly operator?: 'or' | 'and' }
  | { readonly phrase: string; readonly slop?: number }
  | { readonly prefix: string }
  | {
      readonly bool: {
        readonly must?: readonly FtsQuery[];
        readonly should?: readonly FtsQuery[];
        readonly must_not?: readonly FtsQuery[];
        readonly minimum_should_match?: number;
      };
    };

/** The fts route's ranking options (GET /fts: feedback, proximity, query_stopwords); omitted = the route's defaults. */
export interface FtsRanking {
  readonly feedback?: 'none' | 'rm3';
  readonly proximity?: 'none' | 'bm25tp';
  readonly query_stopwords?: 'none' | 'auto';
}

/**
 * BM25 search over a table's full-text field(s), best first (ties by doc id), then the matching
 * rows. Output: the row's columns (named `alias.col` when `alias` is set) plus `_score`.
 * `field` searches one field; `fields` several, a row's score being the sum of its per-field
 * scores times each field's `boost` (default 1). `query` is a string in our query syntax or a
 * structured FtsQuery. `limit` (default 20, as the route) bounds the hits; `null` returns every matching row
 * (an input for aggregates over all matches: the ES surface's aggregations under a text query). `filter` (an expression
 * over the row's columns, usually pushed in by the optimizer from a filter above) keeps only rows
 * that pass, and the node then returns the best `limit` among the rows that pass.
 * A standalone full-text table (created by POST /fts, no manifest) reads as the implicit table
 * `{doc_id TEXT PRIMARY KEY}`.
 */
export interface FtsSearchNode {
  readonly op: 'fts_search';
  readonly schema: string;
  readonly alias?: string;
  readonly field?: string;
  readonly fields?: ReadonlyArray<{ readonly field: string; readonly boost?: number }>;
  readonly query: string | FtsQuery;
  readonly limit?: number | null;
  readonly ranking?: FtsRanking;
  readonly filter?: Expr;
}
export const ftsSearch = (n: Omit<FtsSearchNode, 'op'>): FtsSearchNode => ({ op: 'fts_search', ...n });
