/**
 * Patching a cached table forward from committed frames (table-cache.ts), instead of decoding the
 * whole table again after every write.
 *
 * A `Journal` per cached schema keeps the row changes (puts and deletes) of every frame applied
 * after its `from` LSN. `patch(entry, changes)` turns an entry at LSN L and the changes of the
 * frames in (L, T] into a *new* entry at T: exactly the rows a scan of a stable snapshot at T
 * decodes (the pk goes through the key codec, the values through the row codec's JSON, as a read
 * does). Nothing of the old entry is written to: a query holding it (its rows, pk map, key arrays,
 * orders) keeps its snapshot. What the new entry shares with the old:
 *
 * - `rows`, `keys`, `pkNums`: copied (pointers, O(n) memcpy-like) and changed in one pass: updates
 *   in place in the copy, inserts and deletes by a merge of the changes, sorted in key order.
 *   When only existing rows were updated, the key arrays are shared as they are.
 * - `byPk`: a `PkMap` of the shared base map and a small delta map (changed keys; null: deleted),
 *   copied per patch. Past `compactAt` keys the cache builds a new base in steps across patches
 *   (table-cache.ts `Rebase`), so no single read pays for a whole map.
 * - `orders` (secondary index orders, `topRows`): carried over by remapping positions and merging
 *   the changed rows in (O(n + m log n)), never re-sorted.
 *
 * Anything else touching the schema (a manifest change, a drop, a frame of another kind), more
 * changes than `patchCap` allows, or a pk a one-column key cannot hold (a JSON pk) makes the cache
 * read the table whole again, as before.
 */
import { parseJsonExact, stringifyJson, type JsonValue, type Row } from '@mmdb/core';
import type { LoggedChange } from '@mmdb/storage';
import type { SqlTable } from '../catalog';
import { compareValues, type Tuple } from '../values';
import { DELTA_ENTRY, rowBytes } from './cache-budget';
import { asStored, comparePk } from './pk-order';
import { toTuple } from './row-tuple';

/** Key of a row in `byPk`: the stored pk value itself for one-column keys, else the pk tuple as JSON. */
export type PkKey = string | number | boolean | null;

export function pkKeyOf(pk: readonly unknown[]): PkKey {
  if (pk.length === 1) {
    const v = pk[0];
    if (typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean' || v === null) return v;
  }
  return stringifyJson(pk);
}

/** A one-column pk value `pkKeyOf` keeps as itself (so the key gives the pk back). */
export const plainKey = (v: unknown) => v === null || typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean';

/** pk → row: a base map shared by the versions of a cached table, and this version's changes over it. */
export class PkMap {
  constructor(
    readonly base: ReadonlyMap<PkKey, Tuple>,
    /** Keys changed since `base` was built: the row now, or null when deleted. */
    readonly delta: ReadonlyMap<PkKey, Tuple | null> | null = null,
  ) {}

  get(k: PkKey): Tuple | undefined {
    if (this.delta) {
      const d = this.delta.get(k);
      if (d !== undefined) return d ?? undefined;
    }
    return this.base.get(k);
  }
}

/** The parts of a cached table a patch reads and makes (table-cache.ts CachedTable). */
export interface PatchableTable {
  readonly lsn: number;
  readonly table: SqlTable;
  readonly rows: readonly Tuple[];
  readonly bytes: number;
  /** Of `bytes`, what the entry holds only until its pk map is compacted (rows replaced but still in `byPk.base`, delta entries). */
  readonly retained: number;
  readonly byPk: PkMap;
  readonly pkNums: Float64Array | null;
  /** The keys (`pkKeyOf`) of `rows`, in order; null when `pkNums` holds them. */
  readonly keys: readonly PkKey[] | null;
  /** False when the keys cannot give back the pks (a one-column pk that is not a plain value). */
  readonly patchable: boolean;
  readonly orders: Map<string, Int32Array>;
  readonly orderUses: Map<string, number>;
}

export type RowChange = Extract<LoggedChange, { op: 'put' | 'delete' }>;

/**
 * The row changes of one schema since `from`: every put/delete of a frame with an LSN above
 * `from` is here, in LSN order. A change it cannot keep (another kind, or past `cap`) restarts it
 * at that frame's LSN: no entry older than that can be patched.
 */
export class Journal {
  lsns: number[] = [];
  changes: RowChange[] = [];
  constructor(public from: number) {}

  note(lsn: number, c: LoggedChange, cap: number): void {
    if (lsn <= this.from) return;
    if ((c.op === 'put' || c.op === 'delete') && this.changes.length < cap) {
      this.lsns.push(lsn);
      this.changes.push(c);
    } else this.restart(lsn);
  }

  restart(lsn: number): void {
    this.from = lsn;
    this.lsns = [];
    this.changes = [];
  }

  /** The changes in (after, upto], or null when the journal does not hold them all. */
  between(after: number, upto: number): RowChange[] | null {
    if (this.from > after) return null;
    let i = 0;
    while (i < this.lsns.length && this.lsns[i] <= after) i++;
    let j = i;
    while (j < this.lsns.length && this.lsns[j] <= upto) j++;
    // the frame that set the table's LSN to `upto` changed this schema: it must be here
    if (j === i || this.lsns[j - 1] !== upto) return null;
    return this.changes.slice(i, j);
  }

  /** Forgets the changes up to `lsn` (an entry at `lsn` replaced the older ones). */
  trim(lsn: number): void {
    if (lsn <= this.from) return;
    let i = 0;
    while (i < this.lsns.length && this.lsns[i] <= lsn) i++;
    this.lsns = this.lsns.slice(i);
    this.changes = this.changes.slice(i);
    this.from = lsn;
  }
}

/** The delta of a pk map is folded into a new base (table-cache.ts, in steps) once it holds more than this many keys. */
export const compactAt = (rows: number) => 1024 + (rows >> 3);

/** The pk tuple of row `i` of an entry (from its key arrays). */
export function pkAt(e: PatchableTable, i: number): unknown[] {
  if (e.pkNums) return [e.pkNums[i]];
  const k = e.keys![i];
  return e.table.pk.length === 1 ? [k] : (parseJsonExact(k as string) as unknown[]);
}

/** The first row position of `e` whose key is above `pk`. */
export function positionAfter(e: PatchableTable, pk: readonly unknown[]): number {
  let lo = 0;
  let hi = e.rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (comparePk(pkAt(e, mid), pk) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

interface Net {
  readonly pk: JsonValue[];
  readonly key: PkKey;
  /** The row now (null: deleted). */
  readonly row: Tuple | null;
  /** Position of the key among the old rows, or where it would go. */
  at: number;
  found: boolean;
}

/**
 * The entry `e` with `changes` applied (frames in (e.lsn, lsn]), as a new object; null when the
 * changes cannot be applied exactly (the cache then reads the table whole). `onChange` sees each
 * key's net change (its row now, or null) once the patch is certain to succeed.
 */
export function patch<E extends PatchableTable>(
  e: E,
  changes: readonly RowChange[],
  lsn: number,
  onChange?: (key: PkKey, pk: readonly unknown[], row: Tuple | null) => void,
): E | null {
  const t = e.table;
  if (!e.patchable) return null;
  const width = t.pk.length;
  // the net effect per key (the last change of a key wins), decoded as a read decodes it
  const last = new Map<PkKey, RowChange>();
  const pks = new Map<PkKey, JsonValue[]>();
  for (const c of changes) {
    if (c.pk.length !== width) return null;
    const pk = asStored(c.pk);
    if (width === 1 && (!plainKey(pk[0]) || (e.pkNums && typeof pk[0] !== 'number'))) return null;
    const key = pkKeyOf(pk);
    last.set(key, c);
    pks.set(key, pk);
  }
  const n = e.rows.length;
  const nums = e.pkNums;
  const net: Net[] = [];
  for (const [key, c] of last) {
    const pk = pks.get(key)!;
    const row = c.op === 'put' ? toTuple(t, { values: parseJsonExact(stringifyJson(c.values)) as Row, version: c.version }) : null;
    // binary search for the key among the old rows
    let lo = 0;
    let hi = n;
    let found = false;
    if (nums) {
      const x = pk[0] as number;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (nums[mid] < x) lo = mid + 1;
        else hi = mid;
      }
      found = lo < n && nums[lo] === x;
    } else {
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (comparePk(pkAt(e, mid), pk) < 0) lo = mid + 1;
        else hi = mid;
      }
      found = lo < n && comparePk(pkAt(e, lo), pk) === 0;
    }
    if (!found && !row) continue; // a delete of a row the entry does not have
    net.push({ pk, key, row, at: lo, found });
  }
  const indexes = t.manifest.indexes.length;
  let bytes = e.bytes;
  let retained = e.retained;
  const delta = new Map<PkKey, Tuple | null>(e.byPk.delta ?? []);
  const before = delta.size;
  for (const c of net) {
    if (c.found) {
      const old = e.rows[c.at];
      const size = rowBytes(old, c.pk, indexes);
      // a row of the base map stays alive (in the base) until the map is compacted
      if (e.byPk.base.get(c.key) === old) retained += size;
      else bytes -= size;
    }
    if (c.row) bytes += rowBytes(c.row, c.pk, indexes);
    delta.set(c.key, c.row);
    onChange?.(c.key, c.pk, c.row);
  }
  retained += (delta.size - before) * DELTA_ENTRY;
  bytes += (delta.size - before) * DELTA_ENTRY;

  const structural = net.some((c) => !c.found || !c.row);
  let rows: Tuple[];
  let keys = e.keys;
  let pkNums = e.pkNums;
  /** Old position → new position (-1: the row changed or went); null when positions did not move. */
  let moved: Int32Array | null = null;
  /** New positions of changed or added rows. */
  const fresh: number[] = [];
  if (!structural) {
    rows = e.rows.slice();
    for (const c of net) {
      rows[c.at] = c.row!;
      fresh.push(c.at);
    }
  } else {
    net.sort((a, b) => a.at - b.at || comparePk(a.pk, b.pk));
    let size = n;
    for (const c of net) size += (c.row ? 1 : 0) - (c.found ? 1 : 0);
    rows = new Array<Tuple>(size);
    const newKeys = nums ? null : new Array<PkKey>(size);
    const newNums = nums ? new Float64Array(size) : null;
    if (e.orders.size) moved = new Int32Array(n);
    let i = 0;
    let o = 0;
    const copyTo = (end: number) => {
      for (; i < end; i++, o++) {
        rows[o] = e.rows[i];
        if (newKeys) newKeys[o] = e.keys![i];
        else newNums![o] = nums![i];
        if (moved) moved[i] = o;
      }
    };
    for (const c of net) {
      copyTo(c.at);
      if (c.found) {
        if (moved) moved[i] = -1;
        i++;
      }
      if (c.row) {
        rows[o] = c.row;
        if (newKeys) newKeys[o] = c.key;
        else newNums![o] = c.pk[0] as number;
        fresh.push(o);
        o++;
      }
    }
    copyTo(n);
    keys = newKeys;
    pkNums = newNums;
  }

  const byPk = new PkMap(e.byPk.base, delta);

  const orders = new Map<string, Int32Array>();
  if (e.orders.size) {
    if (!moved) {
      moved = new Int32Array(n);
      for (let j = 0; j < n; j++) moved[j] = j;
      for (const p of fresh) moved[p] = -1;
    }
    for (const [name, order] of e.orders) {
      const cols = t.manifest.indexes.find((x) => x.name === name)?.columns;
      const col = cols ? t.manifest.columns.findIndex((c) => c.name === cols[0]) : -1;
      if (col >= 0) orders.set(name, patchOrder(order, rows, col, moved, fresh));
    }
  }
  return { ...e, lsn, rows, bytes, retained, byPk, keys, pkNums, orders, orderUses: new Map(e.orderUses) };
}

/**
 * An index order (row positions sorted by column `col`, ties by position) carried to the patched
 * rows: the unchanged rows' positions remapped by `moved` (monotone, so still sorted), and the
 * `fresh` positions (changed or added rows) merged in by binary search.
 */
export function patchOrder(order: Int32Array, rows: readonly Tuple[], col: number, moved: Int32Array, fresh: readonly number[]): Int32Array {
  const kept = new Int32Array(order.length);
  let k = 0;
  for (let j = 0; j < order.length; j++) {
    const p = moved[order[j]];
    if (p >= 0) kept[k++] = p;
  }
  const cmp = (a: number, b: number) => compareValues(rows[a][col], rows[b][col]) || a - b;
  const add = [...fresh].sort(cmp);
  const out = new Int32Array(k + add.length);
  let from = 0;
  let o = 0;
  for (const p of add) {
    let lo = from;
    let hi = k;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cmp(kept[mid], p) < 0) lo = mid + 1;
      else hi = mid;
    }
    out.set(kept.subarray(from, lo), o);
    o += lo - from;
    from = lo;
    out[o++] = p;
  }
  out.set(kept.subarray(from, k), o);
  return out;
}
