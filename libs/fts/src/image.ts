/**
 * The checkpoint image of one FieldIndex (format version IMAGE_VERSION), so a restart loads
 * the term dictionary and posting lists instead of decoding every doc entry of the F keyspace:
 *
 *   varint version | varint ordinals | varint docs | varint total | varint minLen
 *   per ordinal: varint UTF-16 length of its doc id ('' once deleted); then the ids joined, UTF-8
 *   per ordinal: varint field length
 *   varint lists; per list (in the index's term order of insertion):
 *     varint term byte length, term UTF-8, varint maxTf, varint n, n × varint doc gap, n × varint tf
 *
 * Varints keep a posting near 2 bytes (gaps of common terms and tfs are small), a quarter of
 * the raw int32 pairs; decoding them is a tight loop over one buffer, no string per posting.
 * The output is cut into chunks of at most CHUNK bytes (a list longer than that gets a chunk
 * of its own), written as separate store values.
 */
import { FieldIndex, PostingList } from './field-index';
import { badImage as bad, readRun, skipVarints } from './packed';

export const IMAGE_VERSION = 1;
const CHUNK = 8 << 20;

class Writer {
  readonly chunks: Buffer[] = [];
  private buf = Buffer.allocUnsafe(CHUNK);
  pos = 0;
  /** Room for `n` more bytes in the current chunk (a new chunk when not). */
  room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    this.cut();
    this.buf = Buffer.allocUnsafe(Math.max(CHUNK, n));
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
  const s = fi.exportState();
  const w = new Writer();
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
  w.varint(s.lists.length);
  for (const pl of s.lists) {
    const term = Buffer.from(pl.term, 'utf8');
    const runs = pl.packedRuns(); // a list still packed since the last open: its bytes as they are
    w.room(term.length + 15 + (runs ? runs.length : pl.n * 10));
    w.varint(term.length);
    w.bytes(term);
    w.varint(pl.maxTf);
    w.varint(pl.n);
    if (runs) {
      w.bytes(runs);
      continue;
    }
    let prev = 0;
    for (let i = 0; i < pl.n; i++) {
      w.varint(pl.docs[i] - prev);
      prev = pl.docs[i];
    }
    for (let i = 0; i < pl.n; i++) w.varint(pl.tfs[i]);
  }
  w.cut();
  return w.chunks;
}

/** Decodes an image (its chunks concatenated) back into a FieldIndex; throws corrupt_log-class errors on a malformed one. */
export function decodeFieldImage(b: Buffer): FieldIndex {
  let p = 0;
  const end = b.length;
  const varint = (): number => {
    let v = 0;
    let mul = 1;
    for (;;) {
      if (p >= end) throw bad('truncated');
      const x = b[p++];
      v += (x & 0x7f) * mul;
      if (x < 0x80) return v;
      mul *= 128;
    }
  };
  if (varint() !== IMAGE_VERSION) throw bad('unknown version');
  const n = varint();
  const docs = varint();
  const total = varint();
  const minLen = varint();
  const lens = new Int32Array(n);
  p = readRun(b, p, lens, n, false);
  const idBytes = varint();
  if (p + idBytes > end) throw bad('doc ids past the end');
  const joined = b.toString('utf8', p, p + idBytes);
  p += idBytes;
  const docIds: string[] = new Array(n);
  let at = 0;
  for (let o = 0; o < n; o++) {
    docIds[o] = joined.slice(at, at + lens[o]);
    at += lens[o];
  }
  if (at !== joined.length) throw bad('doc ids do not add up');
  const docLen = new Int32Array(n);
  p = readRun(b, p, docLen, n, false);
  if (p > end) throw bad('doc lengths past the end');
  const nl = varint();
  const lists: PostingList[] = [];
  for (let l = 0; l < nl; l++) {
    const tl = varint();
    if (p + tl > end) throw bad('term past the end');
    const term = b.toString('utf8', p, p + tl);
    p += tl;
    const maxTf = varint();
    const len = varint();
    // the postings stay packed (2 × len varints) until the list is first read (packed.ts)
    const at = p;
    p = skipVarints(b, p, 2 * len, end);
    if (p > end) throw bad(`list "${term}" past the end`);
    lists.push(PostingList.packed(term, maxTf, len, { b, at, end: p, ordinals: n }));
  }
  if (p !== end) throw bad('trailing bytes');
  return FieldIndex.fromState({ docIds, docLen, lists, docs, total, minLen });
}
