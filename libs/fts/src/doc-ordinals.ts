/**
 * Doc id → ordinal for a FieldIndex, over its own `docIds` array: an open-addressing table of
 * ordinals (linear probing, at most half full, deletion by backward shift) and a hash per
 * ordinal, all Int32Arrays. A Map<string, number> entry cost ~50 bytes of JS heap a doc (and an
 * entry for the collector to trace); this costs 12–20 bytes of arrays, and the id strings are
 * the ones `docIds` already holds.
 */
import { grow32, home, placeEntry, removeEntry } from './term-table';

/** FNV-1a over UTF-16 code units. */
function hashOf(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h | 0;
}

export class DocOrdinals {
  /** ordinal + 1 per slot, 0 empty. */
  private slots = new Int32Array(64);
  private hashes = new Int32Array(32);
  size = 0;

  /** `ids[o]` is the doc id of ordinal o (the FieldIndex's docIds). */
  constructor(private readonly ids: readonly string[]) {}

  get(doc: string): number | undefined {
    const h = hashOf(doc);
    const slots = this.slots;
    const mask = slots.length - 1;
    for (let i = home(h, mask); ; i = (i + 1) & mask) {
      const e = slots[i];
      if (e === 0) return undefined;
      const o = e - 1;
      if (this.hashes[o] === h && this.ids[o] === doc) return o;
    }
  }

  /** Adds ordinal `o` (its id is ids[o], not in the table). */
  add(o: number): void {
    if (o >= this.hashes.length) this.hashes = grow32(this.hashes, o + 1);
    this.hashes[o] = hashOf(this.ids[o]);
    if (++this.size * 2 > this.slots.length) this.rehash(this.slots.length * 2);
    this.place(o);
  }

  private place(o: number): void {
    placeEntry(this.slots, this.hashes[o], o + 1);
  }

  private rehash(cap: number): void {
    const old = this.slots;
    this.slots = new Int32Array(cap);
    for (let i = 0; i < old.length; i++) if (old[i] !== 0) this.place(old[i] - 1);
  }

  /** Removes ordinal `o` (before its id is cleared). */
  remove(o: number): void {
    removeEntry(this.slots, o + 1, (e) => this.hashes[e - 1]);
    this.size--;
  }
}
