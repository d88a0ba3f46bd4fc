/**
 * The store's cache of row records (see DESIGN.md, "Reads"): at most `max` entries in two
 * generations. New entries go into the young map; when it holds max/2 it becomes the old
 * map and the previous old one is dropped whole. A hit in the old map moves the entry back
 * into the young one, so rows in use survive. Every operation is O(1): evicting the oldest
 * entry of a single Map one delete at a time leaves deleted slots at its head that each
 * later eviction walks over, which made a bulk load of fresh rows quadratic.
 */
export class RowCache<V> {
  private young = new Map<string, V>();
  private old = new Map<string, V>();
  private readonly half: number;
  /**
   * Groups with more key writes than this are bulk loads: they update cached rows but do
   * not add new ones, so a load does not push out the rows in use (and costs less per row).
   */
  readonly bulk: number;

  constructor(readonly max: number) {
    this.half = Math.max(1, Math.floor(max / 2));
    this.bulk = Math.floor(max / 16);
  }

  get size(): number {
    return this.young.size + this.old.size;
  }

  get(k: string): V | undefined {
    if (this.young.size === 0 && this.old.size === 0) return undefined;
    const v = this.young.get(k);
    if (v !== undefined) return v;
    const o = this.old.get(k);
    if (o !== undefined) this.set(k, o);
    return o;
  }

  set(k: string, v: V): void {
    if (this.max <= 0) return;
    this.young.set(k, v);
    if (this.young.size >= this.half) {
      this.old = this.young;
      this.young = new Map();
    }
  }

  /** Whether the key is cached (without moving it). */
  has(k: string): boolean {
    return this.young.has(k) || this.old.has(k);
  }

  clear(): void {
    this.young = new Map();
    this.old = new Map();
  }
}
