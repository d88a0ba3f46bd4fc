/**
 * significant_terms and significant_text: the terms far more frequent in the matched documents
 * (the subset) than in the background (the index, or `background_filter`'s documents), scored by
 * Elasticsearch's significance heuristics (jlh by default, mutual_information, chi_square, gnd,
 * percentage) with their formulas and `include_negatives` / `background_is_superset` options;
 * buckets with a positive score and `min_doc_count` (3) documents, best first.
 * significant_text reads a text field's terms re-analyzed from `_source` (no fielddata), with
 * `filter_duplicate_text` dropping runs of six or more tokens already seen in earlier documents,
 * as Elasticsearch's DeDuplicatingTokenFilter does.
 */
import { EsError, illegalArgument } from './errors';
import { editDistance } from './query';
import type { Doc } from './doc';
import type { Json, JsonObject } from './mapping';
import { bucketKeyString, isObj, valueSource, type ValueSource } from './agg-util';
import { indexAnalyzer, isText } from './fields';
import { finishBuckets, type AggCtx } from './aggs';

type Heuristic = (subsetFreq: number, subsetSize: number, supersetFreq: number, supersetSize: number) => number;

function nxy(subsetFreq: number, subsetSize: number, supersetFreq: number, supersetSize: number, superset: boolean) {
  return superset
    ? { N00: supersetSize - supersetFreq - (subsetSize - subsetFreq), N01: subsetSize - subsetFreq, N10: supersetFreq - subsetFreq, N11: subsetFreq, N0_: supersetSize - supersetFreq, N1_: supersetFreq, N_0: supersetSize - subsetSize, N_1: subsetSize, N: supersetSize }
    : { N00: supersetSize - supersetFreq, N01: subsetSize - subsetFreq, N10: supersetFreq, N11: subsetFreq, N0_: supersetSize - supersetFreq + subsetSize - subsetFreq, N1_: supersetFreq + subsetFreq, N_0: supersetSize, N_1: subsetSize, N: supersetSize + subsetSize };
}

const miTerm = (nxy0: number, nx: number, ny: number, n: number): number => {
  const numerator = Math.abs(n * nxy0), denominator = Math.abs(nx * ny), factor = Math.abs(nxy0 / n);
  return numerator < 1e-7 && factor < 1e-7 ? 0 : factor * Math.log(numerator / denominator);
};

/** The significance heuristic a request names (one of its keys), as Elasticsearch computes it. */
export function heuristicOf(p: JsonObject): Heuristic {
  const opt = (k: string): JsonObject => (isObj(p[k]) ? (p[k] as JsonObject) : {});
  if (p.script_heuristic !== undefined) throw illegalArgument('[script_heuristic] scripts are not supported by this service; use jlh, mutual_information, chi_square, gnd or percentage');
  if (p.mutual_information !== undefined || p.chi_square !== undefined) {
    const mi = p.mutual_information !== undefined;
    const o = opt(mi ? 'mutual_information' : 'chi_square');
    const negatives = o.include_negatives === true, superset = o.background_is_superset !== false;
    return (sf, ss, bf, bs) => {
      const f = nxy(sf, ss, bf, bs, superset);
      const below = !negatives && f.N11 / f.N_1 < f.N10 / f.N_0;
      if (!mi) return below ? -Infinity : (f.N * (f.N11 * f.N00 - f.N01 * f.N10) ** 2) / (f.N_1 * f.N1_ * f.N0_ * f.N_0);
      let score = (miTerm(f.N00, f.N0_, f.N_0, f.N) + miTerm(f.N01, f.N0_, f.N_1, f.N) + miTerm(f.N10, f.N1_, f.N_0, f.N) + miTerm(f.N11, f.N1_, f.N_1, f.N)) / Math.log(2);
      if (Number.isNaN(score)) score = -Infinity;
      return below ? -Infinity : score;
    };
  }
  if (p.gnd !== undefined) {
    const superset = opt('gnd').background_is_superset !== false;
    return (sf, ss, bf, bs) => {
      if (!superset) { bf += sf; bs += ss; }
      const fx = bf, fy = ss, fxy = sf, n = bs;
      if (fxy === 0) return 0;
      if (fx === fy && fx === fxy) return 1;
      const score = (Math.max(Math.log(fx), Math.log(fy)) - Math.log(fxy)) / (Math.log(n) - Math.min(Math.log(fx), Math.log(fy)));
      return Math.exp(-score);
    };
  }
  if (p.percentage !== undefined) return (sf, _ss, bf) => (bf === 0 ? 0 : sf / bf);
  return (sf, ss, bf, bs) => {
    if (ss === 0 || bs === 0) return 0;
    const sub = sf / ss, sup = (bf === 0 ? 1 : bf) / bs;
    const change = sub - sup;
    return change <= 0 ? 0 : change * (sub / sup);
  };
}

/** Per document, its distinct terms, dropping runs of six or more tokens seen before (filter_duplicate_text). */
function dedupedTerms(docs: Doc[], tokens: (d: Doc) => string[]): Map<Doc, Set<string>> {
  const seen = new Set<string>();
  const out = new Map<Doc, Set<string>>();
  for (const d of docs) {
    const ts = tokens(d);
    const dup = new Array<boolean>(ts.length).fill(false);
    for (let j = 0; j + 6 <= ts.length; j++) {
      const key = ts.slice(j, j + 6).join('\u0000');
      if (seen.has(key)) for (let k = j; k < j + 6; k++) dup[k] = true;
      seen.add(key);
    }
    out.set(d, new Set(ts.filter((_, i) => !dup[i])));
  }
  return out;
}

export const KNOWN = ['field', 'size', 'shard_size', 'min_doc_count', 'shard_min_doc_count', 'execution_hint', 'include', 'exclude', 'background_filter', 'jlh', 'mutual_information', 'chi_square', 'gnd', 'percentage', 'script_heuristic', 'missing', 'format', 'value_type'];
const TEXT_ONLY = ['source_fields', 'filter_duplicate_text'];

interface Helpers {
  readonly keyOf: (vs: ValueSource, v: Json) => Json;
  readonly includeExclude: (p: JsonObject, vs: ValueSource, name: string) => (k: Json) => boolean;
}

export function significantAgg(name: string, type: 'significant_terms' | 'significant_text', p: JsonObject, subs: JsonObject | undefined, docs: Doc[], ctx: AggCtx, h: Helpers): JsonObject {
  const known = type === 'significant_text' ? [...KNOWN, ...TEXT_ONLY] : KNOWN;
  for (const k of Object.keys(p)) {
    if (known.includes(k)) continue;
    const near = known.find((a) => editDistance(a, k, 2) <= 2);
    throw new EsError(400, 'x_content_parse_exception', `[1:1] [${type}] unknown field [${k}]${near ? ` did you mean [${near}]?` : ''}`);
  }
  heuristicOf(p); // its errors before any counting
  const bgDocs = p.background_filter !== undefined ? ctx.allDocs.filter(ctx.filter(p.background_filter)) : ctx.allDocs;
  let termsOf: (d: Doc) => Set<string>;
  let vs: ValueSource | undefined;
  let fgTerms: (d: Doc) => Set<string>;
  if (type === 'significant_text') {
    const fieldName = String(p.field);
    const sources = Array.isArray(p.source_fields) ? p.source_fields.map(String) : [fieldName];
    const tokens = (d: Doc): string[] => {
      const out: string[] = [];
      for (const s of sources) {
        const f = d.index.fields.get(s);
        if (!f || !isText(f)) continue;
        const pos = d.positions(s, indexAnalyzer(d.index, f));
        const at: string[] = [];
        for (const [t, ps] of pos) for (const x of ps) at[x] = t;
        for (const t of at) if (t !== undefined) out.push(t);
      }
      return out;
    };
    const ok = h.includeExclude(p, { kind: 'string', values: () => [] }, name);
    termsOf = (d) => new Set(tokens(d).filter(ok));
    const dedup = p.filter_duplicate_text === true ? dedupedTerms(docs, tokens) : null;
    fgTerms = dedup ? (d) => new Set([...(dedup.get(d) ?? [])].filter(ok)) : termsOf;
  } else {
    const v = valueSource(ctx.ixs, p, name);
    vs = v;
    const ok = h.includeExclude(p, v, name);
    termsOf = (d) => new Set(v.values(d).map((x) => h.keyOf(v, x)).filter(ok).map((k) => JSON.stringify(k)));
    fgTerms = termsOf;
  }
  const count = (ds: Doc[], of: (d: Doc) => Set<string>) => {
    const m = new Map<string, Doc[]>();
    for (const d of ds) for (const k of of(d)) { const g = m.get(k); if (g) g.push(d); else m.set(k, [d]); }
    return m;
  };
  const fg = count(docs, fgTerms), bg = count(bgDocs, termsOf);
  const kept = significantBuckets(new Map([...fg].map(([k, ds]) => [k, ds.length])), (k) => bg.get(k)?.length, docs.length, bgDocs.length, p, vs);
  const buckets = finishBuckets(kept.map(({ b, k }) => ({ b, docs: fg.get(k)! })), subs, ctx, name);
  return { doc_count: docs.length, bg_count: bgDocs.length, buckets: buckets as Json, _kind: vs ? vs.kind : 'string' };
}

/**
 * The shown buckets of a significant_terms / significant_text aggregation from the foreground
 * counts per key (`fg`: a key's JSON for a field's values, the term for text) and the background
 * counts (`bg`; a key absent there counts its foreground): min_doc_count, the heuristic's positive
 * scores, best first, then the key, `size` of them. Shared by the aggregation code and the plans
 * (plan-significant.ts, over counts read by grouped nodes).
 */
export function significantBuckets(fg: Map<string, number>, bg: (k: string) => number | undefined, subsetSize: number, bgSize: number, p: JsonObject, vs: ValueSource | undefined): Array<{ b: JsonObject; k: string }> {
  const size = Number(p.size ?? 10);
  const minDoc = Number(p.min_doc_count ?? 3);
  const heuristic = heuristicOf(p);
  const list: Array<{ b: JsonObject; k: string; score: number }> = [];
  for (const [k, n] of fg) {
    if (n < minDoc) continue;
    const bgCount = bg(k) ?? n;
    const score = heuristic(n, subsetSize, bgCount, bgSize);
    if (!(score > 0)) continue;
    const key = vs ? (JSON.parse(k) as Json) : k;
    const b: JsonObject = { key };
    const ks = vs ? bucketKeyString(vs, key) : undefined;
    if (ks !== undefined) b.key_as_string = ks;
    Object.assign(b, { doc_count: n, score, bg_count: bgCount });
    list.push({ b, k, score });
  }
  list.sort((a, b) => b.score - a.score || (String(a.b.key) < String(b.b.key) ? -1 : 1));
  return list.slice(0, size);
}
