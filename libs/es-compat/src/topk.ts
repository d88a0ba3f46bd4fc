/**
 * The top-k plan of a relevance search. A `match` query on a text field (alone, or as the one
 * `must` of a bool with `filter` / `must_not` clauses), asking for a page by relevance, compiles
 * to `project(fts_search(es.i_…, t<n>_<field>, {terms, operator}, limit k, filter), [doc columns,
 * _score])`: the fts lib ranks with block-max BM25 and the node reads only the k hits' rows, with
 * the term/terms/range filters pushed into the node as expressions over `_source`. Elasticsearch's
 * exact score is then computed for those k rows only (its formula quantizes long documents'
 * lengths, which the fts lib does not), and the page is exact when the k-th fts score bounds what
 * any row left out could score; otherwise k grows, and past the node's limit the search falls back
 * to scoring the view (`search.ts`). Totals as Elasticsearch counts them (`track_total_hits`,
 * 10,000 by default): all rows when the node returned fewer than k, else the terms' document
 * frequencies, stopping at the limit.
 */
import { col, ftsSearch, lit, project, type Expr } from '@mmdb/plan';
import type { JsonValue } from '@mmdb/core';
import type { Doc, IndexView } from './doc';
import type { Field, JsonObject } from './mapping';
import type { IndexRef } from './indices';
import type { EsBackend } from './port';
import { analyze } from './analysis';
import { indexAnalyzer, isKeyword, isNumeric, isText, searchAnalyzer } from './fields';
import { fieldStats } from './scoring';
import { compile } from './query';
import { docOfRow, textTermDocs, textTermOrdinalBound, textTermOrdinals } from './candidates';
import { COLS } from './state';
import { copiedInto } from './plan-aggs';
import { topKScored } from './topk-scored';

const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
/** Body keys a top-k search may carry (anything else needs every match: aggregations, sorts, …). */
const KEYS = new Set(['query', 'from', 'size', '_source', 'track_total_hits', 'version', 'seq_no_primary_term', 'timeout', 'track_scores', 'stats', 'min_score', 'rescore', 'collapse',
  // shaped per hit of the page (search.ts), over the rows the plans read
  'highlight', 'explain', 'stored_fields', 'docvalue_fields', 'fields']);
const TERM = /^[a-z0-9]+$/;
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const MAX_K = 1000;
/** Lucene's one-byte norm keeps 3 mantissa bits: a quantized length is at least 8/9 of the true one. */
const NORM_SLACK = 1.13;

/** What a top-k plan answers: the page's candidates (exact Elasticsearch scores) and the total. */
export interface TopK {
  readonly docs: Doc[];
  readonly total: number;
  readonly plan: JsonObject;
}

interface Shape { field: string; text: string; operator: 'or' | 'and'; filters: unknown[]; pure: boolean }

const list = (v: unknown): unknown[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

function matchShape(q: unknown): Omit<Shape, 'filters' | 'pure'> | null {
  if (!isObj(q) || Object.keys(q).length !== 1 || !isObj(q.match)) return null;
  const fields = Object.keys(q.match);
  if (fields.length !== 1) return null;
  const v = q.match[fields[0]];
  const p: JsonObject = isObj(v) ? v : { query: v };
  if (Object.keys(p).some((k) => k !== 'query' && k !== 'operator') || (typeof p.query !== 'string' && typeof p.query !== 'number')) return null;
  const op = String(p.operator ?? 'or').toLowerCase();
  if (op !== 'or' && op !== 'and') return null;
  return { field: fields[0], text: String(p.query), operator: op };
}

/** The shape of a query the top-k plan answers, or null. */
function shapeOf(q: unknown): Shape | null {
  const m = matchShape(q);
  if (m) return { ...m, filters: [], pure: true };
  if (!isObj(q) || Object.keys(q).length !== 1 || !isObj(q.bool)) return null;
  const b = q.bool;
  if (Object.keys(b).some((k) => k !== 'must' && k !== 'filter' && k !== 'must_not')) return null;
  const must = list(b.must);
  const inner = must.length === 1 ? matchShape(must[0]) : null;
  if (!inner) return null;
  const filters = list(b.filter);
  return { ...inner, filters, pure: !filters.length && !list(b.must_not).length };
}

const call = (name: string, ...args: Expr[]): Expr => ({ kind: 'call', name, args });
const and = (l: Expr, r: Expr): Expr => ({ kind: 'binary', op: 'and', left: l, right: r });
const or = (l: Expr, r: Expr): Expr => ({ kind: 'binary', op: 'or', left: l, right: r });
const inList = (arg: Expr, values: JsonValue[], not = false): Expr => ({ kind: 'in_list', arg, list: values.map((x) => lit(x)), ...(not ? { not } : {}) });

/**
 * A filter clause as an expression over `_source` that keeps at least the documents the clause
 * matches (a value of another JSON type than the field's plain one, e.g. an array, passes: the
 * clause itself decides on the few rows fetched). Null: not pushed (the clause still decides).
 */
function pushed(ix: IndexView, clause: unknown): Expr | null {
  if (!isObj(clause) || Object.keys(clause).length !== 1) return null;
  const [kind] = Object.keys(clause);
  const body = clause[kind];
  if (!isObj(body)) return null;
  const names = Object.keys(body).filter((k) => k !== 'boost');
  if (names.length !== 1 || !NAME.test(names[0])) return null;
  const f = ix.fields.get(names[0]);
  if (!f || f.parent !== undefined || f.aliasOf !== undefined || f.def.null_value !== undefined || f.def.copy_to !== undefined || copiedInto(ix, names[0])) return null;
  const path = lit(`$.${names[0]}`);
  const type = call('json_type', col('_source'), path);
  const value = call('json_extract', col('_source'), path);
  const spec = body[names[0]];
  if (kind === 'range' && isNumeric(f) && isObj(spec)) {
    const ops: Record<string, '>' | '>=' | '<' | '<='> = { gt: '>', gte: '>=', lt: '<', lte: '<=' };
    let e: Expr | null = null;
    for (const [k, v] of Object.entries(spec)) {
      if (k === 'boost') continue;
      if (!(k in ops) || typeof v !== 'number') return null;
      const c: Expr = { kind: 'binary', op: ops[k], left: value, right: lit(v) };
      e = e ? and(e, c) : c;
    }
    if (!e) return null;
    return or(inList(type, ['integer', 'real', 'null'], true), and(inList(type, ['integer', 'real']), e));
  }
  if ((kind === 'term' || kind === 'terms') && isKeyword(f) && f.type === 'keyword' && f.def.normalizer === undefined) {
    const vals = kind === 'term' ? [isObj(spec) ? spec.value : spec] : spec;
    if (!Array.isArray(vals) || !vals.length || !vals.every((v) => typeof v === 'string')) return null;
    if (kind === 'term' && isObj(spec) && Object.keys(spec).some((k) => k !== 'value' && k !== 'boost')) return null;
    return or(inList(type, ['text', 'null'], true), inList(value, vals as string[]));
  }
  return null;
}

/** The window sizes of a `rescore` (one or a list) of the shape the scorer reads, or null (it reports anything else). */
function rescoreWindows(r: unknown): number[] | null {
  const out: number[] = [];
  for (const x of Array.isArray(r) ? r : [r]) {
    if (!isObj(x) || !isObj(x.query) || Object.keys(x).some((k) => k !== 'query' && k !== 'window_size')) return null;
    const w = x.window_size ?? 10, qw = x.query.query_weight ?? 1;
    if (typeof w !== 'number' || !Number.isInteger(w) || w < 1 || typeof qw !== 'number' || !(qw >= 0)) return null;
    out.push(w);
  }
  return out.length ? out : null;
}

/** The text field, its fts column and the query's terms of a match the fts lib answers alike (standard analyzer, ASCII terms), or null. */
function matchTerms(ref: IndexRef, ix: IndexView, shape: Shape): { f: Field; column: string; terms: string[] } | null {
  const f = ix.fields.get(shape.field);
  if (!f || !isText(f) || f.parent !== undefined || indexAnalyzer(ix, f) !== 'standard' || searchAnalyzer(ix, f) !== 'standard') return null;
  const column = ref.meta.text[f.path];
  if (!column || !ref.table.fulltextAllWords?.includes(column)) return null;
  const terms = analyze(shape.text, 'standard').map((t) => t.term);
  if (!terms.length || terms.length > 64 || new Set(terms).size !== terms.length || !terms.every((t) => TERM.test(t))) return null;
  return { f, column, terms };
}

/**
 * Runs the top-k plan of a search when its body has that shape (see the file comment); null
 * when it does not, or when the page cannot be proven exact within the node's limit.
 */
export async function topK(backend: EsBackend, ref: IndexRef, ix: IndexView, b: JsonObject, lookup?: (index: string, id: string) => JsonObject | undefined, lsn?: () => Promise<number>): Promise<TopK | null> {
  if (ref.readOnly || Object.keys(b).some((k) => !KEYS.has(k))) return null;
  const from = b.from === undefined ? 0 : b.from, size = b.size === undefined ? 10 : b.size;
  if (!Number.isInteger(from) || !Number.isInteger(size) || (from as number) < 0 || (size as number) < 1 || (from as number) + (size as number) > 200) return null;
  let n = (from as number) + (size as number);
  if (b.rescore !== undefined) {
    // rescore: the best window_size hits are scored again (search.ts), the rest keep their order, scaled by query_weight:
    // the page needs the hits of every window and one past them (the best of the rest, for max_score)
    const ws = rescoreWindows(b.rescore);
    if (!ws) return null;
    n = Math.max(n, ...ws.map((w) => w + 1));
    if (n > 200) return null;
  }
  const track = b.track_total_hits === undefined ? 10000 : b.track_total_hits === true ? Infinity : b.track_total_hits === false ? 0 : Number(b.track_total_hits);
  if (!(track >= 0)) return null;
  if (b.min_score !== undefined || b.collapse !== undefined) {
    // hits scoring at least min_score, the total theirs; the best hit of each collapse value (no inner_hits):
    // topk-scored.ts proves both from the bound (search.ts reports a collapse it refuses)
    const min = b.min_score === undefined ? -Infinity : b.min_score;
    const c = b.collapse;
    const field = isObj(c) && Object.keys(c).length === 1 && typeof c.field === 'string' ? c.field : c === undefined ? undefined : null;
    if (typeof min !== 'number' || Number.isNaN(min) || field === null || (c !== undefined && b.rescore !== undefined)) return null;
    return topKScored(backend, ref, ix, b.query, n, track, lsn, lookup, min, field);
  }
  const shape = shapeOf(b.query);
  const m = shape && matchTerms(ref, ix, shape);
  // any other sum of text matches and term-level clauses: one fts_search plan per match (topk-scored.ts)
  if (!shape || !m) return topKScored(backend, ref, ix, b.query, n, track, lsn, lookup);
  const { f, column, terms } = m;

  const conds = shape.filters.map((c) => pushed(ix, c)).filter((e): e is Expr => e !== null).reduce<Expr | undefined>((a, e) => (a ? and(a, e) : e), undefined);
  // a `_source` that is not an object (written by another surface as a JSON string) passes: the query decides
  const filter = conds && or({ kind: 'binary', op: 'is not', left: call('json_type', col('_source')), right: lit('object') }, conds);
  const scorer = compile({ ix, lookup }, b.query);
  const stats = fieldStats(ix, f.path, 'standard');
  // the fts lib must make the same tokens, or lengths and frequencies differ by more than norms
  if (!stats.asciiTokens) return null;
  const slack = stats.maxLen >= 24 ? NORM_SLACK : 1;
  for (let k = Math.max(2 * n, n + 10); ; k = Math.min(MAX_K, k * 4)) {
    const node = ftsSearch({ schema: ref.table.id, field: column, query: { terms, operator: shape.operator }, limit: k, ranking: { feedback: 'none', proximity: 'none', query_stopwords: 'none' }, ...(filter ? { filter } : {}) });
    const plan = project(node, [...COLS, '_score'].map((c) => ({ name: c, expr: col(c) })));
    const rows = await backend.read(plan);
    const hits: Array<{ doc: Doc; es: number; rank: number }> = [];
    let ratio = 0;
    for (const r of rows) {
      const doc = docOfRow(ix, r);
      const es = scorer(doc);
      if (es === null) continue;
      const fts = Number(r._score);
      if (fts > 0) ratio = Math.max(ratio, es / fts);
      hits.push({ doc, es, rank: hits.length });
    }
    const complete = rows.length < k;
    // with a filter the node ranks at most its limit (1,000) before filtering: fewer rows than k are
    // all of them only when no more documents hold the terms (the fts lib tokenizes this field alike)
    if (complete && filter && countTo(ix, f.path, terms, { ...shape, pure: true }, scorer, MAX_K) > MAX_K) return null;
    // equal scores keep the node's order (by _id), so every page is a prefix of the next one
    hits.sort((x, y) => y.es - x.es || x.rank - y.rank);
    // a row left out scores at most the k-th fts score, times the largest ES/fts ratio seen and the
    // norms' slack (Elasticsearch rounds each term's score to a float: 1e-6 of tolerance)
    const bound = complete ? -Infinity : Number(rows[rows.length - 1]._score) * ratio * slack * (1 - 1e-6);
    if (complete || (hits.length >= n && hits[n - 1].es >= bound)) {
      const total = complete ? hits.length : countTo(ix, f.path, terms, shape, scorer, track);
      return { docs: hits.map((h) => h.doc), total, plan: plan as unknown as JsonObject };
    }
    if (k >= MAX_K) return null;
  }
}

/** Matches of the query, counted until past `limit` (Elasticsearch's track_total_hits), from the terms' postings. */
function countTo(ix: IndexView, path: string, terms: string[], shape: Shape, scorer: (d: Doc) => number | null, limit: number): number {
  if (limit === 0) return 0;
  const lists = terms.map((t) => textTermDocs(ix, path, 'standard', t));
  if (shape.pure) {
    // every holder matches: count the union (or) or intersection (and) over the view's positions
    const most = Math.max(...lists.map((l) => l.length));
    if (shape.operator === 'or' && most > limit) return most;
    const seen = new Uint8Array(textTermOrdinalBound(ix));
    const want = shape.operator === 'or' ? 1 : terms.length;
    let count = 0;
    for (const t of terms) for (const o of textTermOrdinals(ix, path, 'standard', t)) if (++seen[o] === want) count++;
    return count;
  }
  if (shape.operator === 'or') {
    // each document once: in the first list holding one of its terms
    let count = 0;
    for (let j = 0; j < lists.length; j++) for (const d of lists[j]) {
      if (j > 0) {
        let earlier = false;
        for (let i = 0; i < j && !earlier; i++) earlier = d.has(path, 'standard', terms[i]);
        if (earlier) continue;
      }
      if (scorer(d) !== null && ++count > limit) return count;
    }
    return count;
  }
  const [first] = [...lists].sort((x, y) => x.length - y.length);
  let count = 0;
  for (const d of first) {
    if (!terms.every((t) => d.has(path, 'standard', t))) continue;
    if (scorer(d) !== null && ++count > limit) return count;
  }
  return count;
}
