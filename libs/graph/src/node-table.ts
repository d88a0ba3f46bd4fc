/**
 * Node strings interned to dense integer ids without one JS object per node: the
 * strings' UTF-16 code units live in one growable Uint16Array arena (offsets in an
 * Int32Array) and the lookup is an open-addressing hash table of ids in an
 * Int32Array. A table of a million nodes is a handful of typed arrays, which the
 * garbage collector neither traces nor copies. A name is decoded to a JS string only
 * when a response needs it.
 */
export class NodeTable {
  private arena = new Uint16Array(1024);
  private used = 0;
  /** starts[id] .. starts[id + 1]: the code units of node `id`. */
  private starts = new Int32Array(257);
  private hashes = new Int32Array(256);
  private count = 0;
  /** id + 1 per slot; 0 = empty. Capacity a power of two, at most half full. */
  private slots = new Int32Array(512);

  get size(): number {
    return this.count;
  }

  /** The id of `s`, or -1. */
  idOf(s: string): number {
    const h = hashOf(s);
    const mask = this.slots.length - 1;
    for (let i = h & mask; ; i = (i + 1) & mask) {
      const v = this.slots[i];
      if (v === 0) return -1;
      const id = v - 1;
      if (this.hashes[id] === h && this.equals(id, s)) return id;
    }
  }

  /** The id of `s`, adding it when new. */
  intern(s: string): number {
    const h = hashOf(s);
    const mask = this.slots.length - 1;
    let i = h & mask;
    for (; ; i = (i + 1) & mask) {
      const v = this.slots[i];
      if (v === 0) break;
      const id = v - 1;
      if (this.hashes[id] === h && this.equals(id, s)) return id;
    }
    const id = this.count++;
    if (id + 2 > this.starts.length) this.starts = grow(this.starts, this.starts.length * 2);
    if (id >= this.hashes.length) this.hashes = grow(this.hashes, this.hashes.length * 2);
    if (this.used + s.length > this.arena.length) this.arena = grow(this.arena, Math.max(this.arena.length * 2, this.used + s.length));
    const a = this.arena;
    let at = this.used;
    for (let k = 0; k < s.length; k++) a[at++] = s.charCodeAt(k);
    this.used = at;
    this.starts[id + 1] = at;
    this.hashes[id] = h;
    this.slots[i] = id + 1;
    if (this.count * 2 > this.slots.length) this.rehash();
    return id;
  }

  /** The node string of `id` (a new JS string). */
  name(id: number): string {
    const a = this.starts[id];
    const b = this.starts[id + 1];
    const n = b - a;
    const arena = this.arena;
    // Short keys (the common case): one string, no subarray view and no partial strings.
    switch (n) {
      case 0:
        return '';
      case 1:
        return String.fromCharCode(arena[a]);
      case 2:
        return String.fromCharCode(arena[a], arena[a + 1]);
      case 3:
        return String.fromCharCode(arena[a], arena[a + 1], arena[a + 2]);
      case 4:
        return String.fromCharCode(arena[a], arena[a + 1], arena[a + 2], arena[a + 3]);
      case 5:
        return String.fromCharCode(arena[a], arena[a + 1], arena[a + 2], arena[a + 3], arena[a + 4]);
      case 6:
        return String.fromCharCode(arena[a], arena[a + 1], arena[a + 2], arena[a + 3], arena[a + 4], arena[a + 5]);
      case 7:
        return String.fromCharCode(arena[a], arena[a + 1], arena[a + 2], arena[a + 3], arena[a + 4], arena[a + 5], arena[a + 6]);
      case 8:
        return String.fromCharCode(arena[a], arena[a + 1], arena[a + 2], arena[a + 3], arena[a + 4], arena[a + 5], arena[a + 6], arena[a + 7]);
    }
    if (n <= 4096) return String.fromCharCode.apply(null, arena.subarray(a, b) as unknown as number[]);
    let s = '';
    for (let k = a; k < b; k += 4096) s += String.fromCharCode.apply(null, arena.subarray(k, Math.min(b, k + 4096)) as unknown as number[]);
    return s;
  }

  private offs = new Int32Array(0);
  private sink = 0;

  /**
   * The names of ids[0, n), in order. On a graph larger than the CPU caches each name is two
   * dependent cache misses (its offset, then its code units); decoding one name at a time
   * leaves those misses one after another (the string building between them keeps the CPU
   * from running ahead). So two tight passes first only load the offsets, then each name's
   * first unit: the loads of many names are in flight at once, and the decoding pass reads
   * from the cache (libs/graph DESIGN.md "BFS cost as the graph grows").
   */
  names(ids: Int32Array, n: number): string[] {
    if (this.offs.length < n) this.offs = new Int32Array(Math.max(n, 1024, this.offs.length * 2));
    const offs = this.offs;
    const starts = this.starts;
    const arena = this.arena;
    for (let k = 0; k < n; k++) offs[k] = starts[ids[k]];
    let x = 0;
    for (let k = 0; k < n; k++) x |= arena[offs[k]];
    this.sink = x; // (the loads are what counts: kept so they are not dropped as dead)
    const out = new Array<string>(n);
    for (let k = 0; k < n; k++) out[k] = this.name(ids[k]);
    return out;
  }

  /** The table as typed arrays (a checkpoint image); `fromArrays` restores it. */
  toArrays(): { arena: Uint16Array; starts: Int32Array; hashes: Int32Array; slots: Int32Array } {
    return { arena: this.arena.subarray(0, this.used), starts: this.starts.subarray(0, this.count + 1), hashes: this.hashes.subarray(0, this.count), slots: this.slots };
  }

  static fromArrays(a: { arena: Uint16Array<ArrayBuffer>; starts: Int32Array<ArrayBuffer>; hashes: Int32Array<ArrayBuffer>; slots: Int32Array<ArrayBuffer> }): NodeTable {
    const t = new NodeTable();
    t.count = a.hashes.length;
    t.used = a.arena.length;
    t.arena = grow(a.arena, Math.max(1024, a.arena.length));
    t.starts = grow(a.starts, Math.max(257, a.starts.length));
    t.hashes = grow(a.hashes, Math.max(256, a.hashes.length));
    t.slots = a.slots;
    return t;
  }

  /** Bytes held (arena, offsets, hashes, slots). */
  get bytes(): number {
    return this.arena.byteLength + this.starts.byteLength + this.hashes.byteLength + this.slots.byteLength;
  }

  private equals(id: number, s: string): boolean {
    const a = this.starts[id];
    if (this.starts[id + 1] - a !== s.length) return false;
    const arena = this.arena;
    for (let k = 0; k < s.length; k++) if (arena[a + k] !== s.charCodeAt(k)) return false;
    return true;
  }

  private rehash(): void {
    const slots = new Int32Array(this.slots.length * 2);
    const mask = slots.length - 1;
    for (let id = 0; id < this.count; id++) {
      let i = this.hashes[id] & mask;
      while (slots[i] !== 0) i = (i + 1) & mask;
      slots[i] = id + 1;
    }
    this.slots = slots;
  }
}

/** FNV-1a over UTF-16 code units, finished with a murmur-style mix (spreads similar keys like v1, v2). */
function hashOf(s: string): number {
  let h = 0x811c9dc5;
  for (let k = 0; k < s.length; k++) h = Math.imul(h ^ s.charCodeAt(k), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  return h & 0x7fffffff;
}

type Typed = Int32Array | Uint16Array | Float64Array | Uint8Array;

/** A copy of `a` with room for `n` elements. */
export function grow<T extends Typed>(a: T, n: number): T {
  const b = new (a.constructor as new (n: number) => T)(n);
  b.set(a);
  return b;
}
