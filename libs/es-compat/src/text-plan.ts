/**
 * Every match of a Query DSL query as a plan input (for aggregations, `_count` and pages sorted by
 * fields: `plan-aggs.ts`, `plan-sort.ts`). The query is compiled to a set of documents built from
 * plan nodes only:
 *   - a text clause on one `standard` text field (`match` with operator / minimum_should_match,
 *     `match_phrase`) is a structured fts query of that field's column; clauses of one bool on the
 *     same column merge into one structured `bool`, answered by one `fts_search(limit null)`;
 *   - `prefix`, `wildcard`, `regexp`, `fuzzy`, `match` with `fuzziness`, the last word of
 *     `match_bool_prefix` / `match_phrase_prefix`: the index's terms (text: the term dictionary of
 *     the view's field statistics) or values (keyword: its global ordinals) that pass the scorer's
 *     own test, expanded here (plan-expand.ts) into an fts `terms` clause or an `in` list;
 *   - exact clauses (term / terms / prefix on keyword, range on numbers, exists, `ids`,
 *     `match_all`, `match_none`, a `match` on a keyword field) are predicates over the row
 *     (plan-aggs `filterClause`);
 *   - sets of other fields or kinds combine with joins on `_id`: a conjunction is a semi join, a
 *     `must_not` an anti join, a disjunction a `set_op` union of the rows, and a
 *     `minimum_should_match` of k ≥ 2 over clauses of several fields counts each document's
 *     matched clauses (`aggregate` over a `union all` of their ids) and keeps those with k;
 *   - `multi_match` (best_fields / most_fields / phrase / phrase_prefix / bool_prefix, cross_fields
 *     over text fields), `dis_max`, `constant_score`, `boosting`, `function_score` (without
 *     `min_score`), `query_string` and `simple_query_string` (parsed into the DSL first) compile to
 *     the above.
 * The fts node lists exactly Elasticsearch's matches only when the fts lib makes Elasticsearch's
 * tokens for the field (`asciiTokens`, query terms of `[a-z0-9]`) and keeps every word; a phrase
 * also needs every document to hold one value (Elasticsearch leaves a gap of 100 positions between
 * values, our column joins them). Anything else answers null: the search scores the view.
 */
import { aggregate, col, filter, ftsSearch, join, lit, project, scan, setOp, type Expr, type FtsQuery, type PlanNode } from '@mmdb/plan';
import type { Field, JsonObject } from './mapping';
import type { IndexRef } from './indices';
import type { IndexView } from './doc';
import { analyze } from './analysis';
import { expandFields, indexAnalyzer, isKeyword, isText, searchAnalyzer } from './fields';
import { fieldStats } from './scoring';
import { compile, minimumShouldMatch, patternOf, patternTest } from './query';
import { intervalTermTest } from './intervals';
import { expandTerms, expandValues, fuzzyTest } from './plan-expand';
import { defaultFields, queryStringFields } from './text-query';
import { parseQueryString, parseSimpleQueryString } from './query-string';
import { copiedInto, filterClause, type Kind, type MatchInput } from './plan-aggs';

const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
const list = (v: unknown): unknown[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);
const TERM = /^[a-z0-9]+$/;
const NAME = /^[A-Za-z_][A-Za-z0-9_.]*$/;
const RANKING = { feedback: 'none', proximity: 'none', query_stopwords: 'none' } as const;

/** A set of documents: those of `src` (every document when null) that pass `pred`. */
interface Part {
  readonly src: { readonly fts: { readonly column: string; readonly query: FtsQuery } } | { readonly node: PlanNode } | null;
  readonly pred?: Expr;
}
const ALL: Part = { src: null };
const NONE: Part = { src: null, pred: lit(false) };

interface Ctx { readonly ref: IndexRef; readonly ix: IndexView; readonly fields: Map<string, Kind>; depth: number }

const and2 = (l: Expr | undefined, r: Expr | undefined): Expr | undefined => (l && r ? { kind: 'binary', op: 'and', left: l, right: r } : l ?? r);
/** True when `p` is not true (NULL counts as not matching, as a filter reads it). */
const notTrue = (p: Expr): Expr => ({ kind: 'case', whens: [{ when: p, then: lit(false) }], else: lit(true) });
const one = (p: Expr): Expr => ({ kind: 'case', whens: [{ when: p, then: lit(1) }], else: lit(0) });

/**
 * Every document `q` matches as a plan input, or null when the query has a form (or the index a
 * field) the plans do not answer exactly. The fields the predicates read are added to `fields` for
 * the plain-value check.
 */
export function matchInput(ref: IndexRef, ix: IndexView, q: unknown, fields: Map<string, Kind>): PlanNode | null {
  if (ref.readOnly) return null;
  const c: Ctx = { ref, ix, fields, depth: 0 };
  const p = part(c, q);
  if (!p) return null;
  return p.pred ? filter(base(c, p.src), p.pred) : base(c, p.src);
}

/**
 * The documents `q` matches as a predicate over an index's row (for `filter` / `filters`
 * aggregations): the predicates, and `_id IN (the set's ids)` for the fts and joined sets.
 */
export function matchPredicate(ref: IndexRef, ix: IndexView, q: unknown, fields: Map<string, Kind>): Expr | null {
  if (ref.readOnly) return null;
  const c: Ctx = { ref, ix, fields, depth: 0 };
  const p = part(c, q);
  if (!p) return null;
  const inSet: Expr | undefined = p.src ? { kind: 'in_subquery', arg: col('_id'), plan: project(base(c, p.src), [{ name: '_k', expr: col('_id') }]) } : undefined;
  return and2(p.pred, inSet) ?? lit(true);
}

/** Both forms for one index (plan-aggs `MatchInput`). */
export const textPlans = (ref: IndexRef, ix: IndexView): MatchInput => ({
  input: (q, fields) => matchInput(ref, ix, q, fields),
  predicate: (q, fields) => matchPredicate(ref, ix, q, fields),
});

function base(c: Ctx, src: Part['src']): PlanNode {
  if (!src) return scan(c.ref.table.id);
  if ('node' in src) return src.node;
  return ftsSearch({ schema: c.ref.table.id, field: src.fts.column, query: src.fts.query, limit: null, ranking: RANKING });
}
const rows = (c: Ctx, p: Part): PlanNode => (p.pred ? filter(base(c, p.src), p.pred) : base(c, p.src));
/** The table's columns only (an fts node adds `_score`), so the rows of several sets compare. */
const tableRows = (c: Ctx, p: Part): PlanNode => project(rows(c, p), c.ref.table.columns.map((x) => ({ name: x.name, expr: col(x.name) })));
const ids = (c: Ctx, p: Part): PlanNode => project(rows(c, p), [{ name: '_k', expr: col('_id') }]);
/** `left`'s rows whose `_id` is (semi) / is not (anti) among `right`'s `_k`. */
function keyJoin(kind: 'semi' | 'anti', left: PlanNode, right: PlanNode): PlanNode {
  const eq = { left: col('_id'), right: col('_k') };
  return { ...join(kind, left, right, { kind: 'binary', op: '=', ...eq }), equi: [eq], strategy: 'hash' };
}

function sameColumn(ps: Part[]): string | null {
  let column: string | null = null;
  for (const p of ps) {
    if (p.pred || !p.src || !('fts' in p.src) || (column !== null && p.src.fts.column !== column)) return null;
    column = p.src.fts.column;
  }
  return column;
}

/** The documents in every part. */
function allOf(c: Ctx, ps: Part[]): Part {
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
function noneOf(c: Ctx, x: Part, not: Part[]): Part {
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
function someOf(c: Ctx, ps: Part[], k: number): Part {
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

function part(c: Ctx, q: unknown): Part | null {
  if (q === undefined) return ALL;
  if (!isObj(q) || Object.keys(q).length !== 1 || ++c.depth > 64) return null;
  const [kind] = Object.keys(q);
  const body = q[kind];
  switch (kind) {
    case 'match_all': return isObj(body) && Object.keys(body).every((k) => k === 'boost' || k === '_name') ? ALL : null;
    case 'match_none': return isObj(body) ? NONE : null;
    case 'prefix': case 'wildcard': case 'regexp': case 'fuzzy': return patternPart(c, kind, body);
    case 'function_score': return functionScore(c, q, body);
    case 'intervals': return intervals(c, body);
    case 'term': case 'terms': case 'range': case 'exists': {
      const e = filterClause(c.ix, q, c.fields) ?? (kind === 'exists' ? existsText(c, body) : null);
      return e ? { src: null, pred: e } : null;
    }
    case 'ids': {
      if (!isObj(body) || Object.keys(body).some((k) => !['values', 'boost', '_name'].includes(k)) || !Array.isArray(body.values)) return null;
      if (!body.values.length) return NONE;
      return { src: null, pred: { kind: 'in_list', arg: col('_id'), list: body.values.map((v) => lit(String(v))) } };
    }
    case 'bool': return bool(c, body);
    case 'constant_score': return isObj(body) && body.filter !== undefined && Object.keys(body).every((k) => ['filter', 'boost', '_name'].includes(k)) ? part(c, body.filter) : null;
    case 'dis_max': {
      if (!isObj(body) || Object.keys(body).some((k) => !['queries', 'tie_breaker', 'boost', '_name'].includes(k))) return null;
      const ps = parts(c, Array.isArray(body.queries) ? body.queries : []); // as the scorer: anything else holds no query
      return ps && (ps.length ? someOf(c, ps, 1) : NONE);
    }
    case 'boosting': {
      if (!isObj(body) || Object.keys(body).some((k) => !['positive', 'negative', 'negative_boost', 'boost', '_name'].includes(k))) return null;
      // the negative clause only lowers scores (it must still be a query we read)
      return part(c, body.negative) ? part(c, body.positive) : null;
    }
    case 'match': case 'match_phrase': case 'match_phrase_prefix': case 'match_bool_prefix': return matchPart(c, kind, body);
    case 'multi_match': return multiMatch(c, body);
    case 'query_string': case 'simple_query_string': {
      if (!isObj(body) || body.query === undefined) return null;
      try {
        const qf = queryStringFields(c.ix, body);
        return part(c, kind === 'query_string' ? parseQueryString(qf.body, qf.fields) : parseSimpleQueryString(qf.body, qf.fields));
      } catch {
        return null; // the search reports the error
      }
    }
    default: return null;
  }
}

function parts(c: Ctx, qs: unknown[]): Part[] | null {
  const out: Part[] = [];
  for (const q of qs) {
    const p = part(c, q);
    if (!p) return null;
    out.push(p);
  }
  return out;
}

function bool(c: Ctx, b: unknown): Part | null {
  if (!isObj(b) || Object.keys(b).some((k) => !['must', 'should', 'filter', 'must_not', 'minimum_should_match', 'boost', '_name', 'adjust_pure_negative'].includes(k))) return null;
  const must = parts(c, [...list(b.must), ...list(b.filter)]), should = parts(c, list(b.should)), not = parts(c, list(b.must_not));
  if (!must || !should || !not) return null;
  const msm = b.minimum_should_match !== undefined ? minimumShouldMatch(b.minimum_should_match, should.length) : must.length ? 0 : should.length ? 1 : 0;
  const pos = msm > 0 ? allOf(c, [...must, someOf(c, should, msm)]) : allOf(c, must);
  return noneOf(c, pos, not);
}

function multiMatch(c: Ctx, b: unknown): Part | null {
  const keys = ['query', 'fields', 'type', 'operator', 'minimum_should_match', 'boost', 'tie_breaker', 'lenient', '_name', 'zero_terms_query', 'slop', 'auto_generate_synonyms_phrase_query', 'analyzer', 'max_expansions', ...FUZZY_KEYS];
  if (!isObj(b) || b.query === undefined || Object.keys(b).some((k) => !keys.includes(k))) return null;
  const type = String(b.type ?? 'best_fields');
  const specs = Array.isArray(b.fields) && b.fields.length ? b.fields.map(String) : defaultFields(c.ix, b);
  const fields = expandFields(c.ix, specs);
  const kinds: Record<string, MatchKind> = { best_fields: 'match', most_fields: 'match', cross_fields: 'match', phrase: 'match_phrase', phrase_prefix: 'match_phrase_prefix', bool_prefix: 'match_bool_prefix' };
  if (!(type in kinds)) return null;
  if (!fields.length) return NONE;
  const p: JsonObject = { ...b };
  for (const k of ['fields', 'type', 'tie_breaker']) delete p[k];
  if (type === 'cross_fields' && fields.length > 1) return crossFields(c, p, fields.map((x) => x.field));
  const ps: Part[] = [];
  for (const { field } of fields) {
    const x = fieldPart(c, kinds[type], field, p);
    if (!x) return null;
    ps.push(x);
  }
  return someOf(c, ps, 1);
}

type MatchKind = 'match' | 'match_phrase' | 'match_phrase_prefix' | 'match_bool_prefix';
const FUZZY_KEYS = ['fuzziness', 'prefix_length', 'max_expansions', 'fuzzy_transpositions', 'fuzzy_rewrite'];

function matchPart(c: Ctx, kind: MatchKind, body: unknown): Part | null {
  if (!isObj(body) || Object.keys(body).length !== 1) return null;
  const [name] = Object.keys(body);
  const v = body[name];
  const p: JsonObject = isObj(v) ? v : { query: v };
  if (!NAME.test(name) || p.query === undefined) return null;
  const f = c.ix.fields.get(name);
  if (!f || f.type === 'object') return NONE; // as the scorer: no such field matches nothing
  return fieldPart(c, kind, f, p);
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
function textColumn(c: Ctx, f: Field, analyzer?: unknown): { column: string; an: string } | null {
  const an = indexAnalyzer(c.ix, f);
  if (f.def.index === false || f.aliasOf !== undefined || f.parent !== undefined || !PLAIN_ANALYZERS[an] || searchAnalyzer(c.ix, f, analyzer) !== an) return null;
  const column = c.ref.meta.text[f.path];
  if (!column || !c.ref.table.fulltextAllWords?.includes(column)) return null;
  const st = fieldStats(c.ix, f.path, an === 'simple' ? 'standard' : an);
  if (an === 'standard' ? !st.asciiTokens : ![...st.df.keys()].every((t) => PLAIN_ANALYZERS[an].test(t))) return null;
  return { column, an };
}
/** The analyzers whose tokens the fts column makes under a condition on the terms (see textColumn). */
const PLAIN_ANALYZERS: Record<string, RegExp> = { standard: /^[a-z0-9']+$/, whitespace: /^[a-z0-9]+$/, simple: /^[a-z]+$/ };

/**
 * `prefix`, `wildcard`, `regexp`, `fuzzy` on a text or keyword field: the index's terms (values)
 * that pass the scorer's test (`patternTest`), expanded here, as an fts `terms` clause of the text
 * column or an `in` list over the keyword column (plan-expand.ts). Null when the query errs (the
 * scorer reports it), reads `_id`, or the expansion is too large.
 */
function patternPart(c: Ctx, kind: string, body: unknown): Part | null {
  let pat: ReturnType<typeof patternOf>;
  try {
    pat = patternOf(c.ix, kind, body);
  } catch {
    return null;
  }
  const { name, p, f } = pat;
  if (!f) return name.startsWith('_') ? null : NONE; // as the scorer: an unmapped field matches nothing
  if (f.aliasOf !== undefined || (!isText(f) && !isKeyword(f))) return null;
  let test: (s: string) => boolean;
  try {
    test = patternTest(f, kind, p);
  } catch {
    return null;
  }
  if (isText(f)) {
    const tc = textColumn(c, f);
    const terms = tc && expandTerms(c.ix, f.path, test, undefined, tc.an);
    if (!terms) return null;
    return terms.length ? { src: { fts: { column: tc!.column, query: { terms, operator: 'or' } } } } : NONE;
  }
  const vals = expandValues(c.ix, f.path, test);
  if (!vals) return null;
  if (!vals.length) return NONE;
  const e = filterClause(c.ix, { terms: { [f.path]: vals } }, c.fields);
  return e ? { src: null, pred: e } : null;
}

/**
 * `exists` on a text field (and its multi-fields, as the scorer reads it): a leaf has a value when
 * its column is set (a text field's fts column holds its values joined, set when the document has
 * one; a typed leaf's column as `filterClause` reads it). Null for anything else.
 */
function existsText(c: Ctx, body: unknown): Expr | null {
  if (!isObj(body) || Object.keys(body).some((k) => !['field', 'boost', '_name'].includes(k)) || typeof body.field !== 'string' || !NAME.test(body.field)) return null;
  const name = body.field;
  const leaves = [...c.ix.fields.values()].filter((f) => (f.path === name || f.path.startsWith(name + '.')) && f.type !== 'object' && (f.def.index !== false || f.def.doc_values !== false));
  if (!leaves.length || !leaves.some((f) => isText(f))) return null;
  let e: Expr | null = null;
  for (const f of leaves) {
    const column = isText(f) && f.def.index !== false && f.aliasOf === undefined ? c.ref.meta.text[f.path] : undefined;
    const x = column ? ({ kind: 'is_null', arg: col(column), not: true } as Expr) : filterClause(c.ix, { exists: { field: f.path } }, c.fields);
    if (!x) return null;
    e = e ? { kind: 'binary', op: 'or', left: e, right: x } : x;
  }
  return e;
}

/**
 * `intervals` on a text field, for the rules whose intervals exist exactly when a set of terms is
 * there (intervals.ts): `match` unordered with distinct words and no `max_gaps` (every word), or
 * ordered with `max_gaps: 0` (a phrase); `prefix`, `wildcard`, `fuzzy` (any term the rule's own
 * test passes, expanded); `any_of` of such. No `filter` or `use_field` (null: the scorer answers).
 */
function intervals(c: Ctx, body: unknown): Part | null {
  if (!isObj(body)) return null;
  const names = Object.keys(body).filter((k) => k !== 'boost' && k !== '_name');
  if (names.length !== 1 || !isObj(body[names[0]])) return null;
  const f = c.ix.fields.get(names[0]);
  if (!f || !isText(f)) return null;
  const tc = textColumn(c, f);
  if (!tc) return null;
  const spec = Object.fromEntries(Object.entries(body[names[0]] as JsonObject).filter(([k]) => k !== 'boost'));
  const q = intervalRule(c, f, tc.an, spec);
  return q === null ? null : q === 'none' ? NONE : { src: { fts: { column: tc.column, query: q } } };
}

function intervalRule(c: Ctx, f: Field, an: string, rule: JsonObject): FtsQuery | 'none' | null {
  if (Object.keys(rule).length !== 1 || !isObj(Object.values(rule)[0])) return null;
  const [kind] = Object.keys(rule);
  const p = rule[kind] as JsonObject;
  if (p.filter !== undefined || p.use_field !== undefined) return null;
  const expanded = (test: (t: string) => boolean): FtsQuery | 'none' | null => {
    const terms = expandTerms(c.ix, f.path, test, undefined, an);
    return terms === null ? null : terms.length ? { terms, operator: 'or' } : 'none';
  };
  switch (kind) {
    case 'match': {
      if (Object.keys(p).some((k) => !['query', 'ordered', 'max_gaps', 'analyzer'].includes(k)) || typeof p.query !== 'string') return null;
      let an2: string;
      try {
        an2 = searchAnalyzer(c.ix, f, p.analyzer);
      } catch {
        return null;
      }
      if (an2 !== an) return null;
      const terms = analyze(p.query, an).map((t) => t.term);
      if (!terms.length || terms.length > 64 || !terms.every((t) => TERM.test(t))) return null;
      if (terms.length === 1) return { terms };
      const gaps = p.max_gaps === undefined ? -1 : p.max_gaps;
      if (p.ordered !== true && gaps === -1 && new Set(terms).size === terms.length) return { terms, operator: 'and' };
      if (p.ordered === true && gaps === 0 && !fieldStats(c.ix, f.path, an).multiValued && !copiedInto(c.ix, f.path)) return { phrase: terms.join(' ') };
      return null;
    }
    case 'prefix': case 'wildcard': case 'fuzzy': {
      const keys = { prefix: ['prefix'], wildcard: ['pattern'], fuzzy: ['term', 'fuzziness', 'prefix_length'] }[kind];
      if (Object.keys(p).some((k) => !keys.includes(k)) || typeof p[keys[0]] !== 'string') return null;
      return expanded(intervalTermTest(kind, p));
    }
    case 'any_of': {
      if (Object.keys(p).length !== 1 || !Array.isArray(p.intervals) || !p.intervals.length) return null;
      const subs: FtsQuery[] = [];
      for (const r of p.intervals) {
        const x = isObj(r) ? intervalRule(c, f, an, r) : null;
        if (x === null) return null;
        if (x !== 'none') subs.push(x);
      }
      return subs.length ? (subs.length === 1 ? subs[0] : { bool: { should: subs, minimum_should_match: 1 } }) : 'none';
    }
    default: return null;
  }
}

/**
 * `function_score` (without `min_score`): its functions change scores only, so it matches what its
 * query matches; unless a function can fail on a document (`field_value_factor` without a numeric
 * `missing`, or on a field that is not numeric) or the query does not compile (the scorer reports it).
 */
function functionScore(c: Ctx, q: JsonObject, b: unknown): Part | null {
  if (!isObj(b) || b.min_score !== undefined) return null;
  try {
    compile({ ix: c.ix }, q);
  } catch {
    return null;
  }
  const specs = Array.isArray(b.functions) ? b.functions : [b];
  for (const s of specs) {
    if (!isObj(s)) return null;
    const fvf = s.field_value_factor;
    if (fvf !== undefined && (!isObj(fvf) || typeof fvf.missing !== 'number' || !isNumericField(c, fvf.field))) return null;
    if (s !== b && s.filter !== undefined && !part(c, s.filter)) return null;
  }
  return part(c, b.query ?? { match_all: {} });
}
const isNumericField = (c: Ctx, name: unknown): boolean => ['long', 'integer', 'short', 'byte', 'double', 'float', 'half_float', 'scaled_float'].includes(c.ix.fields.get(String(name))?.type ?? '');

/**
 * `multi_match` of type `cross_fields` over several text fields (the scorer's `crossFields`): each
 * word of the query in any of the fields, and the operator / `minimum_should_match` over the words.
 * Not with a keyword field (Elasticsearch analyzes the query as one term for it, as its own group;
 * the scorer and the retrieval differ there: the scorer answers).
 */
function crossFields(c: Ctx, p: JsonObject, fields: Field[]): Part | null {
  if (Object.keys(p).some((k) => !['query', 'operator', 'minimum_should_match', 'boost', '_name', 'analyzer', 'lenient', 'auto_generate_synonyms_phrase_query'].includes(k))) return null;
  if (typeof p.query !== 'string' && typeof p.query !== 'number') return null;
  const cols: string[] = [];
  let an: string | undefined;
  for (const f of fields) {
    const tc = isText(f) && f.aliasOf === undefined && f.parent === undefined ? textColumn(c, f, p.analyzer) : null;
    // the scorer analyzes the query with the first text field's analyzer
    if (!tc || (an !== undefined && tc.an !== an)) return null;
    an = tc.an;
    cols.push(tc.column);
  }
  const words = analyze(String(p.query), an).map((t) => t.term);
  if (!words.length) return NONE;
  if (words.length > 64 || !words.every((t) => TERM.test(t))) return null;
  const perWord = words.map((w) => someOf(c, cols.map((column): Part => ({ src: { fts: { column, query: { terms: [w] } } } })), 1));
  const op = String(p.operator ?? 'or').toLowerCase();
  if (op !== 'or' && op !== 'and') return null;
  const need = op === 'and' ? words.length : p.minimum_should_match !== undefined ? Math.max(1, minimumShouldMatch(p.minimum_should_match, words.length)) : 1;
  return someOf(c, perWord, need);
}

/**
 * A match-family clause on one field: an fts query of its column (text) or a term predicate
 * (keyword). `fuzziness` and the last word of `match_bool_prefix` / `match_phrase_prefix` expand
 * to the index's terms as the scorer matches them (plan-expand.ts).
 */
function fieldPart(c: Ctx, kind: MatchKind, f: Field, p: JsonObject): Part | null {
  const phrase = kind === 'match_phrase' || kind === 'match_phrase_prefix';
  const keys = ['query', 'operator', 'minimum_should_match', 'boost', '_name', 'lenient', 'zero_terms_query', 'auto_generate_synonyms_phrase_query', 'analyzer',
    ...(phrase ? ['slop'] : FUZZY_KEYS), ...(kind === 'match_phrase_prefix' ? ['max_expansions'] : [])];
  if (Object.keys(p).some((k) => !keys.includes(k)) || f.aliasOf !== undefined || f.parent !== undefined) return null;
  if (typeof p.query !== 'string' && typeof p.query !== 'number') return null;
  if (!isText(f)) {
    // the whole value as one term (a keyword without normalizer), as the scorer reads it
    if (!isKeyword(f) || p.analyzer !== undefined) return null;
    const e = filterClause(c.ix, { term: { [f.path]: String(p.query) } }, c.fields);
    return e ? { src: null, pred: e } : null;
  }
  const tc = textColumn(c, f, p.analyzer);
  if (!tc) return null;
  const { column, an } = tc;
  const terms = analyze(String(p.query), an).map((t) => t.term);
  if (!terms.length) return p.zero_terms_query === 'all' ? ALL : NONE;
  if (terms.length > 64 || !terms.every((t) => TERM.test(t))) return null;
  const fts = (query: FtsQuery): Part => ({ src: { fts: { column, query } } });
  if (phrase) {
    const slop = p.slop === undefined ? 0 : p.slop;
    // a sloppy phrase of 3+ words: the scorer bounds the summed distance, the fts lib each word's
    if (!Number.isInteger(slop) || (slop as number) < 0 || (slop as number) > 999 || (terms.length > 2 && slop !== 0)) return null;
    const sl = slop ? { slop: slop as number } : {};
    // the scorer expands the last word to a document's first `max_expansions` terms holding it (none when 0)
    const maxExp = kind === 'match_phrase_prefix' ? Number(p.max_expansions ?? 50) : 0;
    if (maxExp) {
      if (!(maxExp >= 1)) return null;
      const last = terms[terms.length - 1], head = terms.slice(0, -1);
      // one word: a document matches when it holds any term with the prefix; a phrase: only when no document holds more than max_expansions of them
      const exp = expandTerms(c.ix, f.path, (t) => t.startsWith(last), head.length ? Math.min(maxExp, 1024) : undefined, an);
      if (!exp) return null;
      if (!exp.length) return NONE;
      if (!head.length) return fts({ terms: exp, operator: 'or' });
      if (fieldStats(c.ix, f.path, an).multiValued || copiedInto(c.ix, f.path)) return null;
      return fts({ bool: { should: exp.map((e) => ({ phrase: [...head, e].join(' '), ...sl })), minimum_should_match: 1 } });
    }
    if (terms.length === 1) return fts({ terms });
    if (fieldStats(c.ix, f.path, an).multiValued || copiedInto(c.ix, f.path)) return null;
    return fts({ phrase: terms.join(' '), ...sl });
  }
  const op = String(p.operator ?? 'or').toLowerCase();
  if (op !== 'or' && op !== 'and') return null;
  const need = op === 'and' ? terms.length : p.minimum_should_match !== undefined ? Math.max(1, minimumShouldMatch(p.minimum_should_match, terms.length)) : 1;
  if (p.fuzziness !== undefined || kind === 'match_bool_prefix') return expandedWords(c, kind, f, an, p, terms, need, fts);
  if (need === 1 || need === terms.length) {
    if (need > 1 && new Set(terms).size !== terms.length) return fts({ terms: [...new Set(terms)], operator: 'and' });
    return fts({ terms: [...new Set(terms)], operator: need === 1 ? 'or' : 'and' });
  }
  // k of n words: each occurrence of a repeated word counts for the scorer, one clause each here
  return fts({ bool: { should: terms.map((t) => ({ terms: [t] })), minimum_should_match: need } });
}

/**
 * `match` with `fuzziness`, `match_bool_prefix`: each word is a clause of the terms it matches (its
 * fuzzy neighbours, or the index's terms it prefixes when it is the last word of a bool_prefix),
 * `need` of them required (a word matching no term of the index cannot count).
 */
function expandedWords(c: Ctx, kind: MatchKind, f: Field, an: string, p: JsonObject, words: string[], need: number, fts: (q: FtsQuery) => Part): Part | null {
  const pre = Number(p.prefix_length ?? 0);
  const clauses: FtsQuery[] = [];
  for (let i = 0; i < words.length; i++) {
    const w = words[i];
    const test = kind === 'match_bool_prefix' && i === words.length - 1 ? (t: string) => t.startsWith(w) : p.fuzziness !== undefined ? fuzzyTest(w, p.fuzziness, pre) : null;
    if (!test) { clauses.push({ terms: [w] }); continue; }
    const exp = expandTerms(c.ix, f.path, test, undefined, an);
    if (!exp) return null;
    if (exp.length) clauses.push({ terms: exp, operator: 'or' });
  }
  if (need > clauses.length || !clauses.length) return NONE;
  if (clauses.length === 1) return fts(clauses[0]);
  if (need === clauses.length) return fts({ bool: { must: clauses, minimum_should_match: 0 } });
  return fts({ bool: { should: clauses, minimum_should_match: need } });
}
