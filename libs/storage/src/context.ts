/**
 * Read-your-group's-writes views used while a group of requests is prepared.
 * Lookups go: this request's own writes → earlier requests of the group → the store.
 */
import BTree from 'sorted-btree';
import type { TableManifest } from '@mmdb/core';
import type { DeriveContext, KeyWrite, PkTuple, StoredRow } from './api';

/** Where a RequestContext reads what no pending write covers. */
export interface KeyReader {
  get(key: Buffer): Promise<Buffer | undefined>;
  range(opts: { gte: Buffer; lt: Buffer; limit: number; reverse: boolean }): Promise<Array<[Buffer, Buffer]>>;
}
import { decodeRow, rowKey } from './records';

const bin = (b: Buffer) => b.toString('latin1');
const unbin = (s: string) => Buffer.from(s, 'latin1');

/**
 * Pending key writes, last write per key wins, kept in key order (a B+ tree ordered by
 * Buffer.compare) so that range reads over a group of thousands of writes stay logarithmic.
 */
export class WriteSet {
  private readonly tree = new BTree<Buffer, Buffer | null>(undefined, Buffer.compare);

  get size(): number {
    return this.tree.size;
  }

  set(key: Buffer, value: Buffer | null): void {
    this.tree.set(key, value);
  }

  has(key: Buffer): boolean {
    return this.tree.has(key);
  }

  lookup(key: Buffer): Buffer | null | undefined {
    return this.tree.get(key);
  }

  /** Entries in key order. */
  entries(): IterableIterator<[Buffer, Buffer | null]> {
    return this.tree.entries();
  }

  writes(): KeyWrite[] {
    const out: KeyWrite[] = [];
    this.tree.forEachPair((key, value) => {
      out.push({ key, value });
    });
    return out;
  }

  mergeInto(other: WriteSet): void {
    this.tree.forEachPair((k, v) => {
      other.tree.set(k, v);
    });
  }

  clear(): void {
    this.tree.clear();
  }

  /** Entries with keys in [gte, lt), in key order. */
  inRange(gte: Buffer, lt: Buffer): Array<[Buffer, Buffer | null]> {
    const out: Array<[Buffer, Buffer | null]> = [];
    this.tree.forRange(gte, lt, false, (k, v) => {
      out.push([k, v]);
    });
    return out;
  }
}

/** The DeriveContext of one request inside a group. */
export class RequestContext implements DeriveContext {
  readonly own = new WriteSet();

  constructor(
    readonly lsn: number,
    private readonly base: KeyReader | null,
    /** Pending writes under this request's own, newest first (this group, then the group being written). */
    private readonly layers: readonly WriteSet[],
    private readonly manifestOf: (schema: string) => TableManifest | undefined,
  ) {}

  put(key: Buffer, value: Buffer | null): void {
    this.own.set(key, value);
  }

  async get(key: Buffer): Promise<Buffer | undefined> {
    const a = this.own.lookup(key);
    if (a !== undefined) return a ?? undefined;
    for (const layer of this.layers) {
      const b = layer.lookup(key);
      if (b !== undefined) return b ?? undefined;
    }
    return this.base ? this.base.get(key) : undefined;
  }

  async range(opts: { gte: Buffer; lt: Buffer; limit?: number; reverse?: boolean }): Promise<Array<[Buffer, Buffer]>> {
    const pending = new Map<string, Buffer | null>();
    for (let i = this.layers.length - 1; i >= 0; i--) for (const [k, v] of this.layers[i].inRange(opts.gte, opts.lt)) pending.set(bin(k), v);
    for (const [k, v] of this.own.inRange(opts.gte, opts.lt)) pending.set(bin(k), v);
    const limit = opts.limit ?? -1;
    const dbLimit = limit < 0 ? -1 : limit + pending.size;
    const merged = new Map<string, Buffer>();
    if (this.base) {
      for (const [k, v] of await this.base.range({ gte: opts.gte, lt: opts.lt, limit: dbLimit, reverse: !!opts.reverse })) merged.set(bin(k), v);
    }
    for (const [k, v] of pending) {
      if (v === null) merged.delete(k);
      else merged.set(k, v);
    }
    const keys = [...merged.keys()].sort((a, b) => Buffer.compare(unbin(a), unbin(b)));
    if (opts.reverse) keys.reverse();
    const picked = limit < 0 ? keys : keys.slice(0, limit);
    return picked.map((k) => [unbin(k), merged.get(k)!]);
  }

  async getRow(schema: string, pk: PkTuple): Promise<StoredRow | undefined> {
    const v = await this.get(rowKey(schema, pk));
    return v === undefined ? undefined : decodeRow(schema, pk, v);
  }

  manifest(schema: string): TableManifest | undefined {
    return this.manifestOf(schema);
  }
}
