/**
 * Byte accounting of the table cache: what a cached table is estimated to cost in the JS heap,
 * the host-relative default budget, and the process-wide pool every tenant store's cache draws
 * from (one budget for the process, as a database's buffer pool; each tenant may also be capped
 * lower).
 */
import { totalmem } from 'os';
import { getHeapStatistics } from 'v8';
import { sharedBig, type Tuple } from '../values';

// V8 on 64-bit (no pointer compression in Node's builds): 8-byte slots, HeapNumber 16 bytes,
// sequential strings 16 bytes of header + 1 (Latin-1) or 2 bytes a code unit, padded to 8.
const SLOT = 8;
/** A JSArray (32) and its FixedArray header (16). */
const ARRAY = 48;
/**
 * Per row beside its tuple: its slot in `rows`, its `byPk` entry (ordered hash map, ~1.5 growth
 * slack), and its key in `keys` or `pkNums` (8 bytes either way).
 */
const ROW_OVERHEAD = SLOT + 40 + 8;
/** One entry of a patched table's pk-map delta (table-patch.ts): a map entry over the shared base. */
export const DELTA_ENTRY = 40;
/** Rows estimated one by one; past this, an even sample of this many, scaled. */
export const SAMPLE_ROWS = 512;

const pad = (n: number) => (n + 7) & ~7;

/** Estimated heap bytes of one value held in a tuple slot, beside the slot itself. */
export function valueBytes(v: unknown): number {
  switch (typeof v) {
    case 'number':
      return (v | 0) === v ? 0 : 16; // small integers are Smis, others HeapNumbers
    case 'string':
      return 16 + pad(/[^\u0000-\u00ff]/.test(v) ? 2 * v.length : v.length);
    case 'bigint': // small ones are shared by every decoded row (values.ts bigOf)
      return sharedBig(v) ? 0 : 16 + 8 * Math.max(1, Math.ceil(v.toString(16).length / 16));
    case 'object':
      if (v === null) return 0;
      if (ArrayBuffer.isView(v)) return 96 + v.byteLength;
      return 64 + pad(2 * JSON.stringify(v).length); // not a stored value type today; a bound, not exact
    default:
      return 0;
  }
}

/** Estimated heap bytes of one tuple (array, slots, values). */
export function tupleBytes(t: Tuple): number {
  let n = ARRAY + SLOT * t.length;
  for (let i = 0; i < t.length; i++) n += valueBytes(t[i]);
  return n;
}

/** The tuple and pk key of one row (one-column keys are the stored value, others a JSON string). */
function ownBytes(row: Tuple, pk: readonly unknown[]): number {
  return tupleBytes(row) + (pk.length === 1 ? valueBytes(pk[0]) : 16 + pad(JSON.stringify(pk, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)).length));
}

/**
 * Estimated bytes a cached table holds: per row its tuple, its slot and pk-map entry, its pk key
 * and its place in the key array (`keys` or `pkNums`), and 4 per secondary index (the order
 * `topRows` may build). An even sample of SAMPLE_ROWS rows stands for a larger table, so an
 * admission costs O(sample), not O(rows).
 */
export function tableBytes(rows: readonly Tuple[], pks: readonly unknown[][], indexes: number): number {
  const n = rows.length;
  if (n === 0) return 0;
  const k = Math.min(n, SAMPLE_ROWS);
  let sum = 0;
  for (let j = 0; j < k; j++) {
    const i = k === n ? j : Math.floor((j * n) / k);
    sum += ownBytes(rows[i], pks[i]);
  }
  return Math.ceil((sum / k) * n) + n * (ROW_OVERHEAD + 4 * indexes);
}

/** Estimated bytes one row adds to a cached table (what `tableBytes` counts per row, for a row a patch adds or removes). */
export function rowBytes(row: Tuple, pk: readonly unknown[], indexes: number): number {
  return ownBytes(row, pk) + ROW_OVERHEAD + 4 * indexes;
}

/**
 * The default process-wide budget: a quarter of the V8 heap limit (the cache lives in the JS
 * heap; the rest is for queries, the other engines' heaps and garbage), and at most an eighth
 * of the host's memory. 1 GiB on a 24 GB host with Node's default 4 GB heap.
 */
export function defaultTableCacheBytes(): number {
  return Math.floor(Math.min(getHeapStatistics().heap_size_limit / 4, totalmem() / 8));
}

/** What the pool needs of each cache drawing from it. */
export interface PoolMember {
  /** Bytes this cache holds. */
  readonly bytes: number;
  /** When its least recently used entry (other than `keep`) was last used, or Infinity. */
  oldestUse(keep: unknown): number;
  /** Evicts its least recently used entry other than `keep`. */
  evictOldest(keep: unknown): void;
}

/**
 * One byte budget shared by every table cache of the process (every tenant store's). When an
 * admission passes it, the least recently used entries of any cache are evicted until it fits.
 */
export class CachePool {
  private readonly members = new Set<PoolMember>();

  constructor(public budgetBytes: number = defaultTableCacheBytes()) {}

  /** Bytes held by every member. */
  get bytes(): number {
    let n = 0;
    for (const m of this.members) n += m.bytes;
    return n;
  }

  join(m: PoolMember): void {
    this.members.add(m);
  }

  leave(m: PoolMember): void {
    this.members.delete(m);
  }

  /** Evicts least recently used entries (never `keep`) until the pool is within its budget. */
  fit(keep: unknown): void {
    for (let held = this.bytes; held > this.budgetBytes; held = this.bytes) {
      let victim: PoolMember | null = null;
      let when = Infinity;
      for (const m of this.members) {
        const t = m.oldestUse(keep);
        if (t < when) { when = t; victim = m; }
      }
      if (!victim) return;
      victim.evictOldest(keep);
    }
  }
}

/** The process's pool (DB_TABLE_CACHE_BYTES in the server; `budgetBytes` may be set at start). */
export const processPool = new CachePool();
