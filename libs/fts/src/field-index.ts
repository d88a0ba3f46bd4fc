/**
 * The in-memory index of one (table, field): doc ordinals, field lengths and, per
 * term, a sorted posting list (doc ordinal, term frequency) in typed arrays.
 * It mirrors the F keyspace exactly: the participant feeds it every doc entry of
 * every applied frame (and a full scan at open), so it is current the moment a
 * commit resolves. Positions stay in the store; phrase queries read them from a
 * snapshot.
 */

import { arenaPass, type Packed, unpackRuns } from './packed';
import { DocOrdinals } from './doc-ordinals';
import { TermPostings } from './term-postings';

/** The arrays of a list without postings yet (shared, never written: `capacity` is 0). */
const NO_POSTINGS = new Int32Array(0);
const NO_RATIOS = new Float32Array(0);

/** The rest bounds of a list without a tier (shared, never written: a tier allocates its own). */
const REST_UNSET = new Int32Array(256).fill(0x7fffffff);

export class PostingList {
  constructor(readonly term = '') {}
  // a new list allocates at its first posting (a restored one never: it adopts its image's arrays)
  private d: Int32Array = NO_POSTINGS;
  private t: Int32Array = NO_POSTINGS;
  /** Set while the list is still its checkpoint image's bytes (packed.ts): decoded at first read. */
  private packed: Packed | null = null;
  /** Doc ordinals, ascending (the first `n` entries). */
  get docs(): Int32Array {
    if (this.packed !== null) this.unpack();
    return this.d;
  }
  /** Term frequencies, by the same index as `docs`. */
  get tfs(): Int32Array {
    if (this.packed !== null) this.unpack();
    return this.t;
  }
  n = 0;
  /** docs[n - 1] (-1 when empty) and docs.length, on the object: an append reads neither array. */
  private last = -1;
  private capacity = 0;
  /** Its number in the owning FieldIndex (`lists`). */
  id = -1;
  /** An upper bound of the term frequency over the list (exact after inserts; may be stale-high after deletes). */
  maxTf = 0;
  /**
   * Per block of BLOCK postings ("impacts", parameter-free): the shortest field length of
   * its tf = 1 and of its tf = 2 postings, and over its tf ≥ 3 postings the largest tf and
   * the smallest dl/tf. BM25 saturation tf/(tf + c0 + c1·dl) grows with tf and shrinks with
   * dl, so the block bound is max(sat(1, minDl1), sat(2, minDl2), 1/(1 + c0/maxTf3 + c1·minRatio3))
   * for any k1, b and avgdl.
   */
  blocks: Int32Array = NO_POSTINGS;
  /** The same memory as `blocks`, read as float32: the min dl/tf of block b is blockRatio[4b + 3]. */
  blockRatio: Float32Array = NO_RATIOS;
  /** Postings from this index on have stale block data. */
  private dirtyFrom = 0;
  /**
   * Skip entries: the last doc of each block of BLOCK postings (`skips[b]` =
   * docs[min(n, (b + 1)·BLOCK) − 1]). A cursor's advance searches these first, then one
   * block, so a jump far into a long list touches a few cache lines instead of one per
   * step of a binary search over the whole list. Rebuilt lazily (`ensureSkips`) from the
   * first changed posting; an append only moves `skipsFrom`, no array write.
   */
  skips: Int32Array = NO_POSTINGS;
  private skipsFrom = 0;
  static readonly BLOCK = 64;
  /**
   * Per block b, four slots of `blocks` (one cache line for the whole upkeep of an append):
   * [4b] min dl of its tf = 1 postings, [4b + 1] of its tf = 2 postings, [4b + 2] max tf of
   * the rest, [4b + 3] min dl/tf of the rest (float32, in `blockRatio`).
   */
  static readonly BLOCK_SLOTS = 4;

  private growBlocks(nb: number): void {
    if (this.blocks.length >= nb * 4) return;
    const cap = Math.max(nb, (this.blocks.length >> 2) * 2, 4);
    const buf = new ArrayBuffer(cap * 16);
    const blocks = new Int32Array(buf);
    blocks.set(this.blocks);
    this.blocks = blocks;
    this.blockRatio = new Float32Array(buf);
  }

  // The open block's impacts, also kept on the object so an append reads no array (the
  // array copy is written through); runBlock = -1 when they must be reloaded.
  private runBlock = -1;
  private runDl1 = 0;
  private runDl2 = 0;
  private runMaxTf = 0;
  private runRatio = 0;

  private appendBlock(i: number, tf: number, dl: number): void {
    const blk = i >> 6; // BLOCK = 64, 4 slots per block
    const at = blk << 2;
    if (at >= this.blocks.length) this.growBlocks(blk + 1);
    const bl = this.blocks;
    if ((i & 63) === 0) {
      this.runBlock = blk;
      this.runDl1 = bl[at] = 0x7fffffff;
      this.runDl2 = bl[at + 1] = 0x7fffffff;
      this.runMaxTf = bl[at + 2] = 0;
      this.runRatio = this.blockRatio[at + 3] = Infinity;
    } else if (this.runBlock !== blk) {
      this.runBlock = blk;
      this.runDl1 = bl[at];
      this.runDl2 = bl[at + 1];
      this.runMaxTf = bl[at + 2];
      this.runRatio = this.blockRatio[at + 3];
    }
    if (tf === 1) {
      if (dl < this.runDl1) this.runDl1 = bl[at] = dl;
    } else if (tf === 2) {
      if (dl < this.runDl2) this.runDl2 = bl[at + 1] = dl;
    } else {
      if (tf > this.runMaxTf) this.runMaxTf = bl[at + 2] = tf;
      const r = Math.fround(dl / tf);
      const safe = r > dl / tf ? (dl / tf) * (1 - 1e-6) : r;
      if (safe < this.runRatio) {
        this.blockRatio[at + 3] = safe;
        this.runRatio = Math.fround(safe); // what the float32 slot holds
      }
    }
  }

  /** Brings the block bounds up to date (only the blocks touched since the last call). */
  ensureBlocks(docLen: Int32Array): void {
    if (this.dirtyFrom >= this.n) return;
    const B = PostingList.BLOCK;
    const nb = Math.ceil(this.n / B);
    this.growBlocks(nb);
    for (let blk = Math.floor(this.dirtyFrom / B); blk < nb; blk++) {
      let mt = 0;
      let mr = Infinity;
      let d1 = 0x7fffffff;
      let d2 = 0x7fffffff;
      const end = Math.min(this.n, (blk + 1) * B);
      for (let i = blk * B; i < end; i++) {
        const tf = this.tfs[i];
        const dl = docLen[this.docs[i]];
        if (tf === 1) {
          if (dl < d1) d1 = dl;
        } else if (tf === 2) {
          if (dl < d2) d2 = dl;
        } else {
          if (tf > mt) mt = tf;
          const r = dl / tf;
          if (r < mr) mr = r;
        }
      }
      const at = blk * 4;
      this.blocks[at] = d1;
      this.blocks[at + 1] = d2;
      this.blocks[at + 2] = mt;
      // stored as float32: round down so the bound stays a bound
      const f = Math.fround(mr);
      this.blockRatio[at + 3] = f > mr ? mr * (1 - 1e-6) : f;
    }
    this.runBlock = -1;
    this.dirtyFrom = this.n;
  }

  /** Brings the skip entries up to date (see `skips`). */
  ensureSkips(): void {
    const n = this.n;
    if (this.skipsFrom >= n) return;
    const B = PostingList.BLOCK;
    const nb = Math.ceil(n / B);
    if (this.skips.length < nb) {
      const s = new Int32Array(Math.max(nb, this.skips.length * 2, 4));
      s.set(this.skips);
      this.skips = s;
    }
    const d = this.docs;
    const sk = this.skips;
    for (let b = Math.floor(this.skipsFrom / B); b < nb; b++) sk[b] = d[Math.min(n, (b + 1) * B) - 1];
    this.skipsFrom = n;
  }

  /** Index of the first entry with doc ≥ target, searching from `from`. */
  seek(target: number, from = 0): number {
    const d = this.docs;
    let lo = from;
    let hi = this.n;
    // gallop first: most seeks land close by
    let step = 1;
    while (lo + step < hi && d[lo + step] < target) {
      lo += step;
      step *= 2;
    }
    hi = Math.min(hi, lo + step + 1);
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (d[mid] < target) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /**
   * Champion tier (lists of at least TIER_MIN postings): the ordinals (ascending) of the
   * postings with the best dl/tf-based saturation, and bounds (max tf, min dl/tf) over every
   * other posting — including postings added or changed since the tier was chosen. A doc
   * outside the tier scores at most the rest bound for this term, whatever N or avgdl.
   */
  tierDocs: Int32Array | null = null;
  /** Outside the tier: the shortest field length per tf (tf < 256), exact for any k1/b/avgdl. */
  restMinDl = REST_UNSET;
  /** Outside the tier, tf ≥ 256: max tf and min dl/tf. */
  restMaxTf = 0;
  restMinRatio = Infinity;
  private changesSinceTier = 0;
  static readonly TIER_MIN = 4096;

  /** Builds (or rebuilds, after many changes) the champion tier. */
  ensureTier(docLen: Int32Array, c0: number, c1: number): boolean {
    if (this.n < PostingList.TIER_MIN) return false;
    if (this.tierDocs && this.changesSinceTier * 8 < this.n) return true;
    const n = this.n;
    const key = new Float64Array(n);
    for (let i = 0; i < n; i++) key[i] = (c0 + c1 * docLen[this.docs[i]]) / this.tfs[i];
    // the cut: the 1/128 quantile of a strided sample (O(n); the tier's size is approximate,
    // its bound exact, since the rest bound is taken over every posting left out)
    const stride = Math.max(1, Math.floor(n / 4096));
    const sample: number[] = [];
    for (let i = 0; i < n; i += stride) sample.push(key[i]);
    sample.sort((x, y) => x - y);
    const cut = sample[Math.max(0, Math.floor(sample.length / 128) - 1)];
    const size = Math.ceil(n / 64); // cap, should many postings tie at the cut
    const champ: number[] = [];
    if (this.restMinDl === REST_UNSET) this.restMinDl = new Int32Array(256);
    this.restMinDl.fill(0x7fffffff);
    this.restMaxTf = 0;
    this.restMinRatio = Infinity;
    this.tierDocs = null;
    for (let i = 0; i < n; i++) {
      if (key[i] <= cut && champ.length < size) champ.push(this.docs[i]);
      else this.widenRest(this.tfs[i], docLen[this.docs[i]]);
    }
    this.tierDocs = Int32Array.from(champ);
    this.changesSinceTier = 0;
    return true;
  }

  private widenRest(tf: number, dl: number): void {
    if (tf < 256) {
      if (dl < this.restMinDl[tf]) this.restMinDl[tf] = dl;
      return;
    }
    if (tf > this.restMaxTf) this.restMaxTf = tf;
    const r = dl / tf;
    if (r < this.restMinRatio) this.restMinRatio = r;
  }

  /** Largest BM25 saturation tf/(tf + c0 + c1·dl) of any posting outside the tier. */
  restSaturation(c0: number, c1: number): number {
    let best = 0;
    const m = this.restMinDl;
    for (let tf = 1; tf < 256; tf++) {
      const dl = m[tf];
      if (dl === 0x7fffffff) continue;
      const v = tf / (tf + c0 + c1 * dl);
      if (v > best) best = v;
    }
    if (this.restMaxTf > 0) best = Math.max(best, 1 / (1 + c0 / this.restMaxTf + c1 * this.restMinRatio));
    return best;
  }

  /** Widens the rest bounds for a posting written after the tier was chosen. */
  private noteChange(tf: number, dl: number): void {
    if (!this.tierDocs) return;
    this.changesSinceTier++;
    this.widenRest(tf, dl);
  }

  set(doc: number, tf: number, dl = 0): void {
    if (this.packed !== null) this.unpack();
    if (tf > this.maxTf) this.maxTf = tf;
    this.noteChange(tf, dl);
    const n = this.n;
    if (doc > this.last) {
      if (n >= this.capacity) this.grow(n + 1);
      this.last = doc;
      this.d[n] = doc;
      this.t[n] = tf;
      this.n = n + 1;
      if (n < this.skipsFrom) this.skipsFrom = n;
      // appends keep block data current (a list built by appends never needs a rescan)
      if (this.dirtyFrom === n) {
        this.appendBlock(n, tf, dl);
        this.dirtyFrom = n + 1;
      } else if (n < this.dirtyFrom) this.dirtyFrom = n;
      return;
    }
    const i = this.seek(doc);
    if (i < this.dirtyFrom) this.dirtyFrom = i;
    if (i < this.skipsFrom) this.skipsFrom = i;
    if (i < n && this.d[i] === doc) {
      this.t[i] = tf;
      return;
    }
    this.grow(n + 1);
    this.d.copyWithin(i + 1, i, n);
    this.t.copyWithin(i + 1, i, n);
    this.d[i] = doc;
    this.t[i] = tf;
    this.n = n + 1;
  }

  /**
   * A list restored from a checkpoint image, left packed in it (`n` and `maxTf` known, the
   * postings decoded at first read); block and skip data are rebuilt lazily.
   */
  static packed(term: string, maxTf: number, n: number, packed: Packed): PostingList {
    const pl = new PostingList(term);
    pl.n = n;
    pl.maxTf = maxTf;
    pl.packed = packed;
    return pl;
  }

  /** A list over given arrays (a short list's copy, term-postings.ts): block and skip data are built at first use. */
  static of(term: string, docs: Int32Array, tfs: Int32Array, n: number, maxTf: number, id: number): PostingList {
    const pl = new PostingList(term);
    pl.n = n;
    pl.maxTf = maxTf;
    pl.id = id;
    pl.adopt(docs, tfs);
    return pl;
  }

  /** Whether the list is still its image's bytes. */
  get isPacked(): boolean {
    return this.packed !== null;
  }

  /** The packed list's varint runs as they are in its image (the checkpoint copies them), else null. */
  packedRuns(): Buffer | null {
    return this.packed === null ? null : this.packed.b.subarray(this.packed.at, this.packed.end);
  }

  /** Decodes the packed postings (a corrupt list throws a corrupt_log-class error and stays packed). */
  unpack(): void {
    const s = this.packed;
    if (s === null) return;
    const { docs, tfs } = unpackRuns(this.term, s, this.n);
    this.packed = null;
    this.adopt(docs, tfs);
  }

  /** A packed list's share of the arena build (packed.ts `arenaPass`), left packed; false when it is not packed (the caller reads `docs`). */
  arenaPass(count: Int32Array, fill: Int32Array | null, arena: Int32Array | null): boolean {
    if (this.packed === null) return false;
    arenaPass(this.packed, this.n, count, fill, arena, this.id);
    return true;
  }

  private adopt(docs: Int32Array, tfs: Int32Array): void {
    this.d = docs;
    this.t = tfs;
    this.capacity = docs.length;
    this.last = this.n > 0 ? docs[this.n - 1] : -1;
  }

  remove(doc: number): boolean {
    if (this.packed !== null) this.unpack();
    const i = this.seek(doc);
    if (i >= this.n || this.d[i] !== doc) return false;
    if (i < this.dirtyFrom) this.dirtyFrom = i;
    if (i < this.skipsFrom) this.skipsFrom = i;
    if (this.tierDocs) this.changesSinceTier++;
    this.d.copyWithin(i, i + 1, this.n);
    this.t.copyWithin(i, i + 1, this.n);
    this.n--;
    this.last = this.n > 0 ? this.d[this.n - 1] : -1;
    return true;
  }

  private grow(need: number): void {
    if (need <= this.d.length) return;
    const cap = Math.max(need, this.d.length * 2, 4);
    const d = new Int32Array(cap);
    d.set(this.d.subarray(0, this.n));
    const t = new Int32Array(cap);
    t.set(this.t.subarray(0, this.n));
    this.d = d;
    this.t = t;
    this.capacity = cap;
  }
}

/** What a checkpoint image carries besides the lists (FieldIndex.exportState / fromState; the lists: `termIds`, `termBytes`, …). */
export interface FieldIndexState {
  readonly docIds: string[];
  readonly docLen: Int32Array;
  readonly docs: number;
  readonly total: number;
  readonly minLen: number;
}

/** A read-only Map-like view of a field's lists by term (a short list is read as a copy: term-postings.ts). */
export interface TermsView {
  readonly size: number;
  get(term: string): PostingList | undefined;
  has(term: string): boolean;
  keys(): IterableIterator<string>;
  values(): IterableIterator<PostingList>;
  [Symbol.iterator](): IterableIterator<[string, PostingList]>;
}

export class FieldIndex {
  private ords: DocOrdinals | null = null;
  /**
   * Ordinal by doc id (typed arrays over `docIds`: doc-ordinals.ts). A restored index builds it
   * at first use (a write, or a lookup by id): a million-entry table the first searches of a
   * restarted store do not need.
   */
  private get ordOf(): DocOrdinals {
    if (this.ords === null) {
      const m = new DocOrdinals(this.docIds);
      const ids = this.docIds;
      for (let o = 0; o < ids.length; o++) if (ids[o] !== '') m.add(o);
      this.ords = m;
    }
    return this.ords;
  }
  /** Doc id by ordinal ('' once deleted). */
  docIds: string[] = [];
  /** Field length by ordinal. */
  docLen = new Int32Array(16);
  /** The terms and their posting lists: a packed dictionary, short lists in a shared slab (term-postings.ts). */
  private readonly tp = new TermPostings();
  /**
   * The distinct terms of each live doc, to remove it exactly: their term ids in one
   * append-only arena, the doc's run at docStart[o], docCount[o] long.
   * Plain ints rather than an array of references per doc: nothing per doc for the garbage
   * collector to copy, promote and mark.
   */
  private arena = new Int32Array(1024);
  private arenaUsed = 0;
  /** Arena entries of replaced or removed docs (reclaimed by compaction). */
  private arenaGarbage = 0;
  private docStart = new Int32Array(16);
  private docCount = new Int32Array(16);
  /** Document count and total length, as in the field's stats key. */
  docs = 0;
  total = 0;
  /** A lower bound of the field length of any live doc (for score upper bounds). */
  minLen = Number.MAX_SAFE_INTEGER;
  /**
   * Term ids in term order (prefix expansion), built at the first prefix query; terms added
   * since are merged in at the next (`added`), a term dropped makes it rebuilt (its id may be
   * reused by another term).
   */
  private sorted: Int32Array | null = null;
  private added: number[] = [];
  /** Live docs of a restored index until `ords` is built. */
  private live = 0;

  ordinal(doc: string): number | undefined {
    return this.ordOf.get(doc);
  }

  /** The posting list of `term` (a short list's copy), or undefined. */
  list(term: string): PostingList | undefined {
    const id = this.tp.idOf(term);
    return id < 0 ? undefined : this.tp.list(id, term);
  }

  /** Document frequency of `term` (0 when absent), without reading its list. */
  df(term: string): number {
    const id = this.tp.idOf(term);
    return id < 0 ? 0 : this.tp.count(id);
  }

  /** Distinct terms. */
  get termCount(): number {
    return this.tp.size;
  }

  private view: TermsView | null = null;
  /** The lists by term, read-only (tests and diagnostics iterate it; searches use `list`). */
  get terms(): TermsView {
    if (this.view) return this.view;
    const ids = () => this.termIds();
    const tp = this.tp;
    const list = (t: string) => this.list(t);
    function* keys() {
      for (const id of ids()) yield tp.table.term(id);
    }
    function* values() {
      for (const id of ids()) yield tp.list(id);
    }
    function* entries(): Generator<[string, PostingList]> {
      for (const id of ids()) {
        const t = tp.table.term(id);
        yield [t, tp.list(id, t)];
      }
    }
    this.view = {
      get size() {
        return tp.size;
      },
      get: list,
      has: (t) => tp.idOf(t) >= 0,
      keys,
      values,
      [Symbol.iterator]: entries,
    };
    return this.view;
  }

  /** Live term ids, ascending. */
  *termIds(): Generator<number> {
    const t = this.tp.table;
    for (let id = 0, end = t.idLimit; id < end; id++) if (t.has(id)) yield id;
  }

  /** A live term's UTF-8 bytes [buffer, start, length] (valid until the next change), its max tf, its postings. */
  termBytes(id: number): [Buffer, number, number] {
    return this.tp.table.bytes(id);
  }
  maxTfOf(id: number): number {
    return this.tp.maxTfOf(id);
  }
  countOf(id: number): number {
    return this.tp.count(id);
  }
  /** A short list's (doc, tf) pairs [slab, offset in pairs, count], or null for a long list (`longList`). */
  shortRun(id: number): [Int32Array, number, number] | null {
    return this.tp.shortRun(id);
  }
  longList(id: number): PostingList | undefined {
    return this.tp.long.get(id);
  }

  /** Bytes of the dictionary and the short lists' slab (the memory tests; long lists are objects of their own). */
  get dictionaryBytes(): number {
    return this.tp.footprint;
  }

  /** Long lists (PostingList objects). */
  get longLists(): number {
    return this.tp.long.size;
  }

  /** Whether the arena must still be built from the lists (an index restored from an image). */
  private arenaStale = false;

  /** Builds the per-doc arena from the posting lists: one counting pass, one filling pass. */
  private buildArena(): void {
    this.arenaStale = false;
    const n = this.docIds.length;
    const count = this.docCount;
    let postings = 0;
    const each = (id: number, fill: Int32Array | null): void => {
      const run = this.tp.shortRun(id);
      if (run) {
        const [s, at, c] = run;
        if (fill === null) for (let i = 0; i < c; i++) count[s[2 * (at + i)]]++;
        else for (let i = 0; i < c; i++) this.arena[fill[s[2 * (at + i)]]++] = id;
        return;
      }
      const pl = this.tp.long.get(id) as PostingList;
      if (pl.arenaPass(count, fill, fill && this.arena)) return;
      const d = pl.docs;
      if (fill === null) for (let i = 0; i < pl.n; i++) count[d[i]]++;
      else for (let i = 0; i < pl.n; i++) this.arena[fill[d[i]]++] = id;
    };
    for (const id of this.termIds()) {
      each(id, null);
      postings += this.tp.count(id);
    }
    let at = 0;
    for (let o = 0; o < n; o++) {
      this.docStart[o] = at;
      at += count[o];
    }
    this.arena = new Int32Array(Math.max(1024, postings));
    const fill = this.docStart.slice(0, n);
    for (const id of this.termIds()) each(id, fill);
    this.arenaUsed = postings;
    this.arenaGarbage = 0;
  }

  /** Indexes (or replaces) a doc: its length and its distinct terms with their frequencies. */
  putDoc(doc: string, length: number, terms: readonly string[], tfs: ArrayLike<number>): void {
    if (this.arenaStale) this.buildArena();
    let o = this.ordOf.get(doc);
    if (o !== undefined) this.unlink(o);
    else {
      const ords = this.ordOf; // (built from docIds first, when restored)
      o = this.docIds.length;
      this.docIds.push(doc);
      ords.add(o);
      if (o >= this.docLen.length) {
        const g = (a: Int32Array) => {
          const x = new Int32Array(a.length * 2);
          x.set(a);
          return x;
        };
        this.docLen = g(this.docLen);
        this.docStart = g(this.docStart);
        this.docCount = g(this.docCount);
      }
    }
    this.docLen[o] = length;
    if (length < this.minLen) this.minLen = length;
    const nt = terms.length;
    if (this.arenaUsed + nt > this.arena.length) this.growArena(nt);
    const start = this.arenaUsed;
    const arena = this.arena;
    const tp = this.tp;
    for (let i = 0; i < nt; i++) {
      const before = tp.size;
      const id = tp.intern(terms[i]);
      if (tp.size !== before && this.sorted !== null && this.added.push(id) > this.sorted.length) this.sorted = null;
      tp.set(id, o, tfs[i], length, this.docLen);
      arena[start + i] = id;
    }
    this.arenaUsed = start + nt;
    this.docStart[o] = start;
    this.docCount[o] = nt;
  }

  /** Room for `need` more arena entries: compacts when most of it is garbage, else grows. */
  private growArena(need: number): void {
    if (this.arenaGarbage * 2 > this.arenaUsed) {
      const live = this.arenaUsed - this.arenaGarbage;
      const a = new Int32Array(Math.max(1024, (live + need) * 2));
      let n = 0;
      for (let o = 0; o < this.docIds.length; o++) {
        const c = this.docCount[o];
        if (c === 0) continue;
        a.set(this.arena.subarray(this.docStart[o], this.docStart[o] + c), n);
        this.docStart[o] = n;
        n += c;
      }
      this.arena = a;
      this.arenaUsed = n;
      this.arenaGarbage = 0;
      return;
    }
    const a = new Int32Array(Math.max(this.arena.length * 2, this.arenaUsed + need));
    a.set(this.arena.subarray(0, this.arenaUsed));
    this.arena = a;
  }

  removeDoc(doc: string): void {
    if (this.arenaStale) this.buildArena();
    const o = this.ordOf.get(doc);
    if (o === undefined) return;
    this.unlink(o);
    this.ordOf.remove(o);
    this.docIds[o] = '';
    this.docLen[o] = 0;
  }

  private unlink(o: number): void {
    const c = this.docCount[o];
    if (c === 0) return;
    const start = this.docStart[o];
    const tp = this.tp;
    for (let i = start; i < start + c; i++) tp.remove(this.arena[i], o);
    for (let i = start; i < start + c; i++) {
      const id = this.arena[i];
      // (a doc's run names a term once; `has` guards a repeat all the same)
      if (tp.table.has(id) && tp.count(id) === 0) {
        tp.drop(id);
        this.sorted = null;
        this.added = [];
      }
    }
    this.docCount[o] = 0;
    this.arenaGarbage += c;
  }

  /** What a checkpoint image holds besides the lists (image.ts): doc ids and lengths by ordinal, the totals. */
  exportState(): FieldIndexState {
    return { docIds: this.docIds, docLen: this.docLen.subarray(0, this.docIds.length), docs: this.docs, total: this.total, minLen: this.minLen };
  }

  /**
   * An index restored from a checkpoint image: the same ordinals, bounds and totals as the one
   * imaged; its lists are added by `restoreList`. The per-doc arena (for exact removal) is
   * rebuilt from the lists, which hold the same facts (a counting pass over the postings, no
   * strings), at the first change: a restarted server's first searches do not wait for it.
   */
  static fromState(s: FieldIndexState): FieldIndex {
    const fi = new FieldIndex();
    const n = s.docIds.length;
    const cap = Math.max(16, n);
    fi.docIds = s.docIds;
    fi.ords = null; // built from docIds at first use
    let live = 0;
    for (let o = 0; o < n; o++) if (s.docIds[o] !== '') live++;
    fi.live = live;
    fi.docLen = new Int32Array(cap);
    fi.docLen.set(s.docLen.subarray(0, n));
    fi.docStart = new Int32Array(cap);
    fi.docCount = new Int32Array(cap);
    fi.arenaStale = true; // built by the first change (a search never needs it)
    fi.docs = s.docs;
    fi.total = s.total;
    fi.minLen = s.minLen;
    return fi;
  }

  /** A list of a checkpoint image: the term's UTF-8 bytes b[at, at + len), its max tf and postings, packed (term-postings.ts `restore`). */
  restoreList(b: Buffer, at: number, len: number, maxTf: number, n: number, packed: Packed): void {
    this.tp.restore(b, at, len, maxTf, n, packed);
    this.sorted = null;
    this.added = [];
  }

  /**
   * Builds the champion tier and the skip entries of every long list now (at open), so a
   * restarted server's first queries do not pay for them; c0 = k1·(1 − b), c1 = k1·b/avgdl
   * of the field.
   */
  prepareTiers(k1: number, b: number): void {
    for (const _ of this.tierSteps(k1, b));
  }

  /**
   * prepareTiers one long list per step, for a caller that spreads the work over event-loop
   * turns (the participant after open: a restarted store is searchable before they are built;
   * a search builds the tier of a list it needs and has not got yet, as after many changes).
   */
  *tierSteps(k1: number, b: number): Generator<void> {
    for (const pl of [...this.tp.long.values()]) {
      if (pl.n < PostingList.TIER_MIN) continue;
      const avgdl = (this.docs > 0 ? this.total / this.docs : 1) || 1;
      pl.ensureTier(this.docLen, k1 * (1 - b), (k1 * b) / avgdl);
      pl.ensureSkips();
      yield;
    }
  }

  /** Lists still packed since a restore (long lists only: a short one is decoded at open). */
  packedLists(): number {
    let n = 0;
    for (const pl of this.tp.long.values()) if (pl.isPacked) n++;
    return n;
  }

  /** Decodes the lists still packed since a restore, one per step (the participant spreads them over event-loop turns). */
  *unpackSteps(): Generator<void> {
    for (const pl of [...this.tp.long.values()]) {
      if (!pl.isPacked) continue;
      pl.unpack();
      yield;
    }
  }

  setStats(docs: number, total: number): void {
    this.docs = docs;
    this.total = total;
  }

  get liveDocs(): number {
    return this.ords === null ? this.live : this.ords.size;
  }

  /** Indexed terms starting with `prefix`, in term order, at most `max`. */
  expandPrefix(prefix: string, max: number): string[] {
    if (!this.sorted) this.sorted = this.tp.table.sortedIds(); // (after a drop, or when more was added than sorted)
    else if (this.added.length) this.sorted = this.tp.table.mergeSorted(this.sorted, this.added);
    this.added = [];
    const s = this.sorted;
    const t = this.tp.table;
    let lo = 0;
    let hi = s.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (t.term(s[mid]) < prefix) lo = mid + 1;
      else hi = mid;
    }
    const out: string[] = [];
    for (let i = lo; i < s.length && out.length < max; i++) {
      const term = t.term(s[i]);
      if (!term.startsWith(prefix)) break;
      out.push(term);
    }
    return out;
  }
}
