/**
 * A terms aggregation as plan nodes (`plan-aggs.ts` runs the top level): its options (`size`,
 * `order`, `min_doc_count` (0: every key of the index, left-joined), `missing`, `include`/`exclude` lists), its metric and
 * conditional-count sub-aggregations (calls of the grouped node), and one terms sub-aggregation:
 * `aggregate` over both keys (the parent's shown keys only), then `window` (row_number and the
 * total per parent key, in the child's order) and `filter` keep each parent's top children; and
 * histogram / date_histogram sub-aggregations: `aggregate` over the parent key and the bucket key.
 */
import { aggregate, col, filter, join, limit, lit, project, setOp, sort, windowNode, type AggregateCall, type Expr, type PlanNode, type SortKey } from '@mmdb/plan';
import type { Json, JsonObject } from './mapping';
import { globalOrdinals, type IndexView } from './doc';
import type { EsBackend } from './port';
import { aggBody, countAgg } from './plan-buckets';
import { seriesBuckets, seriesSpec, type Series } from './plan-series';
import { includeExclude } from './agg-buckets';
import { valueSource } from './agg-util';
import { fieldKind, termsOrder, typed, valueOf, type Kind, type MatchInput } from './plan-aggs';
import { metric, METRICS, type Metric } from './plan-metrics';

const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
const and = (l: Expr, r: Expr): Expr => ({ kind: 'binary', op: 'and', left: l, right: r });

export interface TermsSpec {
  readonly name: string;
  readonly field: string;
  readonly kind: Kind;
  readonly size: number;
  readonly order: SortKey[];
  readonly minDoc: number;
  /** The bucket key (the value, or `missing` for documents without one) and which rows count. */
  readonly key: Expr;
  readonly rowCond: Expr;
  readonly subs: Array<{ name: string; m: Metric }>;
  /** No `missing`, `include` or `exclude`: the key is the value, the rows holding one count. */
  readonly plain: boolean;
  /** A `missing` key is given (documents without a value count under it). */
  readonly missing: boolean;
  readonly child?: TermsSpec;
  /** histogram / date_histogram sub-aggregations (at the top level's terms only). */
  readonly series: Array<{ name: string; s: Series }>;
  /** A boolean field: keys 1 / 0 printed `true` / `false` in `key_as_string`. */
  readonly boolean?: boolean;
  /** rare_terms: its max_doc_count (the buckets at most that full, fewest first; the answer holds only `buckets`). */
  readonly rare?: number;
  /** The rows whose keys `min_doc_count: 0` shows (absent: the index's table; a multi-valued field's: its unnest, plan-multi.ts). */
  readonly universe?: PlanNode;
}

/**
 * A rare_terms aggregation as a terms spec: the keys held by at most `max_doc_count` (default 1)
 * documents, `_count` ascending then the key, up to 10,000 buckets (the aggregation code's
 * page); `include` / `exclude` / `missing` as terms; null when it holds anything else.
 */
export function rareSpec(ix: IndexView, name: string, p: JsonObject, subSpec: unknown, fields: Map<string, Kind>, match: MatchInput | undefined): TermsSpec | null {
  const max = p.max_doc_count === undefined ? 1 : p.max_doc_count;
  if (!Number.isInteger(max) || (max as number) < 1 || Object.keys(p).some((k) => !['field', 'max_doc_count', 'include', 'exclude', 'missing'].includes(k))) return null;
  const { max_doc_count: _m, ...rest } = p;
  const t = termsSpec(ix, name, { ...rest, size: 10000, order: { _count: 'asc' } }, subSpec, fields, match, 1);
  return t && !t.child && !t.series.length ? { ...t, rare: max as number } : null;
}

/** A terms aggregation's spec with its sub-aggregations (a terms child only at depth 0), or null when it does not map. */
export function termsSpec(ix: IndexView, name: string, p: JsonObject, subSpec: unknown, fields: Map<string, Kind>, match: MatchInput | undefined, depth = 0): TermsSpec | null {
  if (typeof p.field !== 'string' || Object.keys(p).some((k) => !['field', 'size', 'order', 'min_doc_count', 'missing', 'include', 'exclude'].includes(k))) return null;
  const field = p.field;
  const size = p.size === undefined ? 10 : p.size;
  const k = fieldKind(ix, field, 'terms');
  const minDoc = p.min_doc_count === undefined ? 1 : p.min_doc_count;
  // min_doc_count 0 (every term of the index, the missing ones at 0): at the top level
  if (!Number.isInteger(size) || (size as number) < 1 || !k || !Number.isInteger(minDoc) || (minDoc as number) < (depth === 0 ? 0 : 1)) return null;
  // `missing`: documents without a value count under that key; include / exclude: lists of values
  const plainKey = (v: unknown): boolean => (k === 'keyword' ? typeof v === 'string' : k === 'number' ? typeof v === 'number' && Number.isFinite(v) : Number.isInteger(v));
  if (p.missing !== undefined && !plainKey(p.missing)) return null;
  // a boolean's keys are 1 / 0 (its `missing` and include / exclude lists are read as booleans: the aggregation code answers)
  const boolean = ix.fields.get(field)?.type === 'boolean';
  if (boolean && (p.missing !== undefined || p.include !== undefined || p.exclude !== undefined)) return null;
  // include / exclude as regular expressions (keyword) or partitions: the index's keys (its values and `missing`) that the
  // aggregation code's own test keeps, as one list
  let allowed: Json[] | null = null;
  if ([p.include, p.exclude].some((l) => l !== undefined && (!Array.isArray(l) || !l.every(plainKey)))) {
    try {
      const ok = includeExclude(p, valueSource([ix], p, name), name);
      const keys = new Set<Json>(globalOrdinals(ix, field).terms.map((x) => (k === 'keyword' ? x : Number(x))));
      if (p.missing !== undefined) keys.add(p.missing as Json);
      allowed = [...keys].filter((x) => ok(x));
    } catch {
      return null; // the aggregation code reports it
    }
    if (allowed.length > 65536) return null;
  }
  fields.set(field, k);
  const key: Expr = p.missing === undefined ? valueOf(field) : { kind: 'call', name: 'coalesce', args: [valueOf(field), lit(p.missing as Json)] };
  let rowCond: Expr = p.missing === undefined ? typed(field, k) : lit(true);
  if (allowed) rowCond = and(rowCond, allowed.length ? { kind: 'in_list', arg: key, list: allowed.map((x) => lit(x)) } : lit(false));
  else {
    if (Array.isArray(p.include)) rowCond = and(rowCond, p.include.length ? { kind: 'in_list', arg: key, list: p.include.map((x) => lit(x as Json)) } : lit(false));
    if (Array.isArray(p.exclude) && p.exclude.length) rowCond = and(rowCond, { kind: 'in_list', arg: key, list: p.exclude.map((x) => lit(x as Json)), not: true });
  }
  if (subSpec !== undefined && !isObj(subSpec)) return null;
  const subs: Array<{ name: string; m: Metric }> = [];
  const series: Array<{ name: string; s: Series }> = [];
  let child: TermsSpec | undefined;
  for (const [sn, sb] of Object.entries(subSpec ?? {})) {
    const a = aggBody(sb);
    if (!a) return null;
    const { type: st, p: sp, sub: inner } = a;
    if (st === 'terms' && depth === 0 && !child) {
      const c = termsSpec(ix, sn, sp, inner, fields, match, 1);
      if (!c) return null;
      child = c;
      continue;
    }
    if (inner !== undefined) return null;
    if ((st === 'histogram' || st === 'date_histogram') && depth === 0) {
      const x = seriesSpec(ix, st, sp, fields);
      if (!x || x.order?.some((o) => o.key !== '_key' && o.key !== '_count')) return null;
      series.push({ name: sn, s: x });
      continue;
    }
    const prefix = `s${depth}_${subs.length + 1}`;
    const m = METRICS.has(st) ? metric(ix, st, sp, prefix, fields) : countAgg(ix, st, sp, prefix, fields, match);
    if (!m) return null;
    subs.push({ name: sn, m });
  }
  const order = termsOrder(p.order, subs);
  if (!order) return null;
  const plain = p.missing === undefined && p.include === undefined && p.exclude === undefined;
  return { name, field, kind: k, size: size as number, order, minDoc: minDoc as number, key, rowCond, subs, plain, missing: p.missing !== undefined, series, ...(child ? { child } : {}), ...(boolean ? { boolean } : {}) };
}

/** The grouped node of a terms aggregation over `input` (min_doc_count applied): columns key, doc_count and its sub-aggregations' calls. */
export function termsGroups(input: PlanNode, t: TermsSpec, keys: Array<{ name: string; expr: Expr }> = [], where?: Expr): PlanNode {
  const calls: AggregateCall[] = [{ name: 'doc_count', fn: 'count', args: [], star: true }, ...t.subs.flatMap((x) => x.m.calls)];
  const g = aggregate(filter(input, where ? and(where, t.rowCond) : t.rowCond), [...keys, { name: 'key', expr: t.key }], calls);
  // min_doc_count: the buckets below it are dropped, and not counted as others (as the aggregation code)
  if (t.rare !== undefined) return filter(g, { kind: 'binary', op: '<=', left: col('doc_count'), right: lit(t.rare) });
  return t.minDoc > 1 ? filter(g, { kind: 'binary', op: '>=', left: col('doc_count'), right: lit(t.minDoc) }) : g;
}

/**
 * min_doc_count 0: the index's every key (that include / exclude keep) left-joined with the
 * matches' groups, a key without matches counting 0 (its metrics over no document).
 */
export function withZeroBuckets(grouped: PlanNode, table: PlanNode, t: TermsSpec, input: PlanNode): PlanNode {
  let keys: PlanNode = aggregate(filter(table, t.rowCond), [{ name: '_ak', expr: t.key }], []);
  if (t.missing && t.kind === 'keyword') {
    // a keyword's zero buckets are its values (the aggregation code's global ordinals); the `missing` key only where a match has no value
    const values = aggregate(filter(table, and(typed(t.field, t.kind), t.rowCond)), [{ name: '_ak', expr: t.key }], []);
    const missing = aggregate(filter(input, and({ kind: 'is_null', arg: valueOf(t.field) }, t.rowCond)), [{ name: '_ak', expr: t.key }], []);
    keys = setOp('union', values, missing);
  }
  const eq = { left: col('_ak'), right: col('key') };
  const joined = { ...join('left', keys, grouped, { kind: 'binary', op: '=', ...eq }), equi: [eq], strategy: 'hash' as const };
  const zero: Expr = { kind: 'call', name: 'coalesce', args: [col('doc_count'), lit(0)] };
  return project(joined, [{ name: 'key', expr: col('_ak') }, { name: 'doc_count', expr: zero }, ...t.subs.flatMap((x) => x.m.calls.map((c) => ({ name: c.name, expr: col(c.name) })))]);
}

export const keyOf = (t: TermsSpec, v: unknown): Json => (t.kind === 'keyword' ? String(v) : Number(v));

/** One bucket's answer from a grouped row. */
export function termsBucket(t: TermsSpec, r: Record<string, unknown>): JsonObject {
  const key = keyOf(t, r.key);
  const b: JsonObject = { key, ...(t.boolean ? { key_as_string: key ? 'true' : 'false' } : {}), doc_count: Number(r.doc_count) };
  for (const x of t.subs) b[x.name] = x.m.value(r);
  return b;
}

/** The child terms aggregation of each shown parent bucket (by the parent key's JSON). */
export async function childTerms(backend: EsBackend, input: PlanNode, parent: TermsSpec, child: TermsSpec, keys: Json[]): Promise<Map<string, JsonObject>> {
  const out = new Map<string, JsonObject>();
  if (!keys.length) return out;
  const shown: Expr = and(parent.rowCond, { kind: 'in_list', arg: parent.key, list: keys.map((k) => lit(k)) });
  const g = termsGroups(input, child, [{ name: 'pkey', expr: parent.key }], shown);
  const ranked = windowNode(g, [
    { name: '_rn', fn: 'row_number', args: [], partition: [col('pkey')], order: child.order },
    { name: '_all', fn: 'total', args: [col('doc_count')], partition: [col('pkey')], order: [] },
  ]);
  const rows = await backend.read(sort(filter(ranked, { kind: 'binary', op: '<=', left: col('_rn'), right: lit(child.size) }), [{ expr: col('pkey') }, { expr: col('_rn') }]));
  for (const r of rows) {
    const k = JSON.stringify(keyOf(parent, r.pkey));
    let agg = out.get(k);
    if (!agg) {
      agg = { doc_count_error_upper_bound: 0, sum_other_doc_count: Number(r._all), buckets: [] };
      out.set(k, agg);
    }
    const b = termsBucket(child, r);
    (agg.buckets as JsonObject[]).push(b);
    agg.sum_other_doc_count = (agg.sum_other_doc_count as number) - (b.doc_count as number);
  }
  return out;
}

/** A histogram / date_histogram sub-aggregation of each shown parent bucket (by the parent key's JSON). */
export async function childSeries(backend: EsBackend, input: PlanNode, parent: TermsSpec, s: Series, keys: Json[]): Promise<Map<string, JsonObject>> {
  const counts = new Map<string, Map<number, number>>();
  if (keys.length) {
    const shown: Expr = and(and(parent.rowCond, { kind: 'in_list', arg: parent.key, list: keys.map((k) => lit(k)) }), s.cond);
    const g = aggregate(filter(input, shown), [{ name: 'pkey', expr: parent.key }, { name: 'key', expr: s.key }], [{ name: 'doc_count', fn: 'count', args: [], star: true }]);
    for (const r of await backend.read(sort(g, [{ expr: col('pkey') }, { expr: col('key') }]))) {
      const k = JSON.stringify(keyOf(parent, r.pkey));
      let m = counts.get(k);
      if (!m) { m = new Map(); counts.set(k, m); }
      m.set(Number(r.key), Number(r.doc_count));
    }
  }
  return new Map(keys.map((k) => [JSON.stringify(k), seriesBuckets(s, counts.get(JSON.stringify(k)) ?? new Map())]));
}

/**
 * A terms aggregation alone in a request, as one plan (the input is read once):
 * `limit(sort(filter(window(aggregate(I, [key], [count(*), its metrics' calls]), [total(doc_count),
 * total(doc_count of the null key)]), key is not null), order), size)`; the window's sums give the
 * hits' total and the documents holding a value. Null when it has options or children that need
 * more, or when no document holds a value (no group row carries the sums).
 */
export async function termsAlone(backend: EsBackend, input: PlanNode, t: TermsSpec): Promise<{ total: number; values: number; rows: Array<Record<string, unknown>> } | null> {
  if (!t.plain || t.minDoc !== 1 || t.child || t.series.length || t.rare !== undefined) return null;
  const calls: AggregateCall[] = [{ name: 'doc_count', fn: 'count', args: [], star: true }, ...t.subs.flatMap((x) => x.m.calls)];
  const grouped = aggregate(input, [{ name: 'key', expr: t.key }], calls);
  const isNull: Expr = { kind: 'is_null', arg: col('key') };
  const sums = windowNode(grouped, [
    { name: 'all_n', fn: 'total', args: [col('doc_count')], partition: [], order: [] },
    { name: 'null_n', fn: 'total', args: [{ kind: 'case', whens: [{ when: isNull, then: col('doc_count') }] }], partition: [], order: [] },
  ]);
  const rows = await backend.read(limit(sort(filter(sums, { kind: 'is_null', arg: col('key'), not: true }), t.order), lit(t.size)));
  if (!rows.length) return null;
  const all = Number(rows[0].all_n);
  return { total: all, values: all - Number(rows[0].null_n), rows };
}
