/**
 * Key layout and value codecs of the fts keyspace ('F'). Every key starts with
 * the table (schema id, or standalone table name) and the field:
 *
 *   F [table, field, 'd', doc]        → the doc's postings: length, then per term: term, tf, position gaps
 *   F [table, field, 's']             → JSON {docs, total}: document count, total length
 *   F [table, field, 'c']             → JSON {analyzer}: a standalone field's settings
 */
import { corruptData } from '@mmdb/core';
import { keyOf, prefixRange, decodeKey } from '@mmdb/storage';

export const SPACE = 'F';

export const docKey = (table: string, field: string, doc: string): Buffer => keyOf(SPACE, [table, field, 'd', doc]);
export const statsKey = (table: string, field: string): Buffer => keyOf(SPACE, [table, field, 's']);
export const configKey = (table: string, field: string): Buffer => keyOf(SPACE, [table, field, 'c']);
export const tableRange = (table: string): { gte: Buffer; lt: Buffer } => prefixRange(SPACE, [table]);
export const fieldRange = (table: string, field: string): { gte: Buffer; lt: Buffer } => prefixRange(SPACE, [table, field]);

export type DecodedKey =
  | { kind: 'd'; table: string; field: string; doc: string }
  | { kind: 's'; table: string; field: string }
  | { kind: 'c'; table: string; field: string };

export function decodeFtsKey(key: Buffer): DecodedKey | undefined {
  if (key[0] !== SPACE.charCodeAt(0)) return undefined;
  const t = decodeKey(key) as string[];
  const [table, field, kind] = t;
  if (typeof table !== 'string') return undefined; // the checkpoint's keys (checkpoint.ts)
  if (kind === 'd') return { kind, table, field, doc: t[3] };
  if (kind === 's' || kind === 'c') return { kind, table, field };
  return undefined;
}

class Reader {
  pos = 0;
  constructor(private readonly buf: Uint8Array) {}
  varint(): number {
    let v = 0;
    let mul = 1;
    for (;;) {
      const b = this.buf[this.pos++];
      if (b === undefined) throw corruptData('stored postings', 'fts codec: truncated varint');
      v += (b & 0x7f) * mul;
      if (b < 0x80) return v;
      mul *= 128;
    }
  }
  bytes(): Buffer {
    const len = this.varint();
    if (this.pos + len > this.buf.length) throw corruptData('stored postings', `fts codec: ${len} bytes past the end`);
    const b = Buffer.from(this.buf.buffer, this.buf.byteOffset + this.pos, len);
    this.pos += len;
    return b;
  }
}

/**
 * A document's postings (doc-major): field length, then per distinct term its text,
 * term frequency and position gaps. One key per (doc, field) keeps indexing at a few
 * key writes per document; the term-major lists are built in memory from these.
 */
export function encodeDocEntry(length: number, postings: ReadonlyMap<string, readonly number[]>): Buffer {
  let cap = 20;
  for (const [term, ps] of postings) cap += term.length * 3 + 10 + ps.length * 5;
  const buf = Buffer.allocUnsafe(cap);
  let n = putVarint(buf, 0, length);
  n = putVarint(buf, n, postings.size);
  for (const [term, ps] of postings) {
    n = putTerm(buf, n, term);
    n = putVarint(buf, n, ps.length);
    let prev = 0;
    for (const p of ps) {
      n = putVarint(buf, n, p - prev);
      prev = p;
    }
  }
  return Buffer.from(buf.subarray(0, n));
}

/** Writes `v` as a varint at `n`; returns the offset after it. */
function putVarint(buf: Buffer, n: number, v: number): number {
  while (v >= 0x80) {
    buf[n++] = (v & 0x7f) | 0x80;
    v = Math.floor(v / 128);
  }
  buf[n++] = v;
  return n;
}

/** Writes a term as varint byte length + UTF-8 at `n`; returns the offset after it. */
function putTerm(buf: Buffer, n: number, term: string): number {
  // ASCII terms (the common case) are copied by hand: cheaper than a native call per term
  let ascii = term.length < 128;
  for (let i = 0; ascii && i < term.length; i++) if (term.charCodeAt(i) > 0x7f) ascii = false;
  if (ascii) {
    buf[n++] = term.length;
    for (let i = 0; i < term.length; i++) buf[n++] = term.charCodeAt(i);
    return n;
  }
  const len = Buffer.byteLength(term, 'utf8');
  n = putVarint(buf, n, len);
  return n + buf.write(term, n, len, 'utf8');
}

let scratch = Buffer.allocUnsafe(1 << 16);

/**
 * The same bytes as `encodeDocEntry`, from a document's flat form (`Analyzer.analyzeDoc`):
 * no Map, no per-term arrays; written into a reused buffer, then copied out once.
 */
export function encodeDocTerms(d: {
  readonly length: number;
  readonly terms: readonly string[];
  readonly tfs: ArrayLike<number>;
  readonly positions: ArrayLike<number>;
  readonly ids?: ArrayLike<number>;
  readonly termPool?: { readonly bytes: Uint8Array; readonly info: Int32Array };
}): Buffer {
  const { terms, tfs, positions, ids, termPool } = d;
  const nt = terms.length;
  let cap = 20;
  let np = 0;
  for (let t = 0; t < nt; t++) {
    cap += (termPool && ids ? termPool.info[2 * ids[t] + 1] : terms[t].length * 3) + 10;
    np += tfs[t];
  }
  cap += np * 5;
  if (scratch.length < cap) scratch = Buffer.allocUnsafe(Math.max(cap, scratch.length * 2));
  const buf = scratch;
  let n = putVarint(buf, 0, d.length);
  n = putVarint(buf, n, nt);
  let k = 0;
  for (let t = 0; t < nt; t++) {
    if (termPool && ids) {
      // the term's UTF-8 bytes from the analyzer's pool: varint length + bytes, as below
      const at = 2 * ids[t];
      const off = termPool.info[at];
      const len = termPool.info[at + 1];
      if (len < 0x80) buf[n++] = len;
      else n = putVarint(buf, n, len);
      const bytes = termPool.bytes;
      for (let i = 0; i < len; i++) buf[n++] = bytes[off + i];
    } else n = putTerm(buf, n, terms[t]);
    const tf = tfs[t];
    if (tf < 0x80) buf[n++] = tf;
    else n = putVarint(buf, n, tf);
    let prev = 0;
    for (const end = k + tf; k < end; k++) {
      const p = positions[k];
      const gap = p - prev;
      prev = p;
      if (gap < 0x80) buf[n++] = gap;
      else n = putVarint(buf, n, gap);
    }
  }
  const out = Buffer.allocUnsafe(n);
  buf.copy(out, 0, 0, n);
  return out;
}

export interface DocEntry {
  readonly length: number;
  readonly terms: string[];
  readonly tfs: ArrayLike<number>;
}

/** Length, terms and frequencies (positions skipped). */
/** A short term's text: by hand when ASCII, else utf8. */
function readTerm(r: Reader, buf: Uint8Array): string {
  const len = r.varint();
  const start = r.pos;
  r.pos += len;
  if (len < 32) {
    let s = '';
    for (let i = start; i < start + len; i++) {
      const c = buf[i];
      if (c > 0x7f) return Buffer.from(buf.buffer, buf.byteOffset + start, len).toString('utf8');
      s += String.fromCharCode(c);
    }
    return s;
  }
  return Buffer.from(buf.buffer, buf.byteOffset + start, len).toString('utf8');
}

export function decodeDocEntry(value: Uint8Array): DocEntry {
  const r = new Reader(value);
  const length = r.varint();
  const n = r.varint();
  const terms: string[] = [];
  const tfs: number[] = [];
  for (let i = 0; i < n; i++) {
    terms.push(readTerm(r, value));
    const tf = r.varint();
    tfs.push(tf);
    for (let j = 0; j < tf; j++) r.varint();
  }
  return { length, terms, tfs };
}

/** Every term's positions of a doc entry. */
export function decodeDocPositions(value: Uint8Array): Map<string, number[]> {
  const r = new Reader(value);
  r.varint();
  const n = r.varint();
  const out = new Map<string, number[]>();
  for (let i = 0; i < n; i++) {
    const term = readTerm(r, value);
    const tf = r.varint();
    const ps: number[] = new Array(tf);
    let p = 0;
    for (let j = 0; j < tf; j++) ps[j] = p += r.varint();
    out.set(term, ps);
  }
  return out;
}

export interface FieldStats {
  readonly docs: number;
  readonly total: number;
}

/** `JSON.stringify({docs, total})`, formatted by hand (integers: the same bytes). */
export const encodeStats = (s: FieldStats): Buffer =>
  Number.isSafeInteger(s.docs) && Number.isSafeInteger(s.total)
    ? Buffer.from(`{"docs":${s.docs},"total":${s.total}}`, 'latin1')
    : Buffer.from(JSON.stringify({ docs: s.docs, total: s.total }));
export const decodeStats = (b: Uint8Array | undefined): FieldStats =>
  b ? (JSON.parse(Buffer.from(b).toString('utf8')) as FieldStats) : { docs: 0, total: 0 };

/**
 * The positions of a few terms in a doc entry (undefined for a term it does not hold):
 * other terms are skipped byte-wise, no string is made (proximity reads up to 100 entries
 * per search and needs only the query's words).
 */
export function decodeTermPositions(value: Uint8Array, terms: readonly Uint8Array[]): Array<number[] | undefined> {
  const out: Array<number[] | undefined> = new Array(terms.length).fill(undefined);
  const r = new Reader(value);
  r.varint();
  const n = r.varint();
  let left = terms.length;
  for (let i = 0; i < n && left > 0; i++) {
    const len = r.varint();
    const start = r.pos;
    r.pos += len;
    let hit = -1;
    for (let t = 0; t < terms.length; t++) {
      const w = terms[t];
      if (w.length !== len || out[t]) continue;
      let j = 0;
      while (j < len && value[start + j] === w[j]) j++;
      if (j === len) {
        hit = t;
        break;
      }
    }
    const tf = r.varint();
    if (hit < 0) {
      for (let j = 0; j < tf; j++) r.varint();
      continue;
    }
    const ps: number[] = new Array(tf);
    let p = 0;
    for (let j = 0; j < tf; j++) ps[j] = p += r.varint();
    out[hit] = ps;
    left--;
  }
  return out;
}
