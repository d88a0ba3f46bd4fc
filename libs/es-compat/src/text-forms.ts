/**
 * Query forms of text-plan.ts that expand terms or combine words: pattern queries (`prefix`,
 * `wildcard`, `regexp`, `fuzzy`), `exists` on text fields, `intervals`, `function_score`,
 * `cross_fields` over several fields, and the words of `match` with `fuzziness` /
 * `match_bool_prefix` (plan-expand.ts expands them with the scorer's own tests).
 */
import { col, lit, type Expr, type FtsQuery } from '@mmdb/plan';
import type { Field, JsonObject } from './mapping';
import { analyze } from './analysis';
import { expandFields, isKeyword, isText, searchAnalyzer } from './fields';
import { fieldStats } from './scoring';
import { compile, minimumShouldMatch, patternOf, patternTest } from './query';
import { intervalTermTest } from './intervals';
import { expandTerms, expandValues, fuzzyTest } from './plan-expand';
import { copiedInto, fieldKind, filterClause } from './plan-aggs';
import { isObj, NAME, NONE, someOf, TERM, textColumn, type Ctx, type Part } from './text-set';

export type MatchKind = 'match' | 'match_phrase' | 'match_phrase_prefix' | 'match_bool_prefix';

/**
 * `prefix`, `wildcard`, `regexp`, `fuzzy` on a text or keyword field: the index's terms (values)
 * that pass the scorer's test (`patternTest`), expanded here, as an fts `terms` clause of the text
 * column or an `in` list over the keyword column (plan-expand.ts). Null when the query errs (the
 * scorer reports it), reads `_id`, or the expansion is too large.
 */
export function patternPart(c: Ctx, kind: string, body: unknown): Part | null {
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
 * one; a typed leaf's column as `filterClause` reads it); a wildcard names every mapped field it
 * matches (`expandFields`, as the scorer). Null for anything else.
 */
export function existsText(c: Ctx, body: unknown): Expr | null {
  if (!isObj(body) || Object.keys(body).some((k) => !['field', 'boost', '_name'].includes(k)) || typeof body.field !== 'string') return null;
  const name = body.field;
  // a wildcard: every mapped field it names (as the scorer expands it); none matches nothing
  const wild = name.includes('*');
  if (!wild && !NAME.test(name)) return null;
  const named = wild ? expandFields(c.ix, [name]).map((x) => x.field) : [...c.ix.fields.values()].filter((f) => f.path === name || f.path.startsWith(name + '.'));
  const leaves = named.filter((f) => f.type !== 'object' && (f.def.index !== false || f.def.doc_values !== false));
  if (wild && !leaves.length) return lit(false);
  if (!leaves.length || (!wild && !leaves.some((f) => isText(f)))) return null;
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
export function intervals(c: Ctx, body: unknown): Part | null {
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

export function intervalRule(c: Ctx, f: Field, an: string, rule: JsonObject): FtsQuery | 'none' | null {
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
export function functionScore(c: Ctx, q: JsonObject, b: unknown, part: (c: Ctx, q: unknown) => Part | null): Part | null {
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
export const isNumericField = (c: Ctx, name: unknown): boolean => ['long', 'integer', 'short', 'byte', 'double', 'float', 'half_float', 'scaled_float'].includes(c.ix.fields.get(String(name))?.type ?? '');

/**
 * `multi_match` of type `cross_fields` over several fields (the scorer's `crossFields`): the text
 * fields are one group (each word of the query in any of them, the operator / `minimum_should_match`
 * over the words); each keyword field is a group of its own (its value is the whole query); a
 * document matches when a group does.
 */
export function crossFields(c: Ctx, p: JsonObject, fields: Field[]): Part | null {
  if (Object.keys(p).some((k) => !['query', 'operator', 'minimum_should_match', 'boost', '_name', 'analyzer', 'lenient', 'auto_generate_synonyms_phrase_query'].includes(k))) return null;
  if (typeof p.query !== 'string' && typeof p.query !== 'number') return null;
  const cols: string[] = [];
  const groups: Part[] = [];
  let an: string | undefined;
  for (const f of fields) {
    if (f.aliasOf !== undefined || f.parent !== undefined) return null;
    if (!isText(f)) {
      if (isKeyword(f)) {
        const e = filterClause(c.ix, { term: { [f.path]: String(p.query) } }, c.fields);
        if (!e) return null;
        groups.push({ src: null, pred: e });
        continue;
      }
      // a number, boolean or date field: the whole query as its term (a value it cannot hold matches nothing there, as the scorer is lenient per field)
      const k = fieldKind(c.ix, f.path, 'count');
      if (k !== 'integer' && k !== 'number' && k !== 'time') return null;
      const e = filterClause(c.ix, { term: { [f.path]: { value: p.query } } }, c.fields);
      if (e) groups.push({ src: null, pred: e });
      continue;
    }
    const tc = textColumn(c, f, p.analyzer);
    // the scorer analyzes the query with the first text field's analyzer
    if (!tc || (an !== undefined && tc.an !== an)) return null;
    an = tc.an;
    cols.push(tc.column);
  }
  const words = an === undefined ? [] : analyze(String(p.query), an).map((t) => t.term);
  if (words.length) {
    if (words.length > 64 || !words.every((t) => TERM.test(t))) return null;
    const perWord = words.map((w) => someOf(c, cols.map((column): Part => ({ src: { fts: { column, query: { terms: [w] } } } })), 1));
    const op = String(p.operator ?? 'or').toLowerCase();
    if (op !== 'or' && op !== 'and') return null;
    const need = op === 'and' ? words.length : p.minimum_should_match !== undefined ? Math.max(1, minimumShouldMatch(p.minimum_should_match, words.length)) : 1;
    groups.unshift(someOf(c, perWord, need));
  }
  return groups.length ? someOf(c, groups, 1) : NONE;
}

/**
 * `match` with `fuzziness`, `match_bool_prefix`: each word is a clause of the terms it matches (its
 * fuzzy neighbours, or the index's terms it prefixes when it is the last word of a bool_prefix),
 * `need` of them required (a word matching no term of the index cannot count).
 */
export function expandedWords(c: Ctx, kind: MatchKind, f: Field, an: string, p: JsonObject, words: string[], need: number, fts: (q: FtsQuery) => Part): Part | null {
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
