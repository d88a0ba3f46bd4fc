/**
 * The checkpoint image of one FieldIndex (format version IMAGE_VERSION), so a restart loads
 * the term dictionary and posting lists instead of decoding every doc entry of the F keyspace:
 *
 *   varint version | varint ordinals | varint docs | varint total | varint minLen
 *   per ordinal: varint UTF-16 length of its doc id ('' once deleted); then the ids joined, UTF-8
 *   per ordinal: varint field length
 *   varint lists; per list (in term id order):
 *     varint term byte length, term UTF-8, varint maxTf, varint n, n × varint doc gap, n × varint tf
 *
 * Varints keep a posting near 2 bytes (gaps of common terms and tfs are small), a quarter of
 * the raw int32 pairs; decoding them is a tight loop over one buffer, no string per posting.
 * The output is cut into chunks of at most CHUNK bytes (a list longer than that gets a chunk
 * of its own), written as separate store values.
 */
import { FieldIndex, PostingList } from './field-index';
import { badImage as bad, skipVarints } from './packed';

export const IMAGE_VERSION = 1;
const CHUNK = 8 << 20;

class Writer {
  readonly chunks: Buffer[] = [];
  private buf: Buffer;
  pos = 0;
  constructor(private readonly size = CHUNK) {
    this.buf = Buffer.allocUnsafe(size);
  }
  /** Room for `n` more bytes in the current chunk (a new chunk when not). */
  room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    this.cut();
    this.buf = Buffer.allocUnsafe(Math.max(this.size, n));
  }
  cut(): void {
    if (this.pos > 0) this.chunks.push(this.buf.subarray(0, this.pos));
    this.pos = 0;
  }
  varint(v: number): void {
    const b = this.buf;
    let n = this.pos;
    while (v >= 0x80) {
      b[n++] = (v & 0x7f) | 0x80;
      v = Math.floor(v / 128);
    }
    b[n++] = v;
    this.pos = n;
  }
  bytes(x: Buffer): void {
    x.copy(this.buf, this.pos);
    this.pos += x.length;
  }
}

/** Encodes a field's index as image chunks. */
export function encodeFieldImage(fi: FieldIndex): Buffer[] {
  return encodeFieldImageChunks(fi, CHUNK);
}

/** `encodeFieldImage` with chunks of about `size` bytes (tests: images spanning many chunks). */
export function encodeFieldImageChunks(fi: FieldIndex, size: number): Buffer[] {
  const s = fi.exportState();
  const w = new Writer(size);
  const n = s.docIds.length;
  w.room(60);
  for (const v of [IMAGE_VERSION, n, s.docs, s.total, s.minLen]) w.varint(v);
  for (let o = 0; o < n; o++) {
    w.room(5);
    w.varint(s.docIds[o].length);
  }
  const ids = Buffer.from(s.docIds.join(''), 'utf8');
  w.room(5 + ids.length);
  w.varint(ids.length);
  w.bytes(ids);
  for (let o = 0; o < n; o++) {
    w.room(5);
    w.varint(s.docLen[o]);
  }
  w.room(5);
  w.varint(fi.termCount);
  for (const id of fi.termIds()) {
    const [tb, ts, tl] = fi.termBytes(id);
    const n = fi.countOf(id);
    const run = fi.shortRun(id);
    const pl = run ? null : (fi.longList(id) as PostingList);
    const runs = pl ? pl.packedRuns() : null; // a list still packed since the last open: its bytes as they are
    w.room(tl + 15 + (runs ? runs.length : n * 10));
    w.varint(tl);
    w.bytes(tb.subarray(ts, ts + tl));
    w.varint(fi.maxTfOf(id));
    w.varint(n);
    if (runs) {
      w.bytes(runs);
      continue;
    }
    if (run) {
      // a short list: (doc, tf) pairs in the shared slab
      const [sl, at] = run;
      let prev = 0;
      for (let i = 0; i < n; i++) {
        w.varint(sl[2 * (at + i)] - prev);
        prev = sl[2 * (at + i)];
      }
      for (let i = 0; i < n; i++) w.varint(sl[2 * (at + i) + 1]);
      continue;
    }
    const l = pl as PostingList;
    let prev = 0;
    for (let i = 0; i < n; i++) {
      w.varint(l.docs[i] - prev);
      prev = l.docs[i];
    }
    for (let i = 0; i < n; i++) w.varint(l.tfs[i]);
  }
  w.cut();
  return w.chunks;
}

/**
 * A reader over an image's chunks, in place (they are not concatenated first: 76 MB at 1M docs,
 * a copy and its page faults at every open). The writer never lets a varint, a term, the doc-id
 * blob or a posting list span two chunks (`Writer.room`), so the reader moves to the next chunk
 * only between them; a value cut at a chunk's end is a malformed image.
 */
class Cursor {
  private i = 0;
  b: Buffer;
  p = 0;
  constructor(private readonly chunks: readonly Buffer[]) {
    this.b = chunks[0] ?? Buffer.alloc(0);
  }
  /** Steps to the next chunk when this one is read to its end. */
  next(): void {
    while (this.p >= this.b.length && this.i < this.chunks.length - 1) {
      this.b = this.chunks[++this.i];
      this.p = 0;
    }
  }
  varint(): number {
    this.next();
    const b = this.b;
    let v = 0;
    let mul = 1;
    for (;;) {
      if (this.p >= b.length) throw bad('truncated');
      const x = b[this.p++];
      v += (x & 0x7f) * mul;
      if (x < 0x80) return v;
      mul *= 128;
    }
  }
  /** `len` varints into `out` (each in one chunk; a run may span chunks), a tight loop per chunk. */
  run(out: Int32Array, len: number): void {
    let i = 0;
    while (i < len) {
      this.next();
      const b = this.b;
      let p = this.p;
      if (p >= b.length) throw bad('truncated'); // the last chunk's end
      while (i < len && p < b.length) {
        let x = b[p++];
        let v = x & 0x7f;
        for (let shift = 7; x >= 0x80; shift += 7) {
          if (p >= b.length) throw bad('truncated');
          x = b[p++];
          v |= (x & 0x7f) << shift;
        }
        out[i++] = v;
      }
      this.p = p;
    }
  }
  /** `n` bytes that lie in the current chunk: [buffer, start]. */
  bytes(n: number, what: string): [Buffer, number] {
    this.next();
    if (this.p + n > this.b.length) throw bad(`${what} past the end`);
    const at = this.p;
    this.p += n;
    return [this.b, at];
  }
  atEnd(): boolean {
    this.next();
    return this.p >= this.b.length && this.i === this.chunks.length - 1;
  }
}

/** Decodes an image, given whole or as its stored chunks, back into a FieldIndex; throws corrupt_log-class errors on a malformed one. */
export function decodeFieldImage(image: Buffer | readonly Buffer[]): FieldIndex {
  const c = new Cursor(Buffer.isBuffer(image) ? [image] : image);
  if (c.varint() !== IMAGE_VERSION) throw bad('unknown version');
  const n = c.varint();
  const docs = c.varint();
  const total = c.varint();
  const minLen = c.varint();
  const lens = new Int32Array(n);
  c.run(lens, n);
  const idBytes = c.varint();
  const [ib, ip] = c.bytes(idBytes, 'doc ids');
  const joined = ib.toString('utf8', ip, ip + idBytes);
  const docIds: string[] = new Array(n);
  let at = 0;
  for (let o = 0; o < n; o++) {
    docIds[o] = joined.slice(at, at + lens[o]);
    at += lens[o];
  }
  if (at !== joined.length) throw bad('doc ids do not add up');
  const docLen = new Int32Array(n);
  c.run(docLen, n);
  const fi = FieldIndex.fromState({ docIds, docLen, docs, total, minLen });
  const nl = c.varint();
  for (let l = 0; l < nl; l++) {
    const tl = c.varint();
    const [tb, tp] = c.bytes(tl, 'term');
    const maxTf = c.varint();
    const len = c.varint();
    // the postings stay packed (2 × len varints, in this chunk) until the list is first read
    // (packed.ts), except a short list's, decoded into the shared slab (term-postings.ts)
    const b = c.b;
    const from = c.p;
    const end = skipVarints(b, from, 2 * len, b.length);
    if (end > b.length) throw bad(`list "${tb.toString('utf8', tp, tp + tl)}" past the end`);
    c.p = end;
    fi.restoreList(tb, tp, tl, maxTf, len, { b, at: from, end, ordinals: n });
  }
  if (!c.atEnd()) throw bad('trailing bytes');
  return fi;
}
