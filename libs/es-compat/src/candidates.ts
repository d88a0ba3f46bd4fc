/**
 * Candidate documents of a query: a superset of the documents it can match, from term → docs
 * maps of the view (built on first use, per docs array), so a selective query scores only the
 * documents holding its terms instead of every document. `null` means "every document".
 */
import { Doc, type IndexView } from './doc';
import type { JsonObject } from './mapping';
import { analyze } from './analysis';
import { expandFields, indexAnalyzer, isKeyword, isText, searchAnalyzer } from './fields';
import type { Retrieval } from './retrieval';
import { toDocRow } from './state';
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

/**
 * The document of a row a plan read (top-k pages): the view's own Doc when it holds that version
 * of the row (same `_seq_no` and `_version`: its analysis, kept in it, is reused), else a Doc made
 * from the row.
 */
/** The view's document of an id, if it holds one. */
export const viewDoc = (ix: IndexView, id: string): Doc | undefined => byId(ix).get(id);

export function docOfRow(ix: IndexView, r: Record<string, unknown>): Doc {
  const v = byId(ix).get(String(r._id));
  return v && v.row._seq_no === Number(r._seq_no ?? 0) && v.row._version === Number(r._version ?? 1) ? v : new Doc(toDocRow(r), ix);
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

/**
 * A number per document of a docs array, below `bound` (its position when first built; a document
 * added later takes the next number, a removed one frees its number without renumbering the rest,
 * so a change costs its own documents; renumbered from scratch when over half the numbers are free).
 */
interface Ordinals { readonly of: Map<Doc, number>; bound: number }
const ordinalsOf = new WeakMap<Doc[], Ordinals>();
/**
 * A term list's document numbers: the first `len` of `buf`, which has room to grow (appends are
 * amortized, as the list's own pushes are; removals compact it in place).
 */
interface ListNumbers { buf: Int32Array; len: number }
/** Per docs array: a term list's document numbers (lists outlive a docs array when `carryPostings` extends them). */
const listOrdinals = new WeakMap<Doc[], WeakMap<readonly Doc[], ListNumbers>>();

function ordinals(ix: IndexView): Ordinals {
  let o = ordinalsOf.get(ix.docs);
  if (!o) {
    o = { of: new Map(ix.docs.map((d, i) => [d, i])), bound: ix.docs.length };
    ordinalsOf.set(ix.docs, o);
    listOrdinals.set(ix.docs, new WeakMap());
  }
  return o;
}

/** `textTermDocs` as document numbers below `textTermOrdinalBound(ix)`, distinct per document (for counting unions and intersections with typed arrays). */
export function textTermOrdinals(ix: IndexView, path: string, analyzer: string, term: string): Int32Array {
  const list = textTermDocs(ix, path, analyzer, term);
  const o = ordinals(ix);
  const lo = listOrdinals.get(ix.docs)!;
  let out = lo.get(list);
  if (!out) {
    const buf = Int32Array.from(list, (d) => o.of.get(d)!);
    out = { buf, len: buf.length };
    lo.set(list, out);
  }
  return out.len === out.buf.length ? out.buf : out.buf.subarray(0, out.len);
}

/** The bound of the numbers `textTermOrdinals` gives (the size of a seen-array over them). */
export function textTermOrdinalBound(ix: IndexView): number {
  return ordinals(ix).bound;
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

/** A postings key's terms of one document (`t\0path\0analyzer`: text terms; `k\0path`: distinct keyword values). */
function termsOfKey(key: string): (d: Doc) => Iterable<string> {
  const [kind, path, analyzer] = key.split('\u0000');
  return kind === 't' ? (d) => d.terms(path, analyzer) : (d) => new Set(d.values(path).map(String));
}

/**
 * Moves the term → documents lists (and the id map, document numbers and lists' number arrays)
 * built for `oldDocs` to `newDocs`, the same documents less `removed` followed by `added` (in
 * `_seq_no` order, after all others): only the touched terms' lists change, **in place** — a
 * removal compacts the list over the removed documents' positions (found by binary search), an
 * addition appends (amortized: the list keeps its spare capacity) — and so do their number arrays.
 * No list is copied: with a small vocabulary (or a frequent term) a touched list holds a large part
 * of the index, and copying every touched list per write batch (as this did before) was an
 * O(index) allocation per write (~100 ms at 200,000 documents: tools/bench/stalls README, "What the
 * stalls under writes were"). In place is safe because every reader of a list (`textDocs`,
 * `keywordDocs`, topk.ts `countTo`) walks it within one synchronous call, and this runs between
 * them. What the old array had not built is left to be built on first use, as before.
 */
export function carryPostings(oldDocs: Doc[], newDocs: Doc[], removed: readonly Doc[], added: readonly Doc[]): void {
  // document numbers: removed ones freed, added ones numbered next; renumbered on use when half are free
  let ords = ordinalsOf.get(oldDocs);
  if (ords && ords.bound + added.length > 2 * newDocs.length + 1024) ords = undefined;
  const lo = ords ? listOrdinals.get(oldDocs) : undefined;
  if (ords && lo) {
    for (const d of removed) ords.of.delete(d);
    for (const d of added) ords.of.set(d, ords.bound++);
    ordinalsOf.set(newDocs, ords);
    listOrdinals.set(newDocs, lo);
  }
  const m = cache.get(oldDocs);
  if (m) {
    for (const [key, p] of m) {
      const termsOf = termsOfKey(key);
      // a term's removed documents, found by binary search (a list is in _seq_no order)
      const drop = new Map<string, number[]>();
      for (const d of removed) for (const t of termsOf(d)) {
        const l = p.get(t);
        const at = l ? indexOfSeq(l, d) : -1;
        if (at < 0) continue;
        const xs = drop.get(t);
        if (xs) xs.push(at); else drop.set(t, [at]);
      }
      for (const [t, at] of drop) {
        const l = p.get(t)!;
        const cut = positions(at);
        removeAt(l, cut);
        if (!l.length) { p.delete(t); continue; }
        const o = lo?.get(l);
        if (o) o.len = removeNumbersAt(o.buf, o.len, cut);
      }
      // additions appended: the list in place (its numbers extended), a new term a new list
      const adds = new Map<string, Doc[]>();
      for (const d of added) for (const t of termsOf(d)) {
        const xs = adds.get(t);
        if (xs) xs.push(d); else adds.set(t, [d]);
      }
      for (const [t, ds] of adds) {
        const l = p.get(t);
        if (!l) { p.set(t, ds); continue; }
        const o = lo?.get(l);
        for (const d of ds) l.push(d);
        if (!o) continue;
        if (o.len + ds.length > o.buf.length) {
          const grown = new Int32Array(Math.max(o.len + ds.length, o.len + (o.len >> 1) + 16));
          grown.set(o.buf.subarray(0, o.len));
          o.buf = grown;
        }
        for (const d of ds) o.buf[o.len++] = ords!.of.get(d)!;
      }
    }
    cache.delete(oldDocs);
    cache.set(newDocs, m);
  }
  const ids = byIdCache.get(oldDocs);
  if (ids) {
    for (const d of removed) if (ids.get(d.id) === d) ids.delete(d.id);
    for (const d of added) ids.set(d.id, d);
    byIdCache.delete(oldDocs);
    byIdCache.set(newDocs, ids);
  }
}

/** Distinct positions, ascending. */
function positions(at: readonly number[]): number[] {
  return at.length === 1 ? [at[0]] : [...new Set(at)].sort((a, b) => a - b);
}

/** Removes the elements at the ascending distinct positions `cut` from `l`, in place (one pass from the first). */
export function removeAt(l: Doc[], cut: readonly number[]): void {
  if (!cut.length) return;
  let w = cut[0];
  for (let k = 0; k < cut.length; k++) {
    const end = k + 1 < cut.length ? cut[k + 1] : l.length;
    for (let r = cut[k] + 1; r < end; r++) l[w++] = l[r];
  }
  l.length = w;
}

/** `removeAt` for the first `len` numbers of `buf` (moved with copyWithin); the new length. */
function removeNumbersAt(buf: Int32Array, len: number, cut: readonly number[]): number {
  let w = cut[0];
  for (let k = 0; k < cut.length; k++) {
    const end = k + 1 < cut.length ? cut[k + 1] : len;
    buf.copyWithin(w, cut[k] + 1, end);
    w += end - cut[k] - 1;
  }
  return w;
}

/** The position of `d` in `l` (documents in ascending `_seq_no`), or -1. */
export function indexOfSeq(l: readonly Doc[], d: Doc): number {
  const seq = d.row._seq_no;
  let lo = 0;
  let hi = l.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (l[mid].row._seq_no < seq) lo = mid + 1; else hi = mid;
  }
  for (let i = lo; i < l.length && l[i].row._seq_no === seq; i++) if (l[i] === d) return i;
  return -1;
}

/** A copy of `xs` without the elements at positions `at` (one copy, then compacted in place). */
export function without(xs: Doc[], at: readonly number[]): Doc[] {
  const out = xs.slice();
  removeAt(out, positions(at));
  return out;
}
