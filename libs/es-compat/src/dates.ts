/**
 * Dates as Elasticsearch reads and prints them: named formats (strict_date_optional_time,
 * epoch_millis, epoch_second, date, basic_date, ...), Java-time patterns (yyyy-MM-dd HH:mm:ss),
 * `||` alternatives, date math (`now-1d/d`, `2020-01-01||+1M`) and time zones.
 */
import { calendarFloor, fromLocalMs, zoneOffsetMs } from '@mmdb/core';
import { illegalArgument, EsError } from './errors';
import { NAMED_PATTERNS, patternOf, printPattern } from './date-format';

export const DEFAULT_DATE_FORMAT = 'strict_date_optional_time||epoch_millis';

const ISO = /^([+-]?\d{4,})(?:-(\d{1,2})(?:-(\d{1,2})(?:[T ](\d{1,2})(?::(\d{1,2})(?::(\d{1,2})(?:[.,](\d{1,9}))?)?)?)?)?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/i;

/** Offset in ms of a zone spec (Z, +01:00, -0800, or an IANA name) at the UTC instant `utc`. */
export function zoneOffset(zone: string | undefined, utc: number): number {
  const off = zoneOffsetMs(zone, utc);
  if (off === null) throw illegalArgument(`Unknown time-zone ID: ${zone}`);
  return off;
}

/** Local wall-clock fields → UTC ms in `zone`. */
export function fromLocal(local: number, zone: string | undefined): number {
  zoneOffset(zone, local); // an unknown zone: Elasticsearch's error
  return fromLocalMs(local, zone)!;
}

function parseIso(s: string, zone?: string): number | null {
  const m = ISO.exec(s.trim());
  if (!m) return null;
  const [y, mo, d, h, mi, se, frac] = [m[1], m[2], m[3], m[4], m[5], m[6], m[7]].map((x) => (x === undefined ? undefined : x));
  const month = mo ? Number(mo) : 1;
  const day = d ? Number(d) : 1;
  if (month < 1 || month > 12 || day < 1 || day > 31) return null;
  if (h !== undefined && Number(h) > 24) return null;
  if (mi !== undefined && Number(mi) > 59) return null;
  if (se !== undefined && Number(se) > 59) return null;
  const ms = frac ? Number(frac.slice(0, 3).padEnd(3, '0')) : 0;
  const d0 = new Date(0);
  d0.setUTCFullYear(Number(y), month - 1, day);
  d0.setUTCHours(h ? Number(h) : 0, mi ? Number(mi) : 0, se ? Number(se) : 0, ms);
  if (d0.getUTCDate() !== day) return null;
  const local = d0.getTime();
  if (m[8]) return local - zoneOffset(m[8], local);
  return fromLocal(local, zone);
}

/** A Java-time pattern (yyyy-MM-dd'T'HH:mm:ss.SSSZ) compiled to a parser. */
/** Month names of a locale (CLDR through Intl), lowercased without dots: full and abbreviated. */
function monthNames(locale: string): string[][] {
  const out: string[][] = [];
  for (let m = 0; m < 12; m++) {
    const d = new Date(Date.UTC(2000, m, 15));
    const names = new Set<string>();
    for (const month of ['long', 'short'] as const) {
      try {
        names.add(new Intl.DateTimeFormat(locale, { month, timeZone: 'UTC' }).format(d).toLowerCase().replace(/\./g, ''));
        names.add(new Intl.DateTimeFormat(locale, { month, day: 'numeric', timeZone: 'UTC' }).formatToParts(d).find((x) => x.type === 'month')!.value.toLowerCase().replace(/\./g, ''));
      } catch {
        // an unknown locale: English names only
      }
    }
    out.push([...names]);
  }
  return out;
}

function patternParser(pattern: string, locale = 'en'): (s: string, zone?: string) => number | null {
  const fields: string[] = [];
  let re = '';
  for (let i = 0; i < pattern.length; ) {
    const c = pattern[i];
    if (c === "'") {
      const end = pattern.indexOf("'", i + 1);
      const lit = pattern.slice(i + 1, end < 0 ? undefined : end);
      re += lit.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      i = end < 0 ? pattern.length : end + 1;
      continue;
    }
    if (/[a-zA-Z]/.test(c)) {
      let j = i;
      while (pattern[j] === c) j++;
      const n = j - i;
      fields.push(c);
      if ('yuY'.includes(c)) re += n === 2 ? '(\\d{2})' : '([+-]?\\d{1,9})';
      else if (c === 'M' && n >= 3) re += '([\\p{L}.]+)';
      else if (c === 'S') re += '(\\d{1,9})';
      else if (c === 'Z' || c === 'X' || c === 'x') re += '(Z|[+-]\\d{2}:?\\d{2})';
      else if (c === 'z' || c === 'V') re += '([A-Za-z_/]+)';
      else if (c === 'a') re += '(AM|PM|am|pm)';
      else if (c === 'E' || ((c === 'e' || c === 'c') && n >= 3)) re += '([\\p{L}.]+)';
      else if (c === 'D') re += n === 1 ? '(\\d{1,3})' : `(\\d{${n}})`;
      else re += n === 1 ? '(\\d{1,2})' : `(\\d{${n}})`;
      i = j;
      continue;
    }
    re += c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    i++;
  }
  const rx = new RegExp(`^${re}$`, 'u');
  const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
  const local = locale.toLowerCase().startsWith('en') ? null : monthNames(locale);
  const monthOf = (v: string): number => {
    const w = v.toLowerCase().replace(/\./g, '');
    if (local) {
      const i = local.findIndex((names) => names.some((n) => n === w || (w.length >= 3 && n.startsWith(w))));
      if (i >= 0) return i + 1;
    }
    return MONTHS.indexOf(w.slice(0, 3)) + 1;
  };
  return (s, zone) => {
    const m = rx.exec(s.trim());
    if (!m) return null;
    let y = 1970, mo = 1, d = 1, h = 0, mi = 0, se = 0, ms = 0;
    let off: string | undefined;
    let pm: boolean | null = null;
    let doy: number | null = null, week: number | null = null, weekYear: number | null = null, dow = 1;
    fields.forEach((f, k) => {
      const v = m[k + 1];
      switch (f) {
        case 'y': case 'u': y = v.length === 2 ? 2000 + Number(v) : Number(v); break;
        case 'Y': weekYear = v.length === 2 ? 2000 + Number(v) : Number(v); break;
        case 'w': week = Number(v); break;
        case 'e': case 'c': if (/^\d+$/.test(v)) dow = Number(v); break;
        case 'D': doy = Number(v); break;
        case 'M': mo = /^\d+$/.test(v) ? Number(v) : monthOf(v); break;
        case 'd': d = Number(v); break;
        case 'H': case 'k': h = Number(v); break;
        case 'h': case 'K': h = Number(v) % 12; break;
        case 'm': mi = Number(v); break;
        case 's': se = Number(v); break;
        case 'S': ms = Number(v.slice(0, 3).padEnd(3, '0')); break;
        case 'a': pm = v.toLowerCase() === 'pm'; break;
        case 'Z': case 'X': case 'x': case 'z': case 'V': off = v; break;
      }
    });
    if (pm) h += 12;
    // a day of the year, or an ISO week date (Monday of week 1 is the Monday on or before 4 January)
    if (doy !== null || week !== null) {
      const base = new Date(0);
      if (week !== null) {
        const wy = weekYear ?? y;
        base.setUTCFullYear(wy, 0, 4);
        base.setUTCFullYear(wy, 0, 4 - ((base.getUTCDay() + 6) % 7) + (week - 1) * 7 + (dow - 1));
      } else base.setUTCFullYear(y, 0, doy!);
      y = base.getUTCFullYear(); mo = base.getUTCMonth() + 1; d = base.getUTCDate();
    } else if (weekYear !== null) y = weekYear;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 59) return null;
    const local = Date.UTC(y, mo - 1, d, h, mi, se, ms) + (y >= 0 && y < 100 ? 0 : 0);
    const d0 = new Date(0);
    d0.setUTCFullYear(y, mo - 1, d);
    d0.setUTCHours(h, mi, se, ms);
    const t = Number.isFinite(local) ? d0.getTime() : local;
    if (off) return t - zoneOffset(off, t);
    return fromLocal(t, zone);
  };
}

const NAMED: Record<string, (s: string, zone?: string) => number | null> = {
  epoch_millis: (s) => (/^-?\d+(\.\d+)?$/.test(s) ? Math.trunc(Number(s)) : null),
  epoch_second: (s) => (/^-?\d+(\.\d+)?$/.test(s) ? Math.round(Number(s) * 1000) : null),
  strict_date_optional_time: parseIso,
  date_optional_time: parseIso,
  strict_date_optional_time_nanos: parseIso,
  date_time: parseIso, strict_date_time: parseIso, date_time_no_millis: parseIso, strict_date_time_no_millis: parseIso,
  date: (s, z) => (/^\d{4}-\d{2}-\d{2}$/.test(s) ? parseIso(s, z) : null),
  strict_date: (s, z) => (/^\d{4}-\d{2}-\d{2}$/.test(s) ? parseIso(s, z) : null),
  year_month_day: (s, z) => (/^\d{4}-\d{2}-\d{2}$/.test(s) ? parseIso(s, z) : null),
  strict_year_month_day: (s, z) => (/^\d{4}-\d{2}-\d{2}$/.test(s) ? parseIso(s, z) : null),
  year_month: (s, z) => (/^\d{4}-\d{2}$/.test(s) ? parseIso(s, z) : null),
  strict_year_month: (s, z) => (/^\d{4}-\d{2}$/.test(s) ? parseIso(s, z) : null),
  year: (s, z) => (/^\d{4}$/.test(s) ? parseIso(s, z) : null),
  strict_year: (s, z) => (/^\d{4}$/.test(s) ? parseIso(s, z) : null),
  basic_date: patternParser('yyyyMMdd'),
  basic_date_time: patternParser("yyyyMMdd'T'HHmmss.SSSZ"),
  basic_date_time_no_millis: patternParser("yyyyMMdd'T'HHmmssZ"),
  hour_minute: patternParser('HH:mm'),
  date_hour_minute_second: patternParser("yyyy-MM-dd'T'HH:mm:ss"),
  date_hour_minute: patternParser("yyyy-MM-dd'T'HH:mm"),
};

const cache = new Map<string, Array<(s: string, zone?: string) => number | null>>();

function parsersOf(format: string, locale?: string): Array<(s: string, zone?: string) => number | null> {
  const key = locale ? `${locale}\u0000${format}` : format;
  let p = cache.get(key);
  if (!p) {
    // a leading "8" marks a java-time pattern in Elasticsearch 7 (the only kind here)
    p = format.split('||').map((f0) => {
      const f = f0.trim().replace(/^8(?=\D)/, '');
      const name = f.replace(/^strict_/, '');
      return NAMED[f] ?? NAMED[name] ?? (NAMED_PATTERNS[name] ? patternParser(NAMED_PATTERNS[name]) : patternParser(f, locale));
    });
    cache.set(key, p);
  }
  return p;
}

/** Parses a date value (string or number) with `format`; null when no alternative matches. */
export function parseDate(v: unknown, format = DEFAULT_DATE_FORMAT, zone?: string, locale?: string): number | null {
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) return null;
    if (format.split('||').some((f) => f.trim() === 'epoch_second')) return Math.round(v * 1000);
    return Math.trunc(v);
  }
  if (typeof v !== 'string') return null;
  for (const p of parsersOf(format, locale)) {
    const t = p(v, zone);
    if (t !== null && Number.isFinite(t)) return t;
  }
  return null;
}

/** `failed to parse date field` as Elasticsearch words it. */
export function dateParseError(v: unknown, format: string): EsError {
  return new EsError(400, 'parse_exception', `failed to parse date field [${String(v)}] with format [${format}]`);
}

const UNITS: Record<string, number> = { s: 1000, m: 60000, h: 3600000, H: 3600000, d: 86400000, w: 604800000 };

/** Rounds UTC ms down to the start of a calendar unit in `zone`. */
export function roundDown(t: number, unit: string, zone?: string): number {
  zoneOffset(zone, t); // an unknown zone: Elasticsearch's error
  return calendarFloor(t, unit, zone) ?? t;
}

/** Adds n calendar units (months and years by calendar, the rest by duration). */
export function addUnit(t: number, n: number, unit: string, zone?: string): number {
  if (unit === 'y' || unit === 'M' || unit === 'q') {
    const off = zoneOffset(zone, t);
    const d = new Date(t + off);
    const months = unit === 'y' ? 12 * n : unit === 'q' ? 3 * n : n;
    d.setUTCMonth(d.getUTCMonth() + months);
    return fromLocal(d.getTime(), zone);
  }
  return t + n * UNITS[unit];
}

/**
 * Date math: `now`, `now-1d/d`, `2001-02-01||+1M/d`. `roundUp` rounds to the end of the unit
 * (for `lte`/`gt` bounds, as Elasticsearch does).
 */
export function parseDateMath(v: unknown, format = DEFAULT_DATE_FORMAT, zone?: string, roundUp = false, now = Date.now(), locale?: string): number {
  if (typeof v === 'number') return parseDate(v, format, zone) ?? v;
  const s = String(v);
  let base: number;
  let math: string;
  if (s.startsWith('now')) {
    base = now;
    math = s.slice(3);
  } else {
    const i = s.indexOf('||');
    const head = i >= 0 ? s.slice(0, i) : s;
    math = i >= 0 ? s.slice(i + 2) : '';
    const t = parseDate(head, format, zone, locale);
    if (t === null) throw dateParseError(head, format);
    base = t;
    if (roundUp && !math) base = roundUpPartial(head, t, format, zone);
  }
  let t = base;
  const rx = /([+-]\d*|\/)([yMwdhHmsq])/g;
  let m: RegExpExecArray | null;
  let pos = 0;
  while ((m = rx.exec(math))) {
    if (m.index !== pos) break;
    pos = rx.lastIndex;
    if (m[1] === '/') {
      t = roundDown(t, m[2], zone);
      if (roundUp) t = addUnit(t, 1, m[2], zone) - 1;
    } else {
      const n = m[1].length === 1 ? (m[1] === '-' ? -1 : 1) : Number(m[1]);
      t = addUnit(t, n, m[2], zone);
    }
  }
  if (pos !== math.length) throw new EsError(400, 'parse_exception', `operator not supported for date math [${math}]`);
  return t;
}

/** An `lte: "2020-01"` bound covers the whole month: partial ISO dates round up to their end. */
function roundUpPartial(s: string, t: number, format: string, zone?: string): number {
  if (!format.includes('date_optional_time')) return t;
  const m = ISO.exec(s.trim());
  if (!m) return t;
  if (m[2] === undefined) return addUnit(t, 1, 'y', zone) - 1;
  if (m[3] === undefined) return addUnit(t, 1, 'M', zone) - 1;
  if (m[4] === undefined) return t + 86400000 - 1;
  if (m[5] === undefined) return t + 3600000 - 1;
  if (m[6] === undefined) return t + 60000 - 1;
  if (m[7] === undefined) return t + 999;
  return t;
}

/**
 * Formats UTC ms with the first alternative of `format`, in `zone`; `nanos` (0..999999) is a
 * date_nanos value's part below the millisecond (`epoch_millis` prints it as a fraction, `S`
 * beyond three digits prints its digits).
 */
export function formatDate(t: number, format = DEFAULT_DATE_FORMAT, zone?: string, nanos = 0): string {
  const f = format.split('||')[0].trim();
  if (f === 'epoch_millis') return nanos ? `${t}.${String(nanos).padStart(6, '0').replace(/0+$/, '')}` : String(t);
  if (f === 'epoch_second') return String(Math.floor(t / 1000));
  return printPattern(t, patternOf(f), zoneOffset(zone, t), zone, nanos);
}

/** A date_nanos value as epoch nanoseconds: its milliseconds as `format` parses them and the digits below them. */
export function parseNanos(v: unknown, format = DEFAULT_DATE_FORMAT): bigint | null {
  if (typeof v === 'number' || typeof v === 'bigint') return BigInt(Math.trunc(Number(v))) * 1_000_000n;
  if (typeof v !== 'string') return null;
  const ms = parseDate(v, format);
  if (ms === null) return null;
  // the digits past the millisecond: of the seconds' fraction, or of an epoch_millis decimal
  let below = 0;
  const iso = /\d:\d{2}[.,](\d{1,9})/.exec(v);
  if (iso) below = Number(iso[1].padEnd(9, '0').slice(3));
  else {
    const e = /^-?\d+\.(\d{1,6})/.exec(v.trim());
    if (e) below = Number(e[1].padEnd(6, '0'));
  }
  return BigInt(ms) * 1_000_000n + BigInt(below);
}
