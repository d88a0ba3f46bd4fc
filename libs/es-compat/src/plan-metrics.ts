/**
 * Metric aggregations as calls of an aggregate node (plan-level.ts puts them in the level's node,
 * plan-terms.ts and plan-series.ts in a grouped one): `value_count` / `cardinality` (keyword and
 * number fields), `min`, `max`, `sum`, `avg`, `stats`, `extended_stats` (number and date fields)
 * `weighted_avg` (number fields), `percentile_ranks` (number and date fields: exact ranks, a
 * conditional count per value), `percentiles` and `median_absolute_deviation` (the executor's
 * `sorted_values(v)`: the values ascending, from which the aggregation code's own t-digest / HDR
 * functions compute them). Sums of doubles and dates are `kahan_sum(v, _seq_no)`, the
 * executor's Elasticsearch compensated sum in index order (libs/sql exec/compensated.ts), so they
 * equal the aggregation code's `KahanSum` and Elasticsearch's; integer sums stay `total` (exact,
 * then one rounding to a double). The answers are shaped by the aggregation code's own helpers
 * (agg-util.ts `statsOf`, `extendedStatsOf`).
 */
import { col, lit, type AggregateCall, type BinaryOp, type Expr } from '@mmdb/plan';
import type { JsonObject } from './mapping';
import type { IndexView } from './doc';
import { decimalFormat, extendedStatsOf, madOf, percentilesOf, statsOf } from './agg-util';
import { DEFAULT_DATE_FORMAT, formatDate, parseDate } from './dates';
import { fieldKind, valueOf, type Kind } from './plan-aggs';

const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
export const METRICS = new Set(['value_count', 'cardinality', 'min', 'max', 'sum', 'avg', 'stats', 'extended_stats', 'weighted_avg', 'percentile_ranks', 'percentiles', 'median_absolute_deviation']);
/** value_count and cardinality count keyword values too; the others need numbers. */
const COUNTS = new Set(['value_count', 'cardinality']);
/** Metrics whose answer holds min, max, avg and sum (a date's also as strings). */
const STATS = new Set(['stats', 'extended_stats']);

/** A metric aggregation: its calls in an aggregate node (names prefixed) and its answer from the node's row. */
export interface Metric {
  readonly calls: AggregateCall[];
  readonly value: (row: Record<string, unknown>) => JsonObject;
  /** The value a terms `order` names (`sub` or `sub.<stat>`) as an expression over the grouped node's columns, or null. */
  readonly orderBy: (stat: string | undefined) => Expr | null;
}

const num = (x: unknown): number | null => (x === null || x === undefined ? null : Number(x));
const bin = (op: BinaryOp, left: Expr, right: Expr): Expr => ({ kind: 'binary', op, left, right });
const real = (arg: Expr): Expr => ({ kind: 'cast', arg, to: 'real' });
/** A sum of a number kind's values: exact integers (`total`), or Elasticsearch's compensated sum in index order. */
const sumCall = (name: string, k: Kind, v: Expr): AggregateCall =>
  k === 'integer' ? { name, fn: 'total', args: [v] } : { name, fn: 'kahan_sum', args: [v, col('_seq_no')] };

export function metric(ix: IndexView, type: string, p: JsonObject, prefix: string, fields: Map<string, Kind>): Metric | null {
  if (type === 'weighted_avg') return weightedAvg(ix, p, prefix, fields);
  if (type === 'percentile_ranks') return percentileRanks(ix, p, prefix, fields);
  if (type === 'percentiles' || type === 'median_absolute_deviation') return orderStats(ix, type, p, prefix, fields);
  const field = p.field;
  // extended_stats' sigma: a number >= 0; `format` a string; `missing` a value of the field's kind (the aggregation code reports anything else)
  const known = (x: string): boolean => x === 'field' || x === 'missing' || (x === 'format' && typeof p.format === 'string') || (type === 'extended_stats' && x === 'sigma' && typeof p.sigma === 'number' && p.sigma >= 0);
  if (typeof field !== 'string' || !Object.keys(p).every(known)) return null;
  const k = fieldKind(ix, field, COUNTS.has(type) ? 'count' : 'metric');
  if (k !== 'integer' && k !== 'keyword' && k !== 'number' && k !== 'time') return null;
  if (k === 'keyword' && !COUNTS.has(type)) return null;
  const format = k === 'time' ? (p.format as string | undefined) ?? String(ix.fields.get(field)!.def.format ?? DEFAULT_DATE_FORMAT) : undefined;
  const missing = p.missing === undefined ? undefined : missingValue(k, p.missing, format);
  if (missing === null) return null;
  fields.set(field, k);
  // a document without a value counts `missing` (as the aggregation code's value source adds it)
  const v: Expr = missing === undefined ? valueOf(field) : { kind: 'call', name: 'coalesce', args: [valueOf(field), lit(missing)] };
  const sk: Kind = k === 'integer' && typeof missing === 'number' && !Number.isInteger(missing) ? 'number' : k;
  const calls: AggregateCall[] = [{ name: `${prefix}_c`, fn: 'count', args: [v], ...(type === 'cardinality' ? { distinct: true } : {}) }];
  // only the calls the answer reads (a compensated sum keeps its values)
  if (type === 'min' || STATS.has(type)) calls.push({ name: `${prefix}_min`, fn: 'min', args: [v] });
  if (type === 'max' || STATS.has(type)) calls.push({ name: `${prefix}_max`, fn: 'max', args: [v] });
  if (type === 'sum' || type === 'avg' || STATS.has(type)) calls.push(sumCall(`${prefix}_sum`, sk, v)); // total / kahan_sum: a double like ES's sum, where SQL's sum of longs near 2^63 would overflow
  if (type === 'extended_stats') calls.push(sumCall(`${prefix}_sq`, k === 'integer' ? 'number' : k, bin('*', real(v), real(v))));
  const c = col(`${prefix}_c`);
  const stat: Record<string, Expr> = COUNTS.has(type) ? {} : {
    count: c, min: col(`${prefix}_min`), max: col(`${prefix}_max`),
    sum: { kind: 'case', whens: [{ when: { kind: 'is_null', arg: col(`${prefix}_sum`) }, then: lit(0) }], else: col(`${prefix}_sum`) },
    avg: { kind: 'case', whens: [{ when: bin('=', c, lit(0)), then: lit(null) }], else: bin('/', col(`${prefix}_sum`), c) },
  };
  // a date's values also as strings in its format, a number's in a `format` given (as the aggregation code prints them)
  const numFormat = k !== 'time' && typeof p.format === 'string' ? p.format : undefined;
  const withStr = (r: JsonObject, keys: string[]): JsonObject => {
    for (const x of keys) {
      if (typeof r[x] !== 'number') continue;
      if (format !== undefined) r[`${x}_as_string`] = formatDate(r[x] as number, format);
      else if (numFormat !== undefined) r[`${x}_as_string`] = decimalFormat(r[x] as number, numFormat);
    }
    return r;
  };
  return {
    orderBy: (s) => (STATS.has(type) ? (s !== undefined ? stat[s] ?? null : null) : s !== undefined ? null : COUNTS.has(type) ? c : stat[type]),
    calls,
    value: (row): JsonObject => {
      const n = Number(row[`${prefix}_c`]), sum = num(row[`${prefix}_sum`]) ?? 0, min = num(row[`${prefix}_min`]), max = num(row[`${prefix}_max`]);
      if (type === 'stats') return withStr(statsOf(n, min, max, sum), ['min', 'max', 'avg', 'sum']);
      if (type === 'extended_stats') return withStr(extendedStatsOf(n, min, max, sum, num(row[`${prefix}_sq`]) ?? 0, p.sigma === undefined ? 2 : (p.sigma as number)), ['min', 'max', 'avg', 'sum']);
      const value = COUNTS.has(type) ? n : type === 'min' ? min : type === 'max' ? max : type === 'sum' ? sum : n ? sum / n : null;
      return COUNTS.has(type) ? { value } : withStr({ value }, ['value']);
    },
  };
}

/** A metric's `missing` as a value of the field's kind (a date's parsed as the aggregation code parses it), or null when it is not one. */
function missingValue(k: Kind, m: unknown, format: string | undefined): string | number | null {
  if (k === 'keyword') return typeof m === 'string' ? m : null;
  if (k === 'time' && typeof m === 'string') {
    let t: number | null;
    try {
      t = parseDate(m, format) ?? Date.parse(m);
    } catch {
      return null; // the aggregation code reports it
    }
    return Number.isFinite(t) ? t : null;
  }
  return typeof m === 'number' && Number.isFinite(m) ? m : null;
}

/**
 * `weighted_avg` of a number field weighted by another: each document holding both adds
 * value · weight and weight (Elasticsearch's two compensated sums, in index order).
 */
function weightedAvg(ix: IndexView, p: JsonObject, prefix: string, fields: Map<string, Kind>): Metric | null {
  // each side a number field, with a `missing` number (a document without a value counts it); `format` (the answer has no string)
  const side = (x: unknown): { field: string; missing?: number } | null =>
    isObj(x) && typeof x.field === 'string' && Object.keys(x).every((k) => k === 'field' || (k === 'missing' && typeof x.missing === 'number' && Number.isFinite(x.missing)))
      ? { field: x.field, ...(x.missing !== undefined ? { missing: x.missing as number } : {}) } : null;
  const vs = side(p.value), ws = side(p.weight);
  if (!vs || !ws || Object.keys(p).some((x) => x !== 'value' && x !== 'weight' && !(x === 'format' && typeof p.format === 'string'))) return null;
  const vk = fieldKind(ix, vs.field, 'metric'), wk = fieldKind(ix, ws.field, 'metric');
  if ((vk !== 'integer' && vk !== 'number') || (wk !== 'integer' && wk !== 'number')) return null;
  fields.set(vs.field, vk).set(ws.field, wk);
  const read = (s: { field: string; missing?: number }): Expr => (s.missing === undefined ? valueOf(s.field) : { kind: 'call', name: 'coalesce', args: [valueOf(s.field), lit(s.missing)] });
  const v = read(vs), w = read(ws);
  const both: Expr = bin('and', { kind: 'is_null', arg: v, not: true }, { kind: 'is_null', arg: w, not: true });
  const when = (e: Expr): Expr => ({ kind: 'case', whens: [{ when: both, then: e }] });
  const calls: AggregateCall[] = [
    sumCall(`${prefix}_vw`, 'number', when(bin('*', real(v), real(w)))),
    sumCall(`${prefix}_w`, 'number', when(real(w))),
  ];
  const value = (row: Record<string, unknown>): number | null => {
    const w = Number(row[`${prefix}_w`]);
    return w ? Number(row[`${prefix}_vw`]) / w : null;
  };
  return { calls, value: (row) => ({ value: value(row) }), orderBy: (s) => (s === undefined ? bin('/', col(`${prefix}_vw`), { kind: 'case', whens: [{ when: bin('=', col(`${prefix}_w`), lit(0)), then: lit(null) }], else: col(`${prefix}_w`) }) : null) };
}

/**
 * `percentile_ranks`: per value v, the share of the values at most v (100 · count(x ≤ v) / count(x)),
 * exact, as the aggregation code computes it; `keyed` as a boolean, `missing`. Anything else: null.
 */
function percentileRanks(ix: IndexView, p: JsonObject, prefix: string, fields: Map<string, Kind>): Metric | null {
  const field = p.field, values = p.values;
  if (typeof field !== 'string' || !Array.isArray(values) || !values.length || !values.every((v) => typeof v === 'number' && Number.isFinite(v))) return null;
  // `hdr` / `tdigest` / `format`: the ranks are exact whatever they say (as the aggregation code's)
  if (Object.keys(p).some((x) => !['field', 'values', 'keyed', 'missing', 'hdr', 'tdigest', 'format'].includes(x)) || (p.keyed !== undefined && typeof p.keyed !== 'boolean')) return null;
  if ((p.hdr !== undefined && !isObj(p.hdr)) || (p.tdigest !== undefined && !isObj(p.tdigest)) || (p.format !== undefined && typeof p.format !== 'string')) return null;
  const k = fieldKind(ix, field, 'metric');
  if (k !== 'integer' && k !== 'number' && k !== 'time') return null;
  const missing = p.missing === undefined ? undefined : missingValue(k, p.missing, k === 'time' ? (p.format as string | undefined) ?? String(ix.fields.get(field)!.def.format ?? DEFAULT_DATE_FORMAT) : undefined);
  if (missing === null) return null;
  fields.set(field, k);
  const v: Expr = missing === undefined ? valueOf(field) : { kind: 'call', name: 'coalesce', args: [valueOf(field), lit(missing)] };
  const at = values as number[];
  const calls: AggregateCall[] = [
    { name: `${prefix}_c`, fn: 'count', args: [v] },
    ...at.map((x, i): AggregateCall => ({ name: `${prefix}_${i}`, fn: 'count', args: [{ kind: 'case', whens: [{ when: bin('<=', v, lit(x)), then: lit(1) }] }] })),
  ];
  const key = (x: number): string => (Number.isInteger(x) ? `${x}.0` : String(x));
  return {
    calls,
    orderBy: () => null,
    value: (row) => {
      const n = Number(row[`${prefix}_c`]);
      const entries = at.map((x, i) => ({ key: x, value: n ? (100 * Number(row[`${prefix}_${i}`])) / n : null }));
      return p.keyed === false ? { values: entries } : { values: Object.fromEntries(entries.map((e) => [key(e.key), e.value])) };
    },
  };
}

/**
 * `percentiles` (`percents`, `keyed`, `hdr` digits, `tdigest` compression, which the t-digest of
 * the aggregation code does not read, `missing`, `format` of a date) and
 * `median_absolute_deviation` (`compression`, `missing`) over `sorted_values(v)`; null for
 * anything else or anything the aggregation code reports.
 */
function orderStats(ix: IndexView, type: string, p: JsonObject, prefix: string, fields: Map<string, Kind>): Metric | null {
  const field = p.field;
  const pos = (x: unknown): boolean => typeof x === 'number' && Number.isFinite(x) && x > 0;
  const opts: Record<string, (v: unknown) => boolean> = type === 'percentiles'
    ? {
      percents: (v) => Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'number' && Number.isFinite(x)),
      keyed: (v) => typeof v === 'boolean',
      hdr: (v) => isObj(v) && Object.keys(v).every((x) => x === 'number_of_significant_value_digits') && (v.number_of_significant_value_digits === undefined || (Number.isInteger(v.number_of_significant_value_digits) && (v.number_of_significant_value_digits as number) >= 0 && (v.number_of_significant_value_digits as number) <= 5)),
      tdigest: (v) => isObj(v) && Object.keys(v).every((x) => x === 'compression') && (v.compression === undefined || (typeof v.compression === 'number' && v.compression >= 0)),
      format: (v) => typeof v === 'string',
    }
    : { compression: pos };
  if (typeof field !== 'string' || Object.keys(p).some((x) => x !== 'field' && x !== 'missing' && !opts[x]?.(p[x])) || (p.hdr !== undefined && p.tdigest !== undefined)) return null;
  const k = fieldKind(ix, field, 'metric');
  if (k !== 'integer' && k !== 'number' && k !== 'time') return null;
  const format = k === 'time' ? (p.format as string | undefined) ?? String(ix.fields.get(field)!.def.format ?? DEFAULT_DATE_FORMAT) : undefined;
  const missing = p.missing === undefined ? undefined : missingValue(k, p.missing, format);
  if (missing === null) return null;
  fields.set(field, k);
  const v: Expr = missing === undefined ? valueOf(field) : { kind: 'call', name: 'coalesce', args: [valueOf(field), lit(missing)] };
  const calls: AggregateCall[] = [{ name: `${prefix}_v`, fn: 'sorted_values', args: [v] }];
  const sorted = (row: Record<string, unknown>): number[] => (typeof row[`${prefix}_v`] === 'string' ? (JSON.parse(row[`${prefix}_v`] as string) as number[]) : []);
  if (type === 'median_absolute_deviation') return { calls, orderBy: () => null, value: (row) => ({ value: madOf(sorted(row)) }) };
  const percents = (p.percents as number[] | undefined) ?? [1, 5, 25, 50, 75, 95, 99];
  const digits = isObj(p.hdr) ? ((p.hdr.number_of_significant_value_digits as number | undefined) ?? 3) : undefined;
  const str = format !== undefined ? (x: number) => formatDate(x, format) : undefined;
  return { calls, orderBy: () => null, value: (row) => percentilesOf(sorted(row), percents, digits, p.keyed !== false, str) };
}
