/**
 * Dates in aggregate plans (`date_histogram`, plan-aggs.ts). The SQL expression language has no
 * date type, so a date field maps only when every value in `_source` is a UTC timestamp string of
 * a fixed shape (`yyyy-MM-dd`, `yyyy-MM-ddTHH:mm:ssZ`, `yyyy-MM-ddTHH:mm:ss.SSSZ`, years 1000+),
 * which `substr` and integer arithmetic turn into epoch milliseconds (days from the civil date,
 * H. Hinnant's algorithm). Calendar months, quarters and years are the epoch of the first day;
 * days, hours, minutes, seconds and fixed intervals are floor(t / interval) · interval; weeks start
 * on Monday. Anything else (other formats, time zones, offsets, epoch numbers) takes the
 * aggregation code over the view.
 */
import { col, lit, type Expr } from '@mmdb/plan';
import { addUnit, roundDown, zoneOffset } from './dates';
import type { IndexView } from './doc';

const call = (name: string, ...args: Expr[]): Expr => ({ kind: 'call', name, args });
const bin = (op: '+' | '-' | '*' | '/' | '<' | 'and' | 'or' | '<=', left: Expr, right: Expr): Expr => ({ kind: 'binary', op, left, right } as Expr);
const int = (v: Expr, from: number, n: number): Expr => ({ kind: 'cast', arg: call('substr', v, lit(from), lit(n)), to: 'integer' });
const D = '[0-9]';
const DAY = `[1-9]${D}${D}${D}-[0-1]${D}-[0-3]${D}`;
const TIME = `T[0-2]${D}:[0-5]${D}:[0-5]${D}`;
/** The value shapes a date field may hold for the plans (GLOB patterns, whole value). */
const SHAPES = [DAY, `${DAY}${TIME}Z`, `${DAY}${TIME}.${D}${D}${D}Z`];
/** Formats whose strings of those shapes parse to the UTC instant they spell. */
const FORMATS = new Set([undefined, 'strict_date_optional_time||epoch_millis', 'strict_date_optional_time', 'date_optional_time', 'date_optional_time||epoch_millis']);
const CAL: Record<string, string> = { minute: 'm', '1m': 'm', hour: 'h', '1h': 'h', day: 'd', '1d': 'd', week: 'w', '1w': 'w', month: 'M', '1M': 'M', quarter: 'q', '1q': 'q', year: 'y', '1y': 'y', second: 's', '1s': 's' };
const FIXED: Record<string, number> = { ms: 1, s: 1000, m: 60000, h: 3600000, d: 86400000 };
const MS: Record<string, number> = { s: 1000, m: 60000, h: 3600000, d: 86400000, w: 604800000 };

const valueOf = (f: string): Expr => call('json_extract', col('_source'), lit(`$.${f}`));

/** Whether a date field's mapping lets its values be read by the plans (default formats, indexed). */
export function planDateField(ix: IndexView, name: string): boolean {
  const f = ix.fields.get(name);
  return !!f && f.type === 'date' && FORMATS.has(f.def.format as string | undefined);
}

/** A value of the field that is present, not null and not of a plan shape (the plain-value check counts them). */
export function badDate(f: string): Expr {
  const v = valueOf(f);
  const type = call('json_type', col('_source'), lit(`$.${f}`));
  const shaped = SHAPES.map((p): Expr => ({ kind: 'like', arg: v, pattern: lit(p), glob: true })).reduce((a, b) => bin('or', a, b));
  const ok = bin('or', bin('or', { kind: 'is_null', arg: type }, { kind: 'binary', op: '=', left: type, right: lit('null') }), bin('and', { kind: 'binary', op: '=', left: type, right: lit('text') }, shaped));
  return { kind: 'unary', op: 'not', arg: ok } as Expr;
}

/** Days since 1970-01-01 of a civil date (y ≥ 1000, so every division is of non-negative integers). */
function days(y: Expr, m: Expr, d: Expr): Expr {
  const early: Expr = bin('<=', m, lit(2));
  const yy: Expr = { kind: 'case', whens: [{ when: early, then: bin('-', y, lit(1)) }], else: y };
  const era = bin('/', yy, lit(400));
  const yoe = bin('-', yy, bin('*', era, lit(400)));
  const mp: Expr = { kind: 'case', whens: [{ when: early, then: bin('+', m, lit(9)) }], else: bin('-', m, lit(3)) };
  const doy = bin('-', bin('+', bin('/', bin('+', bin('*', lit(153), mp), lit(2)), lit(5)), d), lit(1));
  const doe = bin('+', bin('-', bin('+', bin('*', yoe, lit(365)), bin('/', yoe, lit(4))), bin('/', yoe, lit(100))), doy);
  return bin('-', bin('+', bin('*', era, lit(146097)), doe), lit(719468));
}

/** floor((t − shift) / step) · step + shift (the cast truncates toward zero: one less below it). */
function floorTo(t: Expr, step: number, shift = 0): Expr {
  const q = bin('/', bin('*', bin('-', t, lit(shift)), lit(1, true)), lit(step));
  const tr: Expr = { kind: 'cast', arg: q, to: 'integer' };
  const fl: Expr = { kind: 'case', whens: [{ when: bin('<', q, tr), then: bin('-', tr, lit(1)) }], else: tr };
  return bin('+', bin('*', fl, lit(step)), lit(shift));
}

/**
 * The bucket key (epoch ms) of a `date_histogram` with this interval as an expression over the
 * field's value, and the next key after one (for the empty buckets between); null when the
 * interval is not one the plans answer.
 */
export function dateKey(f: string, calendar: unknown, fixed: unknown): { key: Expr; next: (k: number) => number } | null {
  const v = valueOf(f);
  const y = int(v, 1, 4), m = int(v, 6, 2), d = int(v, 9, 2);
  const long = (from: number, n: number): Expr => ({ kind: 'case', whens: [{ when: bin('<', call('length', v), lit(from + n)), then: lit(0) }], else: int(v, from, n) });
  const t = bin('+', bin('+', bin('+', bin('+', bin('*', days(y, m, d), lit(86400000)), bin('*', long(12, 2), lit(3600000))), bin('*', long(15, 2), lit(60000))), bin('*', long(18, 2), lit(1000))), long(21, 3));
  if (fixed !== undefined) {
    const x = typeof fixed === 'string' ? /^(\d+)(ms|s|m|h|d)$/.exec(fixed) : null;
    if (calendar !== undefined || !x || Number(x[1]) < 1) return null;
    const step = Number(x[1]) * FIXED[x[2]];
    return { key: floorTo(t, step), next: (k) => k + step };
  }
  const unit = typeof calendar === 'string' ? CAL[calendar] : undefined;
  if (!unit) return null;
  const next = (k: number): number => addUnit(k, 1, unit);
  if (unit === 'y') return { key: bin('*', days(y, lit(1), lit(1)), lit(86400000)), next };
  if (unit === 'q') return { key: bin('*', days(y, bin('+', bin('*', bin('/', bin('-', m, lit(1)), lit(3)), lit(3)), lit(1)), lit(1)), lit(86400000)), next };
  if (unit === 'M') return { key: bin('*', days(y, m, lit(1)), lit(86400000)), next };
  // 1970-01-05 was a Monday
  if (unit === 'w') return { key: floorTo(t, MS.w, 4 * 86400000), next };
  return { key: floorTo(t, MS[unit]), next };
}

/**
 * A fixed interval in ms as the aggregation code reads it (`parseDuration`): a number of ms, or
 * digits (a decimal fraction too) with `ms`, `s`, `m`, `h`, `d` or `w`; null unless a whole number of ms ≥ 1.
 */
function fixedStep(fixed: unknown): number | null {
  if (typeof fixed === 'number') return Number.isSafeInteger(fixed) && fixed >= 1 ? fixed : null;
  const x = typeof fixed === 'string' ? /^(\d+(?:\.\d+)?)(ms|s|m|h|d|w)?$/.exec(fixed) : null;
  const step = x ? Number(x[1]) * (x[2] === undefined ? 1 : x[2] === 'w' ? MS.w : FIXED[x[2]]) : NaN;
  return Number.isSafeInteger(step) && step >= 1 ? step : null;
}

/**
 * The same over a date field's typed column (epoch milliseconds, any format the mapping parses;
 * columns.ts), with an `offset` (ms): fixed intervals, seconds to days and weeks are
 * floor((t − offset − shift) / step) · step + offset + shift; months, quarters and years are the
 * executor's `calendar_floor(unit, t − offset)` + offset (the aggregation code's own `roundDown`).
 */
export function timeKey(t: Expr, calendar: unknown, fixed: unknown, offset: number): { key: Expr; next: (k: number) => number; keyOf: (t: number) => number } | null {
  if (fixed !== undefined) {
    const step = fixedStep(fixed);
    if (calendar !== undefined || step === null) return null;
    return { key: floorTo(t, step, offset), next: (k) => k + step, keyOf: (x) => Math.floor((x - offset) / step) * step + offset };
  }
  const unit = typeof calendar === 'string' ? CAL[calendar] : undefined;
  if (!unit) return null;
  const next = (k: number): number => addUnit(k - offset, 1, unit) + offset;
  const keyOf = (x: number): number => roundDown(x - offset, unit) + offset;
  // months, quarters and years: the executor's calendar_floor (libs/core calendarFloor, the aggregation code's own rounding)
  if (unit === 'y' || unit === 'q' || unit === 'M') return { key: bin('+', call('calendar_floor', lit(unit), offset ? bin('-', t, lit(offset)) : t), lit(offset)), next, keyOf };
  // 1970-01-05 was a Monday
  return { key: floorTo(t, MS[unit], unit === 'w' ? 4 * 86400000 + offset : offset), next, keyOf };
}

/**
 * `timeKey` in a named zone (`Europe/Paris`: its offset changes with daylight saving), the keys
 * the aggregation code computes: a fixed interval is floor((t + off(t) − offset) / step) · step +
 * offset − off(t) with the executor's `tz_offset(zone, t)` per row; a calendar unit is the
 * executor's `calendar_floor(unit, t − offset, zone)` + offset (libs/core `calendarFloor`, which the
 * aggregation code's `roundDown` is).
 */
export function zonedKey(t: Expr, calendar: unknown, fixed: unknown, offset: number, zone: string): { key: Expr; next: (k: number) => number; keyOf: (t: number) => number } | null {
  const off = (e: Expr): Expr => call('tz_offset', lit(zone), e);
  if (fixed !== undefined) {
    const step = fixedStep(fixed);
    if (calendar !== undefined || step === null) return null;
    const o = off(t);
    const keyOf = (v: number): number => { const a = zoneOffset(zone, v); return Math.floor((v + a - offset) / step) * step + offset - a; };
    return { key: bin('-', floorTo(bin('+', t, o), step, offset), o), next: (k) => k + step, keyOf };
  }
  const unit = typeof calendar === 'string' ? CAL[calendar] : undefined;
  if (!unit) return null;
  // a calendar unit: the executor's calendar_floor in the zone (libs/core calendarFloor, the aggregation code's own roundDown)
  const u = offset ? bin('-', t, lit(offset)) : t;
  const key = call('calendar_floor', lit(unit), u, lit(zone));
  return { key: offset ? bin('+', key, lit(offset)) : key, next: (k) => addUnit(k - offset, 1, unit, zone) + offset, keyOf: (v) => roundDown(v - offset, unit, zone) + offset };
}
