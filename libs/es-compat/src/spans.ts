/**
 * Span queries (span_term, span_multi, span_near, span_or, span_not, span_first,
 * span_containing, span_within, field_masking_span) over a text field's positions, as Lucene's
 * spans match: a span is a run of positions [start, end]; `span_near` joins one span of each
 * clause within `slop` positions (in order, or in any order without overlap), `span_not` keeps
 * the include spans no exclude span comes within `pre`/`post` (or `dist`) positions of,
 * `span_first` the spans ending within the first `end` positions. Score: Lucene's SpanWeight,
 * BM25 with the summed idf of the query's terms and the sloppy frequency Σ 1/(1 + gaps).
 */
import { EsError, parsingError } from './errors';
import type { Doc } from './doc';
import type { Field, JsonObject } from './mapping';
import { indexAnalyzer, isKeyword, isText } from './fields';
import { fieldStats, idf, bm25 } from './scoring';
import { patternTest, type QueryEnv, type Scorer } from './query';

type Span = readonly [number, number, number]; // start, end (inclusive), inner length (positions held by terms)
interface SpanQ { readonly field: Field | undefined; /** the query's terms in the index (their idf is the weight's) */ readonly terms: () => string[]; readonly spans: (d: Doc) => Span[]; readonly boost: number }

const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

function one(kind: string, body: unknown): [string, unknown] {
  if (!isObj(body)) throw parsingError(`[${kind}] query malformed`);
  const keys = Object.keys(body).filter((k) => k !== '_name');
  if (keys.length !== 1) throw parsingError(`[${kind}] query doesn't support multiple fields, found [${keys.join('] and [')}]`);
  return [keys[0], body[keys[0]]];
}

function positionsOf(env: QueryEnv, f: Field | undefined, d: Doc): Map<string, number[]> {
  if (!f) return new Map();
  if (isText(f)) return d.positions(f.path, indexAnalyzer(env.ix, f));
  // a keyword field: each value one term at its own position
  const out = new Map<string, number[]>();
  d.values(f.path).forEach((v, i) => { const k = String(v); const l = out.get(k); if (l) l.push(i); else out.set(k, [i]); });
  return out;
}

function termSpans(env: QueryEnv, f: Field | undefined, test: (t: string) => boolean, exact?: string): Pick<SpanQ, 'terms' | 'spans'> {
  return {
    terms: () => (exact !== undefined ? [exact] : f && isText(f) ? [...fieldStats(env.ix, f.path, indexAnalyzer(env.ix, f)).df.keys()].filter(test) : []),
    spans: (d) => {
      const out: Span[] = [];
      for (const [t, ps] of positionsOf(env, f, d)) if (test(t)) for (const p of ps) out.push([p, p, 1]);
      return out.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    },
  };
}

/** Spans holding one span of each clause: in order without overlap, or any order without overlap; gaps (width minus the clauses' lengths) ≤ slop. */
function near(lists: Span[][], slop: number, inOrder: boolean): Span[] {
  if (lists.some((l) => !l.length)) return [];
  const out = new Map<string, Span>();
  const rec = (i: number, picked: Span[]) => {
    if (i === lists.length) {
      const sorted = inOrder ? picked : [...picked].sort((a, b) => a[0] - b[0]);
      for (let k = 1; k < sorted.length; k++) if (sorted[k][0] <= sorted[k - 1][1]) return;
      const start = sorted[0][0], end = Math.max(...sorted.map((s) => s[1]));
      const inner = sorted.reduce((s, x) => s + x[2], 0);
      if (end - start + 1 - inner <= slop) out.set(`${start}:${end}`, [start, end, inner]);
      return;
    }
    for (const s of lists[i]) {
      if (inOrder && picked.length && s[0] <= picked[picked.length - 1][1]) continue;
      picked.push(s);
      rec(i + 1, picked);
      picked.pop();
    }
  };
  rec(0, []);
  return [...out.values()].sort((a, b) => a[0] - b[0] || a[1] - b[1]);
}

function compileSpan(env: QueryEnv, q: unknown): SpanQ {
  if (!isObj(q)) throw parsingError('span query malformed');
  const [kind, body] = one('span', q);
  switch (kind) {
    case 'span_term': {
      const [name, v] = one(kind, body);
      const value = String(isObj(v) ? v.value ?? v.term : v);
      const f = env.ix.fields.get(name);
      return { field: f, boost: isObj(v) && v.boost !== undefined ? Number(v.boost) : 1, ...termSpans(env, f, (t) => t === value, value) };
    }
    case 'span_multi': {
      if (!isObj(body) || !isObj(body.match)) throw parsingError('[span_multi] must have [match] multi term query clause');
      const [mk, mb] = one('span_multi', body.match);
      if (!['prefix', 'wildcard', 'regexp', 'fuzzy', 'range', 'term'].includes(mk)) throw parsingError(`[span_multi] [match] must be of type multi term query`);
      const [name, p0] = one(mk, mb);
      const p: JsonObject = isObj(p0) ? p0 : { value: p0 as JsonObject[string] };
      const f = env.ix.fields.get(name);
      if (f && !isText(f) && !isKeyword(f)) throw new EsError(400, 'query_shard_exception', `failed to create query: field [${name}] of type [${f.type}] does not support [span_multi] queries`);
      let test: (t: string) => boolean = () => false;
      if (f && mk === 'range') {
        const lo = p.gte ?? p.gt ?? p.from, hi = p.lte ?? p.lt ?? p.to;
        test = (t) => (lo === undefined || lo === null || (p.gt !== undefined ? t > String(lo) : t >= String(lo))) && (hi === undefined || hi === null || (p.lt !== undefined ? t < String(hi) : t <= String(hi)));
      } else if (f && mk === 'term') { const v = String(p.value); test = (t) => t === v; }
      else if (f) test = patternTest(f, mk, p);
      return { field: f, boost: body.boost !== undefined ? Number(body.boost) : 1, ...termSpans(env, f, test) };
    }
    case 'field_masking_span': {
      if (!isObj(body) || body.query === undefined) throw parsingError('[field_masking_span] must have [query] span query clause');
      const inner = compileSpan(env, body.query);
      return { ...inner, field: body.field === undefined ? inner.field : env.ix.fields.get(String(body.field)) ?? inner.field };
    }
    default: break;
  }
  if (!isObj(body)) throw parsingError(`[${kind}] query malformed`);
  const boost = body.boost !== undefined ? Number(body.boost) : 1;
  const clauses = (xs: unknown, what: string): SpanQ[] => {
    if (!Array.isArray(xs) || !xs.length) throw parsingError(`${what} must include [clauses]`);
    const cs = xs.map((x) => compileSpan(env, x));
    const fields = new Set(cs.map((c) => c.field?.path));
    if (fields.size > 1) throw new EsError(400, 'illegal_argument_exception', 'Clauses must have same field.');
    return cs;
  };
  const joinTerms = (cs: SpanQ[]) => () => cs.flatMap((c) => c.terms());
  switch (kind) {
    case 'span_near': {
      const cs = clauses(body.clauses, 'span_near');
      const slop = body.slop === undefined ? 0 : Number(body.slop);
      const inOrder = body.in_order !== false;
      return { field: cs[0].field, boost, terms: joinTerms(cs), spans: (d) => near(cs.map((c) => c.spans(d)), slop, inOrder) };
    }
    case 'span_or': {
      const cs = clauses(body.clauses, 'spanOr');
      return { field: cs[0].field, boost, terms: joinTerms(cs), spans: (d) => cs.flatMap((c) => c.spans(d)).sort((a, b) => a[0] - b[0] || a[1] - b[1]) };
    }
    case 'span_not': {
      if (body.include === undefined || body.exclude === undefined) throw parsingError('span_not must have [include] and [exclude] span query clauses');
      if (body.dist !== undefined && (body.pre !== undefined || body.post !== undefined)) throw parsingError('span_not can either use [dist] or [pre] & [post] (or none)');
      const inc = compileSpan(env, body.include), exc = compileSpan(env, body.exclude);
      const pre = Number(body.dist ?? body.pre ?? 0), post = Number(body.dist ?? body.post ?? 0);
      return { field: inc.field, boost, terms: inc.terms, spans: (d) => { const ex = exc.spans(d); return inc.spans(d).filter((s) => !ex.some((e) => e[1] >= s[0] - pre && e[0] <= s[1] + post)); } };
    }
    case 'span_first': {
      if (body.match === undefined || body.end === undefined) throw parsingError('span_first must have [match] span query clause');
      const inner = compileSpan(env, body.match);
      const end = Number(body.end);
      return { field: inner.field, boost, terms: inner.terms, spans: (d) => inner.spans(d).filter((s) => s[1] + 1 <= end) };
    }
    case 'span_containing': case 'span_within': {
      if (body.big === undefined || body.little === undefined) throw parsingError(`${kind} must include [big] and [little]`);
      const big = compileSpan(env, body.big), little = compileSpan(env, body.little);
      const within = (l: Span, b: Span) => b[0] <= l[0] && l[1] <= b[1];
      return kind === 'span_containing'
        ? { field: big.field, boost, terms: joinTerms([big, little]), spans: (d) => { const ls = little.spans(d); return big.spans(d).filter((b) => ls.some((l) => within(l, b))); } }
        : { field: little.field, boost, terms: joinTerms([big, little]), spans: (d) => { const bs = big.spans(d); return little.spans(d).filter((l) => bs.some((b) => within(l, b))); } };
    }
    default:
      throw parsingError(`[${kind}] is not a span query`);
  }
}


/** A span query as a scorer: BM25 of the sloppy frequency of its spans, with its terms' summed idf. */
export function spanQuery(env: QueryEnv, kind: string, body: unknown): Scorer {
  const q = compileSpan(env, { [kind]: body });
  const f = q.field;
  if (!f) return () => null;
  const text = isText(f);
  const an = text ? indexAnalyzer(env.ix, f) : 'keyword';
  let w: number | undefined;
  return (d) => {
    const spans = q.spans(d);
    if (!spans.length) return null;
    const freq = spans.reduce((s, x) => s + 1 / (1 + (x[1] - x[0] + 1 - x[2])), 0);
    if (!text) return q.boost;
    const st = fieldStats(env.ix, f.path, an);
    w ??= [...new Set(q.terms())].reduce((s, t) => s + idf(st.docCount, st.df.get(t) ?? 0), 0);
    return q.boost * bm25(w, freq, d, f.path, an, st);
  };
}
