/** Shared helpers of aggregations: value sources, bucket keys, number formatting, percentiles. */
import { EsError, illegalArgument } from './errors';
import type { Doc, IndexView } from './doc';
import type { Field, Json, JsonObject } from './mapping';
import { isDate, isNumeric, isText, indexAnalyzer } from './fields';
import { DEFAULT_DATE_FORMAT, formatDate, parseDate } from './dates';
import { scriptRefused } from './query';
import { KahanSum } from '@mmdb/core';

export const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** How an aggregation reads values: the field, its type, missing, format. */
export interface ValueSource {
  readonly field?: Field;
  readonly values: (d: Doc) => Json[];
  readonly kind: 'number' | 'date' | 'string' | 'boolean' | 'other';
  readonly format?: string;
}

/** The `_index` metadata field as aggregations read it. */
export const INDEX_FIELD: Field = { path: '_index', type: 'keyword', def: {} };

export function valueSource(ixs: IndexView[], p: JsonObject, aggName: string): ValueSource {
  if (p.script !== undefined) throw scriptRefused(`aggregation ${aggName}`);
  const name = p.field === undefined ? undefined : String(p.field);
  // the `_index` metadata field: each document's index name, a keyword
  if (name === '_index') {
    const missing = p.missing === undefined ? undefined : String(p.missing);
    return { field: INDEX_FIELD, kind: 'string', values: (d) => (d.index.name ? [d.index.name] : missing === undefined ? [] : [missing]) };
  }
  const f = name === undefined ? undefined : ixs.map((ix) => ix.fields.get(name)).find((x) => x && x.type !== 'object');
  const missing = p.missing;
  if (f && isText(f) && f.def.fielddata !== true) {
    throw illegalArgument(`Text fields are not optimised for operations that require per-document field data like aggregations and sorting, so these operations are disabled by default. Please use a keyword field instead. Alternatively, set fielddata=true on [${f.path}] in order to load field data by uninverting the inverted index. Note that this can use significant memory.`);
  }
  const kind: ValueSource['kind'] = !f ? (p.value_type === 'date' ? 'date' : p.value_type === 'string' ? 'string' : typeof missing === 'number' ? 'number' : typeof missing === 'boolean' ? 'boolean' : typeof missing === 'string' ? 'string' : 'other')
    : isDate(f) ? 'date' : isNumeric(f) ? 'number' : f.type === 'boolean' ? 'boolean' : 'string';
  const fmt = p.format !== undefined ? String(p.format) : f && isDate(f) ? String(f.def.format ?? DEFAULT_DATE_FORMAT) : undefined;
  let missingVal: Json | undefined;
  if (missing !== undefined) {
    if (kind === 'date' && typeof missing === 'string') missingVal = parseDate(missing, fmt ?? DEFAULT_DATE_FORMAT) ?? Date.parse(missing);
    else if (kind === 'number') missingVal = Number(missing);
    else if (kind === 'boolean') missingVal = missing === true || missing === 'true';
    else missingVal = missing as Json;
  }
  const read = (d: Doc): Json[] => {
    if (!f) return [];
    if (isText(f)) return d.terms(f.path, indexAnalyzer(d.index, f));
    const own = d.index.fields.get(f.path);
    if (!own || own.type === 'object') return [];
    return d.values(f.path);
  };
  return {
    field: f,
    kind,
    format: fmt,
    values: missingVal === undefined ? read : (d) => { const v = read(d); return v.length ? v : [missingVal as Json]; },
  };
}

export function numbers(vs: ValueSource, docs: Doc[]): number[] {
  const out: number[] = [];
  for (const d of docs) for (const v of vs.values(d)) {
    const n = typeof v === 'boolean' ? (v ? 1 : 0) : Number(v);
    if (Number.isFinite(n)) out.push(n);
  }
  return out;
}

/** `value_as_string` for dates (and a `format` on numbers). */
export function asString(vs: ValueSource, n: number): string | undefined {
  if (vs.kind === 'date') return formatDate(n, vs.format);
  if (vs.format !== undefined && vs.kind === 'number') return decimalFormat(n, vs.format);
  return undefined;
}

/** Java DecimalFormat patterns (`0.00`, `#,##0.0`) enough for `format` on numeric aggs. */
export function decimalFormat(n: number, full: string): string {
  const m = /^([^#0,.]*)([#0,.]+)(.*)$/.exec(full);
  if (!m) return String(n);
  return m[1].replace(/'/g, '') + decimalCore(n, m[2]) + m[3].replace(/'/g, '');
}

function decimalCore(n: number, pattern: string): string {
  const [intPart, frac = ''] = pattern.split('.');
  const minFrac = (frac.match(/0/g) ?? []).length;
  const maxFrac = minFrac + (frac.match(/#/g) ?? []).length;
  let s = n.toFixed(maxFrac);
  if (maxFrac > minFrac) s = s.replace(/0+$/, (z) => z.slice(0, Math.max(0, z.length - (maxFrac - minFrac)))).replace(/\.$/, '');
  if (intPart.includes(',')) {
    const [i, f] = s.split('.');
    s = i.replace(/\B(?=(\d{3})+(?!\d))/g, ',') + (f !== undefined ? `.${f}` : '');
  }
  return s;
}

/** t-digest quantile over singleton centroids (Elasticsearch's result at small counts). */
export function tdigestQuantile(sorted: number[], q: number): number | null {
  const n = sorted.length;
  if (!n) return null;
  if (n === 1) return sorted[0];
  const index = q * n;
  if (index <= 0.5) return sorted[0];
  if (index >= n - 0.5) return sorted[n - 1];
  const lo = Math.floor(index - 0.5);
  const frac = index - 0.5 - lo;
  return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

/** HDR histogram value at a percentile (3 significant digits by default): the bucket's highest equivalent value. */
export function hdrPercentile(sorted: number[], p: number, digits = 3): number | null {
  const n = sorted.length;
  if (!n) return null;
  const count = Math.max(1, Math.floor((p / 100) * n + 0.5));
  const v = sorted[Math.min(n, count) - 1];
  const sub = 2 ** Math.ceil(Math.log2(2 * 10 ** digits));
  const minPos = sorted.find((x) => x > 0) ?? 1;
  const unit = 2 ** Math.floor(Math.log2(minPos)) / (sub / 2);
  if (v <= 0) return v;
  const width = Math.max(unit, 2 ** Math.floor(Math.log2(v)) / (sub / 2));
  const low = Math.floor(v / width) * width;
  return low + width - unit;
}

export function bucketKeyString(vs: ValueSource, key: Json): string | undefined {
  if (vs.kind === 'date') return formatDate(Number(key), vs.format);
  if (vs.kind === 'boolean') return key ? 'true' : 'false';
  return undefined;
}

export function badAgg(reason: string): EsError {
  return new EsError(400, 'parsing_exception', reason, { line: 1, col: 1 });
}

/** Elasticsearch's compensated sum of doubles, shared with the executor's `kahan_sum` (libs/core). */
export { KahanSum };

export function kahanSum(xs: readonly number[], f: (x: number) => number = (x) => x): number {
  const k = new KahanSum();
  for (const x of xs) k.add(f(x));
  return k.value;
}

/** `stats`' answer from its count, min, max and (compensated) sum: the aggregation code's and the plans' (plan-metrics.ts). */
export function statsOf(n: number, min: number | null, max: number | null, sum: number): JsonObject {
  return { count: n, min: n ? min : null, max: n ? max : null, avg: n ? sum / n : null, sum };
}

/** `extended_stats`' answer from stats, the (compensated) sum of squares and `sigma`, as Elasticsearch derives it. */
export function extendedStatsOf(n: number, min: number | null, max: number | null, sum: number, sq: number, sigma: number): JsonObject {
  const variance = n ? Math.max(0, (sq - (sum * sum) / n) / n) : null;
  const sampleVar = n > 1 ? Math.max(0, (sq - (sum * sum) / n) / (n - 1)) : null;
  const sd = variance === null ? null : Math.sqrt(variance);
  const avg = n ? sum / n : null;
  return {
    ...statsOf(n, min, max, sum), sum_of_squares: n ? sq : null, variance, variance_population: variance, variance_sampling: sampleVar,
    std_deviation: sd, std_deviation_population: sd, std_deviation_sampling: sampleVar === null ? null : Math.sqrt(sampleVar),
    std_deviation_bounds: {
      upper: avg === null ? null : avg + sigma * sd!, lower: avg === null ? null : avg - sigma * sd!,
      upper_population: avg === null ? null : avg + sigma * sd!, lower_population: avg === null ? null : avg - sigma * sd!,
      upper_sampling: avg === null || sampleVar === null ? null : avg + sigma * Math.sqrt(sampleVar), lower_sampling: avg === null || sampleVar === null ? null : avg - sigma * Math.sqrt(sampleVar),
    },
  };
}

/** `median_absolute_deviation` of sorted values (t-digest medians, as the aggregation code and the plans compute it). */
export function madOf(sorted: number[]): number | null {
  const med = tdigestQuantile(sorted, 0.5);
  if (med === null) return null;
  const dev = sorted.map((x) => Math.abs(x - med)).sort((a, b) => a - b);
  return tdigestQuantile(dev, 0.5);
}

/** `percentiles` of sorted values: t-digest, or HDR with `digits` significant digits; `str` prints a date's. */
export function percentilesOf(sorted: number[], percents: number[], digits: number | undefined, keyed: boolean, str?: (v: number) => string | undefined): JsonObject {
  const entries = percents.map((q) => {
    const v = digits !== undefined ? hdrPercentile(sorted, q, digits) : tdigestQuantile(sorted, q / 100);
    return { key: q, value: v, ...(v !== null && str ? { value_as_string: str(v) } : {}) };
  });
  if (!keyed) return { values: entries as unknown as Json };
  const values: JsonObject = {};
  for (const e of entries) {
    const k = Number.isInteger(e.key) ? `${e.key}.0` : String(e.key);
    values[k] = e.value;
    if (e.value_as_string !== undefined) values[`${k}_as_string`] = e.value_as_string ?? null;
  }
  return { values };
}

/** Min and max without spreading (an aggregation may see hundreds of thousands of values). */
export function minOf(xs: readonly number[]): number {
  let m = Infinity;
  for (const x of xs) if (x < m) m = x;
  return m;
}
export function maxOf(xs: readonly number[]): number {
  let m = -Infinity;
  for (const x of xs) if (x > m) m = x;
  return m;
}
