/**
 * A field's term dictionary, packed: term → id with no JS object per term. The terms' UTF-8
 * bytes sit in one shared pool (a start and a length per id), and an open-addressing table of
 * ids (linear probing, deletion by backward shift) finds a term by its hash, which is kept per
 * id so that growing the table never reads the pool. About 25–30 bytes a term, plus its bytes,
 * where a Map<string, object> entry, its string and a per-term object cost ~1 KB of JS heap
 * (libs/fts DESIGN.md "Memory per distinct term").
 *
 * Ids of removed terms are reused; their bytes stay in the pool as garbage until it is more than
 * half of it, then the pool is rewritten.
 */

/** FNV-1a over UTF-8 bytes (ASCII strings hash straight from their char codes). */
function hashBytes(b: Uint8Array, at: number, len: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < len; i++) h = Math.imul(h ^ b[at + i], 0x01000193);
  return h | 0;
}

/** The table slot a hash starts probing at (murmur3's finalizer: similar terms differ in their low bits by little). */
export function home(h: number, mask: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) & mask;
}

/** `a` with room for `need` ints (doubling), its contents kept. */
export const grow32 = (a: Int32Array<ArrayBuffer>, need: number): Int32Array<ArrayBuffer> => {
  if (need <= a.length) return a;
  const x = new Int32Array(Math.max(need, a.length * 2));
  x.set(a);
  return x;
};

/** Puts `entry` (non-zero) in the first empty slot from the home of hash `h` (linear probing). */
export function placeEntry(slots: Int32Array, h: number, entry: number): void {
  const mask = slots.length - 1;
  let i = home(h, mask);
  while (slots[i] !== 0) i = (i + 1) & mask;
  slots[i] = entry;
}

/**
 * Removes `entry` from a linear-probing table without tombstones (`hashOf(entry)` is the hash it
 * was placed with): the entries after the hole move back into it when their home slot allows.
 */
export function removeEntry(slots: Int32Array, entry: number, hashOf: (entry: number) => number): void {
  const mask = slots.length - 1;
  let i = home(hashOf(entry), mask);
  while (slots[i] !== entry) i = (i + 1) & mask;
  for (let j = (i + 1) & mask; slots[j] !== 0; j = (j + 1) & mask) {
    const k = home(hashOf(slots[j]), mask);
    // the entry at j may move to i when its home is not cyclically in (i, j]
    if (i <= j ? k <= i || k > j : k <= i && k > j) {
      slots[i] = slots[j];
      i = j;
    }
  }
  slots[i] = 0;
}

export class TermTable {
  private pool = Buffer.alloc(1 << 12);
  private poolUsed = 0;
  private poolGarbage = 0;
  /** Per id: start of its bytes in the pool, their length (-1: a free id), its hash. */
  private start = new Int32Array(64);
  private len = new Int32Array(64).fill(-1);
  private hash = new Int32Array(64);
  /** Ids handed out so far (live or free). */
  private ids = 0;
  private free = new Int32Array(16);
  private nFree = 0;
  /** Open addressing: id + 1 per slot, 0 empty. */
  private slots = new Int32Array(128);
  /** Live terms. */
  size = 0;
  /** Encoding scratch for non-ASCII lookups. */
  private scratch = Buffer.alloc(256);
  private lastBytes = 0;

  /** A term's UTF-8 bytes into `scratch` (ASCII: char codes); returns its hash, the length in `lastBytes`. */
  private encode(term: string): number {
    const n = term.length;
    if (this.scratch.length < n * 3) this.scratch = Buffer.alloc(n * 3 + 16);
    const s = this.scratch;
    let h = 0x811c9dc5;
    for (let i = 0; i < n; i++) {
      const c = term.charCodeAt(i);
      if (c >= 0x80) {
        this.lastBytes = s.write(term, 0, 'utf8');
        return hashBytes(s, 0, this.lastBytes);
      }
      s[i] = c;
      h = Math.imul(h ^ c, 0x01000193);
    }
    this.lastBytes = n;
    return h | 0;
  }

  private equals(id: number, b: Uint8Array, at: number, len: number): boolean {
    if (this.len[id] !== len) return false;
    const p = this.pool;
    const s = this.start[id];
    for (let i = 0; i < len; i++) if (p[s + i] !== b[at + i]) return false;
    return true;
  }

  private findBytes(b: Uint8Array, at: number, len: number, h: number): number {
    const slots = this.slots;
    const mask = slots.length - 1;
    for (let i = home(h, mask); ; i = (i + 1) & mask) {
      const e = slots[i];
      if (e === 0) return -1;
      const id = e - 1;
      if (this.hash[id] === h && this.equals(id, b, at, len)) return id;
    }
  }

  /** The id of `term`, or -1. */
  find(term: string): number {
    const h = this.encode(term);
    return this.findBytes(this.scratch, 0, this.lastBytes, h);
  }

  /** The id of `term`, added when absent (`added` tells which). */
  intern(term: string): number {
    const h = this.encode(term);
    const id = this.findBytes(this.scratch, 0, this.lastBytes, h);
    return id >= 0 ? id : this.insert(this.scratch, 0, this.lastBytes, h);
  }

  /** Adds the term whose UTF-8 bytes are b[at, at + len) (an image's dictionary); it must be absent. */
  addBytes(b: Uint8Array, at: number, len: number): number {
    const h = hashBytes(b, at, len);
    if (this.findBytes(b, at, len, h) >= 0) return -1;
    return this.insert(b, at, len, h);
  }

  private insert(b: Uint8Array, at: number, len: number, h: number): number {
    if (this.poolUsed + len > this.pool.length) this.growPool(len);
    const p = this.poolUsed;
    this.pool.set(b.subarray(at, at + len), p);
    this.poolUsed = p + len;
    let id: number;
    if (this.nFree > 0) id = this.free[--this.nFree];
    else {
      id = this.ids++;
      if (id >= this.len.length) {
        const cap = this.len.length * 2;
        this.start = grow32(this.start, cap);
        this.hash = grow32(this.hash, cap);
        const l = new Int32Array(cap).fill(-1);
        l.set(this.len);
        this.len = l;
      }
    }
    this.start[id] = p;
    this.len[id] = len;
    this.hash[id] = h;
    if (++this.size * 2 > this.slots.length) this.rehash(this.slots.length * 2);
    else this.place(id);
    return id;
  }

  private place(id: number): void {
    placeEntry(this.slots, this.hash[id], id + 1);
  }

  private rehash(cap: number): void {
    this.slots = new Int32Array(cap);
    for (let id = 0; id < this.ids; id++) if (this.len[id] >= 0) this.place(id);
  }

  private growPool(need: number): void {
    // rewrite instead of growing when most of the pool is removed terms' bytes
    if (this.poolGarbage * 2 > this.poolUsed) {
      const live = this.poolUsed - this.poolGarbage;
      const p = Buffer.alloc(Math.max(1 << 12, (live + need) * 2));
      let at = 0;
      for (let id = 0; id < this.ids; id++) {
        const l = this.len[id];
        if (l < 0) continue;
        this.pool.copy(p, at, this.start[id], this.start[id] + l);
        this.start[id] = at;
        at += l;
      }
      this.pool = p;
      this.poolUsed = at;
      this.poolGarbage = 0;
      return;
    }
    const p = Buffer.alloc(Math.max(this.pool.length * 2, this.poolUsed + need));
    this.pool.copy(p, 0, 0, this.poolUsed);
    this.pool = p;
  }

  /** Removes a live id (its slot by backward shift, so probes need no tombstones); the id is reused. */
  remove(id: number): void {
    removeEntry(this.slots, id + 1, (e) => this.hash[e - 1]);
    this.poolGarbage += this.len[id];
    this.len[id] = -1;
    this.size--;
    if (this.nFree >= this.free.length) this.free = grow32(this.free, this.nFree + 1);
    this.free[this.nFree++] = id;
  }

  /** The term of a live id. */
  term(id: number): string {
    const s = this.start[id];
    return this.pool.toString('utf8', s, s + this.len[id]);
  }

  /** Whether `id` is a live term. */
  has(id: number): boolean {
    return id >= 0 && id < this.ids && this.len[id] >= 0;
  }

  /** A live term's UTF-8 bytes: [pool, start, length] (valid until the next change). */
  bytes(id: number): [Buffer, number, number] {
    return [this.pool, this.start[id], this.len[id]];
  }

  /** Ids handed out so far: every live id is below it. */
  get idLimit(): number {
    return this.ids;
  }

  /** Compares two live ids' terms in JS string order (UTF-16 code units, as `[...].sort()` orders strings). */
  compare(a: number, b: number): number {
    const p = this.pool;
    const la = this.len[a];
    const lb = this.len[b];
    const sa = this.start[a];
    const sb = this.start[b];
    const m = la < lb ? la : lb;
    for (let i = 0; i < m; i++) {
      const x = p[sa + i];
      const y = p[sb + i];
      if (x === y) continue;
      // UTF-8 bytes order code points; JS strings order UTF-16 units: they differ only past U+FFFF
      if (x >= 0xee && y >= 0xee) {
        const ta = this.term(a);
        const tb = this.term(b);
        return ta < tb ? -1 : ta > tb ? 1 : 0;
      }
      return x - y;
    }
    return la - lb;
  }

  /** Live ids sorted by their terms (`compare`). */
  sortedIds(): Int32Array {
    const out = new Int32Array(this.size);
    let n = 0;
    for (let id = 0; id < this.ids; id++) if (this.len[id] >= 0) out[n++] = id;
    return out.sort((a, b) => this.compare(a, b));
  }

  /** `sorted` (ids in term order) with `added` (live ids not in it) merged in: O(n + k log k), not a sort of all. */
  mergeSorted(sorted: Int32Array, added: readonly number[]): Int32Array {
    const add = Int32Array.from(added).sort((a, b) => this.compare(a, b));
    const out = new Int32Array(sorted.length + add.length);
    let i = 0;
    let j = 0;
    let k = 0;
    while (i < sorted.length && j < add.length) out[k++] = this.compare(sorted[i], add[j]) <= 0 ? sorted[i++] : add[j++];
    while (i < sorted.length) out[k++] = sorted[i++];
    while (j < add.length) out[k++] = add[j++];
    return out;
  }

  /** Bytes held by the dictionary's arrays (for diagnostics and the memory tests). */
  get footprint(): number {
    return this.pool.length + this.slots.byteLength + this.start.byteLength + this.len.byteLength + this.hash.byteLength + this.free.byteLength;
  }
}
