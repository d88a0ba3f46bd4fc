/**
 * A field's terms and their postings, with nothing per term on the JS heap for the many short
 * lists a real vocabulary has (most words are in a few docs):
 * - the dictionary is a packed TermTable (term → id);
 * - a list of at most SHORT_MAX postings lives in one shared slab, (doc, tf) pairs in a run of
 *   a power-of-two capacity, with per-class free lists so a run freed by a growing list is
 *   reused by the next one; per id: its count, max tf, slab offset and capacity class;
 * - a longer list is a PostingList object (block impacts, skips, champion tier, packed image
 *   bytes), as before: there are at most postings / SHORT_MAX of them.
 * A short list read by a search is copied into a PostingList of its own (`list`): at most
 * SHORT_MAX postings, so the scorers see one kind of list and a later write cannot change
 * a list a search holds.
 */
import { PostingList } from './field-index';
import { badImage, type Packed, readRun } from './packed';
import { grow32, TermTable } from './term-table';

/** The longest list kept in the slab: one block of PostingList.BLOCK postings. */
export const SHORT_MAX = 64;
const CLASSES = 7; // capacities 1, 2, 4, … 64
const LONG = 255;

export class TermPostings {
  readonly table = new TermTable();
  /** Per id: postings (short lists), max tf ever (may be stale-high after removals, as PostingList.maxTf), slab offset in pairs, capacity class (LONG: in `long`). */
  private cnt = new Int32Array(64);
  private maxTf = new Int32Array(64);
  private off = new Int32Array(64);
  private cls = new Uint8Array(64);
  /** (doc, tf) pairs of the short lists. */
  private slab = new Int32Array(1 << 12);
  private slabUsed = 0;
  /** Per capacity class: offsets of free runs. */
  private readonly freeRuns: Int32Array<ArrayBuffer>[] = Array.from({ length: CLASSES }, () => new Int32Array(8));
  private readonly nFreeRuns = new Int32Array(CLASSES);
  /** The long lists, by id. */
  readonly long = new Map<number, PostingList>();

  get size(): number {
    return this.table.size;
  }

  /** The id of `term`, or -1. */
  idOf(term: string): number {
    return this.table.find(term);
  }

  /** The id of `term`, added (with an empty list) when absent. */
  intern(term: string): number {
    const before = this.table.size;
    const id = this.table.intern(term);
    if (this.table.size !== before) this.init(id, 0);
    return id;
  }

  private init(id: number, maxTf: number): void {
    if (id >= this.cnt.length) {
      const cap = Math.max(id + 1, this.cnt.length * 2);
      this.cnt = grow32(this.cnt, cap);
      this.maxTf = grow32(this.maxTf, cap);
      this.off = grow32(this.off, cap);
      const c = new Uint8Array(cap);
      c.set(this.cls);
      this.cls = c;
    }
    this.cnt[id] = 0;
    this.maxTf[id] = maxTf;
    this.cls[id] = 0;
    this.off[id] = this.alloc(0);
  }

  /** Postings of a live id. */
  count(id: number): number {
    return this.cls[id] === LONG ? (this.long.get(id) as PostingList).n : this.cnt[id];
  }

  maxTfOf(id: number): number {
    return this.cls[id] === LONG ? (this.long.get(id) as PostingList).maxTf : this.maxTf[id];
  }

  /** A run of 2^c pairs from the class's free list or the slab's end. */
  private alloc(c: number): number {
    if (this.nFreeRuns[c] > 0) return this.freeRuns[c][--this.nFreeRuns[c]];
    const at = this.slabUsed;
    const need = (at + (1 << c)) * 2;
    if (need > this.slab.length) this.slab = grow32(this.slab, need);
    this.slabUsed = at + (1 << c);
    return at;
  }

  private release(at: number, c: number): void {
    const n = this.nFreeRuns[c];
    if (n >= this.freeRuns[c].length) this.freeRuns[c] = grow32(this.freeRuns[c], n + 1);
    this.freeRuns[c][n] = at;
    this.nFreeRuns[c] = n + 1;
  }

  /** Sets doc's tf in the list of `id` (appended, inserted in order, or replaced); dl is the doc's field length, docLen every doc's (a list promoted to long reads it). */
  set(id: number, doc: number, tf: number, dl: number, docLen: Int32Array): void {
    const c = this.cls[id];
    if (c === LONG) {
      (this.long.get(id) as PostingList).set(doc, tf, dl);
      return;
    }
    if (tf > this.maxTf[id]) this.maxTf[id] = tf;
    const n = this.cnt[id];
    let s = this.slab;
    let at = this.off[id];
    // position: after every smaller doc (an append, mostly)
    let i = n;
    while (i > 0 && s[2 * (at + i - 1)] >= doc) i--;
    if (i < n && s[2 * (at + i)] === doc) {
      s[2 * (at + i) + 1] = tf;
      return;
    }
    if (n === 1 << c) {
      if (c + 1 === CLASSES) {
        this.promote(id, docLen).set(doc, tf, dl);
        return;
      }
      const to = this.alloc(c + 1);
      s = this.slab; // alloc may have grown it
      s.copyWithin(2 * to, 2 * at, 2 * (at + n));
      this.release(at, c);
      this.off[id] = at = to;
      this.cls[id] = c + 1;
    }
    s.copyWithin(2 * (at + i + 1), 2 * (at + i), 2 * (at + n));
    s[2 * (at + i)] = doc;
    s[2 * (at + i) + 1] = tf;
    this.cnt[id] = n + 1;
  }

  /** A full short list becomes a PostingList (appends keep its block impacts, as a list built by writes). */
  private promote(id: number, docLen: Int32Array): PostingList {
    const pl = new PostingList(this.table.term(id));
    pl.id = id;
    const s = this.slab;
    const at = this.off[id];
    for (let i = 0; i < this.cnt[id]; i++) pl.set(s[2 * (at + i)], s[2 * (at + i) + 1], docLen[s[2 * (at + i)]]);
    pl.maxTf = this.maxTf[id];
    this.release(at, this.cls[id]);
    this.cls[id] = LONG;
    this.long.set(id, pl);
    return pl;
  }

  /** Removes doc from the list of `id`; whether it was there. */
  remove(id: number, doc: number): boolean {
    if (this.cls[id] === LONG) return (this.long.get(id) as PostingList).remove(doc);
    const n = this.cnt[id];
    const s = this.slab;
    const at = this.off[id];
    let i = 0;
    while (i < n && s[2 * (at + i)] < doc) i++;
    if (i === n || s[2 * (at + i)] !== doc) return false;
    s.copyWithin(2 * (at + i), 2 * (at + i + 1), 2 * (at + n));
    this.cnt[id] = n - 1;
    return true;
  }

  /** Drops a term (its list empty). */
  drop(id: number): void {
    if (this.cls[id] === LONG) this.long.delete(id);
    else this.release(this.off[id], this.cls[id]);
    this.table.remove(id);
  }

  /** The list of `id`: the long list itself, or a copy of a short one. */
  list(id: number, term?: string): PostingList {
    if (this.cls[id] === LONG) return this.long.get(id) as PostingList;
    const n = this.cnt[id];
    const docs = new Int32Array(Math.max(4, n));
    const tfs = new Int32Array(Math.max(4, n));
    const s = this.slab;
    const at = this.off[id];
    for (let i = 0; i < n; i++) {
      docs[i] = s[2 * (at + i)];
      tfs[i] = s[2 * (at + i) + 1];
    }
    return PostingList.of(term ?? this.table.term(id), docs, tfs, n, this.maxTf[id], id);
  }

  /** A short list's pairs: [slab, offset in pairs, count]; null for a long list. */
  shortRun(id: number): [Int32Array, number, number] | null {
    return this.cls[id] === LONG ? null : [this.slab, this.off[id], this.cnt[id]];
  }

  /**
   * A list from a checkpoint image (image.ts): a short one decoded into the slab now (its
   * runs are a few bytes), a long one left packed until first read. Throws corrupt_log-class
   * errors for a repeated term or postings out of order.
   */
  restore(b: Buffer, at: number, len: number, maxTf: number, n: number, packed: Packed): void {
    const id = this.table.addBytes(b, at, len);
    if (id < 0) throw badImage(`term "${b.toString('utf8', at, at + len)}" twice`);
    this.init(id, maxTf);
    if (n > SHORT_MAX) {
      this.release(this.off[id], 0);
      this.cls[id] = LONG;
      const pl = PostingList.packed(this.table.term(id), maxTf, n, packed);
      pl.id = id;
      this.long.set(id, pl);
      return;
    }
    const docs = scratch; // n ≤ SHORT_MAX: docs in its first half, tfs in its second
    const tfs = scratch.subarray(SHORT_MAX);
    let p = readRun(packed.b, packed.at, docs, n, true);
    p = readRun(packed.b, p, tfs, n, false);
    for (let i = 1; i < n; i++) if (docs[i] <= docs[i - 1]) throw badImage(`list "${this.table.term(id)}" out of order`);
    if (p !== packed.end || (n > 0 && (docs[0] < 0 || docs[n - 1] >= packed.ordinals))) throw badImage(`list "${this.table.term(id)}" past the end`);
    let c = 0;
    while (1 << c < n) c++;
    this.release(this.off[id], 0);
    const to = this.alloc(c);
    this.cls[id] = c;
    this.off[id] = to;
    for (let i = 0; i < n; i++) {
      this.slab[2 * (to + i)] = docs[i];
      this.slab[2 * (to + i) + 1] = tfs[i];
    }
    this.cnt[id] = n;
  }

  /** Bytes held outside the long lists: the dictionary, the per-id arrays, the slab. */
  get footprint(): number {
    let free = 0;
    for (const f of this.freeRuns) free += f.byteLength;
    return this.table.footprint + this.cnt.byteLength * 3 + this.cls.byteLength + this.slab.byteLength + free;
  }
}

const scratch = new Int32Array(2 * SHORT_MAX);
