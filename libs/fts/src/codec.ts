/**
 * Key layout and value codecs of the fts keyspace ('F'). Every key starts with
 * the table (schema id, or standalone table name) and the field:
 *
 *   F [table, field, 'p', term, doc]  → varint tf, then tf varint position gaps
 *   F [table, field, 'd', doc]        → varint length, varint n, n × (varint bytes, utf8 term)
 *   F [table, field, 's']             → JSON {docs, total}: document count, total length
 *   F [table, field, 'c']             → JSON {analyzer}: a standalone field's settings
 */
import { keyOf, prefixRange, decodeKey } from '@mmdb/storage';

export const SPACE = 'F';

export const postingKey = (table: string, field: string, term: string, doc: string): Buffer =>
  keyOf(SPACE, [table, field, 'p', term, doc]);
export const docKey = (table: string, field: string, doc: string): Buffer => keyOf(SPACE, [table, field, 'd', doc]);
export const statsKey = (table: string, field: string): Buffer => keyOf(SPACE, [table, field, 's']);
export const configKey = (table: string, field: string): Buffer => keyOf(SPACE, [table, field, 'c']);
export const tableRange = (table: string): { gte: Buffer; lt: Buffer } => prefixRange(SPACE, [table]);
export const fieldRange = (table: string, field: string): { gte: Buffer; lt: Buffer } => prefixRange(SPACE, [table, field]);

export type DecodedKey =
  | { kind: 'p'; table: string; field: string; term: string; doc: string }
  | { kind: 'd'; table: string; field: string; doc: string }
  | { kind: 's'; table: string; field: string }
  | { kind: 'c'; table: string; field: string };

export function decodeFtsKey(key: Buffer): DecodedKey | undefined {
  if (key[0] !== SPACE.charCodeAt(0)) return undefined;
  const t = decodeKey(key) as string[];
  const [table, field, kind] = t;
  if (kind === 'p') return { kind, table, field, term: t[3], doc: t[4] };
  if (kind === 'd') return { kind, table, field, doc: t[3] };
  if (kind === 's' || kind === 'c') return { kind, table, field };
  return undefined;
}

class Writer {
  private buf = Buffer.allocUnsafe(64);
  private n = 0;
  private room(k: number): void {
    if (this.n + k <= this.buf.length) return;
    const nb = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.n + k));
    this.buf.copy(nb, 0, 0, this.n);
    this.buf = nb;
  }
  varint(v: number): this {
    this.room(10);
    while (v >= 0x80) {
      this.buf[this.n++] = (v & 0x7f) | 0x80;
      v = Math.floor(v / 128);
    }
    this.buf[this.n++] = v;
    return this;
  }
  bytes(b: Buffer): this {
    this.varint(b.length);
    this.room(b.length);
    b.copy(this.buf, this.n);
    this.n += b.length;
    return this;
  }
  done(): Buffer {
    return Buffer.from(this.buf.subarray(0, this.n));
  }
}

class Reader {
  pos = 0;
  constructor(private readonly buf: Uint8Array) {}
  varint(): number {
    let v = 0;
    let mul = 1;
    for (;;) {
      const b = this.buf[this.pos++];
      if (b === undefined) throw new Error('fts codec: truncated varint');
      v += (b & 0x7f) * mul;
      if (b < 0x80) return v;
      mul *= 128;
    }
  }
  bytes(): Buffer {
    const len = this.varint();
    const b = Buffer.from(this.buf.buffer, this.buf.byteOffset + this.pos, len);
    this.pos += len;
    return b;
  }
}

/** A posting value: the term frequency and the (sorted) positions. */
export function encodePosting(positions: readonly number[]): Buffer {
  const w = new Writer().varint(positions.length);
  let prev = 0;
  for (const p of positions) {
    w.varint(p - prev);
    prev = p;
  }
  return w.done();
}

export function postingTf(value: Uint8Array): number {
  return new Reader(value).varint();
}

export function decodePositions(value: Uint8Array): number[] {
  const r = new Reader(value);
  const tf = r.varint();
  const out = new Array<number>(tf);
  let p = 0;
  for (let i = 0; i < tf; i++) out[i] = p += r.varint();
  return out;
}

/** A per-document entry: the field length (tokens indexed) and its distinct terms (to delete exactly). */
export function encodeDoc(length: number, terms: readonly string[]): Buffer {
  const w = new Writer().varint(length).varint(terms.length);
  for (const t of terms) w.bytes(Buffer.from(t, 'utf8'));
  return w.done();
}

export function decodeDocLength(value: Uint8Array): number {
  return new Reader(value).varint();
}

export function decodeDoc(value: Uint8Array): { length: number; terms: string[] } {
  const r = new Reader(value);
  const length = r.varint();
  const n = r.varint();
  const terms: string[] = [];
  for (let i = 0; i < n; i++) terms.push(r.bytes().toString('utf8'));
  return { length, terms };
}

export interface FieldStats {
  readonly docs: number;
  readonly total: number;
}

export const encodeStats = (s: FieldStats): Buffer => Buffer.from(JSON.stringify(s));
export const decodeStats = (b: Uint8Array | undefined): FieldStats =>
  b ? (JSON.parse(Buffer.from(b).toString('utf8')) as FieldStats) : { docs: 0, total: 0 };
