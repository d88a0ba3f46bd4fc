/**
 * The intent cache: question shape → plan template. Bounded (least recently used goes first),
 * kept durable through a backing the host provides (the tenant store), and checked against the
 * manifests each entry read: an entry whose schemas changed is dropped, never run.
 */
import type { PlanNode } from '@mmdb/plan';

export interface IntentEntry {
  readonly key: string;
  readonly plan?: PlanNode;
  /** Schema ids the plan reads, with a fingerprint of each manifest when compiled. */
  readonly reads: Readonly<Record<string, string>>;
  /** Interpretation with `{{slot.part}}` placeholders. */
  readonly interpretation?: string;
  /** The shape leaves a self-relation hop's direction open: asks without `direction` are answered 400. */
  readonly ambiguous?: { readonly relation: string; readonly forward: string; readonly reverse: string };
  readonly source: 'grammar' | 'model';
  readonly at: number;
}

/** Where entries live beyond the process (the store). Writes may be asynchronous. */
export interface IntentBacking {
  load(): Promise<IntentEntry[]>;
  /** Saves `put` and removes `drop` keys (one durable write). */
  save(put: IntentEntry | null, drop: readonly string[]): Promise<void>;
}

export class IntentCache {
  private readonly map = new Map<string, IntentEntry>();
  hits = 0;

  constructor(readonly capacity: number, private readonly backing?: IntentBacking) {}

  async load(): Promise<void> {
    if (!this.backing) return;
    const all = (await this.backing.load()).sort((a, b) => a.at - b.at);
    for (const e of all) this.map.set(e.key, e);
    const extra = [...this.map.keys()].slice(0, Math.max(0, this.map.size - this.capacity));
    for (const k of extra) this.map.delete(k);
    if (extra.length) await this.backing.save(null, extra);
  }

  get size(): number {
    return this.map.size;
  }

  /** The entry for a key if every schema it read still has the same manifest; a stale one is dropped. */
  get(key: string, fingerprint: (schema: string) => string | undefined): IntentEntry | undefined {
    const e = this.map.get(key);
    if (!e) return undefined;
    if (Object.entries(e.reads).some(([s, f]) => fingerprint(s) !== f)) {
      this.map.delete(key);
      void this.backing?.save(null, [key]).catch(() => undefined);
      return undefined;
    }
    this.map.delete(key);
    this.map.set(key, e);
    this.hits++;
    return e;
  }

  /** Adds an entry; resolves when the backing has stored it (callers may not wait: it is in memory at once). */
  async put(e: IntentEntry): Promise<void> {
    this.map.delete(e.key);
    this.map.set(e.key, e);
    const drop: string[] = [];
    while (this.map.size > this.capacity) {
      const oldest = this.map.keys().next().value as string;
      this.map.delete(oldest);
      drop.push(oldest);
    }
    await this.backing?.save(e, drop);
  }

  /** Drops every entry that read `schema` (its manifest changed or it was dropped). */
  async dropSchema(schema: string): Promise<void> {
    const drop = [...this.map.values()].filter((e) => schema in e.reads).map((e) => e.key);
    for (const k of drop) this.map.delete(k);
    if (drop.length) await this.backing?.save(null, drop);
  }
}
