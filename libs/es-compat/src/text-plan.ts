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
import { col, filter, lit, project, type Expr, type FtsQuery, type PlanNode } from '@mmdb/plan';
import type { Field, JsonObject } from './mapping';
import type { IndexRef } from './indices';
import type { IndexView } from './doc';
import { analyze } from './analysis';
import { expandFields, isKeyword, isText } from './fields';
import { fieldStats } from './scoring';
import { minimumShouldMatch } from './query';
import { expandTerms } from './plan-expand';
import { defaultFields, queryStringFields } from './text-query';
import { parseQueryString, parseSimpleQueryString } from './query-string';
import { copiedInto, filterClause, type Kind, type MatchInput } from './plan-aggs';
import { ALL, allOf, and2, base, isObj, NAME, NONE, noneOf, someOf, TERM, textColumn, type Ctx, type Part } from './text-set';
import { crossFields, existsText, expandedWords, functionScore, intervals, patternPart, type MatchKind } from './text-forms';

const list = (v: unknown): unknown[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

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

function part(c: Ctx, q: unknown): Part | null {
  if (q === undefined) return ALL;
  if (!isObj(q) || Object.keys(q).length !== 1 || ++c.depth > 64) return null;
  const [kind] = Object.keys(q);
  const body = q[kind];
  switch (kind) {
    case 'match_all': return isObj(body) && Object.keys(body).every((k) => k === 'boost' || k === '_name') ? ALL : null;
    case 'match_none': return isObj(body) ? NONE : null;
    case 'prefix': case 'wildcard': case 'regexp': case 'fuzzy': return patternPart(c, kind, body);
    case 'function_score': return functionScore(c, q, body, part);
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

