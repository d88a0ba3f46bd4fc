/** Scalar functions with SQLite semantics. */
import { createHash } from 'crypto';
import { calendarFloor, DbError, zoneOffsetMs } from '@mmdb/core';
import { JSON_FUNCTIONS } from './json-functions';
import { applyAffinity, checkInt, compareValues, realToInt, toInteger, toReal, toText, typeName, type Value } from '../values';

type Fn = (args: Value[]) => Value;

const nullIfAnyNull = (f: Fn): Fn => (a) => (a.some((v) => v === null) ? null : f(a));

function likeToRegex(pattern: string, escape: string | null, glob: boolean): RegExp {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (escape !== null && c === escape && i + 1 < pattern.length) { re += pattern[++i].replace(/[.*+?^${}()|[\]\\]/g, '\\$&'); continue; }
    if (!glob && c === '%') re += '[\\s\\S]*';
    else if (!glob && c === '_') re += '[\\s\\S]';
    else if (glob && c === '*') re += '[\\s\\S]*';
    else if (glob && c === '?') re += '[\\s\\S]';
    else if (glob && c === '[') {
      const end = pattern.indexOf(']', i + 2);
      if (end < 0) re += '\\[';
      else {
        let cls = pattern.slice(i + 1, end);
        if (cls.startsWith('^')) cls = '^' + cls.slice(1).replace(/\\/g, '\\\\');
        else cls = cls.replace(/\\/g, '\\\\');
        re += `[${cls}]`;
        i = end;
      }
    } else re += c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`, glob ? 's' : 'is');
}

const likeCache = new Map<string, RegExp>();
export function likeMatch(value: string, pattern: string, escape: string | null, glob: boolean): boolean {
  const k = `${glob ? 'g' : 'l'}${escape ?? ''}\u0000${pattern}`;
  let re = likeCache.get(k);
  if (!re) {
    re = likeToRegex(pattern, escape, glob);
    if (likeCache.size > 1000) likeCache.clear();
    likeCache.set(k, re);
  }
  return re.test(value);
}

const SURROGATE = /[\uD800-\uDFFF]/;

function maskPartial(s: string, n: number): string {
  if (n <= 0) return '****';
  if (!SURROGATE.test(s)) return '****' + (s.length > n ? s.slice(s.length - n) : s);
  const chars = Array.from(s);
  return '****' + chars.slice(Math.max(0, chars.length - n)).join('');
}

function substr(a: Value[]): Value {
  if (a[0] === null || a[1] === null || (a.length > 2 && a[2] === null)) return null;
  const s = toText(a[0])!;
  const start = Number(toInteger(a[1]));
  const len = a.length > 2 ? Number(toInteger(a[2])) : undefined;
  // positions count characters (code points); without surrogate pairs they are the UTF-16 units
  const chars = SURROGATE.test(s) ? Array.from(s) : null;
  const n = chars ? chars.length : s.length;
  let from: number;
  let to: number;
  if (start > 0) from = start - 1;
  else if (start < 0) from = n + start;
  else from = -1;
  if (len === undefined) to = n;
  else if (len >= 0) to = from + len;
  else { to = from; from = from + len; }
  if (start === 0 && len !== undefined && len > 0) to = len - 1;
  from = Math.max(0, from);
  to = Math.min(n, Math.max(to, 0));
  if (from >= to) return '';
  return chars ? chars.slice(from, to).join('') : s.slice(from, to);
}

function minmax(sign: number): Fn {
  return (a) => {
    if (a.some((v) => v === null)) return null;
    let best = a[0];
    for (const v of a) if (compareValues(v, best) * sign > 0) best = v;
    return best;
  };
}

export const SCALAR_FUNCTIONS: Record<string, { min: number; max: number; fn: Fn }> = {
  abs: {
    min: 1, max: 1,
    fn: (a) => {
      const v = a[0];
      if (v === null) return null;
      if (typeof v === 'bigint') return checkInt(v < 0n ? -v : v);
      if (typeof v === 'number') return Math.abs(v);
      // SQLite's abs() answers a REAL for anything but an INTEGER: abs('55') is 55.0
      return Math.abs(toReal(v) as number);
    },
  },
  coalesce: { min: 2, max: Infinity, fn: (a) => a.find((v) => v !== null) ?? null },
  ifnull: { min: 2, max: 2, fn: (a) => (a[0] !== null ? a[0] : a[1]) },
  nullif: { min: 2, max: 2, fn: (a) => (a[0] !== null && a[1] !== null && compareValues(a[0], a[1]) === 0 ? null : a[0]) },
  iif: { min: 3, max: 3, fn: () => null /* compiled specially */ },
  length: {
    min: 1, max: 1,
    fn: (a) => (a[0] === null ? null : BigInt(Array.from(typeof a[0] === 'string' ? a[0] : toText(a[0])!).length)),
  },
  lower: { min: 1, max: 1, fn: nullIfAnyNull((a) => toText(a[0])!.toLowerCase()) },
  upper: { min: 1, max: 1, fn: nullIfAnyNull((a) => toText(a[0])!.toUpperCase()) },
  substr: { min: 2, max: 3, fn: substr },
  substring: { min: 2, max: 3, fn: substr },
  trim: { min: 1, max: 2, fn: nullIfAnyNull((a) => trim(a, true, true)) },
  ltrim: { min: 1, max: 2, fn: nullIfAnyNull((a) => trim(a, true, false)) },
  rtrim: { min: 1, max: 2, fn: nullIfAnyNull((a) => trim(a, false, true)) },
  // SQLite: an empty pattern gives X back (as text), even when the replacement is NULL
  replace: {
    min: 3, max: 3,
    fn: (a) => {
      if (a[0] === null || a[1] === null) return null;
      const f = toText(a[1])!;
      if (f === '') return toText(a[0]);
      return a[2] === null ? null : toText(a[0])!.split(f).join(toText(a[2])!);
    },
  },
  instr: { min: 2, max: 2, fn: nullIfAnyNull((a) => BigInt(Array.from(toText(a[0])!.slice(0, Math.max(0, toText(a[0])!.indexOf(toText(a[1])!)))).length + (toText(a[0])!.includes(toText(a[1])!) ? 1 : 0))) },
  round: {
    min: 1, max: 2,
    fn: nullIfAnyNull((a) => {
      const x = toReal(a[0])!;
      const d = a.length > 1 ? Math.max(0, Number(toInteger(a[1]))) : 0;
      const f = 10 ** d;
      const r = Math.round(Math.abs(x) * f) / f;
      return x < 0 ? -r : r;
    }),
  },
  typeof: { min: 1, max: 1, fn: (a) => typeName(a[0]) },
  min: { min: 2, max: Infinity, fn: minmax(-1) },
  max: { min: 2, max: Infinity, fn: minmax(1) },
  // lower-case hex SHA-256 of the value's text (NULL stays NULL): the `hash` column mask (apps/api security)
  sha256: { min: 1, max: 1, fn: nullIfAnyNull((a) => createHash('sha256').update(toText(a[0])!, 'utf8').digest('hex')) },
  // column masks (row-level security): '****' and the last n characters of the text; NULL stays NULL
  // tz_offset(zone, epoch_ms): the zone's offset in ms at that instant (an extension: the ES surface keys dates in a named zone with it)
  tz_offset: { min: 2, max: 2, fn: nullIfAnyNull((a) => {
    const off = zoneOffsetMs(toText(a[0])!, toReal(a[1])!);
    if (off === null) throw new DbError('validation_failed', `unknown time zone or instant: tz_offset(${toText(a[0])}, ${toText(a[1])})`);
    return BigInt(off);
  }) },
  // calendar_floor(unit, epoch_ms[, zone]): the start of the calendar unit (y, q, M, w, d, h, m, s) holding the instant in the zone (an extension: ES date histograms)
  calendar_floor: { min: 2, max: 3, fn: (a) => {
    if (a[0] === null || a[1] === null) return null;
    const t = calendarFloor(toReal(a[1])!, toText(a[0])!, a.length > 2 && a[2] !== null ? toText(a[2])! : undefined);
    if (t === null) throw new DbError('validation_failed', `unknown calendar unit, time zone or instant: calendar_floor(${toText(a[0])}, ${toText(a[1])}${a.length > 2 ? `, ${toText(a[2])}` : ''})`);
    return BigInt(t);
  } },
  mask_partial: { min: 2, max: 2, fn: nullIfAnyNull((a) => maskPartial(toText(a[0])!, Number(toInteger(a[1])))) },
  hex: { min: 1, max: 1, fn: (a) => (a[0] === null ? '' : Buffer.from(toText(a[0])!, 'utf8').toString('hex').toUpperCase()) },
  quote: { min: 1, max: 1, fn: (a) => (a[0] === null ? 'NULL' : typeof a[0] === 'string' ? `'${a[0].replace(/'/g, "''")}'` : toText(a[0])) },
  char: { min: 0, max: Infinity, fn: (a) => String.fromCodePoint(...a.filter((v) => v !== null).map((v) => Number(toInteger(v)))) },
  unicode: { min: 1, max: 1, fn: nullIfAnyNull((a) => { const s = toText(a[0])!; return s.length ? BigInt(s.codePointAt(0)!) : null; }) },
  // SQLite: text that is not wholly a number has no sign (NULL); ' 4 ' and '-2.5' do
  sign: { min: 1, max: 1, fn: nullIfAnyNull((a) => {
    const v = typeof a[0] === 'string' ? applyAffinity(a[0], 'numeric') : a[0];
    if (typeof v === 'string') return null;
    const n = toReal(v)!;
    return n > 0 ? 1n : n < 0 ? -1n : 0n;
  }) },
  random: { min: 0, max: 0, fn: () => realToInt((Math.random() * 2 - 1) * 9.2e18) },
  concat: { min: 1, max: Infinity, fn: (a) => a.map((v) => (v === null ? '' : toText(v))).join('') },
  printf: { min: 1, max: Infinity, fn: () => { throw new DbError('unsupported_sql', 'printf is not supported', { construct: 'printf' }); } },
  ...JSON_FUNCTIONS,
};

function trim(a: Value[], left: boolean, right: boolean): string {
  let s = toText(a[0])!;
  const chars = a.length > 1 ? toText(a[1])! : ' ';
  if (left) while (s.length && chars.includes(s[0])) s = s.slice(1);
  if (right) while (s.length && chars.includes(s[s.length - 1])) s = s.slice(0, -1);
  return s;
}

export const AGGREGATES = new Set(['count', 'sum', 'total', 'avg', 'min', 'max', 'group_concat', 'string_agg', 'any_value']);
