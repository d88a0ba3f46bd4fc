import type { Expr } from '../expr';

/**
 * `fts_search.query` given as an expression over no columns: a `$n` parameter bound to query text
 * or to a structured query (a JSON object), a literal, or e.g. `'"' || $1 || '"'` (a phrase).
 */
export type FtsQueryExpr = Expr;

/**
 * A structured full-text query (libs/fts structured.ts): `terms` (optional words, `operator:
 * "and"` makes every one required), a `phrase` with `slop` (each later word within `slop`
 * positions of its place, either side: `"a b"~n` in the syntax), a `prefix`, and `bool` with
 * must / should / must_not at any depth and `minimum_should_match` (how many `should` clauses
 * must match; default 1 when there is no `must`, else 0; negative n: all but n). A bool's score
 * is the sum of its matched positive clauses' BM25 scores, as the route scores `+a b -c`; a query
 * the syntax can say answers exactly as its text does on the route.
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
 * structured FtsQuery, or an expression (FtsQueryExpr: a `$n` bound to either) (so a cached plan template
 * keeps the query as a slot). `limit` (default 20, as the route) bounds the hits. `filter` (an expression
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
  readonly query: string | FtsQuery | FtsQueryExpr;
  /** The best `limit` hits (default 20, at most 1,000); `null`: every match, best first (SQL's `col @@ query`). */
  readonly limit?: number | null;
  readonly ranking?: FtsRanking;
  readonly filter?: Expr;
  /**
   * Set by the optimizer when nothing above reads more than the key and `_score` (a `project`
   * of those directly above, no filter): the hits' rows are not read, only their key columns are
   * filled (from the doc id); the other row columns are NULL.
   */
  readonly keys_only?: boolean;
  /**
   * Set by the optimizer on a `limit: null` search whose rows only an aggregate reads (through
   * filters and projects): their order is not observable, so plain BM25 answers every match
   * without ranking it (the scores are the same).
   */
  readonly unordered?: boolean;
  /**
   * Set by the optimizer with `unordered` when nothing on the way to the aggregate (its keys and
   * calls, the filters and projects between) reads `_score`: each hit is its row as the table
   * holds it, not a copy with the score appended (the `_score` column is not there to read).
   */
  readonly no_score?: boolean;
}
export const ftsSearch = (n: Omit<FtsSearchNode, 'op'>): FtsSearchNode => ({ op: 'fts_search', ...n });
