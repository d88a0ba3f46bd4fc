/**
 * Printing dates as Elasticsearch 7's java-time formatters do: its built-in named formats and
 * Java `DateTimeFormatter` patterns (every letter Elasticsearch's docs list: era, years,
 * week-based years and weeks, day of year, quarters, months and days of week as numbers or text,
 * am/pm and the 12/24-hour clocks, fractions, milli/nano of day, offsets and zone ids). Weeks
 * follow ISO-8601 (Monday first, minimal days 4) as Elasticsearch's root locale makes them, so
 * `e` of a Sunday is 7. Text is English (the root locale's).
 */

/** Elasticsearch's named formats as the patterns they print (`XXX`: `Z` at zero offset, else `+01:00`). */
export const NAMED_PATTERNS: Record<string, string> = {
  basic_date: 'yyyyMMdd',
  basic_date_time: "yyyyMMdd'T'HHmmss.SSSXX",
  basic_date_time_no_millis: "yyyyMMdd'T'HHmmssXX",
  basic_ordinal_date: 'yyyyDDD',
  basic_ordinal_date_time: "yyyyDDD'T'HHmmss.SSSXX",
  basic_ordinal_date_time_no_millis: "yyyyDDD'T'HHmmssXX",
  basic_time: 'HHmmss.SSSXX',
  basic_time_no_millis: 'HHmmssXX',
  basic_t_time: "'T'HHmmss.SSSXX",
  basic_t_time_no_millis: "'T'HHmmssXX",
  basic_week_date: "YYYY'W'wwe",
  basic_week_date_time: "YYYY'W'wwe'T'HHmmss.SSSXX",
  basic_week_date_time_no_millis: "YYYY'W'wwe'T'HHmmssXX",
  date: 'yyyy-MM-dd',
  date_hour: "yyyy-MM-dd'T'HH",
  date_hour_minute: "yyyy-MM-dd'T'HH:mm",
  date_hour_minute_second: "yyyy-MM-dd'T'HH:mm:ss",
  date_hour_minute_second_fraction: "yyyy-MM-dd'T'HH:mm:ss.SSS",
  date_hour_minute_second_millis: "yyyy-MM-dd'T'HH:mm:ss.SSS",
  date_optional_time: "yyyy-MM-dd'T'HH:mm:ss.SSSXXX",
  date_optional_time_nanos: "yyyy-MM-dd'T'HH:mm:ss.SSSXXX",
  date_time: "yyyy-MM-dd'T'HH:mm:ss.SSSXXX",
  date_time_no_millis: "yyyy-MM-dd'T'HH:mm:ssXXX",
  hour: 'HH',
  hour_minute: 'HH:mm',
  hour_minute_second: 'HH:mm:ss',
  hour_minute_second_fraction: 'HH:mm:ss.SSS',
  hour_minute_second_millis: 'HH:mm:ss.SSS',
  ordinal_date: 'yyyy-DDD',
  ordinal_date_time: "yyyy-DDD'T'HH:mm:ss.SSSXXX",
  ordinal_date_time_no_millis: "yyyy-DDD'T'HH:mm:ssXXX",
  time: 'HH:mm:ss.SSSXXX',
  time_no_millis: 'HH:mm:ssXXX',
  t_time: "'T'HH:mm:ss.SSSXXX",
  t_time_no_millis: "'T'HH:mm:ssXXX",
  week_date: "YYYY-'W'ww-e",
  week_date_time: "YYYY-'W'ww-e'T'HH:mm:ss.SSSXXX",
  week_date_time_no_millis: "YYYY-'W'ww-e'T'HH:mm:ssXXX",
  weekyear: 'YYYY',
  weekyear_week: "YYYY-'W'ww",
  weekyear_week_day: "YYYY-'W'ww-e",
  year: 'yyyy',
  year_month: 'yyyy-MM',
  year_month_day: 'yyyy-MM-dd',
};

/** The pattern a format name prints (`strict_` and the java-time `8` prefix dropped), or the pattern itself. */
export function patternOf(format: string): string {
  const f = format.trim().replace(/^8(?=\D)/, '');
  return NAMED_PATTERNS[f] ?? NAMED_PATTERNS[f.replace(/^strict_/, '')] ?? f;
}

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const DAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
const DAY_MS = 86400000;

const pad = (n: number, w = 2): string => (n < 0 ? '-' : '') + String(Math.abs(n)).padStart(w, '0');

/** ISO-8601 week-based year and week of a local (shifted) date. */
export function isoWeek(d: Date): { year: number; week: number } {
  const dow = (d.getUTCDay() + 6) % 7; // Monday 0
  const thursday = new Date(0);
  thursday.setUTCFullYear(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() - dow + 3);
  const year = thursday.getUTCFullYear();
  const jan1 = new Date(0);
  jan1.setUTCFullYear(year, 0, 1);
  return { year, week: Math.floor((thursday.getTime() - jan1.getTime()) / DAY_MS / 7) + 1 };
}

function dayOfYear(d: Date): number {
  const jan1 = new Date(0);
  jan1.setUTCFullYear(d.getUTCFullYear(), 0, 1);
  const day = new Date(0);
  day.setUTCFullYear(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  return Math.round((day.getTime() - jan1.getTime()) / DAY_MS) + 1;
}

/** An offset as the pattern letters X, x, Z, O and V print it. */
function offsetText(off: number, letter: string, n: number): string {
  const sign = off < 0 ? '-' : '+';
  const a = Math.abs(off);
  const h = Math.floor(a / 3600000), m = Math.floor((a % 3600000) / 60000), s = Math.floor((a % 60000) / 1000);
  const hhmm = (colon: boolean) => `${sign}${pad(h)}${colon ? ':' : ''}${pad(m)}${s ? `${colon ? ':' : ''}${pad(s)}` : ''}`;
  switch (letter) {
    case 'X': case 'x':
      if (off === 0 && letter === 'X') return 'Z';
      if (n === 1) return `${sign}${pad(h)}${m ? pad(m) : ''}`;
      return hhmm(n === 3 || n === 5);
    case 'Z':
      if (n <= 3) return hhmm(false);
      if (n === 4) return off === 0 ? 'GMT' : `GMT${hhmm(true)}`;
      return off === 0 ? 'Z' : hhmm(true);
    case 'O':
      return off === 0 ? 'GMT' : n === 4 ? `GMT${hhmm(true)}` : `GMT${sign}${h}${m ? `:${pad(m)}` : ''}`;
    default:
      return hhmm(true);
  }
}

/** Prints UTC ms `t` with a Java pattern, in a zone whose offset at `t` is `off` ms (`zone`: its id, for `VV` / `z`). */
export function printPattern(t: number, pat: string, off: number, zone?: string, nanos = 0): string {
  const d = new Date(t + off);
  const y = d.getUTCFullYear();
  let out = '';
  for (let i = 0; i < pat.length; ) {
    const c = pat[i];
    if (c === "'") {
      // quoted text; '' is a quote, inside or outside quotes
      if (pat[i + 1] === "'") { out += "'"; i += 2; continue; }
      let k = i + 1;
      while (k < pat.length) {
        if (pat[k] === "'" && pat[k + 1] === "'") { out += "'"; k += 2; continue; }
        if (pat[k] === "'") break;
        out += pat[k++];
      }
      i = k + 1;
      continue;
    }
    if (c === '[' || c === ']') { i++; continue; } // optional sections print their content
    let j = i;
    while (pat[j] === c && /[a-zA-Z]/.test(c)) j++;
    const n = j - i;
    if (n === 0) { out += c; i++; continue; }
    const dow = (d.getUTCDay() + 6) % 7;
    const hour = d.getUTCHours();
    switch (c) {
      case 'G': out += n === 4 ? (y > 0 ? 'Anno Domini' : 'Before Christ') : n === 5 ? (y > 0 ? 'A' : 'B') : y > 0 ? 'AD' : 'BC'; break;
      case 'u': case 'y': { const v = y; out += n === 2 ? pad(((v % 100) + 100) % 100) : pad(v, n); break; }
      case 'Y': { const v = isoWeek(d).year; out += n === 2 ? pad(((v % 100) + 100) % 100) : pad(v, n); break; }
      case 'w': out += pad(isoWeek(d).week, n); break;
      case 'D': out += pad(dayOfYear(d), n); break;
      case 'Q': case 'q': { const q = Math.floor(d.getUTCMonth() / 3) + 1; out += n <= 2 ? pad(q, n) : n === 3 ? `Q${q}` : n === 4 ? `${['1st', '2nd', '3rd', '4th'][q - 1]} quarter` : String(q); break; }
      case 'M': case 'L': { const mo = d.getUTCMonth(); out += n <= 2 ? pad(mo + 1, n) : n === 3 ? MONTHS[mo].slice(0, 3) : n === 4 ? MONTHS[mo] : MONTHS[mo][0]; break; }
      case 'd': out += pad(d.getUTCDate(), n); break;
      case 'E': out += n <= 3 ? DAYS[dow].slice(0, 3) : n === 4 ? DAYS[dow] : DAYS[dow][0]; break;
      case 'e': case 'c': out += n <= 2 ? pad(dow + 1, n) : n === 3 ? DAYS[dow].slice(0, 3) : n === 4 ? DAYS[dow] : DAYS[dow][0]; break;
      case 'F': out += pad(Math.floor((d.getUTCDate() - 1) / 7) + 1, n); break;
      case 'a': out += hour < 12 ? 'AM' : 'PM'; break;
      case 'h': out += pad(hour % 12 === 0 ? 12 : hour % 12, n); break;
      case 'K': out += pad(hour % 12, n); break;
      case 'k': out += pad(hour === 0 ? 24 : hour, n); break;
      case 'H': out += pad(hour, n); break;
      case 'm': out += pad(d.getUTCMinutes(), n); break;
      case 's': out += pad(d.getUTCSeconds(), n); break;
      case 'S': out += (pad(d.getUTCMilliseconds(), 3) + String(nanos).padStart(6, '0')).slice(0, n).padEnd(n, '0'); break;
      case 'A': out += pad(((t + off) % DAY_MS + DAY_MS) % DAY_MS, n); break;
      case 'n': out += pad(d.getUTCMilliseconds() * 1000000 + nanos, n); break;
      case 'N': out += pad((((t + off) % DAY_MS + DAY_MS) % DAY_MS) * 1000000, n); break;
      case 'V': out += zone && !/^[+-]/.test(zone) ? (zone === 'UTC' || zone === 'utc' ? 'UTC' : zone) : off === 0 ? 'Z' : offsetText(off, 'V', n); break;
      case 'z': out += zone && /\//.test(zone) ? zone : off === 0 ? 'UTC' : offsetText(off, 'V', n); break;
      case 'X': case 'x': case 'Z': case 'O': out += offsetText(off, c, n); break;
      default: out += pat.slice(i, j);
    }
    i = j;
  }
  return out;
}
