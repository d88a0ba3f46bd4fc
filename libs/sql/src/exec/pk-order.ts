/**
 * The order of stored primary keys, without encoding them: `comparePk(a, b)` has the sign of
 * comparing the two tuples' key bytes (@mmdb/storage keys.ts, `encodeTuple`), which is the order a
 * table scan yields rows in. The table cache's patching (table-patch.ts) places a changed row among
 * the cached rows with it. Tuples must be as a scan decodes them (`asStored`): a key round trip
 * folds -0 into 0 and replaces lone surrogates, and the comparison assumes that was done.
 *
 * Components: null < false < true < numbers (and i64 bigints) < strings < JSON values. Numbers and
 * bigints compare by their nearest double first; on a tie a bigint (encoded with a suffix after the
 * double) is above a plain number, and two bigints compare exactly. Strings compare by code point
 * (UTF-8 byte order), not by UTF-16 unit as `<` does. JSON values (never ordered by meaning) are
 * compared by their encoded bytes.
 */
import { decodeTuple, encodeTuple } from '@mmdb/storage';
import type { JsonValue } from '@mmdb/core';

function rank(v: unknown): number {
  if (v === null || v === undefined) return 0;
  if (v === false) return 1;
  if (v === true) return 2;
  const t = typeof v;
  if (t === 'number' || t === 'bigint') return 3;
  if (t === 'string') return 4;
  return 5;
}

/** A UTF-16 unit mapped so unit order is code point order (surrogates above the rest of the BMP). */
const fix = (c: number) => (c < 0xd800 ? c : c < 0xe000 ? c + 0x2000 : c - 0x800);

/** Strings by code point (UTF-8 byte order). */
export function compareCodePoints(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return fix(x) - fix(y);
  }
  return a.length - b.length;
}

/** One key component against another, in key byte order. */
export function comparePart(a: unknown, b: unknown): number {
  const ra = rank(a);
  const rb = rank(b);
  if (ra !== rb) return ra - rb;
  switch (ra) {
    case 3: {
      if (typeof a === 'number' && typeof b === 'number') return a < b ? -1 : a > b ? 1 : 0;
      const da = Number(a);
      const db = Number(b);
      if (da !== db) return da < db ? -1 : 1;
      if (typeof a === 'bigint' && typeof b === 'bigint') return a < b ? -1 : a > b ? 1 : 0;
      return typeof a === 'bigint' ? 1 : -1;
    }
    case 4:
      return compareCodePoints(a as string, b as string);
    case 5:
      return Buffer.compare(encodeTuple([a as JsonValue]), encodeTuple([b as JsonValue]));
    default:
      return 0;
  }
}

/** Two pk tuples (as stored) in key byte order; a tuple that is a prefix of the other is below it. */
export function comparePk(a: readonly unknown[], b: readonly unknown[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const d = comparePart(a[i], b[i]);
    if (d) return d;
  }
  return a.length - b.length;
}

/** A pk tuple as a scan would decode it from its stored key (the key codec's round trip). */
export function asStored(pk: readonly unknown[]): JsonValue[] {
  return decodeTuple(encodeTuple(pk as JsonValue[]));
}
