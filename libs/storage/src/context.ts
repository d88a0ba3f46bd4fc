/**
 * Read-your-group's-writes views used while a group of requests is prepared.
 * Lookups go: this request's own writes → earlier requests of the group → the store.
 */
import { parseJsonExact, stringifyJson, type TableManifest } from '@mmdb/core';
import type { DeriveContext, KeyWrite, PkTuple, StoredRow } from './api';

/** Marks "not known without a read". */
export const MISS: unique symbol = Symbol('miss');

/** Where a RequestContext reads what no pending write covers. */
export interface KeyReader {
  /** `bin`, when given, is the key as a latin1 string. */
  get(key: Buffer, bin?: string): Promise<Buffer | undefined>;
  /** A value known without I/O (null: known absent; a row record may come as its text), else MISS. */
  peek?(bin: string): Buffer | string | null | typeof MISS;
  range(opts: { gte: Buffer; lt: Buffer; limit: number; reverse: boolean }): Promise<Array<[Buffer, Buffer]>>;
}
import { keyIdOf, rowKey, splitRowRecord } from './records';

const bin = (b: Buffer) => b.toString('latin1');

/**
 * A row a RequestContext decoded, holding its record's own values text (exactly
 * stringifyJson(values), as encodeRow wrote it) in a private field: invisible to spreads,
 * JSON and equality, and cheaper than a WeakMap entry per decoded row (an ephemeron each).
 */
class KeptRow implements StoredRow {
  readonly #json: string;
  constructor(
    readonly schema: string,
    readonly pk: PkTuple,
    readonly version: number,
    readonly lsn: number,
    readonly values: StoredRow['values'],
    json: string,
  ) {
    this.#json = json;
  }
  static json(r: KeptRow): string {
    return r.#json;
  }
}

/** stringifyJson(r.values), from the record text when a RequestContext decoded `r` (a put logs the values it replaced). */
export function storedValuesJson(r: StoredRow): string {
  return r instanceof KeptRow ? KeptRow.json(r) : stringifyJson(r.values);
}

function decodeKept(schema: string, pk: PkTuple, v: Buffer | string): StoredRow {
  const text = typeof v === 'string' ? v : v.toString('utf8');
  const { version, lsn, json } = splitRowRecord(text);
  return new KeptRow(schema, pk, version, lsn, parseJsonExact(json) as StoredRow['values'], json);
}
const unbin = (s: string) => Buffer.from(s, 'latin1');

/**
 * Pending key writes, last write per key wins. A hash map serves writes and point reads;
 * the keys' sorted order (latin1 strings compare like the bytes) is built on the first
 * range read and then kept up to date by binary insertion, so write-only requests never
 * pay for ordering and range reads stay logarithmic to find.
 */
/** A pending write: the key, its value (null: a delete), and a row record's text when the writer has it (the read cache takes it as is). */
type Entry = [key: Buffer, value: Buffer | null, text: string | undefined];

export class WriteSet {
  private map = new Map<string, Entry>();
  private sorted: string[] | null = null;

  get size(): number {
    return this.map.size;
  }

  /** `k` is bin(key) when the caller has it already; `text`, a row record's value as text (value is its UTF-8). */
  set(key: Buffer, value: Buffer | null, k: string = bin(key), text?: string): void {
    if (this.sorted && !this.map.has(k)) this.sorted.splice(lowerBound(this.sorted, k), 0, k);
    this.map.set(k, [key, value, text]);
  }

  lookup(key: Buffer): Buffer | null | undefined {
    return this.map.get(bin(key))?.[1];
  }

  /** lookup() by the key's latin1 string (computed once by a caller probing several sets). */
  lookupBin(k: string): Buffer | null | undefined {
    return this.map.get(k)?.[1];
  }

  /** Calls fn with each entry's key (as its latin1 string), value and, for a row record the writer made, its text; in the order first written. */
  forEachBin(fn: (k: string, value: Buffer | null, text: string | undefined) => void): void {
    for (const [k, entry] of this.map) fn(k, entry[1], entry[2]);
  }

  /** Entries in the order they were first written. */
  entries(): IterableIterator<Readonly<Entry>> {
    return this.map.values();
  }

  writes(): KeyWrite[] {
    const out: KeyWrite[] = [];
    for (const [key, value] of this.map.values()) out.push({ key, value });
    return out;
  }

  /** Moves this set's entries into `other` (this set is left empty). */
  mergeInto(other: WriteSet): void {
    if (other.map.size === 0) {
      // The first request of a group: hand the map over instead of copying it.
      other.map = this.map;
      other.sorted = this.sorted;
      this.map = new Map();
      this.sorted = null;
      return;
    }
    for (const [k, entry] of this.map) {
      if (other.sorted && !other.map.has(k)) other.sorted.splice(lowerBound(other.sorted, k), 0, k);
      other.map.set(k, entry);
    }
  }

  clear(): void {
    this.map.clear();
    this.sorted = null;
  }

  /** Entries with keys in [gte, lt), in key order. */
  inRange(gte: Buffer, lt: Buffer): Array<Readonly<Entry>> {
    if (!this.map.size) return [];
    if (!this.sorted) this.sorted = [...this.map.keys()].sort();
    const hi = bin(lt);
    const out: Array<Readonly<Entry>> = [];
    for (let i = lowerBound(this.sorted, bin(gte)); i < this.sorted.length && this.sorted[i] < hi; i++) out.push(this.map.get(this.sorted[i])!);
    return out;
  }
}

function lowerBound(a: readonly string[], k: string): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid] < k) lo = mid + 1;
    else hi = mid;
  }
  return lo;
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

  /** `k` is bin(key) when the caller has it already; `text`, a row record's value as text. */
  put(key: Buffer, value: Buffer | null, k?: string, text?: string): void {
    this.own.set(key, value, k, text);
  }

  /** A context over this one's writes whose own writes can be kept (`own.mergeInto(this.own)`) or dropped whole. */
  child(): RequestContext {
    return new RequestContext(this.lsn, this.base, [this.own, ...this.layers], this.manifestOf);
  }

  /** The newest pending write of a key (null: a pending delete), or undefined when none is pending. */
  private pending(k: string): Buffer | null | undefined {
    let v = this.own.lookupBin(k);
    for (let i = 0; v === undefined && i < this.layers.length; i++) v = this.layers[i].lookupBin(k);
    return v;
  }

  async get(key: Buffer): Promise<Buffer | undefined> {
    const k = bin(key);
    const v = this.pending(k);
    if (v !== undefined) return v ?? undefined;
    return this.base ? this.base.get(key, k) : undefined;
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

  async getRow(schema: string, pk: PkTuple, key: Buffer = rowKey(this.keyId(schema), pk)): Promise<StoredRow | undefined> {
    const v = await this.get(key);
    return v === undefined ? undefined : decodeKept(schema, pk, v);
  }

  /**
   * getRow answered without waiting when the row is among the pending writes or was
   * read ahead; MISS when only the store can say (then call getRow).
   */
  /** The id the schema's rows are keyed under (keyIdOf its manifest as this request sees it). */
  private keyId(schema: string): string {
    const m = this.manifestOf(schema);
    return m ? keyIdOf(m) : schema;
  }

  getRowNow(schema: string, pk: PkTuple, key: Buffer = rowKey(this.keyId(schema), pk), k: string = bin(key)): StoredRow | undefined | typeof MISS {
    let v: Buffer | string | null | undefined = this.pending(k);
    if (v === undefined) {
      const b = this.base?.peek?.(k);
      if (b === MISS || b === undefined) return MISS;
      v = b;
    }
    return v === null ? undefined : decodeKept(schema, pk, v);
  }

  manifest(schema: string): TableManifest | undefined {
    return this.manifestOf(schema);
  }
}
