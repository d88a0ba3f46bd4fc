/**
 * Order-preserving tuple encoding for keys: comparing two encoded tuples bytewise
 * gives the same order as comparing the tuples component by component.
 *
 * Component tags (one byte) order the kinds: null < false < true < number < string < json.
 * - number: IEEE-754 double, big-endian, sign bit flipped for positives and all bits
 *   flipped for negatives, so -inf < negatives < 0 < positives. i64 values are JS safe
 *   integers, exact as doubles, so they sort numerically (negatives first).
 * - string: UTF-8 (bytewise = code point order), 0x00 escaped as 0x00 0xFF, ended by 0x00.
 * - json (arrays/objects): canonical JSON text, encoded like a string (equality, not order).
 * A whole prefix's keys all sort below `prefix ‖ 0xFF`, since no tag is 0xFF.
 *
 * @example
 *   const k = keyOf('R', ['shop.orders', 42]);
 *   decodeTuple(k.subarray(1)); // ['shop.orders', 42]
 */
import type { JsonValue } from '@mmdb/core';

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

/** Builds a key from chunks: small parts go to a byte array, long strings as whole buffers. */
class KeyBuilder {
  private chunks: Buffer[] = [];
  private bytes: number[] = [];

  byte(b: number): void {
    this.bytes.push(b);
  }

  private flush(): void {
    if (this.bytes.length) {
      this.chunks.push(Buffer.from(this.bytes));
      this.bytes = [];
    }
  }

  string(tag: number, s: string): void {
    this.bytes.push(tag);
    const b = Buffer.from(s, 'utf8');
    if (b.length < 32) {
      for (let i = 0; i < b.length; i++) {
        this.bytes.push(b[i]);
        if (b[i] === 0) this.bytes.push(0xff);
      }
    } else {
      this.flush();
      let from = 0;
      for (let z = b.indexOf(0); z >= 0; z = b.indexOf(0, from)) {
        this.chunks.push(b.subarray(from, z + 1), ESCAPE);
        from = z + 1;
      }
      this.chunks.push(b.subarray(from));
    }
    this.bytes.push(0);
  }

  done(): Buffer {
    if (!this.chunks.length) return Buffer.from(this.bytes);
    this.flush();
    return Buffer.concat(this.chunks);
  }
}

const ESCAPE = Buffer.from([0xff]);
const numBuf = Buffer.alloc(8);

function pushValue(out: KeyBuilder, v: JsonValue): void {
  if (v === null || v === undefined) out.byte(T_NULL);
  else if (v === false) out.byte(T_FALSE);
  else if (v === true) out.byte(T_TRUE);
  else if (typeof v === 'number') {
    numBuf.writeDoubleBE(v === 0 ? 0 : v); // folds -0 into 0
    out.byte(T_NUM);
    if (numBuf[0] & 0x80) for (let i = 0; i < 8; i++) out.byte(~numBuf[i] & 0xff);
    else {
      out.byte(numBuf[0] | 0x80);
      for (let i = 1; i < 8; i++) out.byte(numBuf[i]);
    }
  } else if (typeof v === 'string') out.string(T_STR, v);
  else out.string(T_JSON, canonicalJson(v));
}

/** JSON text with object keys sorted, so equal values encode equally. */
export function canonicalJson(v: JsonValue): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  const keys = Object.keys(v).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, JsonValue>)[k])}`).join(',')}}`;
}

export function encodeTuple(values: readonly JsonValue[]): Buffer {
  const out = new KeyBuilder();
  for (const v of values) pushValue(out, v);
  return out.done();
}

/** A key in one keyspace: the one-byte prefix, then the tuple. */
export function keyOf(space: string, values: readonly JsonValue[]): Buffer {
  const out = new KeyBuilder();
  out.byte(space.charCodeAt(0));
  for (const v of values) pushValue(out, v);
  return out.done();
}

function readString(b: Uint8Array, pos: number): [string, number] {
  const bytes: number[] = [];
  for (;;) {
    if (pos >= b.length) throw new Error('tuple: unterminated string');
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
        if (pos + 8 > b.length) throw new Error('tuple: short number');
        const nb = Buffer.alloc(8);
        if (b[pos] & 0x80) {
          nb[0] = b[pos] & 0x7f;
          for (let i = 1; i < 8; i++) nb[i] = b[pos + i];
        } else for (let i = 0; i < 8; i++) nb[i] = ~b[pos + i] & 0xff;
        out.push(nb.readDoubleBE(0));
        pos += 8;
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
        out.push(JSON.parse(s));
        pos = p;
        break;
      }
      default:
        throw new Error(`tuple: unknown tag 0x${tag.toString(16)} at ${pos - 1}`);
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
