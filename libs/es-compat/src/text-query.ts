/** Full-text queries: match family, multi_match, and query_string / simple_query_string (parsed to DSL). */
import { EsError, illegalArgument, parsingError } from './errors';
import type { Doc, IndexView } from './doc';
import type { Field, Json, JsonObject } from './mapping';
import { analyze, type Token } from './analysis';
import { expandFields, indexAnalyzer, isText, searchAnalyzer } from './fields';
import { fieldStats, idf, bm25, termScore } from './scoring';
import { compile as compileQuery, editDistance, fuzziness, minimumShouldMatch, single, boostOf, type QueryEnv, type Scorer } from './query';
import { parseQueryString, parseSimpleQueryString } from './query-string';

type Compile = (env: QueryEnv, q: unknown) => Scorer;
const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

export function compileText(env: QueryEnv, kind: string, body: unknown, compile: Compile): Scorer {
  switch (kind) {
    case 'match': case 'match_phrase': case 'match_phrase_prefix': case 'match_bool_prefix': {
      const [name, p] = single(kind, body, 'query');
      if (p.query === undefined) throw parsingError(`No text specified for text query`);
      const f = env.ix.fields.get(name);
      if (!f || f.type === 'object') return () => null;
      return matchField(env, kind, f, p, boostOf(p));
    }
    case 'multi_match': return multiMatch(env, body);
    case 'combined_fields': return multiMatch(env, { ...(body as JsonObject), type: 'cross_fields' });
    case 'query_string': {
      if (!isObj(body) || body.query === undefined) throw parsingError('[query_string] requires \'query\' element');
      const qf = queryStringFields(env.ix, body);
      return compile(env, boosted(parseQueryString(qf.body, qf.fields), body.boost));
    }
    default: {
      if (!isObj(body) || body.query === undefined) throw parsingError('[simple_query_string] requires \'query\' element');
      const qf = queryStringFields(env.ix, body);
      return compile(env, boosted(parseSimpleQueryString(qf.body, qf.fields), body.boost));
    }
  }
}

/** A query_string / simple_query_string's own `boost` multiplies the parsed query's score. */
function boosted(q: JsonObject, boost: unknown): JsonObject {
  return boost === undefined || Number(boost) === 1 ? q : { bool: { must: [q], boost: Number(boost) } };
}

/** The fields a query_string / multi_match without `fields` searches: `default_field`, the index's `index.query.default_field`, else `*`. */
export function defaultFields(ix: IndexView, body: JsonObject): string[] {
  if (Array.isArray(body.fields) && body.fields.length) return body.fields.map(String);
  if (body.default_field !== undefined) return [String(body.default_field)];
  const s = ix.settings as JsonObject;
  const df = ((s.index as JsonObject | undefined)?.query as JsonObject | undefined)?.default_field;
  return df !== undefined ? (Array.isArray(df) ? df.map(String) : [String(df)]) : ['*'];
}

/**
 * The concrete fields a query_string / simple_query_string searches (`*` and `name*` patterns
 * expanded as `expandFields` does, boosts kept as `name^b`), and its body, lenient when a pattern
 * was given (Elasticsearch skips the fields a term does not fit).
 */
export function queryStringFields(ix: IndexView, body: JsonObject): { fields: string[]; body: JsonObject } {
  const specs = defaultFields(ix, body);
  const fields = expandFields(ix, specs).map(({ field, boost }) => (boost === 1 ? field.path : `${field.path}^${boost}`));
  return { fields, body: specs.some((f) => f.includes('*')) && body.lenient === undefined ? { ...body, lenient: true } : body };
}

/** A match-family query on one field. */
export function matchField(env: QueryEnv, kind: string, f: Field, p: JsonObject, boost: number): Scorer {
  const text = p.query;
  if (!isText(f)) {
    // keyword, numeric, date, boolean: the whole value as one term (lenient skips bad values)
    const term = { term: { [f.path]: { value: text as Json, boost } } };
    try {
      return compileTerm(env, term);
    } catch (e) {
      if (p.lenient === true) return () => null;
      throw e;
    }
  }
  if (f.def.index === false) throw new EsError(400, 'query_shard_exception', `failed to create query: Cannot search on field [${f.path}] since it is not indexed.`, { index: env.ix.name, index_uuid: env.ix.uuid });
  const an = searchAnalyzer(env.ix, f, p.analyzer);
  const ian = indexAnalyzer(env.ix, f);
  const toks = analyze(String(text), an);
  if (!toks.length) return p.zero_terms_query === 'all' ? () => 1 : () => null;
  if (kind === 'match_phrase' || kind === 'match_phrase_prefix' || (kind === 'match' && p.type === 'phrase')) {
    return phrase(env, f.path, ian, toks, Number(p.slop ?? 0), boost, kind === 'match_phrase_prefix' ? Number(p.max_expansions ?? 50) : 0);
  }
  const prefixLast = kind === 'match_bool_prefix';
  const fz = p.fuzziness;
  const pre = Number(p.prefix_length ?? 0);
  const scorers: Scorer[] = toks.map((t, i) => {
    if (prefixLast && i === toks.length - 1) return prefixTerm(env, f.path, ian, t.term, boost);
    if (fz !== undefined) return fuzzyTerm(env, f.path, ian, t.term, fuzziness(fz, t.term), pre, boost);
    return (d: Doc) => {
      const s = termScore(env.ix, d, f.path, ian, t.term, boost);
      return s > 0 ? s : null;
    };
  });
  return termsOperator(scorers, p, 1);
}

/** Sums the per-term scores of the terms present; `operator: and` / minimum_should_match say how many must be. */
function termsOperator(scorers: Scorer[], p: JsonObject, boost: number): Scorer {
  const op = String(p.operator ?? 'or').toLowerCase();
  const need = op === 'and' ? scorers.length : p.minimum_should_match !== undefined ? Math.max(1, minimumShouldMatch(p.minimum_should_match, scorers.length)) : 1;
  return (d) => {
    let n = 0, s = 0;
    for (const sc of scorers) { const x = sc(d); if (x !== null) { n++; s += x; } }
    return n >= need ? s * boost : null;
  };
}

function compileTerm(env: QueryEnv, q: JsonObject): Scorer {
  return compileQuery(env, q);
}

function prefixTerm(env: QueryEnv, path: string, an: string, prefix: string, boost: number): Scorer {
  return (d) => (d.terms(path, an).some((t) => t.startsWith(prefix)) ? boost : null);
}

function fuzzyTerm(env: QueryEnv, path: string, an: string, term: string, max: number, pre: number, boost: number): Scorer {
  return (d) => {
    let best = 0;
    for (const t of d.terms(path, an)) {
      if (t.slice(0, pre) !== term.slice(0, pre)) continue;
      const dist = editDistance(t, term, max);
      if (dist > max) continue;
      const s = termScore(env.ix, d, path, an, t, boost) * (dist === 0 ? 1 : 1 - dist / Math.max(t.length, term.length));
      if (s > best) best = s;
    }
    return best > 0 ? best : null;
  };
}

/** Phrase (with slop, optional last-term prefix expansion): scored as one term with the summed idf. */
function phrase(env: QueryEnv, path: string, an: string, toks: Token[], slop: number, boost: number, prefixMax: number): Scorer {
  const base = toks[0].pos;
  const rel = toks.map((t) => t.pos - base);
  // a sloppy phrase of distinct terms matches as Lucene's SloppyPhraseMatcher does (below)
  const lucene = slop > 0 && !prefixMax && new Set(toks.map((t) => t.term)).size === toks.length;
  return (d) => {
    // one term's positions read from the packed field; the whole Map only for a prefix expansion
    const lists: number[][] = toks.map((t, i) => {
      if (prefixMax && i === toks.length - 1) {
        const out: number[] = [];
        let n = 0;
        for (const [term, ps] of d.positions(path, an)) if (term.startsWith(t.term) && n++ < prefixMax) for (const x of ps) out.push(x);
        return out;
      }
      return d.positionsOf(path, an, t.term);
    });
    if (lists.some((l) => l.length === 0)) return null;
    if (lucene) {
      const sloppy = sloppyFreq(lists.map((l, i) => l.map((x) => x - rel[i]).sort((a, b) => a - b)), slop);
      if (sloppy === 0) return null;
      const st = fieldStats(env.ix, path, an);
      const w = toks.reduce((s, t) => s + idf(st.docCount, st.df.get(t.term) ?? 0), 0);
      return boost * bm25(w, sloppy, d, path, an, st);
    }
    let freq = 0;
    for (const start of lists[0]) {
      let dist = 0;
      let ok = true;
      for (let i = 1; i < lists.length && ok; i++) {
        const want = start + rel[i];
        let best = Infinity;
        for (const x of lists[i]) best = Math.min(best, Math.abs(x - want));
        if (best > slop) ok = false;
        dist += best;
      }
      if (ok && dist <= slop) freq += 1 / (1 + dist);
    }
    if (freq === 0) return null;
    const st = fieldStats(env.ix, path, an);
    const w = toks.reduce((s, t) => s + idf(st.docCount, st.df.get(t.term) ?? 0), 0);
    return boost * bm25(w, freq, d, path, an, st);
  };
}

/**
 * Lucene's SloppyPhraseMatcher (distinct terms): each term's positions less its offset in the
 * phrase; the match length of a window is its largest position less its smallest; a match is
 * counted when the smallest can advance no further without passing the next smallest, with the
 * shortest length it reached, if that length is within `slop`; each adds 1/(1 + length).
 */
function sloppyFreq(pps: number[][], slop: number): number {
  const idx = pps.map(() => 0);
  const pos = (i: number) => pps[i][idx[i]];
  let end = Math.max(...pps.map((_, i) => pos(i)));
  const minOf = (skip = -1) => { let m = -1; for (let i = 0; i < pps.length; i++) if (i !== skip && (m < 0 || pos(i) < pos(m))) m = i; return m; };
  let freq = 0;
  for (;;) {
    let pp = minOf();
    let next = pps.length > 1 ? pos(minOf(pp)) : Infinity;
    let matchLength = end - pos(pp);
    let found = false;
    while (idx[pp] + 1 < pps[pp].length) {
      idx[pp]++;
      if (pos(pp) > end) end = pos(pp);
      if (pos(pp) > next) {
        if (matchLength <= slop) { found = true; break; }
        pp = minOf();
        next = pos(minOf(pp));
        matchLength = end - pos(pp);
      } else if (end - pos(pp) < matchLength) matchLength = end - pos(pp);
    }
    if (found) { freq += 1 / (1 + matchLength); continue; }
    if (matchLength <= slop) freq += 1 / (1 + matchLength);
    return freq;
  }
}

function multiMatch(env: QueryEnv, body: unknown): Scorer {
  if (!isObj(body) || body.query === undefined) throw parsingError('[multi_match] requires query value');
  const specs = Array.isArray(body.fields) && body.fields.length ? body.fields.map(String) : defaultFields(env.ix, body);
  const fields = expandFields(env.ix, specs);
  const type = String(body.type ?? 'best_fields');
  const boost = boostOf(body);
  const tie = Number(body.tie_breaker ?? (type === 'best_fields' ? 0 : 1));
  const kind = type === 'phrase' ? 'match_phrase' : type === 'phrase_prefix' ? 'match_phrase_prefix' : type === 'bool_prefix' ? 'match_bool_prefix' : 'match';
  if (!['best_fields', 'most_fields', 'cross_fields', 'phrase', 'phrase_prefix', 'bool_prefix'].includes(type)) {
    throw parsingError(`failed to parse [multi_match] query type [${type}]. unknown type.`);
  }
  if (type === 'bool_prefix') {
    for (const k of ['slop', 'cutoff_frequency']) if (body[k] !== undefined) throw illegalArgument(`[${k}] not allowed for type [bool_prefix]`);
  }
  if (type === 'cross_fields') return crossFields(env, body, fields, boost);
  const scorers = fields.map(({ field, boost: fb }) => {
    try {
      return matchField(env, kind, field, { ...body, lenient: true }, fb);
    } catch (e) {
      if (e instanceof EsError) return () => null;
      throw e;
    }
  });
  return (d) => {
    const ss = scorers.map((s) => s(d)).filter((x): x is number => x !== null);
    if (!ss.length) return null;
    if (type === 'most_fields' || type === 'bool_prefix') return ss.reduce((a, b) => a + b, 0) * boost;
    const max = Math.max(...ss);
    return (max + tie * (ss.reduce((a, b) => a + b, 0) - max)) * boost;
  };
}

/**
 * cross_fields: fields are grouped by analyzer, as Elasticsearch groups them. The text fields form
 * one group: each query term is looked up in every one of them as if one field, the operator
 * applying per term. Any other field (keyword, number, …) is a group of its own, analyzed with its
 * own analyzer: the whole query as one term. A document's score is its best group's.
 */
function crossFields(env: QueryEnv, body: JsonObject, fields: Array<{ field: Field; boost: number }>, boost: number): Scorer {
  const text = fields.filter((f) => isText(f.field));
  const groups: Scorer[] = [];
  if (text.length) {
    const toks = analyze(String(body.query), searchAnalyzer(env.ix, text[0].field, body.analyzer));
    const perTerm: Scorer[] = toks.map((t) => (d: Doc) => {
      let best = 0;
      for (const { field, boost: fb } of text) best = Math.max(best, termScore(env.ix, d, field.path, indexAnalyzer(env.ix, field), t.term, fb));
      return best > 0 ? best : null;
    });
    if (toks.length) groups.push(termsOperator(perTerm, body, 1));
  }
  for (const { field, boost: fb } of fields) {
    if (isText(field)) continue;
    try {
      groups.push(compileTerm(env, { term: { [field.path]: { value: body.query as Json, boost: fb } } }));
    } catch {
      // a value the field cannot hold matches nothing there (multi_match is lenient per field)
    }
  }
  return (d) => {
    let best: number | null = null;
    for (const g of groups) { const x = g(d); if (x !== null && (best === null || x > best)) best = x; }
    return best === null ? null : best * boost;
  };
}
