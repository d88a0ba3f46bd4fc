/**
 * auto_date_histogram as Elasticsearch's InternalAutoDateHistogram reduces it on one shard: the
 * roundings second, minute, hour, day, month, year (from `minimum_interval`), each with its inner
 * intervals (1/5/10/30 s and m, 1/3/12 h, 1/7 d, 1/3 M, 1/5/10/20/50/100 y). The first rounding
 * whose buckets from the first to the last value (empty ones included) number at most
 * `buckets` × its largest inner interval is taken; then, when more than `buckets` remain, the
 * smallest inner interval that brings them to `buckets` or fewer merges consecutive ones, each
 * merged bucket keyed by its first. The answer names the interval (`7d`).
 */
import { illegalArgument } from './errors';
import type { Doc } from './doc';
import type { Json, JsonObject } from './mapping';
import { addUnit, formatDate, roundDown, zoneOffset } from './dates';
import { valueSource } from './agg-util';
import { finishBuckets, type AggCtx } from './aggs';

interface Rounding { readonly unit: string; readonly abbrev: string; readonly inner: readonly number[]; readonly name: string }

const ROUNDINGS: readonly Rounding[] = [
  { unit: 's', abbrev: 's', inner: [1, 5, 10, 30], name: 'second' },
  { unit: 'm', abbrev: 'm', inner: [1, 5, 10, 30], name: 'minute' },
  { unit: 'h', abbrev: 'h', inner: [1, 3, 12], name: 'hour' },
  { unit: 'd', abbrev: 'd', inner: [1, 7], name: 'day' },
  { unit: 'M', abbrev: 'M', inner: [1, 3], name: 'month' },
  { unit: 'y', abbrev: 'y', inner: [1, 5, 10, 20, 50, 100], name: 'year' },
];

const FIXED: Record<string, number> = { s: 1000, m: 60000, h: 3600000, d: 86400000 };

/**
 * The start of the `unit` after the one starting at `k`: months and years by calendar; a fixed unit
 * in a zone rounded down from 1.5 units later, since a zone's day (hour) can be 23 or 25 hours long
 * (adding 24 hours to the start of a 25-hour day stays in it; to a 23-hour day's, passes the next start).
 */
function nextKey(k: number, unit: string, zone: string | undefined): number {
  if (!FIXED[unit]) return addUnit(k, 1, unit, zone);
  return zone ? roundDown(k + FIXED[unit] * 1.5, unit, zone) : k + FIXED[unit];
}

/** The number of buckets of `unit` from the one holding `min` to the one holding `max`. */
function span(min: number, max: number, unit: string, zone: string | undefined): number {
  const a = roundDown(min, unit, zone), b = roundDown(max, unit, zone);
  if (FIXED[unit] && !zone) return Math.round((b - a) / FIXED[unit]) + 1;
  if (unit === 'M' || unit === 'y') {
    const da = new Date(a), db = new Date(b);
    const months = (db.getUTCFullYear() - da.getUTCFullYear()) * 12 + db.getUTCMonth() - da.getUTCMonth();
    return (unit === 'y' ? Math.round(months / 12) : months) + 1;
  }
  // a zone's day is 23, 24 or 25 hours long: count local days (both ends are local midnights);
  // hours and shorter units start on whole UTC units of the zone's offset: count UTC time
  if (unit === 'd') return Math.round((b + zoneOffset(zone, b) - a - zoneOffset(zone, a)) / FIXED.d) + 1;
  return Math.round((b - a) / FIXED[unit]) + 1;
}

/** The parameters of an auto_date_histogram (Elasticsearch's errors for bad ones). */
export function autoParams(name: string, p: JsonObject): { target: number; zone: string | undefined; start: number } {
  const target = p.buckets === undefined ? 10 : Number(p.buckets);
  if (!(target >= 1)) throw illegalArgument(`[buckets] must be greater than or equal to 1. Found [${String(p.buckets)}] in [${name}]`);
  const zone = p.time_zone as string | undefined;
  let start = 0;
  if (p.minimum_interval !== undefined) {
    start = ROUNDINGS.findIndex((r) => r.name === String(p.minimum_interval));
    if (start < 0) throw illegalArgument(`minimum_interval must be one of [second, minute, hour, day, month, year]`);
  }
  return { target, zone, start };
}

/**
 * The rounding of values from `min` to `max`, its keys (empty ones included) and how many
 * consecutive keys one bucket merges (`inner`): shared by the aggregation code and the plans (plan-auto-date.ts).
 */
export function autoRounding(min: number, max: number, target: number, start: number, zone: string | undefined): { unit: string; abbrev: string; keys: number[]; inner: number } {
  let ri = start;
  while (ri < ROUNDINGS.length - 1 && span(min, max, ROUNDINGS[ri].unit, zone) > target * Math.max(...ROUNDINGS[ri].inner)) ri++;
  const r = ROUNDINGS[ri];
  // the rounding's buckets, empty ones included, then merged `inner` at a time
  const keys: number[] = [];
  for (let k = roundDown(min, r.unit, zone); k <= max; k = nextKey(k, r.unit, zone)) keys.push(k);
  let inner = 1;
  if (keys.length > target) inner = r.inner.find((i) => Math.ceil(keys.length / i) <= target) ?? r.inner[r.inner.length - 1];
  return { unit: r.unit, abbrev: r.abbrev, keys, inner };
}

/** The first interval's name when there are no values. */
export const emptyInterval = (start: number): string => `1${ROUNDINGS[start].abbrev}`;

export function autoDateHistogram(name: string, p: JsonObject, subs: JsonObject | undefined, docs: Doc[], ctx: AggCtx): JsonObject {
  const vs = valueSource(ctx.ixs, p, name);
  const { target, zone, start } = autoParams(name, p);
  const fmt = p.format !== undefined ? String(p.format) : vs.format;
  const values: Array<{ d: Doc; t: number }> = [];
  for (const d of docs) for (const v of vs.values(d)) { const t = Number(v); if (Number.isFinite(t)) values.push({ d, t }); }
  if (!values.length) return { buckets: [], interval: emptyInterval(start) };
  let min = Infinity, max = -Infinity;
  for (const { t } of values) { if (t < min) min = t; if (t > max) max = t; }
  const { unit, abbrev, keys, inner } = autoRounding(min, max, target, start, zone);
  const groups: Array<{ key: number; docs: Set<Doc> }> = [];
  const slot = new Map<number, number>();
  keys.forEach((k, i) => {
    if (i % inner === 0) groups.push({ key: k, docs: new Set() });
    slot.set(k, groups.length - 1);
  });
  for (const { d, t } of values) groups[slot.get(roundDown(t, unit, zone))!].docs.add(d);
  const buckets = finishBuckets(groups.map((g) => ({ b: { key_as_string: formatDate(g.key, fmt, zone), key: g.key, doc_count: g.docs.size } as JsonObject, docs: [...g.docs] })), subs, ctx, name);
  return { buckets: buckets as Json, interval: `${inner}${abbrev}` };
}
