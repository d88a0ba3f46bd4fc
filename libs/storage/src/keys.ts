/**
 * Order-preserving tuple encoding for keys: comparing two encoded tuples bytewise
 * gives the same order as comparing the tuples component by component.
 *
 * Component tags (one byte) order the kinds: null < false < true < number < string < json.
 * - number: IEEE-754 double, big-endian, sign bit flipped for positives and all bits
 *   flipped for negatives, so -inf < negatives < 0 < positives. i64 values within ±(2^53 − 1)
 *   are JS numbers, exact as doubles, so they sort numerically (negatives first).
 * - bigint (an i64 beyond ±(2^53 − 1)): the double nearest to it, encoded as a number, then
 *   0xFE and the exact difference (bigint − that double, |difference| ≤ 1024 within the i64
 *   range) as a big-endian u16 biased by 0x8000. Equal doubles order by the difference, so
 *   all i64 values sort numerically; 0xFE is no tag, so a decoder tells the suffix apart.
 * - string: UTF-8 (bytewise = code point order), 0x00 escaped as 0x00 0xFF, ended by 0x00.
 * - json (arrays/objects): canonical JSON text, encoded like a string (equality, not order).
 * A whole prefix's keys all sort below `prefix ‖ 0xFF`, since no tag is 0xFF.
 *
 * @example
 *   const k = keyOf('R', ['shop.orders', 42]);
 *   decodeTuple(k.subarray(1)); // ['shop.orders', 42]
 */
import { corruptData, parseJsonExact, type JsonValue } from '@mmdb/core';

const T_NULL = 0x01;
const T_FALSE = 0x10;
const T_TRUE = 0x11;
const T_NUM = 0x20;
const T_STR = 0x30;
const T_JSON = 0x50;

/** Keyspace prefixes (ARCHITECTURE.md §2). */
export const KEYSPACE = {
  log: 'L',
  meta: 'M',
  row: 'R',
  index: 'I',
  fts: 'F',
  vector: 'V',
  edge: 'E',
  idempotency: 'K',
} as const;

const numBuf = Buffer.alloc(8);
const BIG_MARK = 0xfe;

/** Encoded size of one component (strings measured in UTF-8, plus one byte per NUL escape). */
function sizeOf(v: JsonValue): number {
  if (v === null || v === undefined || typeof v === 'boolean') return 1;
  if (typeof v === 'number') return 9;
  if (typeof v === 'bigint') return 12;
  const s = typeof v === 'string' ? v : canonicalJson(v);
  const ascii = asciiLength(s);
  if (ascii >= 0) return ascii + 2;
  let n = Buffer.byteLength(s, 'utf8') + 2;
  for (let i = s.indexOf('\u0000'); i >= 0; i = s.indexOf('\u0000', i + 1)) n++;
  return n;
}

/**
 * Short strings of ASCII without NUL (most names and values in keys) are written and measured
 * here, one byte per character: `Buffer#write` and `Buffer.byteLength` are calls into C++ that
 * cost more than the loop for a few characters. The length (-1: longer than 64, or another character).
 */
function asciiLength(s: string): number {
  const n = s.length;
  if (n > 64) return -1;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c === 0 || c > 0x7f) return -1;
  }
  return n;
}

function writeString(out: Buffer, pos: number, tag: number, s: string): number {
  out[pos++] = tag;
  if (asciiLength(s) >= 0) {
    for (let i = 0; i < s.length; i++) out[pos++] = s.charCodeAt(i);
  } else if (s.indexOf('\u0000') < 0) pos += out.write(s, pos, 'utf8');
  else {
    const b = Buffer.from(s, 'utf8');
    for (let i = 0; i < b.length; i++) {
      out[pos++] = b[i];
      if (b[i] === 0) out[pos++] = 0xff;
    }
  }
  out[pos++] = 0;
  return pos;
}

/** Writes one component at `pos`; returns the position after it. */
function writeValue(out: Buffer, pos: number, v: JsonValue): number {
  if (v === null || v === undefined) out[pos++] = T_NULL;
  else if (v === false) out[pos++] = T_FALSE;
  else if (v === true) out[pos++] = T_TRUE;
  else if (typeof v === 'number') pos = writeDouble(out, pos, v);
  else if (typeof v === 'bigint') {
    const d = Number(v);
    pos = writeDouble(out, pos, d);
    out[pos++] = BIG_MARK;
    const delta = Number(v - BigInt(d)) + 0x8000;
    out[pos++] = delta >> 8;
    out[pos++] = delta & 0xff;
  } else if (typeof v === 'string') pos = writeString(out, pos, T_STR, v);
  else pos = writeString(out, pos, T_JSON, canonicalJson(v));
  return pos;
}

function writeDouble(out: Buffer, pos: number, v: number): number {
  numBuf.writeDoubleBE(v === 0 ? 0 : v); // folds -0 into 0
  out[pos++] = T_NUM;
  if (numBuf[0] & 0x80) for (let i = 0; i < 8; i++) out[pos++] = ~numBuf[i] & 0xff;
  else {
    out[pos++] = numBuf[0] | 0x80;
    for (let i = 1; i < 8; i++) out[pos++] = numBuf[i];
  }
  return pos;
}

/** JSON text with object keys sorted, so equal values encode equally. */
export function canonicalJson(v: JsonValue): string {
  if (typeof v === 'bigint') return v.toString();
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  const keys = Object.keys(v).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, JsonValue>)[k])}`).join(',')}}`;
}

export function encodeTuple(values: readonly JsonValue[]): Buffer {
  let n = 0;
  for (const v of values) n += sizeOf(v);
  const out = Buffer.allocUnsafe(n);
  let pos = 0;
  for (const v of values) pos = writeValue(out, pos, v);
  return out;
}

/** A key in one keyspace: the one-byte prefix, then the tuple. */
export function keyOf(space: string, values: readonly JsonValue[]): Buffer {
  let n = 1;
  for (const v of values) n += sizeOf(v);
  const out = Buffer.allocUnsafe(n);
  out[0] = space.charCodeAt(0);
  let pos = 1;
  for (const v of values) pos = writeValue(out, pos, v);
  return out;
}

function readString(b: Uint8Array, pos: number): [string, number] {
  const bytes: number[] = [];
  for (;;) {
    if (pos >= b.length) throw corruptData('stored key', 'tuple: unterminated string');
    const c = b[pos++];
    if (c === 0) {
      if (b[pos] === 0xff) {
        bytes.push(0);
        pos++;
        continue;
      }
      return [Buffer.from(bytes).toString('utf8'), pos];
    }
    bytes.push(c);
  }
}

/** Decodes a whole tuple (no keyspace prefix). */
export function decodeTuple(b: Uint8Array, start = 0): JsonValue[] {
  const out: JsonValue[] = [];
  let pos = start;
  while (pos < b.length) {
    const tag = b[pos++];
    switch (tag) {
      case T_NULL:
        out.push(null);
        break;
      case T_FALSE:
        out.push(false);
        break;
      case T_TRUE:
        out.push(true);
        break;
      case T_NUM: {
        if (pos + 8 > b.length) throw corruptData('stored key', 'tuple: short number');
        const nb = Buffer.alloc(8);
        if (b[pos] & 0x80) {
          nb[0] = b[pos] & 0x7f;
          for (let i = 1; i < 8; i++) nb[i] = b[pos + i];
        } else for (let i = 0; i < 8; i++) nb[i] = ~b[pos + i] & 0xff;
        const d = nb.readDoubleBE(0);
        pos += 8;
        if (b[pos] === BIG_MARK) {
          if (pos + 3 > b.length) throw corruptData('stored key', 'tuple: short integer');
          out.push(BigInt(d) + BigInt(((b[pos + 1] << 8) | b[pos + 2]) - 0x8000));
          pos += 3;
        } else out.push(d);
        break;
      }
      case T_STR: {
        const [s, p] = readString(b, pos);
        out.push(s);
        pos = p;
        break;
      }
      case T_JSON: {
        const [s, p] = readString(b, pos);
        let v: JsonValue;
        try { v = parseJsonExact(s) as JsonValue; } catch (e) { throw corruptData('stored key', `tuple: bad JSON value at ${pos}: ${(e as Error).message}`); }
        out.push(v);
        pos = p;
        break;
      }
      default:
        throw corruptData('stored key', `tuple: unknown tag 0x${tag.toString(16)} at ${pos - 1}`);
    }
  }
  return out;
}

/** Decodes a keyspace key (skips the one-byte prefix). */
export function decodeKey(key: Uint8Array): JsonValue[] {
  return decodeTuple(key, 1);
}

/** The exclusive upper bound of every key that starts with `prefix` (a tuple boundary). */
export function prefixEnd(prefix: Buffer): Buffer {
  return Buffer.concat([prefix, Buffer.from([0xff])]);
}

/** Bounds [gte, lt) covering every key that extends `space ‖ tuple`. */
export function prefixRange(space: string, values: readonly JsonValue[]): { gte: Buffer; lt: Buffer } {
  const p = keyOf(space, values);
  return { gte: p, lt: prefixEnd(p) };
}
