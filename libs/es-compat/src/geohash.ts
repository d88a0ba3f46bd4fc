/** Geohashes as Elasticsearch computes them for geo contexts: encode, cell neighbours, precision from a distance. */

const BASE32 = '0123456789bcdefghjkmnpqrstuvwxyz';

/** The geohash of a point at `level` characters (1..12): longitude bit first, as the standard encoding. */
export function geohash(lat: number, lon: number, level: number): string {
  let latLo = -90, latHi = 90, lonLo = -180, lonHi = 180;
  let out = '';
  let bit = 0, ch = 0, even = true;
  while (out.length < level) {
    if (even) {
      const mid = (lonLo + lonHi) / 2;
      if (lon >= mid) { ch = (ch << 1) | 1; lonLo = mid; } else { ch <<= 1; lonHi = mid; }
    } else {
      const mid = (latLo + latHi) / 2;
      if (lat >= mid) { ch = (ch << 1) | 1; latLo = mid; } else { ch <<= 1; latHi = mid; }
    }
    even = !even;
    if (++bit === 5) {
      out += BASE32[ch];
      bit = 0;
      ch = 0;
    }
  }
  return out;
}

/** The cell of a geohash: [latLo, latHi, lonLo, lonHi]. */
function cell(hash: string): [number, number, number, number] {
  let latLo = -90, latHi = 90, lonLo = -180, lonHi = 180;
  let even = true;
  for (const c of hash) {
    const v = BASE32.indexOf(c);
    for (let b = 4; b >= 0; b--) {
      const on = (v >> b) & 1;
      if (even) { const mid = (lonLo + lonHi) / 2; if (on) lonLo = mid; else lonHi = mid; }
      else { const mid = (latLo + latHi) / 2; if (on) latLo = mid; else latHi = mid; }
      even = !even;
    }
  }
  return [latLo, latHi, lonLo, lonHi];
}

/** The (up to) eight cells around a geohash at its level; none beyond a pole, longitudes wrap. */
export function geohashNeighbours(hash: string): string[] {
  const [latLo, latHi, lonLo, lonHi] = cell(hash);
  const dLat = latHi - latLo, dLon = lonHi - lonLo;
  const cLat = (latLo + latHi) / 2, cLon = (lonLo + lonHi) / 2;
  const out: string[] = [];
  for (const i of [-1, 0, 1]) {
    for (const j of [-1, 0, 1]) {
      if (i === 0 && j === 0) continue;
      const lat = cLat + i * dLat;
      if (lat < -90 || lat > 90) continue;
      let lon = cLon + j * dLon;
      if (lon < -180) lon += 360;
      if (lon >= 180) lon -= 360;
      out.push(geohash(lat, lon, hash.length));
    }
  }
  return out;
}

const EARTH_EQUATOR = 2 * Math.PI * 6378137.0;
const EARTH_POLAR_DISTANCE = Math.PI * 6356752.314245;
const UNITS: Record<string, number> = {
  in: 0.0254, inch: 0.0254, yd: 0.9144, yards: 0.9144, ft: 0.3048, feet: 0.3048, km: 1000, kilometers: 1000,
  NM: 1852, nmi: 1852, nauticalmiles: 1852, mm: 0.001, millimeters: 0.001, cm: 0.01, centimeters: 0.01,
  mi: 1609.344, miles: 1609.344, m: 1, meters: 1,
};

/** Meters of a distance (`5km`, `200m`, `1.5mi`, a number of meters). */
export function distanceMeters(v: unknown): number | null {
  if (typeof v === 'number') return v;
  const m = /^\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*([A-Za-z]*)\s*$/.exec(String(v));
  if (!m) return null;
  const unit = m[2] === '' ? 1 : UNITS[m[2]];
  return unit === undefined ? null : Number(m[1]) * unit;
}

/** Elasticsearch's `GeoUtils.geoHashLevelsForPrecision`: the geohash level whose cells are about `meters` wide. */
export function geohashLevelForMeters(meters: number): number {
  if (meters === 0) return 24;
  const ratio = 1 + EARTH_POLAR_DISTANCE / EARTH_EQUATOR;
  const width = Math.sqrt((meters * meters) / (ratio * ratio));
  const part = Math.round(Math.ceil(EARTH_EQUATOR / width));
  const level = Math.floor(Math.log2(part));
  return part <= 2 ** level ? Math.floor((level + 1) / 5) : Math.floor((level + 2) / 5);
}

/** A geo context precision: a level (1..12) or a distance. */
export function geohashPrecision(v: unknown, fallback: number): number {
  if (v === undefined || v === null) return fallback;
  if (typeof v === 'number') return Math.trunc(v);
  if (/^\s*\d+\s*$/.test(String(v))) return Number(v);
  const m = distanceMeters(v);
  return m === null ? fallback : Math.min(12, Math.max(1, geohashLevelForMeters(m)));
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A geo point in any of Elasticsearch's forms ({lat, lon}, "lat,lon", a geohash, [lon, lat]) as [lat, lon]. */
export function geoPointOf(v: unknown): [number, number] | null {
  if (Array.isArray(v)) return v.length >= 2 && typeof v[0] === 'number' && typeof v[1] === 'number' ? [v[1], v[0]] : null;
  if (isObj(v)) {
    const lat = Number(v.lat), lon = Number(v.lon);
    return v.lat !== undefined && v.lon !== undefined && Number.isFinite(lat) && Number.isFinite(lon) ? [lat, lon] : null;
  }
  if (typeof v !== 'string') return null;
  if (v.includes(',')) {
    const [a, b] = v.split(',').map((x) => Number(x.trim()));
    return Number.isFinite(a) && Number.isFinite(b) ? [a, b] : null;
  }
  if (!/^[0-9b-hjkmnp-z]{1,12}$/.test(v)) return null;
  const [latLo, latHi, lonLo, lonHi] = cell(v);
  return [(latLo + latHi) / 2, (lonLo + lonHi) / 2];
}
