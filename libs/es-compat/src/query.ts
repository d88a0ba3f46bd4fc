/**
 * Query DSL → a scorer over documents: `(doc) => score | null` (null: no match).
 * Leaf queries read the document's typed field values; text queries score with BM25.
 */
import { spanQuery } from './spans';
import { EsError, parsingError } from './errors';
import type { Doc, IndexView } from './doc';
import type { Field, Json, JsonObject } from './mapping';
import { expandFields, indexAnalyzer, isDate, isKeyword, isNumeric, isText, notIndexed, queryValue } from './fields';
import { idf, bm25, termScore } from './scoring';
import { STORED_ONLY_TYPES } from './mapping';
import { compileText } from './text-query';
import { compileFunctionScore } from './function-score';
import { intervalsQuery } from './intervals';

export type Scorer = (d: Doc) => number | null;

export interface QueryEnv {
  readonly ix: IndexView;
  /** For terms lookup: fetch a document's source by index and id. */
  readonly lookup?: (index: string, id: string) => JsonObject | undefined;
}

const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `{ "term": { "f": {"value": x, "boost": 2} } }` → [field, params]. */
export function single(kind: string, body: unknown, valueKey = 'value'): [string, JsonObject] {
  if (!isObj(body)) throw parsingError(`[${kind}] query malformed, no start_object after query name`);
  const keys = Object.keys(body).filter((k) => k !== 'boost' && k !== '_name');
  if (keys.length !== 1) {
    if (keys.length === 0) throw parsingError(`[${kind}] query does not support [${kind}] with no field`);
    throw parsingError(`[${kind}] query doesn't support multiple fields, found [${keys[0]}] and [${keys[1]}]`);
  }
  const f = keys[0];
  const v = body[f];
  const params: JsonObject = isObj(v) ? { ...v } : { [valueKey]: v };
  if (body.boost !== undefined && params.boost === undefined) params.boost = body.boost;
  return [f, params];
}

export const boostOf = (p: JsonObject): number => (p.boost === undefined ? 1 : Number(p.boost));
const constant = (pred: (d: Doc) => boolean, boost: number): Scorer => (d) => (pred(d) ? boost : null);

function cmp(a: Json, b: Json): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  const x = String(a), y = String(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

function fieldOf(env: QueryEnv, name: string): Field | undefined {
  const f = env.ix.fields.get(name);
  return f && f.type !== 'object' ? f : undefined;
}

/** Documents whose field has a value equal to `v` (term semantics per type). */
function termMatcher(env: QueryEnv, name: string, raw: unknown, boost: number, caseInsensitive = false): Scorer {
  if (name === '_id') return constant((d) => d.id === String(raw), boost);
  if (name === '_index') return constant((d) => d.index.name === String(raw), boost);
  if (name === '_ignored') return constant((d) => d.ignored().includes(String(raw)), boost);
  if (name === '_routing') return constant((d) => d.row._routing === String(raw), boost);
  const f = fieldOf(env, name);
  if (!f) return () => null;
  if (isText(f)) {
    const an = indexAnalyzer(env.ix, f);
    const term = String(raw);
    return (d) => {
      const s = termScore(env.ix, d, f.path, an, term, boost);
      return s > 0 ? s : null;
    };
  }
  const v = queryValue(f, raw, { exact: true });
  if (isKeyword(f)) {
    const want = caseInsensitive ? String(v).toLowerCase() : v;
    return (d) => {
      const vals = d.values(f.path);
      const freq = vals.filter((x) => (caseInsensitive ? String(x).toLowerCase() : x) === want).length;
      if (!freq) return null;
      const st = keywordStats(env.ix, f.path);
      return boost * bm25(idf(st.docCount, st.df.get(String(want)) ?? 0), 1, d, f.path, 'keyword', st, false);
    };
  }
  return constant((d) => d.values(f.path).some((x) => cmp(x, v) === 0), boost);
}

/** BM25 statistics of a keyword field (values as terms, `kw\u0000<path>` in the view's stats). */
export function keywordStats(ix: IndexView, path: string) {
  const k = `kw\u0000${path}`;
  let s = ix.stats.get(k);
  if (!s) {
    s = { docCount: 0, sumLen: 0, df: new Map(), maxLen: 0 };
    for (const d of ix.docs) {
      const vals = d.values(path);
      if (!vals.length) continue;
      s.docCount++;
      s.sumLen += vals.length;
      for (const v of new Set(vals.map(String))) s.df.set(v, (s.df.get(v) ?? 0) + 1);
    }
    ix.stats.set(k, s);
  }
  return s;
}

/** The bounds of a `range` query's parameters on a field, as the scorer compares values with them (dates: epoch ms, date math and `format` / `time_zone` applied, `lte`/`gt` rounded up). */
export function rangeBounds(f: Field, p: JsonObject): { gt?: Json; gte?: Json; lt?: Json; lte?: Json } {
  const opts = { format: p.format as string | undefined, zone: p.time_zone as string | undefined };
  let gt: Json | undefined, gte: Json | undefined, lt: Json | undefined, lte: Json | undefined;
  const val = (v: Json, roundUp: boolean) => (isText(f) ? String(v) : queryValue(f, v, { ...opts, roundUp, exact: true }));
  if (p.gt !== undefined && p.gt !== null) gt = val(p.gt, true);
  if (p.gte !== undefined && p.gte !== null) gte = val(p.gte, false);
  if (p.lt !== undefined && p.lt !== null) lt = val(p.lt, false);
  if (p.lte !== undefined && p.lte !== null) lte = val(p.lte, true);
  if (p.from !== undefined && p.from !== null) {
    if (p.include_lower === false) gt = val(p.from, true);
    else gte = val(p.from, false);
  }
  if (p.to !== undefined && p.to !== null) {
    if (p.include_upper === false) lt = val(p.to, false);
    else lte = val(p.to, true);
  }
  return { gt, gte, lt, lte };
}

function rangeQuery(env: QueryEnv, body: unknown): Scorer {
  const [name, p] = single('range', body);
  const f = fieldOf(env, name);
  if (!f) return () => null;
  if ((STORED_ONLY_TYPES as readonly string[]).includes(f.type)) throw notIndexed(f, '[range] queries');
  const { gt, gte, lt, lte } = rangeBounds(f, p);
  const inRange = (x: Json) =>
    (gt === undefined || cmp(x, gt) > 0) && (gte === undefined || cmp(x, gte) >= 0) && (lt === undefined || cmp(x, lt) < 0) && (lte === undefined || cmp(x, lte) <= 0);
  const boost = boostOf(p);
  if (isText(f)) {
    const an = indexAnalyzer(env.ix, f);
    return constant((d) => d.terms(f.path, an).some(inRange), boost);
  }
  return constant((d) => d.values(f.path).some(inRange), boost);
}

function existsQuery(env: QueryEnv, body: unknown): Scorer {
  if (!isObj(body) || body.field === undefined) throw parsingError('[exists] must be provided with a [field]');
  const name = String(body.field);
  const boost = boostOf(body);
  switch (name) {
    case '_id': case '_index': case '_type': case '_seq_no': case '_version': case '_primary_term': return () => boost;
    case '_routing': return constant((d) => !!d.row._routing, boost);
    case '_ignored': return constant((d) => d.ignored().length > 0, boost);
    case '_source': case '_field_names': case '_size':
      throw new EsError(400, 'query_shard_exception', `failed to create query: the [exists] query is not supported on the [${name}] field`, { index: env.ix.name, index_uuid: env.ix.uuid });
  }
  const fields = name.includes('*') ? expandFields(env.ix, [name]).map((x) => x.field) : [...env.ix.fields.values()].filter((f) => f.path === name || f.path.startsWith(name + '.'));
  const leaves = fields.filter((f) => f.type !== 'object' && f.def.index !== false || (f.type !== 'object' && f.def.doc_values !== false));
  if (!leaves.length) return () => null;
  return constant((d) => leaves.some((f) => d.values(f.path).length > 0), boost);
}

/** Levenshtein (with transpositions) distance, capped. */
export function editDistance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const c = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + c);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

export function fuzziness(f: unknown, term: string): number {
  if (f === undefined || f === null) return 0;
  const s = String(f).toUpperCase();
  if (s.startsWith('AUTO')) {
    const m = /^AUTO:(\d+),(\d+)$/.exec(s);
    const [lo, hi] = m ? [Number(m[1]), Number(m[2])] : [3, 6];
    return term.length < lo ? 0 : term.length < hi ? 1 : 2;
  }
  return Math.min(2, Math.floor(Number(s)));
}

/**
 * A pattern query's field, parameters and term test (prefix, wildcard, regexp, fuzzy), as the
 * scorer reads them (also text-plan.ts, which expands the test over the index's terms); throws the
 * query's errors (a regex past `index.max_regex_length`, an invalid regex).
 */
export function patternOf(ix: IndexView, kind: string, body: unknown): { name: string; p: JsonObject; f: Field | undefined } {
  const [name, p] = single(kind, body);
  if (kind === 'regexp') {
    const len = String(p.value ?? '').length;
    const max = Number((ix.settings as JsonObject)['index.max_regex_length'] ?? 1000);
    if (len > max) throw new EsError(400, 'query_shard_exception', `failed to create query: The length of regex [${len}] used in the Regexp Query request has exceeded the allowed maximum of [${max}]. This maximum can be set by changing the [index.max_regex_length] index level setting.`, { index: ix.name, index_uuid: ix.uuid });
  }
  return { name, p, f: fieldOf({ ix }, name) };
}

/** The test a text term or keyword value must pass for a pattern query on a text or keyword field. */
export function patternTest(f: Field, kind: string, p: JsonObject): (s: string) => boolean {
  return testFor(kind, isKeyword(f) && f.def.normalizer === 'lowercase' && kind !== 'regexp' ? { ...p, value: String(p.value ?? p[kind] ?? '').toLowerCase() } : p, p.case_insensitive === true);
}

/** Term-level pattern queries (prefix, wildcard, regexp, fuzzy) over the field's terms or keyword values. */
function patternQuery(env: QueryEnv, kind: string, body: unknown): Scorer {
  const { name, p, f } = patternOf(env.ix, kind, body);
  if (name === '_id') {
    const t = testFor(kind, p, p.case_insensitive === true);
    return constant((d) => t(d.id), boostOf(p));
  }
  if (!f) return () => null;
  if (!isText(f) && !isKeyword(f)) {
    if ((STORED_ONLY_TYPES as readonly string[]).includes(f.type)) throw notIndexed(f, `[${kind}] queries`);
    if (kind === 'fuzzy' && (isNumeric(f) || isDate(f))) {
      const v = Number(queryValue(f, p.value));
      const fz = Number(p.fuzziness ?? 0);
      return constant((d) => d.values(f.path).some((x) => Math.abs(Number(x) - v) <= fz), boostOf(p));
    }
    throw new EsError(400, 'query_shard_exception', `Can only use ${kind} queries on keyword and text fields - not on [${f.path}] which is of type [${f.type}]`);
  }
  const t = patternTest(f, kind, p);
  const boost = boostOf(p);
  if (isText(f)) {
    const an = indexAnalyzer(env.ix, f);
    return constant((d) => d.terms(f.path, an).some(t), boost);
  }
  return constant((d) => d.values(f.path).some((x) => t(String(x))), boost);
}

function testFor(kind: string, p: JsonObject, ci: boolean): (s: string) => boolean {
  const value = String(p.value ?? p[kind] ?? '');
  switch (kind) {
    case 'prefix': return ci ? (s) => s.toLowerCase().startsWith(value.toLowerCase()) : (s) => s.startsWith(value);
    case 'wildcard': {
      const rx = new RegExp(`^${value.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`, ci ? 'is' : 's');
      return (s) => rx.test(s);
    }
    case 'regexp': {
      let rx: RegExp;
      try { rx = new RegExp(`^(?:${value.replace(/<(\d+)-(\d+)>/g, '(?:$1|$2)')})$`, ci ? 'is' : 's'); } catch { throw new EsError(400, 'query_shard_exception', `failed to create query: invalid regular expression [${value}]`); }
      return (s) => rx.test(s);
    }
    default: {
      const max = fuzziness(p.fuzziness ?? 'AUTO', value);
      const pre = Number(p.prefix_length ?? 0);
      return (s) => s.slice(0, pre) === value.slice(0, pre) && editDistance(s, value, max) <= max;
    }
  }
}

function boolQuery(env: QueryEnv, body: unknown): Scorer {
  if (!isObj(body)) throw parsingError('[bool] query malformed, no start_object after query name');
  const allowed = ['must', 'should', 'filter', 'must_not', 'minimum_should_match', 'boost', '_name', 'adjust_pure_negative', 'disable_coord'];
  for (const k of Object.keys(body)) if (!allowed.includes(k)) throw parsingError(`[bool] query does not support [${k}]`);
  const list = (v: Json | undefined): Scorer[] => (v === undefined ? [] : (Array.isArray(v) ? v : [v]).map((q) => compile(env, q)));
  const must = list(body.must), should = list(body.should), filter = list(body.filter), mustNot = list(body.must_not);
  const msm = body.minimum_should_match !== undefined
    ? minimumShouldMatch(body.minimum_should_match, should.length)
    : must.length || filter.length ? 0 : should.length ? 1 : 0;
  const boost = boostOf(body);
  return (d) => {
    let score = 0;
    for (const q of must) { const s = q(d); if (s === null) return null; score += s; }
    for (const q of filter) if (q(d) === null) return null;
    for (const q of mustNot) if (q(d) !== null) return null;
    let n = 0;
    for (const q of should) { const s = q(d); if (s !== null) { n++; score += s; } }
    if (n < msm) return null;
    return score * boost;
  };
}

/** minimum_should_match: `2`, `-1`, `75%`, `-25%`, `3<90%`, `2<-25% 9<-3`. */
export function minimumShouldMatch(spec: unknown, n: number): number {
  const s = String(spec).trim();
  if (s.includes('<')) {
    let result = n;
    for (const part of s.split(/\s+/)) {
      const [lim, v] = part.split('<');
      if (n > Number(lim)) result = minimumShouldMatch(v, n);
      else break;
    }
    return result;
  }
  let r: number;
  if (s.endsWith('%')) {
    const p = Number(s.slice(0, -1));
    r = p < 0 ? n - Math.floor((n * -p) / 100) : Math.floor((n * p) / 100);
  } else {
    const k = Number(s);
    r = k < 0 ? n + k : k;
  }
  return Math.max(0, Math.min(n, r));
}

/** Compiles one query object (defaults to match_all when absent). */
export function compile(env: QueryEnv, q: unknown): Scorer {
  if (q === undefined || q === null) return () => 1;
  if (!isObj(q)) throw parsingError('query malformed, must start with start_object');
  const keys = Object.keys(q);
  if (keys.length !== 1) {
    if (keys.length === 0) return () => 1;
    throw parsingError(`[${keys[0]}] malformed query, expected [END_OBJECT] but found [FIELD_NAME]`);
  }
  const kind = keys[0];
  const body = q[kind];
  switch (kind) {
    case 'match_all': return () => (isObj(body) ? boostOf(body) : 1);
    case 'match_none': return () => null;
    case 'term': {
      const [f, p] = single('term', body);
      return termMatcher(env, f, p.value, boostOf(p), p.case_insensitive === true);
    }
    case 'terms': return termsQuery(env, body);
    case 'range': return rangeQuery(env, body);
    case 'exists': return existsQuery(env, body);
    case 'ids': {
      if (!isObj(body)) throw parsingError('[ids] query malformed');
      const ids = new Set((Array.isArray(body.values) ? body.values : []).map(String));
      return constant((d) => ids.has(d.id), boostOf(body));
    }
    case 'prefix': case 'wildcard': case 'regexp': case 'fuzzy': return patternQuery(env, kind, body);
    case 'bool': return boolQuery(env, body);
    case 'constant_score': {
      if (!isObj(body) || body.filter === undefined) throw parsingError('[constant_score] requires a \'filter\' element');
      const inner = compile(env, body.filter);
      return constant((d) => inner(d) !== null, boostOf(body));
    }
    case 'dis_max': {
      if (!isObj(body)) throw parsingError('[dis_max] query malformed');
      const qs = (Array.isArray(body.queries) ? body.queries : []).map((x) => compile(env, x));
      const tie = Number(body.tie_breaker ?? 0);
      const boost = boostOf(body);
      return (d) => {
        const ss = qs.map((x) => x(d)).filter((x): x is number => x !== null);
        if (!ss.length) return null;
        const max = Math.max(...ss);
        return (max + tie * (ss.reduce((a, b) => a + b, 0) - max)) * boost;
      };
    }
    case 'boosting': {
      if (!isObj(body)) throw parsingError('[boosting] query malformed');
      const pos = compile(env, body.positive), neg = compile(env, body.negative);
      const nb = Number(body.negative_boost ?? 1);
      return (d) => {
        const s = pos(d);
        if (s === null) return null;
        return neg(d) !== null ? s * nb : s;
      };
    }
    case 'function_score': return compileFunctionScore(env, body, compile);
    case 'nested':
      throw new EsError(400, 'query_shard_exception', 'failed to create query: [nested] queries are not supported: this service has no nested field type (use object fields)');
    case 'match': case 'match_phrase': case 'match_phrase_prefix': case 'match_bool_prefix': case 'multi_match':
    case 'query_string': case 'simple_query_string': case 'combined_fields':
      return compileText(env, kind, body, compile);
    case 'distance_feature': return distanceFeature(env, body);
    case 'intervals': return intervalsQuery(env, body);
    case 'span_term': case 'span_multi': case 'span_near': case 'span_or': case 'span_not': case 'span_first':
    case 'span_containing': case 'span_within': case 'field_masking_span':
      return spanQuery(env, kind, body);
    case 'geo_distance': case 'geo_bounding_box': case 'geo_shape': case 'geo_polygon':
      throw new EsError(400, 'query_shard_exception', `failed to create query: [${kind}] queries are not supported: geo and distance fields are kept in _source but not indexed by this service`);
    case 'script': case 'script_score':
      throw scriptRefused(kind);
    default:
      throw parsingError(`unknown query [${kind}]`, { caused_by: { type: 'named_object_not_found_exception', reason: `[1:1] unknown field [${kind}]` } });
  }
}

/** Parses a geo point as Elasticsearch accepts it: [lon, lat], "lat,lon", {lat, lon}. */
export function geoPoint(v: unknown): [number, number] | null {
  if (Array.isArray(v) && v.length >= 2) return [Number(v[1]), Number(v[0])];
  if (typeof v === 'string') { const [a, b] = v.split(',').map(Number); return Number.isFinite(a) && Number.isFinite(b) ? [a, b] : null; }
  if (isObj(v) && v.lat !== undefined) return [Number(v.lat), Number(v.lon)];
  return null;
}

function haversine(a: [number, number], b: [number, number]): number {
  const r = (x: number) => (x * Math.PI) / 180;
  const dLat = r(b[0] - a[0]), dLon = r(b[1] - a[1]);
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(r(a[0])) * Math.cos(r(b[0])) * Math.sin(dLon / 2) ** 2;
  return 2 * 6371008.7714 * Math.asin(Math.sqrt(h));
}

/** distance_feature on date and geo_point fields: boost · pivot / (pivot + distance), computed from the document's values. */
function distanceFeature(env: QueryEnv, body: unknown): Scorer {
  if (!isObj(body) || body.field === undefined || body.pivot === undefined || body.origin === undefined) throw parsingError('[distance_feature] requires [field], [pivot] and [origin]');
  const f = fieldOf(env, String(body.field));
  const boost = boostOf(body);
  if (!f) return () => null;
  const unit = (s: string): number => {
    const m = /^([\d.]+)\s*(nanos|micros|ms|s|m|h|d|km|mi|cm|mm|m|yd|ft|in)?$/.exec(s);
    if (!m) throw parsingError(`[distance_feature] failed to parse [pivot] value [${s}]`);
    const u: Record<string, number> = { nanos: 1e-6, micros: 1e-3, ms: 1, s: 1000, h: 3600000, d: 86400000, km: 1000, mi: 1609.344, cm: 0.01, mm: 0.001, yd: 0.9144, ft: 0.3048, in: 0.0254 };
    const n = Number(m[1]);
    if (m[2] === 'm') return isDate(f) ? n * 60000 : n;
    return m[2] ? n * u[m[2]] : n;
  };
  const pivot = unit(String(body.pivot));
  if (isDate(f)) {
    const origin = Number(queryValue(f, body.origin));
    return (d) => {
      const vs = d.values(f.path).map(Number);
      if (!vs.length) return null;
      const dist = vs.reduce((m, v) => Math.min(m, Math.abs(v - origin)), Infinity);
      return (boost * pivot) / (pivot + dist);
    };
  }
  if (f.type === 'geo_point') {
    const origin = geoPoint(body.origin);
    if (!origin) throw parsingError('[distance_feature] failed to parse [origin]');
    return (d) => {
      const pts = d.values(f.path).map(geoPoint).filter((x): x is [number, number] => x !== null);
      if (!pts.length) return null;
      const dist = pts.reduce((m, p) => Math.min(m, haversine(origin, p)), Infinity);
      return (boost * pivot) / (pivot + dist);
    };
  }
  throw new EsError(400, 'query_shard_exception', `failed to create query: field [${f.path}] of type [${f.type}] is not supported for [distance_feature] query`, { index: env.ix.name, index_uuid: env.ix.uuid });
}

export function scriptRefused(what: string): EsError {
  return new EsError(400, 'illegal_argument_exception', `[${what}]: scripts are not supported by this service; use a query, a partial document update (doc / doc_as_upsert) or function_score with field_value_factor instead`);
}

function termsQuery(env: QueryEnv, body: unknown): Scorer {
  if (!isObj(body)) throw parsingError('[terms] query malformed');
  const keys = Object.keys(body).filter((k) => k !== 'boost' && k !== '_name');
  if (keys.length !== 1) throw parsingError('[terms] query requires exactly one field');
  const name = keys[0];
  let vals = body[name];
  if (isObj(vals)) {
    const lix = String(vals.index ?? env.ix.name);
    const src = env.lookup?.(lix, String(vals.id));
    vals = src ? (valuesOfPath(src, String(vals.path)) as Json) : [];
  }
  if (!Array.isArray(vals)) throw parsingError('[terms] query does not support values that are not an array');
  const maxTerms = Number((env.ix.settings as JsonObject)['index.max_terms_count'] ?? 65536);
  if (vals.length > maxTerms) {
    throw new EsError(400, 'query_shard_exception', `failed to create query: The number of terms [${vals.length}] used in the Terms Query request has exceeded the allowed maximum of [${maxTerms}]. This maximum can be set by changing the [index.max_terms_count] index level setting.`, { index: env.ix.name, index_uuid: env.ix.uuid });
  }
  const ms = vals.map((v) => termMatcher(env, name, v, 1));
  return constant((d) => ms.some((m) => m(d) !== null), boostOf(body));
}

/**
 * A request body with every terms lookup (`terms: {field: {index, id, path}}`) replaced by the
 * values it reads, as `termsQuery` reads them (a missing document: no values), so the plans see a
 * plain terms list (the scorer resolves its own). Objects without `id` and `path` are left alone
 * (a terms aggregation's `order` or `include`).
 */
export function resolveTermsLookups(v: Json, lookup: (ix: string, id: string) => JsonObject | undefined, index: string): Json {
  // the same object when it holds no lookup (callers' caches know request bodies by identity)
  if (Array.isArray(v)) {
    const out = v.map((x) => resolveTermsLookups(x, lookup, index));
    return out.some((x, i) => x !== v[i]) ? out : v;
  }
  if (!isObj(v)) return v;
  let out: JsonObject | null = null;
  for (const [k, x] of Object.entries(v)) {
    let y: Json;
    if (k === 'terms' && isObj(x) && Object.values(x).some((vals) => isObj(vals) && vals.id !== undefined && vals.path !== undefined)) {
      y = Object.fromEntries(Object.entries(x).map(([f, vals]) => {
        if (!isObj(vals) || vals.id === undefined || vals.path === undefined) return [f, vals];
        const src = lookup(String(vals.index ?? index), String(vals.id));
        return [f, src ? valuesOfPath(src, String(vals.path)) : []];
      }));
    } else y = resolveTermsLookups(x, lookup, index);
    if (y !== x) (out ??= { ...v })[k] = y;
  }
  return out ?? v;
}

function valuesOfPath(src: Json, path: string): Json[] {
  let cur: Json[] = [src];
  for (const p of path.split('.')) cur = cur.flatMap((x) => (isObj(x) ? [x[p]] : [])).flatMap((x) => (Array.isArray(x) ? x : [x])).filter((x) => x !== undefined);
  return cur;
}

