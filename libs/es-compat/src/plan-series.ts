/**
 * Histograms and date histograms as grouped nodes: the bucket key as an expression over the row
 * (a number's typed column; a date's epoch-ms column, plan-dates.ts `timeKey`), and the answer
 * shaped from the node's keys and counts as the aggregation code shapes it (empty buckets,
 * `extended_bounds`, `order`, `keyed`, `format`, sub-aggregations that are calls of the node).
 */
import { lit, type Expr } from '@mmdb/plan';
import type { JsonObject } from './mapping';
import type { IndexView } from './doc';
import { fieldKind, typed, valueOf, type Kind, type Metric } from './plan-aggs';
import { dateKey, timeKey, zonedKey } from './plan-dates';
import { zoneOffsetMs } from '@mmdb/core';
import { DEFAULT_DATE_FORMAT, formatDate, parseDateMath, zoneOffset } from './dates';
import { decimalFormat } from './agg-util';
import { parseDuration } from './agg-buckets';
import { resolvePath } from './agg-pipelines';
import { javaDouble } from './plan-buckets';

const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
/** An order path naming a metric sub-aggregation or one of its stats. */
const SUB_PATH = /^[A-Za-z0-9_-]+(?:\.[a-z_0-9]+)?$/;
/** Time zones of one fixed offset (dates.ts `zoneOffset` reads them so): `Z`, `UTC`, `GMT`, `+01:00`, `-0530`. */
const FIXED_ZONE = /^(?:[Zz]|UTC|utc|GMT|[+-]\d{1,2}(?::?\d{2})?)$/;

/**
 * A histogram or date_histogram (the `plan-dates.ts` subset): its bucket key over the row, the
 * rows it counts, the next key after one (to fill empty buckets) and its shaping (`min_doc_count`,
 * `extended_bounds`, `order`, `keyed`: done here over the grouped node's keys, as the aggregation
 * code does over its buckets).
 */
export interface Series {
  readonly key: Expr;
  readonly cond: Expr;
  readonly next: (k: number) => number;
  readonly minDoc: number;
  /** date_histogram: the field's format for `key_as_string`, and the time zone it prints in. */
  readonly format?: string;
  readonly zone?: string;
  /** histogram with `format`: `key_as_string` as Java's DecimalFormat prints the key. */
  readonly numFormat?: string;
  /** histogram with `extended_bounds`: the keys of its bounds (the empty buckets reach them). */
  readonly bounds?: readonly [number, number];
  readonly order?: ReadonlyArray<{ readonly key: string; readonly desc: boolean }>;
  readonly keyed?: boolean;
  /** Sub-aggregations whose calls are in the grouped node (plan-level.ts `bucketSubs`): each bucket's answer from its row. */
  readonly subs?: ReadonlyArray<{ readonly name: string; readonly m: Metric }>;
  /** The input holds a row per value of the field (plan-multi.ts): a document counts once per bucket (distinct document, key pairs). */
  readonly perDoc?: boolean;
}

/**
 * `order` by `_key` / `_count` or a metric sub-aggregation (`sub`, `sub.<stat>`: plan-level.ts
 * checks that it names one), one or a list; `keyed` a boolean; null when the options hold anything else.
 */
function shapeOptions(p: JsonObject): Pick<Series, 'order' | 'keyed'> | null {
  if (p.keyed !== undefined && typeof p.keyed !== 'boolean') return null;
  let order: Array<{ key: string; desc: boolean }> | undefined;
  if (p.order !== undefined) {
    order = [];
    for (const o of Array.isArray(p.order) ? p.order : [p.order]) {
      if (!isObj(o) || Object.keys(o).length !== 1) return null;
      const [k] = Object.keys(o);
      const dir = String(o[k]).toLowerCase();
      const key = k === '_term' || k === '_time' ? '_key' : k;
      if ((key !== '_key' && key !== '_count' && !SUB_PATH.test(key)) || (dir !== 'asc' && dir !== 'desc')) return null;
      order.push({ key, desc: dir === 'desc' });
    }
  }
  return { ...(order ? { order } : {}), ...(p.keyed === true ? { keyed: true } : {}) };
}

export function seriesSpec(ix: IndexView, type: string, p: JsonObject, fields: Map<string, Kind>): Series | null {
  const field = p.field;
  const minDoc = p.min_doc_count === undefined ? 0 : p.min_doc_count;
  const shape = shapeOptions(p);
  if (typeof field !== 'string' || !Number.isInteger(minDoc) || (minDoc as number) < 0 || !shape) return null;
  if (type === 'date_histogram') {
    const kind = fieldKind(ix, field, 'date');
    if (kind === 'time') return timeSeries(ix, field, p, minDoc as number, shape, fields);
    const dk = kind && Object.keys(p).every((x) => ['field', 'calendar_interval', 'fixed_interval', 'min_doc_count', 'order', 'keyed'].includes(x)) ? dateKey(field, p.calendar_interval, p.fixed_interval) : null;
    if (!dk) return null;
    fields.set(field, 'date');
    return { key: dk.key, next: dk.next, cond: typed(field, 'date'), minDoc: minDoc as number, format: String(ix.fields.get(field)!.def.format ?? DEFAULT_DATE_FORMAT), ...shape };
  }
  if (type !== 'histogram') return null;
  const k = fieldKind(ix, field, 'filter');
  if ((k !== 'integer' && k !== 'number') || Object.keys(p).some((x) => !['field', 'interval', 'min_doc_count', 'offset', 'extended_bounds', 'order', 'keyed', 'format', 'missing'].includes(x))) return null;
  if (p.format !== undefined && typeof p.format !== 'string') return null;
  // `missing`: a document without a value is in the bucket of that value (every document of the input counts)
  const missing = p.missing;
  if (missing !== undefined && (typeof missing !== 'number' || !Number.isFinite(missing))) return null;
  // keys computed with the aggregation code's double arithmetic, in its order (fractional intervals and offsets included:
  // a key and the empty buckets after it, k + interval, are the same doubles on both paths)
  const interval = p.interval, offset = p.offset ?? 0;
  if (typeof interval !== 'number' || !(interval > 0) || !Number.isFinite(interval) || typeof offset !== 'number' || !Number.isFinite(offset) || Math.abs(offset) > 2 ** 40) return null;
  const iv = interval as number, off = offset as number;
  const eb = p.extended_bounds;
  if (eb !== undefined && (!isObj(eb) || Object.keys(eb).some((x) => x !== 'min' && x !== 'max') || typeof eb.min !== 'number' || typeof eb.max !== 'number' || !Number.isFinite(eb.min) || !Number.isFinite(eb.max))) return null;
  fields.set(field, k);
  // key = floor((v - offset) / interval) · interval + offset (CAST truncates toward zero: one less below it)
  const value: Expr = missing === undefined ? valueOf(field) : { kind: 'call', name: 'coalesce', args: [valueOf(field), lit(missing)] };
  const v: Expr = { kind: 'binary', op: '*', left: value, right: lit(1, true) };
  const q: Expr = { kind: 'binary', op: '/', left: off ? { kind: 'binary', op: '-', left: v, right: lit(off) } : v, right: lit(iv) };
  const t: Expr = { kind: 'cast', arg: q, to: 'integer' };
  const floor: Expr = { kind: 'case', whens: [{ when: { kind: 'binary', op: '<', left: q, right: t }, then: { kind: 'binary', op: '-', left: t, right: lit(1) } }], else: t };
  const scaled: Expr = { kind: 'binary', op: '*', left: floor, right: lit(iv) };
  const keyOf = (x: number) => Math.floor((x - off) / iv) * iv + off;
  return {
    key: off ? { kind: 'binary', op: '+', left: scaled, right: lit(off) } : scaled, next: (x) => x + iv, cond: missing === undefined ? typed(field, k) : lit(true), minDoc: minDoc as number,
    ...(isObj(eb) ? { bounds: [keyOf(eb.min as number), keyOf(eb.max as number)] as const } : {}), ...(typeof p.format === 'string' ? { numFormat: p.format } : {}), ...shape,
  };
}

/**
 * A date_histogram over the field's typed column (epoch ms): `calendar_interval` / `fixed_interval`,
 * `offset`, `format`, `extended_bounds` (parsed as the aggregation code parses them), `time_zone`
 * of a fixed offset (the keys are the UTC ones with the offset moved by it).
 */
function timeSeries(ix: IndexView, field: string, p: JsonObject, minDoc: number, shape: Pick<Series, 'order' | 'keyed'>, fields: Map<string, Kind>): Series | null {
  if (Object.keys(p).some((x) => !['field', 'calendar_interval', 'fixed_interval', 'interval', 'min_doc_count', 'order', 'keyed', 'offset', 'format', 'extended_bounds', 'time_zone'].includes(x))) return null;
  if (p.interval !== undefined && (p.calendar_interval !== undefined || p.fixed_interval !== undefined)) return null;
  if (p.format !== undefined && typeof p.format !== 'string') return null;
  // a fixed-offset time zone: every key is the UTC one shifted by it (a named zone's offset changes: the aggregation code answers)
  const zone = p.time_zone;
  if (zone !== undefined && typeof zone !== 'string') return null;
  // a named zone (its offset changes with daylight saving): keys with the executor's tz_offset per row (plan-dates.ts `zonedKey`)
  const named = zone !== undefined && !FIXED_ZONE.test(zone);
  if (named && zoneOffsetMs(zone, 0) === null) return null; // the aggregation code reports the unknown zone
  const shift = zone === undefined || named ? 0 : zoneOffset(zone, 0);
  const format = p.format !== undefined ? (p.format as string) : String(ix.fields.get(field)!.def.format ?? DEFAULT_DATE_FORMAT);
  let offset = 0, bounds: [number, number] | undefined;
  try {
    if (p.offset !== undefined) offset = parseDuration(String(p.offset));
    const eb = p.extended_bounds;
    if (eb !== undefined) {
      if (!isObj(eb) || eb.min === undefined || eb.max === undefined || Object.keys(eb).some((x) => x !== 'min' && x !== 'max')) return null;
      bounds = [parseDateMath(eb.min, format, zone), parseDateMath(eb.max, format, zone)];
    }
  } catch {
    return null; // the aggregation code reports it
  }
  if (!Number.isSafeInteger(offset)) return null;
  // the legacy `interval`: a calendar unit when it names one, else a fixed interval (as the aggregation code reads it)
  const key = named ? (c: unknown, f: unknown) => zonedKey(valueOf(field), c, f, offset, zone as string) : (c: unknown, f: unknown) => timeKey(valueOf(field), c, f, offset - shift);
  const tk = p.interval !== undefined ? key(p.interval, undefined) ?? key(undefined, p.interval) : key(p.calendar_interval, p.fixed_interval);
  if (!tk || (bounds && !bounds.every(Number.isSafeInteger))) return null;
  fields.set(field, 'time');
  // the bounds' keys as the aggregation code computes them: its key function over each bound
  return { key: tk.key, next: tk.next, cond: typed(field, 'time'), minDoc, format, ...(zone !== undefined ? { zone } : {}), ...(bounds ? { bounds: [tk.keyOf(bounds[0]), tk.keyOf(bounds[1])] as const } : {}), ...shape };
}

/** The buckets from the keys' counts (ascending): the empty ones between them (and the bounds) when min_doc_count is 0; then the order and keyed form. */
export function seriesBuckets(s: Series, grouped: Map<number, number>, rows?: Array<Record<string, unknown>>): JsonObject {
  const counts = grouped;
  const calls = (s.subs ?? []).flatMap((x) => x.m.calls);
  // each key's row of sub-aggregation calls; an empty bucket's: counts 0, the rest null
  const byKey = new Map<number, Record<string, unknown>>();
  if (rows) for (const r of rows) byKey.set(Number(r.key), r);
  const empty = Object.fromEntries(calls.map((c) => [c.name, c.fn === 'count' ? 0 : null]));
  const subsOf = (k: number): JsonObject => Object.fromEntries((s.subs ?? []).map((x) => [x.name, x.m.value(byKey.get(k) ?? empty)]));
  let keys = [...counts.keys()].sort((a, b) => a - b);
  if (s.minDoc === 0 && (keys.length || s.bounds)) {
    let lo = keys.length ? keys[0] : s.bounds![0], hi = keys.length ? keys[keys.length - 1] : s.bounds![1];
    if (s.bounds) { lo = Math.min(lo, s.bounds[0]); hi = Math.max(hi, s.bounds[1]); }
    const all: number[] = [];
    for (let k = lo; k <= hi && all.length < 100000; k = s.next(k)) all.push(k);
    keys = all;
  }
  const list = keys.map((k): JsonObject => ({ key: k, ...(s.format !== undefined ? { key_as_string: formatDate(k, s.format, s.zone) } : s.numFormat !== undefined ? { key_as_string: decimalFormat(k, s.numFormat) } : {}), doc_count: counts.get(k) ?? 0, ...(s.subs ? subsOf(k) : {}) }))
    .filter((b) => (b.doc_count as number) >= s.minDoc);
  if (s.order) {
    const full = s.order.some((o) => o.key === '_key') ? s.order : [...s.order, { key: '_key', desc: false }];
    // as the aggregation code's sortBuckets: a sub-aggregation's value read by its path, null lowest
    const val = (b: JsonObject, path: string): number => { const v = resolvePath(b, path); return v === null ? -Infinity : Number(v); };
    list.sort((a, b) => {
      for (const o of full) {
        let c = o.key === '_count' ? (a.doc_count as number) - (b.doc_count as number) : o.key === '_key' ? (a.key as number) - (b.key as number) : val(a, o.key) - val(b, o.key);
        if (Number.isNaN(c)) c = 0;
        if (c !== 0) return o.desc ? -c : c;
      }
      return 0;
    });
  }
  if (s.keyed) return { buckets: Object.fromEntries(list.map((b) => [String(b.key_as_string ?? javaDouble(b.key as number)), b])) };
  return { buckets: list };
}
