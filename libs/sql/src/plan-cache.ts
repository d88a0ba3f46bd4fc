/** LRU cache of bound plans keyed by normalized statement text. Hits are counted for db_plan_cache_hits_total. */
export class PlanCache<V = unknown> {
  private readonly map = new Map<string, V>();
  hits = 0;
  misses = 0;
  constructor(private readonly capacity: number) {}

  get(key: string): V | undefined {
    const v = this.map.get(key);
    if (v === undefined) { this.misses++; return undefined; }
    this.hits++;
    this.map.delete(key);
    this.map.set(key, v);
    return v;
  }

  set(key: string, v: V): void {
    this.map.delete(key);
    this.map.set(key, v);
    if (this.map.size > this.capacity) this.map.delete(this.map.keys().next().value as string);
  }

  clear(): void { this.map.clear(); }
}
