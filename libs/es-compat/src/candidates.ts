/**
 * Candidate documents of a query: a superset of the documents it can match, from term → docs
 * maps of the view (built on first use, per docs array), so a selective query scores only the
 * documents holding its terms instead of every document. `null` means "every document".
 */
import type { Doc, IndexView } from './doc';
import type { JsonObject } from './mapping';
import { analyze } from './analysis';
import { expandFields, indexAnalyzer, isKeyword, isText, searchAnalyzer } from './fields';
import type { Retrieval } from './retrieval';
import { parseQueryString, parseSimpleQueryString } from './query-string';

type Postings = Map<string, Doc[]>;
const cache = new WeakMap<Doc[], Map<string, Postings>>();
const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `termsOf`: a document's distinct terms. */
function postings(ix: IndexView, key: string, termsOf: (d: Doc) => Iterable<string>): Postings {
  let m = cache.get(ix.docs);
  if (!m) { m = new Map(); cache.set(ix.docs, m); }
  let p = m.get(key);
  if (!p) {
    p = new Map();
    for (const d of ix.docs) for (const t of termsOf(d)) {
      const l = p.get(t);
      if (l) l.push(d); else p.set(t, [d]);
    }
    m.set(key, p);
  }
  return p;
}

const byIdCache = new WeakMap<Doc[], Map<string, Doc>>();
function byId(ix: IndexView): Map<string, Doc> {
  let m = byIdCache.get(ix.docs);
  if (!m) { m = new Map(ix.docs.map((d) => [d.id, d])); byIdCache.set(ix.docs, m); }
  return m;
}

/** The retrieval of this search (fts_search plans), set for the duration of one candidates() call. */
let current: Retrieval | undefined;

function textDocs(ix: IndexView, path: string, analyzer: string, terms: string[]): Set<Doc> {
  if (current?.want) {
    current.want(ix, { path, analyzer, terms });
    return new Set();
  }
  const ids = current?.ids(ix, path, analyzer, terms);
  if (ids) {
    const m = byId(ix);
    const out = new Set<Doc>();
    for (const id of ids) { const d = m.get(id); if (d) out.add(d); }
    return out;
  }
  const p = postings(ix, `t\u0000${path}\u0000${analyzer}`, (d) => d.terms(path, analyzer));
  const out = new Set<Doc>();
  for (const t of terms) for (const d of p.get(t) ?? []) out.add(d);
  return out;
}

/** The documents of the view holding `term` in a text field (Elasticsearch's analysis; built once per docs array). */
export function textTermDocs(ix: IndexView, path: string, analyzer: string, term: string): readonly Doc[] {
  return postings(ix, `t\u0000${path}\u0000${analyzer}`, (d) => d.terms(path, analyzer)).get(term) ?? [];
}

const ordinalsOf = new WeakMap<Doc[], Map<Doc, number>>();
const listOrdinals = new WeakMap<readonly Doc[], Int32Array>();

/** `textTermDocs` as positions in the view's docs array (for counting unions and intersections with typed arrays). */
export function textTermOrdinals(ix: IndexView, path: string, analyzer: string, term: string): Int32Array {
  const list = textTermDocs(ix, path, analyzer, term);
  let out = listOrdinals.get(list);
  if (!out) {
    let ords = ordinalsOf.get(ix.docs);
    if (!ords) { ords = new Map(ix.docs.map((d, i) => [d, i])); ordinalsOf.set(ix.docs, ords); }
    out = Int32Array.from(list, (d) => ords!.get(d)!);
    listOrdinals.set(list, out);
  }
  return out;
}

function keywordDocs(ix: IndexView, path: string, values: string[]): Set<Doc> {
  const p = postings(ix, `k\u0000${path}`, (d) => new Set(d.values(path).map(String)));
  const out = new Set<Doc>();
  for (const v of values) for (const d of p.get(v) ?? []) out.add(d);
  return out;
}

function fieldParams(body: unknown, valueKey: string): [string, JsonObject] | null {
  if (!isObj(body)) return null;
  const keys = Object.keys(body).filter((k) => k !== 'boost' && k !== '_name');
  if (keys.length !== 1) return null;
  const v = body[keys[0]];
  return [keys[0], isObj(v) ? v : { [valueKey]: v }];
}

function matchDocs(ix: IndexView, field: string, p: JsonObject): Set<Doc> | null {
  const f = ix.fields.get(field);
  if (!f) return new Set();
  if (p.fuzziness !== undefined || p.zero_terms_query === 'all' || p.query === undefined) return null;
  if (isText(f)) {
    const terms = analyze(String(p.query), searchAnalyzer(ix, f, p.analyzer)).map((t) => t.term);
    if (!terms.length) return null;
    return textDocs(ix, f.path, indexAnalyzer(ix, f), terms);
  }
  if (isKeyword(f) && f.def.normalizer === undefined) return keywordDocs(ix, f.path, [String(p.query)]);
  return null;
}

/**
 * A superset of the documents `q` matches in `ix`, or null when it cannot tell cheaply. With a
 * `retrieval`, text terms are looked up through its fts_search plans (or recorded, in collect mode).
 */
export function candidates(ix: IndexView, q: unknown, retrieval?: Retrieval): Set<Doc> | null {
  const saved = current;
  current = retrieval;
  try {
    return candidatesOf(ix, q);
  } finally {
    current = saved;
  }
}

function candidatesOf(ix: IndexView, q: unknown): Set<Doc> | null {
  if (!isObj(q)) return null;
  const [kind] = Object.keys(q);
  const body = q[kind];
  switch (kind) {
    case 'match': case 'match_phrase': {
      const fp = fieldParams(body, 'query');
      return fp ? matchDocs(ix, fp[0], fp[1]) : null;
    }
    case 'multi_match': {
      if (!isObj(body) || !Array.isArray(body.fields) || !body.fields.length || String(body.type ?? 'best_fields').includes('prefix')) return null;
      const out = new Set<Doc>();
      for (const { field } of expandFields(ix, body.fields.map(String))) {
        const s = matchDocs(ix, field.path, body);
        if (!s) return null;
        for (const d of s) out.add(d);
      }
      return out;
    }
    case 'term': case 'terms': {
      if (kind === 'terms' && isObj(body)) {
        const keys = Object.keys(body).filter((k) => k !== 'boost' && k !== '_name');
        const vals = keys.length === 1 ? body[keys[0]] : undefined;
        const f = keys.length === 1 ? ix.fields.get(keys[0]) : undefined;
        if (!Array.isArray(vals) || !f || !isKeyword(f) || f.def.normalizer !== undefined) return null;
        return keywordDocs(ix, f.path, vals.map(String));
      }
      const fp = fieldParams(body, 'value');
      if (!fp || fp[1].case_insensitive === true) return null;
      const f = ix.fields.get(fp[0]);
      if (!f) return fp[0].startsWith('_') ? null : new Set();
      if (isText(f)) return textDocs(ix, f.path, indexAnalyzer(ix, f), [String(fp[1].value)]);
      if (isKeyword(f) && f.def.normalizer === undefined) return keywordDocs(ix, f.path, [String(fp[1].value)]);
      return null;
    }
    case 'constant_score': return isObj(body) ? candidatesOf(ix, body.filter) : null;
    case 'query_string': case 'simple_query_string': {
      if (!isObj(body) || body.query === undefined) return null;
      const fields = Array.isArray(body.fields) && body.fields.length ? body.fields.map(String) : body.default_field !== undefined ? [String(body.default_field)] : null;
      if (!fields || fields.some((f) => f.includes('*'))) return null;
      try {
        return candidatesOf(ix, kind === 'query_string' ? parseQueryString(body, fields) : parseSimpleQueryString(body, fields));
      } catch {
        return null;
      }
    }
    case 'dis_max': {
      if (!isObj(body) || !Array.isArray(body.queries)) return null;
      const out = new Set<Doc>();
      for (const c of body.queries) {
        const s = candidatesOf(ix, c);
        if (!s) return null;
        for (const d of s) out.add(d);
      }
      return out;
    }
    case 'bool': {
      if (!isObj(body)) return null;
      const list = (v: unknown) => (v === undefined ? [] : Array.isArray(v) ? v : [v]);
      let best: Set<Doc> | null = null;
      for (const c of [...list(body.must), ...list(body.filter)]) {
        const s = candidatesOf(ix, c);
        if (s && (!best || s.size < best.size)) best = s;
      }
      if (best) return best;
      const should = list(body.should);
      const required = list(body.must).length || list(body.filter).length || body.minimum_should_match !== undefined;
      if (!should.length || required) return null;
      const out = new Set<Doc>();
      for (const c of should) {
        const s = candidatesOf(ix, c);
        if (!s) return null;
        for (const d of s) out.add(d);
      }
      return out;
    }
    default:
      return null;
  }
}
