import { ColumnDef, coerceValue, DbError, JsonValue, parseJsonExact, parseNumberLiteral, pkSegment, TableManifest } from '@mmdb/core';

/**
 * The `{pk}` path segment (README: "Primary keys in paths").
 * - one-column key: the value, percent-encoded (`/rows/shop.orders/42`, `/rows/app.users/ann%40x.io`);
 * - composite key: the components in `primary_key` order joined by `,`, each percent-encoded
 *   (a `,` inside a value is `%2C`): `/rows/shop.lines/42,3`;
 * - or a JSON array, percent-encoded: `/rows/shop.lines/%5B42%2C3%5D` (`[42,3]`).
 * Components are typed by their column: i64/timestamp take an integer, f64 a number,
 * bool `true`/`false`, str the text as is.
 */
export function parsePkSegment(raw: string, m: TableManifest): JsonValue[] {
  const cols = pkColumns(m);
  // Most keys carry no escapes: skip decoding them.
  if (cols.length === 1 && raw.indexOf('%') < 0 && raw[0] !== '[') return [fromText(cols[0], raw)];
  let decodedWhole: string;
  try {
    decodedWhole = decodeURIComponent(raw);
  } catch {
    throw new DbError('validation_failed', `primary key segment "${raw}" is not valid percent-encoding`);
  }
  if (decodedWhole.startsWith('[')) {
    let arr: unknown;
    try {
      arr = parseJsonExact(decodedWhole);
    } catch {
      throw new DbError('validation_failed', `primary key segment is not a valid JSON array`);
    }
    if (!Array.isArray(arr) || arr.length !== cols.length) {
      throw new DbError('validation_failed', `primary key of ${m.id} has ${cols.length} component(s) (${m.primary_key.join(', ')})`);
    }
    return arr.map((v, i) => coercePk(cols[i], v));
  }
  const parts = cols.length === 1 ? [raw] : raw.split(',');
  if (parts.length !== cols.length) {
    throw new DbError('validation_failed', `primary key of ${m.id} has ${cols.length} component(s) (${m.primary_key.join(', ')}), joined by ","`);
  }
  return parts.map((p, i) => {
    let s: string;
    try {
      s = decodeURIComponent(p);
    } catch {
      throw new DbError('validation_failed', `primary key component "${p}" is not valid percent-encoding`);
    }
    return fromText(cols[i], s);
  });
}

/** The primary-key column definitions of a manifest, in key order (manifests are immutable). */
const pkColumnsOf = new WeakMap<TableManifest, ColumnDef[]>();
function pkColumns(m: TableManifest): ColumnDef[] {
  let cols = pkColumnsOf.get(m);
  if (!cols) pkColumnsOf.set(m, (cols = m.primary_key.map((name) => m.columns.find((c) => c.name === name)!)));
  return cols;
}

function coercePk(col: ColumnDef, v: unknown): JsonValue {
  try {
    return coerceValue(col.name, col.ty, v, col.dim);
  } catch (e) {
    throw new DbError('validation_failed', `primary key: ${(e as Error).message}`, { field: col.name });
  }
}

function fromText(col: ColumnDef, s: string): JsonValue {
  switch (col.ty) {
    case 'i64':
    case 'timestamp':
      if (/^-?\d+$/.test(s)) {
        const n = parseNumberLiteral(s);
        if (typeof n === 'number' && Number.isSafeInteger(n)) return n;
        if (col.ty === 'i64') return coercePk(col, n);
      }
      if (col.ty === 'timestamp') return coercePk(col, s);
      break;
    case 'f64':
      if (s.trim() !== '' && Number.isFinite(Number(s))) return Number(s);
      break;
    case 'bool':
      if (s === 'true' || s === 'false') return s === 'true';
      break;
    case 'str':
      return s;
    default:
      return coercePk(col, safeJson(s));
  }
  throw new DbError('validation_failed', `primary key column "${col.name}" expects ${col.ty}, got "${s.slice(0, 60)}"`, { field: col.name });
}

function safeJson(s: string): unknown {
  try {
    return parseJsonExact(s);
  } catch {
    return s;
  }
}

/** The path-segment form of a key tuple (what responses carry as `pk`). */
export function formatPk(pk: readonly JsonValue[]): string {
  return pkSegment(pk);
}

/** The raw (still percent-encoded) last path segment of a URL. */
export function lastRawSegment(url: string): string {
  const q = url.indexOf('?');
  const end = q < 0 ? url.length : q;
  return url.slice(url.lastIndexOf('/', end - 1) + 1, end);
}
