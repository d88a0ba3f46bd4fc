/**
 * Time-zone offsets, shared by the ES surface's dates (libs/es-compat dates.ts) and the
 * executor's `tz_offset(zone, epoch_ms)` (libs/sql), so a plan keys dates in a named zone exactly
 * as the ES aggregation code does.
 */

const formatters = new Map<string, Intl.DateTimeFormat | null>();
/** Per zone, the offset of each UTC hour whose offset is the same at its first and last second. */
const hours = new Map<string, Map<number, number>>();
const HOUR = 3_600_000;

function formatter(zone: string): Intl.DateTimeFormat | null {
  let f = formatters.get(zone);
  if (f === undefined) {
    try {
      f = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' });
    } catch {
      f = null;
    }
    formatters.set(zone, f);
  }
  return f;
}

/** The zone's wall clock minus UTC at `utc`, to the second (Intl's answer). */
function exact(f: Intl.DateTimeFormat, utc: number): number {
  const parts = Object.fromEntries(f.formatToParts(new Date(utc)).map((p) => [p.type, p.value]));
  const local = Date.UTC(Number(parts.year), Number(parts.month) - 1, Number(parts.day), Number(parts.hour) % 24, Number(parts.minute), Number(parts.second));
  return local - Math.floor(utc / 1000) * 1000;
}

/**
 * The offset in ms of a zone (`Z`, `UTC`, `GMT`, `+01:00`, `-0800`, or an IANA name such as
 * `Europe/Paris`) at the UTC instant `utc`, or null for a zone no one knows (or an instant
 * past JavaScript's dates).
 * @example zoneOffsetMs('Europe/Paris', Date.UTC(2020, 6, 1)) // 7200000
 */
export function zoneOffsetMs(zone: string | undefined, utc: number): number | null {
  if (!zone || zone === 'Z' || zone === 'z' || zone === 'UTC' || zone === 'utc' || zone === 'GMT') return 0;
  const m = /^([+-])(\d{1,2}):?(\d{2})?$/.exec(zone);
  if (m) return (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 3600000 + Number(m[3] ?? 0) * 60000);
  const f = formatter(zone);
  if (!f || !Number.isFinite(utc) || Math.abs(utc) > 8.64e15) return null; // no such zone, or no such instant
  // an hour whose first and last second have one offset has it throughout (no zone changes twice in an hour)
  let cache = hours.get(zone);
  if (!cache) hours.set(zone, (cache = new Map()));
  const h = Math.floor(utc / HOUR);
  const hit = cache.get(h);
  if (hit !== undefined) return hit;
  const a = exact(f, h * HOUR), b = exact(f, h * HOUR + HOUR - 1000);
  if (a !== b) return exact(f, utc);
  if (cache.size >= 200_000) cache.clear();
  cache.set(h, a);
  return a;
}

/** Local wall-clock fields (as a UTC instant) → the UTC instant in `zone` (null: no such zone). */
export function fromLocalMs(local: number, zone: string | undefined): number | null {
  const o1 = zoneOffsetMs(zone, local);
  const o2 = o1 === null ? null : zoneOffsetMs(zone, local - o1);
  return o2 === null ? null : local - o2;
}

/**
 * The start of the calendar unit holding `t` in `zone` (`y`, `q`, `M`, `w` from Monday, `d`, `h`,
 * `m`, `s`), as Elasticsearch's date histograms round: the local unit's start back in UTC. The one
 * rounding of the ES dates code and the executor's `calendar_floor(unit, epoch_ms, zone)`; null for
 * an unknown unit or zone.
 * @example calendarFloor(Date.UTC(2021, 2, 28, 12), 'M', 'Europe/Paris') // Date.UTC(2021, 1, 28, 23)
 */
export function calendarFloor(t: number, unit: string, zone?: string): number | null {
  if (!Number.isFinite(t)) return null;
  const off = zoneOffsetMs(zone, t);
  if (off === null) return null;
  const d = new Date(t + off);
  switch (unit) {
    case 'y': d.setUTCMonth(0, 1); d.setUTCHours(0, 0, 0, 0); break;
    case 'q': d.setUTCMonth(Math.floor(d.getUTCMonth() / 3) * 3, 1); d.setUTCHours(0, 0, 0, 0); break;
    case 'M': d.setUTCDate(1); d.setUTCHours(0, 0, 0, 0); break;
    case 'w': { const wd = (d.getUTCDay() + 6) % 7; d.setUTCDate(d.getUTCDate() - wd); d.setUTCHours(0, 0, 0, 0); break; }
    case 'd': d.setUTCHours(0, 0, 0, 0); break;
    case 'h': case 'H': d.setUTCMinutes(0, 0, 0); break;
    case 'm': d.setUTCSeconds(0, 0); break;
    case 's': d.setUTCMilliseconds(0); break;
    default: return null;
  }
  return fromLocalMs(d.getTime(), zone);
}
