/**
 * Aggregations as plan nodes. A size-0 search whose query is absent, `match_all`, a bool of
 * `filter` clauses (term/terms on keyword, number and boolean fields, range on integer or double fields), or a `match`
 * (alone or the must of such a bool: over `fts_search(limit null)`), with top-level `terms`
 * (keyword or integer field; `order` by `_count`, `_key` or a metric sub-aggregation), `missing`,
 * `filter`/`filters` (conditional counts), `value_count`/`cardinality` (keyword or integer fields) and
 * the metrics of plan-metrics.ts, `range` and `histogram` (whole intervals) on
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
import { aggregate, col, filter, limit, lit, scan, sort, type AggregateCall, type Expr, type PlanNode, type SortKey } from '@mmdb/plan';
import type { JsonObject, Json } from './mapping';
import type { IndexRef } from './indices';
import type { IndexView } from './doc';
import type { EsBackend } from './port';
import type { Prepared } from './search';
import { badDate, planDateField } from './plan-dates';
import { compileLevel, runLevel } from './plan-level';
import { multiAggs } from './plan-multi';
import { anyValueOf, multiInput } from './plan-any-value';
import { withTypedKeys } from './plan-typed-keys';
import { columnOf, fieldColumn } from './columns';
import { typedReady } from './typed';
import type { Metric } from './plan-metrics';
export type { Metric } from './plan-metrics';
import { rangeBounds } from './query';
import { queryValue } from './fields';

const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
const KEYS = new Set(['query', 'size', 'aggs', 'aggregations', 'track_total_hits', 'timeout', 'stats', '_source', 'terminate_after']);
/** Date fields are still read from `_source` by JSON path (plan-dates.ts): their names must be plain. */
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const INTEGER = new Set(['long', 'integer', 'short', 'byte']);
const FLOATS = new Set(['float', 'half_float', 'scaled_float']);
/** `date`: a date read from `_source` strings (plan-dates.ts, indices without typed columns); `time`: a date's typed column (epoch ms). */
export type Kind = 'keyword' | 'integer' | 'number' | 'date' | 'time';

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
  if (f.type === 'date' || f.type === 'date_nanos') {
    // the typed column (epoch ms, any format the mapping parses): date histograms, range filters, exists, missing, sorts
    // (a date_nanos value finer than a millisecond is no plain cell: the row names it in `_multi`)
    if (f.aliasOf === undefined && fieldColumn(ix, name)) return want !== 'terms' ? 'time' : null;
    if (f.type === 'date_nanos') return null;
    if (!NAME.test(name) || f.parent !== undefined || f.aliasOf !== undefined || f.def.null_value !== undefined || f.def.copy_to !== undefined || copiedInto(ix, name)) return null;
    return want === 'date' && planDateField(ix, name) ? 'date' : null;
  }
  // an alias's column is its target's: not named from the alias's path
  if (want === 'date' || f.aliasOf !== undefined || !fieldColumn(ix, name)) return null;
  // a term query normalizes its value with the field's normalizer: not done here
  if (f.type === 'keyword') return want !== 'metric' && (f.def.normalizer === undefined || want !== 'filter') ? 'keyword' : null;
  if (INTEGER.has(f.type)) return 'integer';
  if (f.type === 'double') return want === 'filter' || want === 'metric' || want === 'count' || want === 'terms' ? 'number' : null;
  // float, half_float and scaled_float columns hold the values as the mapping rounds them (mapping.ts `docValues`), which
  // every use reads; a range filter's bounds are rounded the same way (`rangeBounds`, as the scorer)
  if (FLOATS.has(f.type)) return 'number';
  // a boolean's metrics and terms read it as 1 / 0, as the aggregation code does (its column holds the value)
  if (f.type === 'boolean') return want === 'metric' || want === 'count' || want === 'terms' ? 'integer' : null;
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

/** An exact predicate of a filter clause (over a multi-valued field of a `multiAware` compilation: any value matching), or null. */
export function filterClause(ix: IndexView, c: unknown, fields: Map<string, Kind>): Expr | null {
  return anyValueOf(c, fields, oneClause(ix, c, fields));
}

/** An exact predicate (for plain values) of a filter clause, or null. */
function oneClause(ix: IndexView, c: unknown, fields: Map<string, Kind>): Expr | null {
  if (!isObj(c) || Object.keys(c).length !== 1) return null;
  const [kind] = Object.keys(c);
  const body = c[kind];
  if (kind === 'exists' && isObj(body) && Object.keys(body).length === 1 && typeof body.field === 'string') {
    // a plain value that is not null (arrays are not plain: the aggregation code answers those)
    const ek = fieldKind(ix, body.field, 'filter');
    if (!ek) return null;
    fields.set(body.field, ek);
    return typed(body.field, ek);
  }
  if (!isObj(body) || Object.keys(body).length !== 1) return null;
  const [name] = Object.keys(body);
  if (kind === 'term' || kind === 'terms') {
    const e = numberTerms(ix, kind, name, body[name], fields);
    if (e !== undefined) return e;
  }
  const k = fieldKind(ix, name, 'filter');
  if (!k) return null;
  const spec = body[name];
  if (kind === 'range' && (k === 'integer' || k === 'number' || k === 'time') && isObj(spec)) {
    // the scorer's bounds (numbers and numeric strings, an integer field's with their fraction; for dates date math, format,
    // time_zone, rounding) over the column
    if (Object.keys(spec).some((x) => !['gt', 'gte', 'lt', 'lte', 'from', 'to', 'include_lower', 'include_upper', 'format', 'time_zone', 'boost'].includes(x))) return null;
    let bounds: ReturnType<typeof rangeBounds>;
    try {
      bounds = rangeBounds(ix.fields.get(name)!, spec);
    } catch {
      return null; // the scorer reports it
    }
    const ops = { gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;
    // a bound excludes a missing value by itself (a date's range keeps its own check first, as before)
    let e: Expr | null = k === 'time' ? typed(name, k) : null;
    for (const op of ['gt', 'gte', 'lt', 'lte'] as const) {
      const v = bounds[op];
      if (v === undefined) continue;
      if (typeof v !== 'number' || !Number.isFinite(v)) return null;
      const c: Expr = { kind: 'binary', op: ops[op], left: valueOf(name), right: lit(v) };
      e = e ? and(e, c) : c;
    }
    fields.set(name, k);
    return e ?? has(name);
  }
  if (kind === 'prefix' && k === 'keyword') {
    // case-sensitive, as the keyword's terms are: the first characters equal the prefix
    const v = isObj(spec) && Object.keys(spec).every((x) => x === 'value' || x === 'boost') ? spec.value : spec;
    if (typeof v !== 'string' || !v) return null;
    fields.set(name, k);
    return { kind: 'binary', op: '=', left: call('substr', valueOf(name), lit(1), lit([...v].length)), right: lit(v) };
  }
  if ((kind === 'term' || kind === 'terms') && k === 'keyword') {
    const vals = kind === 'term' ? [isObj(spec) && Object.keys(spec).length === 1 ? spec.value : spec] : spec;
    if (!Array.isArray(vals) || !vals.length || !vals.every((v) => typeof v === 'string')) return null;
    fields.set(name, k);
    return inList(valueOf(name), vals);
  }
  return null;
}

/**
 * `term` / `terms` on a number, boolean or date field: the values as the scorer reads them (`queryValue`:
 * a float rounded to float32, an integer field's value with its fraction, a boolean parsed, a date's epoch ms), compared with the
 * column (a boolean's as 1 / 0); a value that reads as none matches nothing. Undefined for a
 * keyword or text field (the caller's own cases), null for a form the scorer answers (an error, a
 * terms lookup).
 */
function numberTerms(ix: IndexView, kind: string, name: string, spec: unknown, fields: Map<string, Kind>): Expr | null | undefined {
  const f = ix.fields.get(name);
  const k = fieldKind(ix, name, 'count');
  if (!f || (k !== 'integer' && k !== 'number' && k !== 'time')) return undefined;
  const raw = kind === 'terms' ? spec : isObj(spec) ? (Object.keys(spec).every((x) => ['value', 'boost', '_name', 'case_insensitive'].includes(x)) ? [spec.value] : null) : [spec];
  const max = Number((ix.settings as JsonObject)['index.max_terms_count'] ?? 65536);
  if (!Array.isArray(raw) || raw.length > max || raw.some((v) => v === undefined || isObj(v) || Array.isArray(v))) return null;
  const vals: Json[] = [];
  try {
    for (const v of raw) {
      const x = queryValue(f, v, { exact: true });
      if (typeof x === 'number' && Number.isFinite(x)) vals.push(x);
      else if (typeof x === 'boolean') vals.push(x ? 1 : 0);
    }
  } catch {
    return null; // the scorer reports it
  }
  fields.set(name, k);
  return vals.length ? { kind: 'in_list', arg: valueOf(name), list: vals.map((x) => lit(x)) } : lit(false);
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
 * `match_all`, `filter(scan, predicate)` for a bool of exact filters, and for any other query
 * what `text-plan.ts` compiles it to (fts_search nodes of text clauses, joined on `_id`, and
 * predicates). The fields the predicates read are added to `fields` for the plain-value check.
 */
export function queryInput(ref: IndexRef, ix: IndexView, query: unknown, fields: Map<string, Kind>, match?: MatchInput): PlanNode | null {
  const pred = predicate(ix, query, fields);
  if (pred === false) return match ? match.input(query, fields) : null;
  const source: PlanNode = scan(ref.table.id);
  return pred ? filter(source, pred) : source;
}

/** The number of documents a query matches, counted by an aggregate plan (`_count`), or null when the query does not map. */
export async function planCount(backend: EsBackend, ref: IndexRef, ix: IndexView, lsn: number, query: unknown, match?: MatchInput): Promise<number | null> {
  const input = await matchesInput(backend, ref, ix, lsn, query, match);
  if (!input) return null;
  const [row] = await backend.read(aggregate(input, [], [{ name: 'n', fn: 'count', args: [], star: true }]));
  return Number(row.n);
}

/** The rows of a query's matches as a plan input (the fields it reads checked; a multi-valued one's clauses match any value), or null. */
export async function matchesInput(backend: EsBackend, ref: IndexRef, ix: IndexView, lsn: number, query: unknown, match?: MatchInput): Promise<PlanNode | null> {
  if (ref.readOnly) return null;
  const fields = new Map<string, Kind>();
  const input = queryInput(ref, ix, query, fields, match);
  if (!input) return null;
  // a field some document holds several values of: its clauses match any value
  if (await plainValues(backend, ref, lsn, fields)) return input;
  return ref.meta.mv ? multiInput(backend, ref, ix, lsn, query, match) : null;
}

/** A filter / filters aggregation's query as an exact predicate (any query text-plan.ts maps, through `match`), or null when it does not map. */
export function filterExpr(ix: IndexView, q: unknown, fields: Map<string, Kind>, match?: MatchInput): Expr | null {
  if (!isObj(q) || Object.keys(q).length !== 1) return null;
  const e = exactFilter(ix, q, fields);
  return e ?? (match ? match.predicate(q, fields) : null);
}

function exactFilter(ix: IndexView, q: JsonObject, fields: Map<string, Kind>): Expr | null {
  if (isObj(q.match_all) && !Object.keys(q.match_all).length) return lit(true);
  if (isObj(q.bool)) {
    if (Object.keys(q.bool).some((k) => k !== 'filter')) return null;
    const e = conjunction(ix, Array.isArray(q.bool.filter) ? q.bool.filter : [q.bool.filter], fields);
    return e === false ? null : e ?? lit(true);
  }
  return filterClause(ix, q, fields);
}

/** The exact predicate of filter clauses (all must map), null for none, false when one does not. */
export function conjunction(ix: IndexView, list: unknown[], fields: Map<string, Kind>): Expr | null | false {
  let e: Expr | null = null;
  for (const c of list) {
    const x = filterClause(ix, c, fields);
    if (!x) return false;
    e = e ? and(e, x) : x;
  }
  return e;
}

/**
 * A terms aggregation's `order` as sort keys over the grouped node (`_count`, `_key`, a metric
 * sub-aggregation `sub` or `sub.<stat>`), then `_key` ascending as Elasticsearch breaks ties;
 * null when it names anything else (the aggregation code reports it).
 */
export function termsOrder(o: unknown, subs: Array<{ name: string; m: Metric }>): SortKey[] | null {
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

/**
 * A query's matches as a plan input, or as a predicate over an index's row (text-plan.ts
 * `textPlans`), or null when it does not map; both add the fields their predicates read.
 */
export interface MatchInput {
  input(q: unknown, fields: Map<string, Kind>): PlanNode | null;
  predicate(q: unknown, fields: Map<string, Kind>): Expr | null;
}

/** `aliasFilter`: the filter of the alias searched (a `global` aggregation reads its documents; none: the whole index). */
/** Whether a body is a size-0 search of aggregations the plans may answer (its keys). */
export const aggsBody = (b: JsonObject): boolean => !Object.keys(b).some((k) => !KEYS.has(k)) && b.size === 0;

export async function planAggs(backend: EsBackend, ref: IndexRef, ix: IndexView, lsn: number, b: JsonObject, q: Record<string, string | undefined>, maxBuckets: number, match?: MatchInput, aliasFilter?: unknown): Promise<Prepared | null> {
  if (ref.readOnly || !aggsBody(b)) return null;
  const spec = b.aggs ?? b.aggregations;
  if (!isObj(spec) || !Object.keys(spec).length) return null;
  // terminate_after: the aggregations read the first n matches in index order (a negative or fractional one: the full search reports it)
  const cap = b.terminate_after === undefined || b.terminate_after === 0 ? null : b.terminate_after;
  if (cap !== null && !(typeof cap === 'number' && Number.isInteger(cap) && cap > 0)) return null;
  const capped = (x: PlanNode, n = cap as number): PlanNode => limit(sort(x, [{ expr: col('_seq_no') }]), lit(n));
  const fields = new Map<string, Kind>();
  const first = queryInput(ref, ix, b.query, fields, match);
  if (!first) return null;
  const input = cap === null ? first : capped(first);
  const global = aliasFilter === undefined ? scan(ref.table.id) : match ? match.input(aliasFilter, fields) : null;
  const level = compileLevel(ix, spec, fields, match, global);
  // a composite page larger than search.max_buckets: the aggregation code reports too_many_buckets_exception
  if (!level || level.wants.some((w) => w.composite && w.composite.size > maxBuckets)) return null;
  // fields of which a document holds several values: the aggregations reading them over an unnest of the rows (plan-multi.ts)
  let ran: { aggregations: JsonObject; buckets: number; total: number } | null = null;
  let matches = first;
  if (await plainValues(backend, ref, lsn, fields)) ran = await runLevel(backend, ref, input, level);
  else if (ref.meta.mv) {
    const multiIn = await multiInput(backend, ref, ix, lsn, b.query, match);
    if (multiIn) matches = multiIn;
    ran = multiIn && (await multiAggs(backend, ref, ix, lsn, cap === null ? multiIn : capped(multiIn), spec, match, global, (f) => plainValues(backend, ref, lsn, f)));
  }
  const answer = ran && aggsAnswer(ix, b, q, spec, maxBuckets, ran, Number((ix.settings as JsonObject)['index.number_of_shards'] ?? 1));
  if (!answer || cap === null) return answer;
  // terminated early when a match past the first n exists
  const [row] = await backend.read(aggregate(capped(matches, cap + 1), [], [{ name: 'n', fn: 'count', args: [], star: true }]));
  return { ...answer, terminatedEarly: Number(row.n) > cap };
}

/** The size-0 search answer of aggregations read by plans, or null when the full search must answer (it reports an error). */
export function aggsAnswer(ix: IndexView, b: JsonObject, q: Record<string, string | undefined>, spec: JsonObject, maxBuckets: number, ran: { aggregations: JsonObject; buckets: number; total: number }, shards: number): Prepared | null {
  const { buckets, total } = ran;
  const aggregations = q.typed_keys === 'true' ? withTypedKeys(ix, spec, ran.aggregations) : ran.aggregations;
  // past search.max_buckets the aggregation code reports too_many_buckets_exception
  if (buckets > maxBuckets) return null;
  const restInt = q.rest_total_hits_as_int === 'true';
  const trackTotal = b.track_total_hits === undefined ? (restInt ? true : 10000) : (b.track_total_hits as boolean | number);
  if (typeof trackTotal !== 'boolean' && !(Number(trackTotal) >= 0)) return null;
  if (restInt && typeof trackTotal !== 'boolean') return null; // the full search reports the error
  return { hits: [], total, sort: [], from: 0, size: 0, format: () => ({}), aggregations, maxScore: null, trackTotal, restInt, indices: shards };
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
