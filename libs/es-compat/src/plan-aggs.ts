/**
 * Aggregations as plan nodes. A size-0 search whose query is absent, `match_all`, a bool of
 * `filter` clauses (term/terms on keyword, range on integer or double fields), or a `match`
 * (alone or the must of such a bool: over `fts_search(limit null)`), with top-level `terms`
 * (keyword or integer field; `order` by `_count`, `_key` or a metric sub-aggregation), `missing`,
 * `filter`/`filters` (conditional counts), `value_count`/`cardinality` (keyword or integer fields) and
 * `min`/`max`/`sum`/`avg`/`stats` (integer fields), `range` and `histogram` (whole intervals) on
 * integer or double fields (a terms aggregation may hold metric sub-aggregations), compiles to:
 *   - one `aggregate(filter(scan(es.i_…), predicate), [], [count(*), the metrics…])`, and
 *   - per terms aggregation `limit(sort(aggregate(filter(…), [key], [count(*), its metrics' calls]), count desc, key asc), size)`
 *     (a range aggregation is one conditional count per range in the first node; a histogram is
 *     `sort(aggregate(filter(…), [floor(v / interval) · interval], [count(*)]), key)`),
 * the predicate and values being the fields' typed columns (columns.ts: each holds the document's
 * one doc value as the mapping computes it; date fields are read from `_source` by plan-dates.ts).
 * They equal Elasticsearch's answer when no document holds several values of a field involved (an
 * array counts each value) and every row's columns agree with its `_source`: `plainValues`, cached
 * by the table's LSN (typed.ts); any other index takes the aggregation code over the view (`aggs.ts`).
 */
import { aggregate, col, filter, limit, lit, scan, sort, windowNode, type AggregateCall, type Expr, type PlanNode, type SortKey } from '@mmdb/plan';
import type { JsonObject, Json } from './mapping';
import type { IndexRef } from './indices';
import type { IndexView } from './doc';
import type { EsBackend } from './port';
import type { Prepared } from './search';
import { badDate, dateKey, planDateField } from './plan-dates';
import { DEFAULT_DATE_FORMAT, formatDate } from './dates';
import { columnOf, fieldColumn } from './columns';
import { typedReady } from './typed';

const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
const KEYS = new Set(['query', 'size', 'aggs', 'aggregations', 'track_total_hits', 'timeout', 'stats', '_source']);
/** Date fields are still read from `_source` by JSON path (plan-dates.ts): their names must be plain. */
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const INTEGER = new Set(['long', 'integer', 'short', 'byte']);
const METRICS = new Set(['value_count', 'cardinality', 'min', 'max', 'sum', 'avg', 'stats']);
/** value_count and cardinality count keyword values too; the others need numbers. */
const COUNTS = new Set(['value_count', 'cardinality']);

export type Kind = 'keyword' | 'integer' | 'number' | 'date';

/** A number as Java prints a double (range keys). */
const javaDouble = (n: number): string => (Number.isInteger(n) ? `${n}.0` : String(n));
const call = (name: string, ...args: Expr[]): Expr => ({ kind: 'call', name, args });
const and = (l: Expr, r: Expr): Expr => ({ kind: 'binary', op: 'and', left: l, right: r });
/** The JSON type of a field in `_source` (date fields, read from `_source` by plan-dates.ts). */
export const typeOf = (f: string): Expr => call('json_type', col('_source'), lit(`$.${f}`));
/**
 * A mapped field's value in a plan: its typed column (columns.ts `columnOf`, named from the path
 * alone). `fieldKind` admits only fields that have one; dates are read by plan-dates.ts.
 */
export const valueOf = (f: string): Expr => col(columnOf(f));
const inList = (arg: Expr, values: Json[]): Expr => ({ kind: 'in_list', arg, list: values.map((x) => lit(x as string)) });
/** The document has one value of the field (`typedReady` has ruled out several). */
const has = (f: string): Expr => ({ kind: 'is_null', arg: valueOf(f), not: true });
/** The document has one value of the field: its column is set (a date: a string in `_source`). */
export const typed = (f: string, k: Kind): Expr => (k === 'date' ? inList(typeOf(f), ['text']) : has(f));

/** Plain-value checks of date fields per table: LSN → field → every value plain. */
const checked = new WeakMap<EsBackend, Map<string, { lsn: number; plain: Map<string, boolean> }>>();

/**
 * How a plan reads a field for a use, or null when it cannot. Keyword, integer and double fields
 * are read from their typed columns, which hold the doc values as the mapping computes them
 * (multi-fields, copy_to targets, null_value, ignore_above included); dates from `_source`.
 */
export function fieldKind(ix: IndexView, name: string, want: 'filter' | 'terms' | 'metric' | 'count' | 'date'): Kind | null {
  const f = ix.fields.get(name);
  if (!f || f.def.index === false || f.def.doc_values === false) return null; // the aggregation code reports what Elasticsearch does
  if (f.type === 'date') {
    if (!NAME.test(name) || f.parent !== undefined || f.aliasOf !== undefined || f.def.null_value !== undefined || f.def.copy_to !== undefined || copiedInto(ix, name)) return null;
    return want === 'date' && planDateField(ix, name) ? 'date' : null;
  }
  // an alias's column is its target's: not named from the alias's path
  if (want === 'date' || f.aliasOf !== undefined || !fieldColumn(ix, name)) return null;
  // a term query normalizes its value with the field's normalizer: not done here
  if (f.type === 'keyword') return want !== 'metric' && (f.def.normalizer === undefined || want !== 'filter') ? 'keyword' : null;
  if (INTEGER.has(f.type)) return 'integer';
  if (f.type === 'double') return want === 'filter' ? 'number' : null;
  return null;
}

/** Whether another field copies its values into `name` (they are not in `_source` under it). */
export function copiedInto(ix: Pick<IndexView, 'fields'>, name: string): boolean {
  for (const f of ix.fields.values()) {
    const to = f.def.copy_to;
    if (to === name || (Array.isArray(to) && to.includes(name))) return true;
  }
  return false;
}

/** An exact predicate (for plain values) of a filter clause, or null. */
function clause(ix: IndexView, c: unknown, fields: Map<string, Kind>): Expr | null {
  if (!isObj(c) || Object.keys(c).length !== 1) return null;
  const [kind] = Object.keys(c);
  const body = c[kind];
  if (!isObj(body) || Object.keys(body).length !== 1) return null;
  const [name] = Object.keys(body);
  const k = fieldKind(ix, name, 'filter');
  if (!k) return null;
  const spec = body[name];
  if (kind === 'range' && k !== 'keyword' && isObj(spec)) {
    const ops: Record<string, '>' | '>=' | '<' | '<='> = { gt: '>', gte: '>=', lt: '<', lte: '<=' };
    let e: Expr | null = null;
    for (const [op, v] of Object.entries(spec)) {
      if (!(op in ops) || typeof v !== 'number') return null;
      const c: Expr = { kind: 'binary', op: ops[op], left: valueOf(name), right: lit(v) };
      e = e ? and(e, c) : c;
    }
    fields.set(name, k);
    return e ?? has(name);
  }
  if ((kind === 'term' || kind === 'terms') && k === 'keyword') {
    const vals = kind === 'term' ? [isObj(spec) && Object.keys(spec).length === 1 ? spec.value : spec] : spec;
    if (!Array.isArray(vals) || !vals.length || !vals.every((v) => typeof v === 'string')) return null;
    fields.set(name, k);
    return inList(valueOf(name), vals);
  }
  return null;
}

export function predicate(ix: IndexView, q: unknown, fields: Map<string, Kind>): Expr | null | false {
  if (q === undefined) return null;
  if (!isObj(q) || Object.keys(q).length !== 1) return false;
  if (isObj(q.match_all) && !Object.keys(q.match_all).length) return null;
  if (!isObj(q.bool) || Object.keys(q.bool).some((k) => k !== 'filter')) return false;
  return conjunction(ix, Array.isArray(q.bool.filter) ? q.bool.filter : [q.bool.filter], fields);
}

/**
 * The rows a query matches as a plan input, or null when it does not map: `scan` for no query or
 * `match_all`, `filter(scan, predicate)` for a bool of exact filters, and for a `match` (alone or
 * the must of a bool of filters) `filter(fts_search(limit null), predicate)` (`match`: topk.ts
 * `matchInput`). The fields the predicate reads are added to `fields` for the plain-value check.
 */
export function queryInput(ref: IndexRef, ix: IndexView, query: unknown, fields: Map<string, Kind>, match?: MatchInput): PlanNode | null {
  let pred = predicate(ix, query, fields);
  const text = pred === false && match ? match(query) : null;
  if (text) pred = conjunction(ix, text.filters, fields);
  if (pred === false) return null;
  const source: PlanNode = text ? text.node : scan(ref.table.id);
  return pred ? filter(source, pred) : source;
}

/** The number of documents a query matches, counted by an aggregate plan (`_count`), or null when the query does not map. */
export async function planCount(backend: EsBackend, ref: IndexRef, ix: IndexView, lsn: number, query: unknown, match?: MatchInput): Promise<number | null> {
  if (ref.readOnly) return null;
  const fields = new Map<string, Kind>();
  const input = queryInput(ref, ix, query, fields, match);
  if (!input || !(await plainValues(backend, ref, lsn, fields))) return null;
  const [row] = await backend.read(aggregate(input, [], [{ name: 'n', fn: 'count', args: [], star: true }]));
  return Number(row.n);
}

/** A filter / filters aggregation's query as an exact predicate, or null when it does not map. */
function filterExpr(ix: IndexView, q: unknown, fields: Map<string, Kind>): Expr | null {
  if (!isObj(q) || Object.keys(q).length !== 1) return null;
  if (isObj(q.match_all) && !Object.keys(q.match_all).length) return lit(true);
  if (isObj(q.bool)) {
    if (Object.keys(q.bool).some((k) => k !== 'filter')) return null;
    const e = conjunction(ix, Array.isArray(q.bool.filter) ? q.bool.filter : [q.bool.filter], fields);
    return e === false ? null : e ?? lit(true);
  }
  return clause(ix, q, fields);
}

/** The exact predicate of filter clauses (all must map), null for none, false when one does not. */
export function conjunction(ix: IndexView, list: unknown[], fields: Map<string, Kind>): Expr | null | false {
  let e: Expr | null = null;
  for (const c of list) {
    const x = clause(ix, c, fields);
    if (!x) return false;
    e = e ? and(e, x) : x;
  }
  return e;
}

/** A metric aggregation: its calls in an aggregate node (names prefixed) and its answer from the node's row. */
interface Metric {
  readonly calls: AggregateCall[];
  readonly value: (row: Record<string, unknown>) => JsonObject;
  /** The value a terms `order` names (`sub` or `sub.<stat>`) as an expression over the grouped node's columns, or null. */
  readonly orderBy: (stat: string | undefined) => Expr | null;
}

function metric(ix: IndexView, type: string, p: JsonObject, prefix: string, fields: Map<string, Kind>): Metric | null {
  const field = p.field;
  if (typeof field !== 'string' || Object.keys(p).length !== 1) return null;
  const k = fieldKind(ix, field, COUNTS.has(type) ? 'count' : 'metric');
  if (k !== 'integer' && k !== 'keyword') return null;
  fields.set(field, k);
  const v: Expr = valueOf(field);
  const calls: AggregateCall[] = [{ name: `${prefix}_c`, fn: 'count', args: [v], ...(type === 'cardinality' ? { distinct: true } : {}) }];
  if (!COUNTS.has(type)) calls.push({ name: `${prefix}_min`, fn: 'min', args: [v] }, { name: `${prefix}_max`, fn: 'max', args: [v] }, { name: `${prefix}_sum`, fn: 'total', args: [v] }); // total: a double like ES's sum, where SQL's sum of longs near 2^63 would overflow
  const num = (x: unknown): number | null => (x === null || x === undefined ? null : Number(x));
  const c = col(`${prefix}_c`);
  const stat: Record<string, Expr> = COUNTS.has(type) ? {} : {
    count: c, min: col(`${prefix}_min`), max: col(`${prefix}_max`),
    sum: { kind: 'case', whens: [{ when: { kind: 'is_null', arg: col(`${prefix}_sum`) }, then: lit(0) }], else: col(`${prefix}_sum`) },
    avg: { kind: 'case', whens: [{ when: { kind: 'binary', op: '=', left: c, right: lit(0) }, then: lit(null) }], else: { kind: 'binary', op: '/', left: col(`${prefix}_sum`), right: c } },
  };
  return {
    orderBy: (s) => (type === 'stats' ? (s !== undefined ? stat[s] ?? null : null) : s !== undefined ? null : COUNTS.has(type) ? c : stat[type]),
    calls,
    value: (row): JsonObject => {
      const c = Number(row[`${prefix}_c`]), sum = num(row[`${prefix}_sum`]) ?? 0, min = num(row[`${prefix}_min`]), max = num(row[`${prefix}_max`]);
      const avg = c ? sum / c : null;
      if (type === 'stats') return { count: c, min, max, avg, sum };
      return { value: COUNTS.has(type) ? c : type === 'min' ? min : type === 'max' ? max : type === 'sum' ? sum : avg };
    },
  };
}

/** The aggregations of a search as plans (see the file comment), or null when they do not map. */
/**
 * A terms aggregation's `order` as sort keys over the grouped node (`_count`, `_key`, a metric
 * sub-aggregation `sub` or `sub.<stat>`), then `_key` ascending as Elasticsearch breaks ties;
 * null when it names anything else (the aggregation code reports it).
 */
function termsOrder(o: unknown, subs: Array<{ name: string; m: Metric }>): SortKey[] | null {
  if (o === undefined) return [{ expr: col('doc_count'), desc: true }, { expr: col('key') }];
  const list = Array.isArray(o) ? o : [o];
  const keys: SortKey[] = [];
  for (const x of list) {
    if (!isObj(x) || Object.keys(x).length !== 1) return null;
    const [k] = Object.keys(x);
    const dir = typeof x[k] === 'string' ? (x[k] as string).toLowerCase() : '';
    if (dir !== 'asc' && dir !== 'desc') return null;
    const desc = dir === 'desc';
    if (k === '_count') keys.push({ expr: col('doc_count'), desc });
    else if (k === '_key' || k === '_term') keys.push({ expr: col('key'), desc });
    else {
      const [sub, stat, ...rest] = k.split('.');
      const e = rest.length ? null : subs.find((s) => s.name === sub)?.m.orderBy(stat) ?? null;
      if (!e) return null;
      keys.push({ expr: e, desc });
    }
  }
  if (!list.some((x) => isObj(x) && ('_key' in x || '_term' in x))) keys.push({ expr: col('key') });
  return keys;
}

/** Every match of a text query as a plan input and the filters beside it (topk.ts `matchInput`), or null. */
export type MatchInput = (q: unknown) => { node: PlanNode; filters: unknown[] } | null;

export async function planAggs(backend: EsBackend, ref: IndexRef, ix: IndexView, lsn: number, b: JsonObject, q: Record<string, string | undefined>, maxBuckets: number, match?: MatchInput): Promise<Prepared | null> {
  if (ref.readOnly || q.typed_keys === 'true' || Object.keys(b).some((k) => !KEYS.has(k)) || b.size !== 0) return null;
  const spec = b.aggs ?? b.aggregations;
  if (!isObj(spec) || !Object.keys(spec).length) return null;
  const fields = new Map<string, Kind>();
  const input = queryInput(ref, ix, b.query, fields, match);
  if (!input) return null;
  const metricCalls: AggregateCall[] = [{ name: 'total', fn: 'count', args: [], star: true }];
  const wants: Array<{ name: string; type: string; field: string; date?: { key: Expr; next: (k: number) => number; format: string }; keys?: string[]; n?: number; order?: SortKey[]; size?: number; interval?: number; minDoc?: number; kind?: Kind; metric?: Metric; subs?: Array<{ name: string; m: Metric }>; ranges?: Array<{ from: number | null; to: number | null; key?: string }> }> = [];
  for (const [name, body] of Object.entries(spec)) {
    if (!isObj(body)) return null;
    const types = Object.keys(body).filter((k) => k !== 'aggs' && k !== 'aggregations');
    const subSpec = body.aggs ?? body.aggregations;
    if (types.length !== 1 || Object.keys(body).length > 2 || (subSpec !== undefined && (types[0] !== 'terms' || !isObj(subSpec)))) return null;
    const [type] = types;
    const p = body[type];
    if (!isObj(p)) return null;
    if (type === 'filter' || type === 'filters') {
      // one conditional count per filter in the first node
      const keyed = type === 'filters' && isObj(p.filters);
      const entries: Array<[string, unknown]> = type === 'filter' ? [['', p]] : keyed ? Object.entries(p.filters as JsonObject) : Array.isArray(p.filters) ? p.filters.map((q, j) => [String(j), q]) : [];
      if (!entries.length || (type === 'filters' && Object.keys(p).some((k) => k !== 'filters'))) return null;
      if (keyed) entries.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
      const conds: Expr[] = [];
      for (const [, q] of entries) {
        const e = filterExpr(ix, q, fields);
        if (!e) return null;
        conds.push(e);
      }
      wants.push({ name, type, field: '', keys: keyed ? entries.map(([k]) => k) : undefined, n: conds.length });
      conds.forEach((when, j) => metricCalls.push({ name: `f_${wants.length}_${j}`, fn: 'count', args: [{ kind: 'case', whens: [{ when, then: lit(1) }] }] }));
      continue;
    }
    if (typeof p.field !== 'string') return null;
    const field = p.field;
    if (type === 'missing') {
      const k = fieldKind(ix, field, 'filter');
      if (!k || Object.keys(p).length !== 1) return null;
      fields.set(field, k);
      wants.push({ name, type, field });
      metricCalls.push({ name: `x_${wants.length}`, fn: 'count', args: [{ kind: 'case', whens: [{ when: { kind: 'is_null', arg: valueOf(field) }, then: lit(1) }] }] });
    } else if (type === 'terms') {
      if (Object.keys(p).some((k) => k !== 'field' && k !== 'size' && k !== 'order')) return null;
      const size = p.size === undefined ? 10 : p.size;
      const k = fieldKind(ix, field, 'terms');
      if (!Number.isInteger(size) || (size as number) < 1 || !k) return null;
      fields.set(field, k);
      // metric sub-aggregations: more calls of the grouped node
      const subs: Array<{ name: string; m: Metric }> = [];
      for (const [sn, sb] of Object.entries(isObj(subSpec) ? subSpec : {})) {
        if (!isObj(sb) || Object.keys(sb).length !== 1) return null;
        const [st] = Object.keys(sb);
        const m = METRICS.has(st) && isObj(sb[st]) ? metric(ix, st, sb[st] as JsonObject, `s${subs.length + 1}`, fields) : null;
        if (!m) return null;
        subs.push({ name: sn, m });
      }
      const order = termsOrder(p.order, subs);
      if (!order) return null;
      wants.push({ name, type, field, size: size as number, subs, order, kind: k });
      metricCalls.push({ name: `n_${wants.length}`, fn: 'count', args: [valueOf(field)] });
    } else if (type === 'date_histogram') {
      const minDoc = p.min_doc_count === undefined ? 0 : p.min_doc_count;
      const dk = fieldKind(ix, field, 'date') && Object.keys(p).every((x) => ['field', 'calendar_interval', 'fixed_interval', 'min_doc_count'].includes(x)) ? dateKey(field, p.calendar_interval, p.fixed_interval) : null;
      if (!dk || !Number.isInteger(minDoc) || (minDoc as number) < 0) return null;
      fields.set(field, 'date');
      wants.push({ name, type, field, minDoc: minDoc as number, kind: 'date', date: { ...dk, format: String(ix.fields.get(field)!.def.format ?? DEFAULT_DATE_FORMAT) } });
    } else if (type === 'histogram') {
      const k = fieldKind(ix, field, 'filter');
      const minDoc = p.min_doc_count === undefined ? 0 : p.min_doc_count;
      if ((k !== 'integer' && k !== 'number') || Object.keys(p).some((x) => !['field', 'interval', 'min_doc_count'].includes(x))) return null;
      // whole intervals: keys and the empty buckets between them are exact doubles
      if (!Number.isInteger(p.interval) || (p.interval as number) < 1 || !Number.isInteger(minDoc) || (minDoc as number) < 0) return null;
      fields.set(field, k);
      wants.push({ name, type, field, interval: p.interval as number, minDoc: minDoc as number, kind: k });
    } else if (type === 'range') {
      const k = fieldKind(ix, field, 'filter');
      if ((k !== 'integer' && k !== 'number') || Object.keys(p).some((x) => x !== 'field' && x !== 'ranges') || !Array.isArray(p.ranges) || !p.ranges.length) return null;
      const ranges: Array<{ from: number | null; to: number | null; key?: string }> = [];
      for (const r of p.ranges) {
        const bound = (v: unknown) => (v === undefined || v === null ? null : typeof v === 'number' ? v : undefined);
        if (!isObj(r) || Object.keys(r).some((x) => !['from', 'to', 'key'].includes(x)) || (r.key !== undefined && typeof r.key !== 'string')) return null;
        const from = bound(r.from), to = bound(r.to);
        if (from === undefined || to === undefined) return null;
        ranges.push({ from, to, ...(r.key !== undefined ? { key: r.key as string } : {}) });
      }
      fields.set(field, k);
      wants.push({ name, type, field, ranges });
      ranges.forEach((r, j) => {
        let when = has(field);
        if (r.from !== null) when = and(when, { kind: 'binary', op: '>=', left: valueOf(field), right: lit(r.from) });
        if (r.to !== null) when = and(when, { kind: 'binary', op: '<', left: valueOf(field), right: lit(r.to) });
        metricCalls.push({ name: `r_${wants.length}_${j}`, fn: 'count', args: [{ kind: 'case', whens: [{ when, then: lit(1) }] }] });
      });
    } else if (METRICS.has(type)) {
      const m = metric(ix, type, p, `m${wants.length + 1}`, fields);
      if (!m) return null;
      wants.push({ name, type, field, metric: m });
      metricCalls.push(...m.calls);
    } else return null;
  }
  if (!(await plainValues(backend, ref, lsn, fields))) return null;

  // one terms aggregation alone: one plan over the input, the totals as window sums over its groups
  const one = wants.length === 1 && wants[0].type === 'terms' ? await termsAlone(backend, input, wants[0] as Parameters<typeof termsAlone>[2]) : null;
  const [row] = one ? [one.row] : await backend.read(aggregate(input, [], metricCalls));
  const aggregations: JsonObject = {};
  let buckets = 0;
  for (let i = 1; i <= wants.length; i++) {
    const w = wants[i - 1];
    if (w.type === 'histogram') {
      // key = floor(v / interval) · interval (CAST truncates toward zero: one less below it)
      const q: Expr = { kind: 'binary', op: '/', left: { kind: 'binary', op: '*', left: valueOf(w.field), right: lit(1, true) }, right: lit(w.interval!) };
      const t: Expr = { kind: 'cast', arg: q, to: 'integer' };
      const floor: Expr = { kind: 'case', whens: [{ when: { kind: 'binary', op: '<', left: q, right: t }, then: { kind: 'binary', op: '-', left: t, right: lit(1) } }], else: t };
      const key: Expr = { kind: 'binary', op: '*', left: floor, right: lit(w.interval!) };
      const grouped = aggregate(filter(input, has(w.field)), [{ name: 'key', expr: key }], [{ name: 'doc_count', fn: 'count', args: [], star: true }]);
      const rows = await backend.read(sort(grouped, [{ expr: col('key') }]));
      const counts = new Map(rows.map((r) => [Number(r.key), Number(r.doc_count)]));
      let keys = [...counts.keys()];
      if (w.minDoc === 0 && keys.length) {
        const all: number[] = [];
        for (let k = keys[0]; k <= keys[keys.length - 1] && all.length < 100000; k += w.interval!) all.push(k);
        keys = all;
      }
      const list = keys.map((k) => ({ key: k, doc_count: counts.get(k) ?? 0 })).filter((b) => b.doc_count >= w.minDoc!);
      buckets += list.length;
      aggregations[w.name] = { buckets: list };
      continue;
    }
    if (w.type === 'date_histogram') {
      const d = w.date!;
      const grouped = aggregate(filter(input, typed(w.field, 'date')), [{ name: 'key', expr: d.key }], [{ name: 'doc_count', fn: 'count', args: [], star: true }]);
      const rows = await backend.read(sort(grouped, [{ expr: col('key') }]));
      const counts = new Map(rows.map((r) => [Number(r.key), Number(r.doc_count)]));
      let keys = [...counts.keys()];
      if (w.minDoc === 0 && keys.length) {
        const all: number[] = [];
        for (let k = keys[0]; k <= keys[keys.length - 1] && all.length < 100000; k = d.next(k)) all.push(k);
        keys = all;
      }
      const list = keys.map((k) => ({ key: k, key_as_string: formatDate(k, d.format), doc_count: counts.get(k) ?? 0 })).filter((b) => b.doc_count >= w.minDoc!);
      buckets += list.length;
      aggregations[w.name] = { buckets: list };
      continue;
    }
    if (w.type === 'missing') {
      aggregations[w.name] = { doc_count: Number(row[`x_${i}`]) };
      continue;
    }
    if (w.type === 'filter' || w.type === 'filters') {
      const counts = Array.from({ length: w.n! }, (_, j) => ({ doc_count: Number(row[`f_${i}_${j}`]) }));
      if (w.type === 'filter') aggregations[w.name] = counts[0];
      else {
        buckets += counts.length;
        aggregations[w.name] = { buckets: w.keys ? Object.fromEntries(w.keys.map((k, j) => [k, counts[j]])) : counts };
      }
      continue;
    }
    if (w.type === 'range') {
      const list = w.ranges!.map((r, j) => {
        const b: JsonObject = { key: r.key ?? `${r.from === null ? '*' : javaDouble(r.from)}-${r.to === null ? '*' : javaDouble(r.to)}` };
        if (r.from !== null) b.from = r.from;
        if (r.to !== null) b.to = r.to;
        b.doc_count = Number(row[`r_${i}_${j}`]);
        return { b, from: r.from, to: r.to };
      });
      list.sort((x, y) => (x.from ?? -Infinity) - (y.from ?? -Infinity) || (x.to ?? Infinity) - (y.to ?? Infinity));
      buckets += list.length;
      aggregations[w.name] = { buckets: list.map((x) => x.b) };
      continue;
    }
    if (w.type === 'terms') {
      const calls: AggregateCall[] = [{ name: 'doc_count', fn: 'count', args: [], star: true }, ...w.subs!.flatMap((x) => x.m.calls)];
      const grouped = aggregate(filter(input, has(w.field)), [{ name: 'key', expr: valueOf(w.field) }], calls);
      const rows = one?.rows ?? await backend.read(limit(sort(grouped, w.order!), lit(w.size!)));
      const shown = rows.reduce((s, r) => s + Number(r.doc_count), 0);
      buckets += rows.length;
      const bucket = (r: Record<string, unknown>): JsonObject => {
        const b: JsonObject = { key: w.kind === 'keyword' ? String(r.key) : Number(r.key), doc_count: Number(r.doc_count) };
        for (const x of w.subs!) b[x.name] = x.m.value(r);
        return b;
      };
      aggregations[w.name] = { doc_count_error_upper_bound: 0, sum_other_doc_count: Number(row[`n_${i}`]) - shown, buckets: rows.map(bucket) };
      continue;
    }
    aggregations[w.name] = w.metric!.value(row);
  }
  // past search.max_buckets the aggregation code reports too_many_buckets_exception
  if (buckets > maxBuckets) return null;
  const restInt = q.rest_total_hits_as_int === 'true';
  const trackTotal = b.track_total_hits === undefined ? (restInt ? true : 10000) : (b.track_total_hits as boolean | number);
  if (typeof trackTotal !== 'boolean' && !(Number(trackTotal) >= 0)) return null;
  if (restInt && typeof trackTotal !== 'boolean') return null; // the full search reports the error
  return {
    hits: [], total: Number(row.total), sort: [], from: 0, size: 0, format: () => ({}), aggregations, maxScore: null, trackTotal, restInt,
    indices: Number((ix.settings as JsonObject)['index.number_of_shards'] ?? 1),
  };
}

/**
 * A terms aggregation alone in a request, as one plan (the input is read once):
 * `limit(sort(filter(window(aggregate(I, [key], [count(*), its metrics' calls]), [total(doc_count),
 * total(doc_count of the null key)]), key is not null), order), size)`; the window's sums give the
 * hits' total and the documents holding a value. Null when no document holds a value (no group
 * row carries the sums: the caller counts with the metric plan).
 */
async function termsAlone(backend: EsBackend, input: PlanNode, w: { field: string; size?: number; order?: SortKey[]; subs?: Array<{ name: string; m: Metric }> }): Promise<{ row: Record<string, unknown>; rows: Array<Record<string, unknown>> } | null> {
  const calls: AggregateCall[] = [{ name: 'doc_count', fn: 'count', args: [], star: true }, ...w.subs!.flatMap((x) => x.m.calls)];
  const grouped = aggregate(input, [{ name: 'key', expr: valueOf(w.field) }], calls);
  const isNull: Expr = { kind: 'is_null', arg: col('key') };
  const sums = windowNode(grouped, [
    { name: 'all_n', fn: 'total', args: [col('doc_count')], partition: [], order: [] },
    { name: 'null_n', fn: 'total', args: [{ kind: 'case', whens: [{ when: isNull, then: col('doc_count') }] }], partition: [], order: [] },
  ]);
  const rows = await backend.read(limit(sort(filter(sums, { kind: 'is_null', arg: col('key'), not: true }), w.order!), lit(w.size!)));
  if (!rows.length) return null;
  const all = Number(rows[0].all_n);
  return { row: { total: all, n_1: all - Number(rows[0].null_n) }, rows };
}

/**
 * Whether the plans may read `fields` over the whole index: keyword and number fields through
 * their typed columns (typed.ts `typedReady`: every row's columns agree with its `_source`, none
 * holds several values), date fields when every value in `_source` is one string of a plan shape
 * (counted by a plan over the index, cached by LSN).
 */
export async function plainValues(backend: EsBackend, ref: IndexRef, lsn: number, fields: Map<string, Kind>): Promise<boolean> {
  const typedFields = [...fields].filter(([, k]) => k !== 'date').map(([f]) => f);
  if (typedFields.length && !(await typedReady(backend, ref, lsn, typedFields))) return false;
  const dates = [...fields].filter(([, k]) => k === 'date').map(([f]) => f);
  if (!dates.length) return true;
  let byTable = checked.get(backend);
  if (!byTable) { byTable = new Map(); checked.set(backend, byTable); }
  let c = byTable.get(ref.table.id);
  if (!c || c.lsn !== lsn) { c = { lsn, plain: new Map() }; byTable.set(ref.table.id, c); }
  const todo = dates.filter((f) => !c!.plain.has(f));
  if (todo.length && !c.plain.has('')) {
    // a `_source` that is not an object (a row written by another surface as a JSON string) is read leniently by the view
    const [row] = await backend.read(aggregate(scan(ref.table.id), [], [{ name: 'bad', fn: 'count', args: [{ kind: 'case', whens: [{ when: { kind: 'binary', op: '<>', left: call('json_type', col('_source')), right: lit('object') }, then: lit(1) }] }] }]));
    c.plain.set('', Number(row.bad) === 0);
  }
  if (c.plain.get('') === false) return false;
  if (todo.length) {
    // a value that is neither missing, null nor of a plan shape: count them per field
    const calls: AggregateCall[] = todo.map((f, i) => ({ name: `bad_${i}`, fn: 'count', args: [{ kind: 'case', whens: [{ when: badDate(f), then: lit(1) }] }] }));
    const [row] = await backend.read(aggregate(scan(ref.table.id), [], calls));
    todo.forEach((f, i) => c!.plain.set(f, Number(row[`bad_${i}`]) === 0));
  }
  return dates.every((f) => c!.plain.get(f));
}
