/**
 * The set algebra of text-plan.ts: a query's matching documents as a `Part` (an fts query of one
 * column, a node, or every document, filtered by a predicate), and how parts combine into plan
 * nodes (one structured fts `bool` per column, semi / anti joins and unions on `_id`, counted
 * unions for k of n). `textColumn` says when a text field's fts column lists exactly
 * Elasticsearch's matches.
 */
import { aggregate, col, filter, ftsSearch, join, lit, project, scan, setOp, type Expr, type FtsQuery, type PlanNode } from '@mmdb/plan';
import type { Field, JsonObject } from './mapping';
import type { IndexRef } from './indices';
import type { IndexView } from './doc';
import { indexAnalyzer, searchAnalyzer } from './fields';
import { fieldStats } from './scoring';
import type { Kind } from './plan-aggs';

export const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
/** A query term the fts lib analyzes to itself. */
export const TERM = /^[a-z0-9]+$/;
export const NAME = /^[A-Za-z_][A-Za-z0-9_.]*$/;
const RANKING = { feedback: 'none', proximity: 'none', query_stopwords: 'none' } as const;

/** A set of documents: those of `src` (every document when null) that pass `pred`. */
export interface Part {
  readonly src: { readonly fts: { readonly column: string; readonly query: FtsQuery } } | { readonly node: PlanNode } | null;
  readonly pred?: Expr;
}
export const ALL: Part = { src: null };
export const NONE: Part = { src: null, pred: lit(false) };

export interface Ctx { readonly ref: IndexRef; readonly ix: IndexView; readonly fields: Map<string, Kind>; depth: number }

export const and2 = (l: Expr | undefined, r: Expr | undefined): Expr | undefined => (l && r ? { kind: 'binary', op: 'and', left: l, right: r } : l ?? r);
/** True when `p` is not true (NULL counts as not matching, as a filter reads it). */
export const notTrue = (p: Expr): Expr => ({ kind: 'case', whens: [{ when: p, then: lit(false) }], else: lit(true) });
export const one = (p: Expr): Expr => ({ kind: 'case', whens: [{ when: p, then: lit(1) }], else: lit(0) });

export function base(c: Ctx, src: Part['src']): PlanNode {
  if (!src) return scan(c.ref.table.id);
  if ('node' in src) return src.node;
  return ftsSearch({ schema: c.ref.table.id, field: src.fts.column, query: src.fts.query, limit: null, ranking: RANKING });
}
export const rows = (c: Ctx, p: Part): PlanNode => (p.pred ? filter(base(c, p.src), p.pred) : base(c, p.src));
/** The table's columns only (an fts node adds `_score`), so the rows of several sets compare. */
export const tableRows = (c: Ctx, p: Part): PlanNode => project(rows(c, p), c.ref.table.columns.map((x) => ({ name: x.name, expr: col(x.name) })));
export const ids = (c: Ctx, p: Part): PlanNode => project(rows(c, p), [{ name: '_k', expr: col('_id') }]);
/** `left`'s rows whose `_id` is (semi) / is not (anti) among `right`'s `_k`. */
export function keyJoin(kind: 'semi' | 'anti', left: PlanNode, right: PlanNode): PlanNode {
  const eq = { left: col('_id'), right: col('_k') };
  return { ...join(kind, left, right, { kind: 'binary', op: '=', ...eq }), equi: [eq], strategy: 'hash' };
}

export function sameColumn(ps: Part[]): string | null {
  let column: string | null = null;
  for (const p of ps) {
    if (p.pred || !p.src || !('fts' in p.src) || (column !== null && p.src.fts.column !== column)) return null;
    column = p.src.fts.column;
  }
  return column;
}

/** The documents in every part. */
export function allOf(c: Ctx, ps: Part[]): Part {
  let pred: Expr | undefined;
  const texts: Part[] = [];
  for (const p of ps) {
    pred = and2(pred, p.pred);
    if (p.src) texts.push({ src: p.src });
  }
  if (!texts.length) return { src: null, pred };
  // clauses on one column: one structured bool
  const column = sameColumn(texts);
  let src: Part['src'];
  if (column !== null && texts.length > 1) {
    src = { fts: { column, query: { bool: { must: texts.map((t) => (t.src as { fts: { query: FtsQuery } }).fts.query), minimum_should_match: 0 } } } };
  } else {
    src = texts[0].src;
    for (const t of texts.slice(1)) src = { node: keyJoin('semi', base(c, src), ids(c, t)) };
  }
  return { src, pred };
}

/** The documents of `x` in no part of `not`. */
export function noneOf(c: Ctx, x: Part, not: Part[]): Part {
  if (!not.length) return x;
  let pred = x.pred;
  const texts: Part[] = [];
  for (const n of not) {
    if (!n.src && !n.pred) return NONE;
    if (!n.src) pred = and2(pred, notTrue(n.pred!));
    else texts.push(n);
  }
  if (!texts.length) return { src: x.src, pred };
  const column = x.src && 'fts' in x.src ? sameColumn([{ src: x.src }, ...texts]) : null;
  if (column !== null) {
    const must = (x.src as { fts: { query: FtsQuery } }).fts.query;
    return { src: { fts: { column, query: { bool: { must: [must], must_not: texts.map((t) => (t.src as { fts: { query: FtsQuery } }).fts.query), minimum_should_match: 0 } } } }, pred };
  }
  let node = base(c, x.src);
  for (const t of texts) node = keyJoin('anti', node, ids(c, t));
  return { src: { node }, pred };
}

/** The documents in at least `k` (≥ 1) parts. */
export function someOf(c: Ctx, ps: Part[], k: number): Part {
  if (k > ps.length) return NONE;
  if (k <= 1 && ps.some((p) => !p.src && !p.pred)) return ALL;
  if (ps.length === 1) return ps[0];
  if (ps.every((p) => !p.src)) {
    if (k <= 1) return { src: null, pred: ps.map((p) => p.pred!).reduce((l, r) => ({ kind: 'binary', op: 'or', left: l, right: r })) };
    const n = ps.map((p) => one(p.pred!)).reduce((l, r) => ({ kind: 'binary', op: '+', left: l, right: r }));
    return { src: null, pred: { kind: 'binary', op: '>=', left: n, right: lit(k) } };
  }
  const column = sameColumn(ps);
  if (column !== null) {
    return { src: { fts: { column, query: { bool: { should: ps.map((p) => (p.src as { fts: { query: FtsQuery } }).fts.query), minimum_should_match: k } } } } };
  }
  const union = ps.map((p) => tableRows(c, p)).reduce((l, r) => setOp('union', l, r));
  if (k <= 1) return { src: { node: union } };
  // each document's matched parts, counted over the union of their ids
  const all = ps.map((p) => ids(c, p)).reduce((l, r) => setOp('union', l, r, true));
  const counted = filter(aggregate(all, [{ name: '_k', expr: col('_k') }], [{ name: '_n', fn: 'count', args: [], star: true }]), { kind: 'binary', op: '>=', left: col('_n'), right: lit(k) });
  return { src: { node: keyJoin('semi', union, counted) } };
}

/**
 * The fts column of a text field whose tokens the fts lib makes as Elasticsearch does (every word
 * kept), and the field's analyzer (index and search alike), or null:
 *   - `standard`: every term lowercase ASCII letters, digits and apostrophes (`asciiTokens`);
 *   - `whitespace` (the column: the fts lib's `simple`): every whitespace-separated token is
 *     lowercase ASCII letters and digits, so splitting on non-word characters makes the same ones;
 *   - `simple` (letters only): every `standard` term is lowercase ASCII letters, so the text holds no
 *     digit or other word character and both analyzers make the same runs of letters.
 */
export function textColumn(c: Ctx, f: Field, analyzer?: unknown): { column: string; an: string } | null {
  const an = indexAnalyzer(c.ix, f);
  if (f.def.index === false || f.aliasOf !== undefined || f.parent !== undefined || !PLAIN_ANALYZERS[an] || searchAnalyzer(c.ix, f, analyzer) !== an) return null;
  const column = c.ref.meta.text[f.path];
  if (!column || !c.ref.table.fulltextAllWords?.includes(column)) return null;
  const st = fieldStats(c.ix, f.path, an === 'simple' ? 'standard' : an);
  if (an === 'standard' ? !st.asciiTokens : ![...st.df.keys()].every((t) => PLAIN_ANALYZERS[an].test(t))) return null;
  return { column, an };
}
/** The analyzers whose tokens the fts column makes under a condition on the terms (see textColumn). */
export const PLAIN_ANALYZERS: Record<string, RegExp> = { standard: /^[a-z0-9']+$/, whitespace: /^[a-z0-9]+$/, simple: /^[a-z]+$/ };
