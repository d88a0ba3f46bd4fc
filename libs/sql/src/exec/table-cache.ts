/**
 * The decoded-table cache (a buffer pool of decoded tuples), one per store.
 *
 * A full read of a table decodes every stored row into a tuple; doing that for every query is what
 * made scans slow. Storage tells us when two snapshots hold the same rows of a schema: two *stable*
 * snapshots with the same `tableLsn(schema)` do. So the tuples decoded from one stable snapshot are
 * kept, one entry per schema at one (table LSN, table layout), and reused by later queries whose
 * stable snapshot has that table LSN. A query therefore still sees exactly its snapshot.
 *
 * Writes do not throw the entry away: the cache follows the store's committed frames (`track`) and
 * keeps, per cached schema, a journal of its row changes; a read at a newer table LSN gets a new
 * version of the entry patched with the changes in between (table-patch.ts), sharing structure with
 * the old one and never writing to it, so a query holding the old one keeps its snapshot. The version
 * it was patched from is kept too, for a query whose snapshot is between the two. Anything the
 * journal cannot apply exactly (a manifest change, another kind of change, too many changes) makes
 * the next read load the table whole, as before.
 *
 * Never cached: reads from an unstable snapshot (a commit group was between its write and its apply),
 * and a transaction's own writes (the engine overlays those on a copy, per query).
 *
 * Bounded by bytes and rows, least recently used tables evicted first; a table larger than a budget is
 * not kept. Bytes are estimated per table at admission (cache-budget.ts: tuples, values, pk map): the
 * store's own cap (`budgetBytes`, per tenant) and the process-wide pool every store's cache draws from
 * (`processPool`, DB_TABLE_CACHE_BYTES; default a quarter of the V8 heap limit, at most an eighth of
 * the host's memory), where the least recently used entry of any store goes first. Rows: at most
 * `SQL_TABLE_CACHE_ROWS` (default 1,000,000) decoded rows per store.
 * Size-aware admission: a table is not admitted when that would evict a *larger* table used within the
 * last HOT_MS (the smaller one is read from storage instead). Without it, two hot tables that do not
 * fit together (a 1M-row fact table joined to a 100k-row dimension under a 1M budget) evicted each
 * other on every query, so every query decoded both: the cost curve's 3-table join went from 55 ms
 * at 100k rows to 5.3 s at 1M (tools/bench/curve).
 */
import type { CommittedFrame, Snapshot } from '@mmdb/storage';
import type { Tuple } from '../values';
import type { SqlTable } from '../catalog';
import { DELTA_ENTRY, processPool, tableBytes, type CachePool, type PoolMember } from './cache-budget';
import { comparePk } from './pk-order';
import { Journal, PkMap, compactAt, patch, pkAt, pkKeyOf, plainKey, positionAfter, type PatchableTable, type PkKey } from './table-patch';

export { pkKeyOf, PkMap, type PkKey } from './table-patch';
export { lowerBound, topByScan, topRows } from './cached-reads';

/** The store's feed of committed frames (an rxjs Observable; only `subscribe` is used). */
export interface FrameFeed {
  subscribe(o: { next: (f: CommittedFrame) => void; complete: () => void; error: (e: unknown) => void }): unknown;
}

/**
 * One version of a cached table: the rows of the schema at table LSN `lsn`. Never changed once
 * made (but for its lazily built `orders`): a write makes a new version (table-patch.ts) that
 * shares what it can with this one, so a query holding this one keeps its snapshot.
 */
export interface CachedTable extends PatchableTable {
  readonly schema: string;
  readonly lsn: number;
  /** The layout the tuples were decoded with (a manifest change gives a new SqlTable). */
  readonly table: SqlTable;
  /** Decoded rows in primary-key order. Shared: operators never mutate tuples. */
  readonly rows: readonly Tuple[];
  /** Estimated heap bytes of the entry (cache-budget.ts `tableBytes`, then `rowBytes` per patched row). */
  readonly bytes: number;
  /** pk → row: built while loading, then a delta over it per patch. */
  readonly byPk: PkMap;
  /** For a one-column numeric primary key: the stored keys in order (binary search for pk ranges). */
  readonly pkNums: Float64Array | null;
  /** Lazily built secondary orders: index name → row positions in index order (see topRows). */
  readonly orders: Map<string, Int32Array>;
  /** How often each index's order was asked for before it was built. */
  readonly orderUses: Map<string, number>;
}

/**
 * A new base pk map being built for a schema's entry in steps (one per forward patch), so folding
 * a large delta never costs one read a whole `Map` build. Private to the cache until done (no
 * version reads it): each step copies the next keys, in key order, from the newest version; each
 * patch writes its changes of keys already copied. Done, it holds exactly the newest version's keys.
 */
interface Rebase {
  /** The base map it replaces (a version with another base ends it). */
  readonly from: ReadonlyMap<PkKey, Tuple>;
  readonly map: Map<PkKey, Tuple>;
  /** The last key copied (null: none yet). */
  cursor: unknown[] | null;
  /** Bytes counted for it (DELTA_ENTRY a key). */
  bytes: number;
}

/** A finished read of a table: the entry it became (null when not admitted) and its rows. */
interface Loaded {
  readonly entry: CachedTable | null;
  readonly rows: readonly Tuple[];
  readonly table: SqlTable;
}

export interface TableCacheStats {
  hits: number;
  misses: number;
  evictions: number;
  /** Tables read but not admitted (they would have evicted a larger table in use). */
  refusals: number;
  /** Versions made by patching a cached table with the writes since it (instead of a reload), and the row changes applied. */
  patches: number;
  patchedRows: number;
  /** Reads of a whole table on an unstable snapshot (a commit group in flight): neither answered from nor kept in the cache. */
  unstableReads: number;
  rows: number;
  tables: number;
  budgetRows: number;
  /** Estimated bytes held by this store's cache, and its own cap. */
  bytes: number;
  budgetBytes: number;
  /** Bytes held by every store's cache in the process, and the process-wide budget. */
  poolBytes: number;
  poolBudgetBytes: number;
}

const DEFAULT_BUDGET = Number(process.env.SQL_TABLE_CACHE_ROWS ?? 1_000_000);
/** An entry used within this many ms is hot: a smaller table is not admitted by evicting it. */
export const HOT_MS = 10_000;

export class TableCache implements PoolMember {
  private readonly entries = new Map<string, CachedTable>(); // LRU order: oldest first
  private readonly loading = new Map<string, Promise<Loaded>>();
  private held = 0;
  /** Estimated bytes of the entries. */
  bytes = 0;
  /** This store's byte cap (per tenant; at most the pool's budget counts). */
  budgetBytes: number;
  private readonly pool: CachePool | null;
  /** When each entry was last used (Date.now()), for size-aware admission. */
  private readonly usedAt = new Map<string, number>();
  hits = 0;
  misses = 0;
  evictions = 0;
  /** Tables read but not admitted, because they would have evicted a larger hot table. */
  refusals = 0;
  patches = 0;
  patchedRows = 0;
  unstableReads = 0;
  /** Per cached (or loading) schema: the row changes committed since (table-patch.ts). */
  private readonly journals = new Map<string, Journal>();
  /** Loads in flight per schema (a journal is kept for them). */
  private readonly loads = new Map<string, number>();
  /** Per schema: the version its entry was last patched from, for queries whose snapshot is older than the entry. */
  private readonly prev = new Map<string, { e: CachedTable; bytes: number }>();
  /** Per schema: the new base pk map being built (see Rebase). */
  private readonly rebases = new Map<string, Rebase>();
  /** Delta keys past which an entry's base pk map is rebuilt (table-patch.ts compactAt; tests lower it). */
  compactAt: (rows: number) => number = compactAt;
  /** Keys copied into a new base per forward patch (a sixteenth of the rows, at least 4,096). */
  rebaseStep: (rows: number) => number = (rows) => Math.max(4096, rows >> 4);

  /**
   * `budgetRows`: decoded rows kept at most. `bytes`: this cache's byte cap (default: no cap of its
   * own, the pool's). `pool`: the byte budget shared with other caches (default none; a store's
   * cache, `of`, draws from the process's).
   */
  constructor(readonly budgetRows: number = DEFAULT_BUDGET, opts: { bytes?: number; pool?: CachePool | null } = {}) {
    this.budgetBytes = opts.bytes ?? Infinity;
    this.pool = opts.pool ?? null;
  }

  private static readonly perStore = new WeakMap<object, TableCache>();

  /**
   * The cache of a store (shared by every engine over it), drawing from the process's pool;
   * `bytes` (the tenant's cap), when given, replaces its cap.
   */
  static of(store: object & { changes?: FrameFeed }, bytes?: number): TableCache {
    let c = TableCache.perStore.get(store);
    if (!c) {
      TableCache.perStore.set(store, (c = new TableCache(DEFAULT_BUDGET, { pool: processPool })));
      if (store.changes) c.track(store.changes);
    }
    if (bytes !== undefined) c.setBudgetBytes(bytes);
    return c;
  }

  /** The cache of a store when one was made (metrics: not creating one for a store no engine reads). */
  static peek(store: object): TableCache | undefined {
    return TableCache.perStore.get(store);
  }

  /** Sets this cache's byte cap, evicting least recently used entries past it. */
  setBudgetBytes(bytes: number): void {
    this.budgetBytes = bytes;
    for (const [k, v] of this.entries) {
      if (this.bytes <= bytes) break;
      this.drop(k, v);
    }
  }

  private drop(k: string, v: CachedTable): void {
    this.entries.delete(k);
    this.usedAt.delete(k);
    this.setPrev(k, undefined);
    this.endRebase(k);
    if (!this.loads.get(k)) this.journals.delete(k);
    this.held -= v.rows.length;
    this.bytes -= v.bytes;
    this.evictions++;
    if (this.entries.size === 0) this.pool?.leave(this);
  }

  /** PoolMember: when the least recently used entry other than `keep` was used. */
  oldestUse(keep: unknown): number {
    for (const [k, v] of this.entries) if (v !== keep) return this.usedAt.get(k) ?? 0;
    return Infinity;
  }

  /** PoolMember: evicts the least recently used entry other than `keep`. */
  evictOldest(keep: unknown): void {
    for (const [k, v] of this.entries) {
      if (v === keep) continue;
      this.drop(k, v);
      return;
    }
  }

  /**
   * Newest table LSN known per schema: from every published frame (the store publishes a frame
   * synchronously after applying it, before the writer's promise continues) and from stable
   * snapshots. Only kept while `tracking` (subscribed to the store's frames).
   */
  private readonly known = new Map<string, number>();
  private tracking = false;
  /**
   * The LSN of the last frame the store published to this cache (-1: none yet). A read that spans
   * awaits and must see one state of the store (executor `preloadCurrentSearch`) compares it before
   * and after: unchanged, no frame was applied in between.
   */
  lastFrame = -1;

  /** Follows the store's committed frames, so `current` can answer without a snapshot. */
  track(feed: FrameFeed): void {
    this.tracking = true;
    feed.subscribe({
      next: (f) => {
        this.lastFrame = f.lsn;
        for (const c of f.changes) {
          if (!('schema' in c)) continue;
          this.raise(c.schema, f.lsn);
          const j = this.journals.get(c.schema);
          // past a quarter of the table's rows, a reload costs less than keeping and applying them
          if (j) j.note(f.lsn, c, 1024 + ((this.entries.get(c.schema)?.rows.length ?? 0) >> 2));
        }
      },
      complete: () => { this.tracking = false; this.clear(); },
      error: () => { this.tracking = false; this.clear(); },
    });
  }

  private raise(schema: string, lsn: number): void {
    if ((this.known.get(schema) ?? -1) < lsn) this.known.set(schema, lsn);
  }

  /**
   * The cached rows of `t` as the store holds them *now*, without a snapshot: the entry whose
   * table LSN is the newest the store has applied for the schema. Every frame applied after the
   * entry's stable snapshot was published to us and raised `known` past the entry's LSN, so a
   * match means no committed write touched the table since. (A group written but not yet applied
   * and acknowledged is not seen: the read is ordered before that write.)
   */
  current(t: SqlTable): CachedTable | undefined {
    if (!this.tracking) return undefined;
    const at = this.known.get(t.id);
    return at === undefined ? undefined : this.at(t, at);
  }

  /**
   * The entry of `t` at table LSN `lsn` (made by patching the cached one forward when it is older
   * and the journal holds every change since it), marked used; undefined when there is none.
   */
  private at(t: SqlTable, lsn: number): CachedTable | undefined {
    const e = this.entries.get(t.id);
    if (!e || e.table !== t) return undefined;
    if (e.lsn < lsn) {
      const job = this.rebases.get(t.id);
      const next = this.patched(e, lsn, job && job.from === e.byPk.base ? (key, pk, row) => {
        // a key already copied into the new base takes its change there too
        if (!job.cursor || comparePk(pk, job.cursor) > 0) return;
        if (row) job.map.set(key, row);
        else job.map.delete(key);
      } : undefined);
      if (!next) return undefined;
      // the most recently used now (grown past a cap alone, it is not kept: this query still reads it)
      this.replace(e, next);
      this.hits++;
      return this.entries.get(t.id) === next ? this.rebase(next) : next;
    } else if (e.lsn > lsn) {
      // a snapshot older than the entry (a query that took it before another patched the entry)
      const p = this.prev.get(t.id)?.e;
      const old = p && p.table === t && p.lsn <= lsn ? (p.lsn === lsn ? p : this.patched(p, lsn)) : undefined;
      if (old) this.hits++;
      return old ?? undefined;
    }
    this.entries.delete(t.id);
    this.entries.set(t.id, e);
    this.usedAt.set(t.id, Date.now());
    this.hits++;
    return e;
  }

  /** `e` patched forward to `lsn` with the journal's changes, or null when the journal cannot. */
  private patched(e: CachedTable, lsn: number, onChange?: Parameters<typeof patch>[3]): CachedTable | null {
    const changes = this.tracking ? this.journals.get(e.schema)?.between(e.lsn, lsn) : null;
    const next = changes ? patch(e, changes, lsn, onChange) : null;
    if (next) {
      this.patches++;
      this.patchedRows += changes!.length;
    }
    return next;
  }

  /**
   * Puts the patched version `next` of `old` in its place and keeps `old` as the schema's previous
   * version (what it holds apart from `next` counted in `bytes`; not when they do not share a base
   * pk map, as `old` would then hold a whole map alone). Keeps the budgets (the table may have grown).
   */
  private replace(old: CachedTable, next: CachedTable): void {
    this.entries.delete(next.schema);
    this.entries.set(next.schema, next);
    this.usedAt.set(next.schema, Date.now());
    this.held += next.rows.length - old.rows.length;
    this.bytes += next.bytes - old.bytes;
    this.setPrev(next.schema, next.byPk.base === old.byPk.base ? old : undefined, next);
    this.journals.get(next.schema)?.trim(old.lsn);
    this.fitBudgets(next);
  }

  /**
   * One step of rebuilding the base pk map of `e` (the schema's newest version) when its delta has
   * grown past `compactAt`: the next `rebaseStep` keys copied. The last step makes the entry's
   * version with the new base and no delta (same LSN, same rows), which replaces `e` and is returned.
   */
  private rebase(e: CachedTable): CachedTable {
    let job = this.rebases.get(e.schema);
    if (job && job.from !== e.byPk.base) {
      this.endRebase(e.schema);
      job = undefined;
    }
    if (!job) {
      if ((e.byPk.delta?.size ?? 0) <= this.compactAt(e.rows.length)) return e;
      job = { from: e.byPk.base, map: new Map(), cursor: null, bytes: 0 };
      this.rebases.set(e.schema, job);
    }
    const n = e.rows.length;
    const start = job.cursor ? positionAfter(e, job.cursor) : 0;
    const end = Math.min(n, start + this.rebaseStep(n));
    for (let i = start; i < end; i++) job.map.set(e.pkNums ? e.pkNums[i] : e.keys![i], e.rows[i]);
    if (end > start) job.cursor = pkAt(e, end - 1);
    const size = job.map.size * DELTA_ENTRY;
    this.bytes += size - job.bytes;
    job.bytes = size;
    if (end < n) return e;
    // done: the map holds exactly e's keys; what the old base kept alive (`retained`) goes, and so
    // does the previous version (it shares the old base)
    const done: CachedTable = { ...e, byPk: new PkMap(job.map), retained: 0, bytes: e.bytes - e.retained };
    this.endRebase(e.schema);
    this.setPrev(e.schema, undefined);
    this.entries.set(e.schema, done);
    this.bytes += done.bytes - e.bytes;
    return done;
  }

  private endRebase(id: string): void {
    const job = this.rebases.get(id);
    if (!job) return;
    this.bytes -= job.bytes;
    this.rebases.delete(id);
  }

  /** The previous version of a schema's entry (or none), with its own bytes counted. */
  private setPrev(id: string, old: CachedTable | undefined, next?: CachedTable): void {
    const was = this.prev.get(id);
    if (was) {
      this.bytes -= was.bytes;
      this.prev.delete(id);
    }
    if (!old || !next) return;
    // its rows array, key arrays and orders when not shared with `next`, and its own pk-map delta
    const n = old.rows.length;
    let bytes = 8 * n + (old.byPk.delta?.size ?? 0) * DELTA_ENTRY;
    if (old.keys && old.keys !== next.keys) bytes += 8 * n;
    if (old.pkNums && old.pkNums !== next.pkNums) bytes += 8 * n;
    for (const o of old.orders.values()) bytes += o.byteLength;
    this.prev.set(id, { e: old, bytes });
    this.bytes += bytes;
  }

  /** Evicts least recently used entries (never `keep`) past the row and byte caps, then the pool's; `keep` too when alone it is over them. */
  private fitBudgets(keep: CachedTable): void {
    for (const [k, v] of this.entries) {
      if (this.held <= this.budgetRows && this.bytes <= this.budgetBytes) break;
      if (v !== keep) this.drop(k, v);
    }
    // the process's budget: the least recently used entries of any store's cache go first
    this.pool?.fit(keep);
    const cap = Math.min(this.budgetBytes, this.pool?.budgetBytes ?? Infinity);
    if (this.entries.get(keep.schema) === keep && (keep.rows.length > this.budgetRows || keep.bytes > cap)) this.drop(keep.schema, keep);
  }

  stats(): TableCacheStats {
    return {
      hits: this.hits, misses: this.misses, evictions: this.evictions, refusals: this.refusals, rows: this.held, tables: this.entries.size, budgetRows: this.budgetRows,
      patches: this.patches, patchedRows: this.patchedRows, unstableReads: this.unstableReads,
      bytes: this.bytes, budgetBytes: Math.min(this.budgetBytes, this.pool?.budgetBytes ?? Infinity),
      poolBytes: this.pool?.bytes ?? this.bytes, poolBudgetBytes: this.pool?.budgetBytes ?? this.budgetBytes,
    };
  }

  /** Rows of the cached version of a table (any LSN): an estimate for the optimizer. */
  rowCount(id: string): number | undefined {
    return this.entries.get(id)?.rows.length;
  }

  /** The entry `rows(snap, t)` answered from, when there is one (not counted as a hit, never patched). */
  peek(snap: Snapshot, t: SqlTable): CachedTable | undefined {
    const e = snap.stable ? this.entries.get(t.id) : undefined;
    return e && e.lsn === snap.tableLsn(t.id) && e.table === t ? e : undefined;
  }

  /** The cached rows of `t` valid for `snap`, or undefined (never for an unstable snapshot). */
  lookup(snap: Snapshot, t: SqlTable): CachedTable | undefined {
    if (!snap.stable) return undefined;
    this.raise(t.id, snap.tableLsn(t.id));
    return this.at(t, snap.tableLsn(t.id));
  }

  /**
   * The rows of `t` as `snap` holds them: from the cache, or read with `read` (which yields stored
   * rows in pk order, already decoded into tuples, with their pk) and kept when the snapshot is stable.
   * Concurrent loads of the same (schema, LSN) share one read.
   */
  async rows(snap: Snapshot, t: SqlTable, read: () => Promise<{ rows: Tuple[]; pks: unknown[][] }>): Promise<readonly Tuple[]> {
    const hit = this.lookup(snap, t);
    if (hit) return hit.rows;
    this.misses++;
    if (!snap.stable) {
      this.unstableReads++;
      return (await read()).rows;
    }
    const lsn = snap.tableLsn(t.id);
    const key = `${t.id}\u0000${lsn}`;
    let p = this.loading.get(key);
    const mine = !p;
    if (!p) {
      // the changes committed from now on are kept, so the entry can be patched forward
      if (this.tracking && !this.journals.has(t.id)) this.journals.set(t.id, new Journal(this.known.get(t.id) ?? lsn));
      this.loads.set(t.id, (this.loads.get(t.id) ?? 0) + 1);
      p = read().then(({ rows, pks }) => ({ entry: this.admit(t, lsn, rows, pks), rows, table: t }));
      this.loading.set(key, p);
      const done = () => {
        this.loading.delete(key);
        const left = (this.loads.get(t.id) ?? 1) - 1;
        if (left) this.loads.set(t.id, left);
        else {
          this.loads.delete(t.id);
          if (!this.entries.has(t.id)) this.journals.delete(t.id);
        }
      };
      p.then(done, done);
    }
    let r: Loaded;
    try {
      r = await p;
    } catch (err) {
      // another query's load failed (e.g. it was cancelled): read our own copy
      if (mine) throw err;
      return (await read()).rows;
    }
    // admitted or not (larger than the budget, or refused), the rows read are this snapshot's
    if (r.table === t) return r.rows;
    // another layout: read our own copy
    return (await read()).rows;
  }

  private admit(t: SqlTable, lsn: number, rows: Tuple[], pks: unknown[][]): CachedTable | null {
    if (rows.length > this.budgetRows) return null;
    const old = this.entries.get(t.id);
    // an older snapshot's rows never replace a newer version of the same layout (it is patched forward)
    if (old && old.table === t && old.lsn >= lsn) return null;
    const pkCol = t.pk.length === 1 ? t.manifest.columns.find((c) => c.name === t.pk[0]) : undefined;
    const numericPk = !!pkCol && (pkCol.ty === 'i64' || pkCol.ty === 'f64' || pkCol.ty === 'timestamp') && pks.every((k) => typeof k[0] === 'number');
    const bytes = tableBytes(rows, pks, t.manifest.indexes.length);
    const capBytes = Math.min(this.budgetBytes, this.pool?.budgetBytes ?? Infinity);
    if (bytes > capBytes) return null;
    // the least recently used entries it would evict: refused if one of them is larger and hot
    let overRows = this.held - (old?.rows.length ?? 0) + rows.length - this.budgetRows;
    let overBytes = this.bytes - (old?.bytes ?? 0) + bytes - this.budgetBytes;
    if (overRows > 0 || overBytes > 0) {
      const now = Date.now();
      for (const [k, v] of this.entries) {
        if (overRows <= 0 && overBytes <= 0) break;
        if (k === t.id) continue;
        if (v.bytes > bytes && now - (this.usedAt.get(k) ?? 0) < HOT_MS) {
          this.refusals++;
          return null;
        }
        overRows -= v.rows.length;
        overBytes -= v.bytes;
      }
    }
    const byPk = new Map<PkKey, Tuple>();
    const keys: PkKey[] | null = numericPk ? null : new Array<PkKey>(rows.length);
    let patchable = true;
    for (let i = 0; i < rows.length; i++) {
      const k = pkKeyOf(pks[i]);
      byPk.set(k, rows[i]);
      if (keys) keys[i] = k;
      if (pks[i].length === 1 && !plainKey(pks[i][0])) patchable = false;
    }
    let pkNums: Float64Array | null = null;
    if (numericPk) {
      pkNums = new Float64Array(pks.length);
      for (let i = 0; i < pks.length; i++) pkNums[i] = pks[i][0] as number;
    }
    const e: CachedTable = {
      schema: t.id, lsn, table: t, rows, bytes, retained: 0, byPk: new PkMap(byPk), pkNums, keys, patchable, orders: new Map(), orderUses: new Map(),
    };
    this.raise(t.id, lsn);
    if (old) { this.held -= old.rows.length; this.bytes -= old.bytes; this.entries.delete(t.id); }
    this.setPrev(t.id, undefined);
    this.endRebase(t.id);
    this.entries.set(t.id, e);
    this.usedAt.set(t.id, Date.now());
    this.held += rows.length;
    this.bytes += bytes;
    this.journals.get(t.id)?.trim(lsn);
    this.pool?.join(this);
    this.fitBudgets(e);
    return e;
  }

  private readonly seen = new Map<string, number>();
  private readonly warming = new Set<Promise<unknown>>();

  /**
   * Called when a point or range read missed the cache. A table read twice at the same table LSN is
   * read-mostly: load it whole in the background (on its own stable snapshot) so later reads hit.
   * A table written between reads is never loaded this way, so write-heavy tables cost nothing.
   */
  noteMiss(snap: Snapshot, t: SqlTable, open: () => Snapshot, read: (snap: Snapshot) => Promise<{ rows: Tuple[]; pks: unknown[][] }>): void {
    if (!snap.stable) return;
    const lsn = snap.tableLsn(t.id);
    if (this.seen.get(t.id) !== lsn) { this.seen.set(t.id, lsn); return; }
    this.seen.delete(t.id);
    const key = `${t.id}\u0000${lsn}`;
    if (this.loading.has(key)) return;
    const w = (async () => {
      const s = open();
      try {
        if (!s.stable || s.tableLsn(t.id) !== lsn) return;
        await this.rows(s, t, () => read(s));
      } finally {
        await s.release();
      }
    })().catch(() => undefined);
    this.warming.add(w);
    void w.finally(() => this.warming.delete(w));
  }

  /** Resolves when no background load is running (benchmarks and tests wait for a warm cache). */
  async settled(): Promise<void> {
    while (this.warming.size) await Promise.all([...this.warming]);
  }

  /** Drops every entry (tests, memory pressure). */
  clear(): void {
    this.entries.clear();
    this.usedAt.clear();
    this.journals.clear();
    this.prev.clear();
    this.rebases.clear();
    this.held = 0;
    this.bytes = 0;
    this.pool?.leave(this);
  }
}
