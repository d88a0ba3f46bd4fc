/**
 * Leaf sources: the rows of scan / get / index_scan leaves, read before the operators run, from
 * the table cache at the store's current LSNs or from the query's one storage snapshot, with an
 * open transaction's own writes overlaid.
 */
import { DbError, type JsonValue } from '@mmdb/core';
import type { PkTuple, ScanOptions, Snapshot, StoredRow } from '@mmdb/storage';
import type { Expr, PlanNode } from '@mmdb/plan';
import { querySnapshot, type SqlStore, type SqlTable } from '../catalog';
import type { ExecCtx } from '../exec/context';
import { ExprCompiler } from '../exec/expr';
import { Scope } from '../exec/scope';
import { lowerBound, pkKeyOf, topByScan, topRows, type CachedTable, type TableCache } from '../exec/table-cache';
import { applyAffinity, compareValues, toJson, toText, tupleKey, type Tuple, type Value } from '../values';
import type { Txn } from './writer';
import { cellKinds, keyOfCell } from '../column-codec';
import { toTuple } from '../exec/row-tuple';

export class LeafReader {
  constructor(
    private readonly store: SqlStore,
    readonly tables: TableCache,
    private readonly table: (id: string) => SqlTable,
    private readonly maxPkHint: Map<string, bigint>,
    /** Rows of an implicit table (a standalone vector table), read from its reader; undefined for stored tables. */
    private readonly implicitRows: (t: SqlTable) => Tuple[] | undefined = () => undefined,
  ) {}

  /** Every row of a table in the snapshot (through the table cache), the transaction's writes overlaid. */
  async allRows(snap: Snapshot, t: SqlTable, ctx: ExecCtx, txn: Txn | null): Promise<Tuple[]> {
    const imp = this.implicitRows(t);
    if (imp) return imp;
    const base = await this.tables.rows(snap, t, () => readTable(snap, t, () => ctx.check()));
    ctx.hold(base.length);
    return this.overlay(t, base as Tuple[], txn);
  }

  /**
   * Answers every leaf from the table cache as the store holds it now (no snapshot), or none:
   * false when one leaf cannot be (no current entry, a secondary index, an insert's key hint).
   */
  preloadCurrent(nodes: readonly PlanNode[], ctx: ExecCtx, maxRows = Infinity): boolean {
    const got: Tuple[][] = [];
    const entries: CachedTable[] = [];
    let total = 0;
    for (const n of nodes) {
      if (n.op !== 'scan' && n.op !== 'get' && n.op !== 'index_scan') return false;
      const t = this.table(n.schema);
      const e = this.tables.current(t);
      if (!e) return false;
      const rows = this.fromEntry(n, t, e, ctx);
      if (!rows || (total += rows.length) > maxRows) return false;
      got.push(rows);
      entries.push(e);
    }
    for (let i = 0; i < nodes.length; i++) {
      const n = nodes[i];
      if (n.op === 'scan' && n.limit === undefined) this.notePkIndex(n, this.table(n.schema), entries[i], ctx);
      ctx.hold(got[i].length);
      ctx.leaves.set(nodes[i], got[i]);
    }
    return true;
  }

  /** Lets a join probe a wholly cached scan leaf by its primary key (ExecCtx.pkIndex). */
  private notePkIndex(n: PlanNode, t: SqlTable, e: CachedTable, ctx: ExecCtx): void {
    const cols = pkPositions(t);
    if (cols.some((c) => c < 0)) return;
    ctx.pkIndex.set(n, {
      cols,
      get: (values) => {
        const key = values.map((v, i) => storeKey(t, t.pk[i], v));
        return key.some((k) => k === undefined) ? undefined : e.byPk.get(pkKeyOf(key));
      },
    });
  }

  /** A leaf's rows from a cached table, or undefined when the entry cannot answer it. */
  fromEntry(n: PlanNode, t: SqlTable, e: CachedTable, ctx: ExecCtx): Tuple[] | undefined {
    if (n.op === 'scan') return (n.limit !== undefined ? e.rows.slice(0, n.limit) : e.rows) as Tuple[];
    if (n.op === 'get') {
      const key = n.key.map((x, i) => storeKey(t, t.pk[i], constantOf(x, ctx)));
      if (key.some((k) => k === undefined)) return [];
      const r = e.byPk.get(pkKeyOf(key));
      return r ? [r] : [];
    }
    if (n.op === 'index_scan' && n.top !== undefined) {
      const col = topColumn(n, t);
      if (n.index === 'primary' && t.pk.length === 1) {
        // the rows are in pk order already, and a one-column pk has no ties
        return (n.reverse ? e.rows.slice(Math.max(0, e.rows.length - n.top)) : e.rows.slice(0, n.top)) as Tuple[];
      }
      return topRows(e, n.index, col, n.top, !!n.reverse);
    }
    if (n.op === 'index_scan') {
      if (n.index !== 'primary' || !e.pkNums || (n.prefix ?? []).length) return undefined;
      const col = t.pk[0];
      const lo = n.lower ? storeKey(t, col, constantOf(n.lower.value, ctx)) : undefined;
      const hi = n.upper ? storeKey(t, col, constantOf(n.upper.value, ctx)) : undefined;
      if ((n.lower && lo === undefined) || (n.upper && hi === undefined)) return [];
      if ((lo !== undefined && typeof lo !== 'number') || (hi !== undefined && typeof hi !== 'number')) return undefined;
      const a = e.pkNums;
      const from = lo === undefined ? 0 : lowerBound(a, lo, !n.lower!.inclusive);
      const to = hi === undefined ? a.length : lowerBound(a, hi, !!n.upper!.inclusive);
      return from < to ? (e.rows.slice(from, to) as Tuple[]) : [];
    }
    return undefined;
  }

  /** Loads the rows of every leaf node (scan/get/index_scan) from the snapshot, with the transaction's own writes overlaid. */
  async preload(nodes: readonly PlanNode[], snap: Snapshot, leaves: Map<PlanNode, Tuple[]>, txn: Txn | null, ctx: ExecCtx): Promise<void> {
    const fullScans = new Map<string, Promise<Tuple[]>>();
    const jobs: Promise<void>[] = [];
    const scanAll = (schema: string) => {
      let p = fullScans.get(schema);
      if (!p) {
        p = this.allRows(snap, this.table(schema), ctx, txn);
        fullScans.set(schema, p);
      }
      return p;
    };
    const constant = (e: Expr): Value => constantOf(e, ctx);
    const walk = (n: PlanNode) => {
      if ((n.op === 'get' || n.op === 'index_scan') && this.implicitRows(this.table(n.schema))) {
        // an implicit table has no stored keys: its rows are filtered in memory
        const t = this.table(n.schema);
        if (n.op === 'index_scan') throw new DbError('unsupported_sql', `${t.id} is a standalone table: it has no index to range over`, { construct: 'index_scan' });
        const key = n.key.map((e) => constant(e));
        const pkIdx = pkPositions(t);
        leaves.set(n, this.implicitRows(t)!.filter((r) => pkIdx.every((j, i) => compareValues(r[j], applyAffinity(key[i], t.affs[j])) === 0)));
        return;
      }
      if (n.op === 'scan') jobs.push(scanAll(n.schema).then((rows) => {
        leaves.set(n, n.limit !== undefined ? rows.slice(0, n.limit) : rows);
        const t = this.table(n.schema);
        const e = n.limit === undefined ? this.tables.peek(snap, t) : undefined;
        if (e && e.rows === rows) this.notePkIndex(n, t, e, ctx);
      }));
      else if (n.op === 'get') {
        jobs.push((async () => {
          const t = this.table(n.schema);
          const cached = this.tables.lookup(snap, t);
          if (cached) { leaves.set(n, this.fromEntry(n, t, cached, ctx)!); return; }
          const key = n.key.map((e, i) => storeKey(t, t.pk[i], constant(e)));
          if (key.some((k) => k === undefined)) { leaves.set(n, []); return; }
          this.tables.noteMiss(snap, t, () => querySnapshot(this.store), (s) => readTable(s, t, () => undefined));
          const r = await snap.getRow(t.id, key as PkTuple);
          leaves.set(n, r ? [toTuple(t, r)] : []);
        })());
      } else if (n.op === 'index_scan' && n.top !== undefined) {
        jobs.push((async () => {
          const t = this.table(n.schema);
          const col = topColumn(n, t);
          const cached = this.tables.lookup(snap, t);
          let rows: Tuple[];
          if (cached) rows = this.fromEntry(n, t, cached, ctx)!;
          else if (['i64', 'f64', 'timestamp'].includes(t.manifest.columns[col].ty)) {
            // numbers: the index's key order is their comparison order: read it until the n-th
            // entry and its ties, then put the rows back in pk order
            this.tables.noteMiss(snap, t, () => querySnapshot(this.store), (s) => readTable(s, t, () => undefined));
            const top = n.top!;
            const opts: ScanOptions = { reverse: !!n.reverse, batchSize: Math.max(16, Math.min(1024, top + 1)) };
            const iter = n.index === 'primary' ? snap.scanRows(t.id, opts) : snap.scanIndex(t.id, n.index, opts);
            rows = [];
            let last: Value = null;
            read: for await (const batch of iter) {
              ctx.check();
              for (const r of batch) {
                const tu = toTuple(t, r);
                if (rows.length >= top && compareValues(tu[col], last) !== 0) break read;
                rows.push(tu);
                last = tu[col];
              }
            }
            if (top === 0) rows = [];
            const pkIdx = pkPositions(t);
            rows.sort((a, b) => { for (const i of pkIdx) { const d = compareValues(a[i], b[i]); if (d) return d; } return 0; });
          } else {
            rows = topByScan(await scanAll(n.schema), col, n.top!, !!n.reverse);
          }
          ctx.hold(rows.length);
          leaves.set(n, rows);
        })());
      } else if (n.op === 'index_scan') {
        jobs.push((async () => {
          const t = this.table(n.schema);
          const idxCols = n.index === 'primary' ? t.pk : t.manifest.indexes.find((i) => i.name === n.index)?.columns ?? [];
          const prefix = (n.prefix ?? []).map((e, i) => storeKey(t, idxCols[i], constant(e)));
          if (prefix.some((k) => k === undefined)) { leaves.set(n, []); return; }
          const bcol = idxCols[prefix.length];
          const lo = n.lower ? storeKey(t, bcol, constant(n.lower.value)) : undefined;
          const hi = n.upper ? storeKey(t, bcol, constant(n.upper.value)) : undefined;
          if ((n.lower && lo === undefined) || (n.upper && hi === undefined)) { leaves.set(n, []); return; }
          const cached = this.tables.lookup(snap, t);
          const fromCache = cached && this.fromEntry(n, t, cached, ctx);
          if (fromCache) {
            ctx.hold(fromCache.length);
            leaves.set(n, fromCache);
            return;
          }
          const opts: ScanOptions = {
            ...(prefix.length && lo === undefined && hi === undefined ? { prefix: prefix as PkTuple } : {}),
            ...(lo !== undefined ? { [n.lower!.inclusive ? 'gte' : 'gt']: [...prefix, lo] } : prefix.length && hi !== undefined ? { gte: prefix } : {}),
            ...(hi !== undefined ? { [n.upper!.inclusive ? 'lte' : 'lt']: [...prefix, hi] } : prefix.length && lo !== undefined ? { lte: [...prefix, '\uffff'] } : {}),
          } as never;
          this.tables.noteMiss(snap, t, () => querySnapshot(this.store), (s) => readTable(s, t, () => undefined));
          const iter = n.index === 'primary' ? snap.scanRows(t.id, opts) : snap.scanIndex(t.id, n.index, opts);
          const out: Tuple[] = [];
          for await (const batch of iter) {
            ctx.check();
            ctx.hold(batch.length);
            for (const r of batch) out.push(toTuple(t, r));
          }
          leaves.set(n, out);
        })());
      }
      if (n.op === 'insert') {
        const t = this.table(n.schema);
        if (t.pk.length === 1 && !t.hiddenRowid && t.affs[t.manifest.columns.findIndex((c) => c.name === t.pk[0])] === 'integer') {
          jobs.push((async () => {
            let next = 1n;
            for await (const b of snap.scanRows(t.id, { reverse: true, limit: 1 })) for (const r of b) {
              const v = r.values[t.pk[0]];
              if (typeof v === 'number') next = BigInt(v) + 1n;
            }
            this.maxPkHint.set(t.id, next);
          })());
        }
      }
    };
    for (const n of nodes) walk(n);
    await Promise.all(jobs);
  }

  overlay(t: SqlTable, rows: Tuple[], txn: Txn | null): Tuple[] {
    const ov = txn?.overlay.get(t.id);
    if (!ov || ov.size === 0) return rows;
    const pkIdx = pkPositions(t);
    const byKey = new Map<string, Tuple>();
    const order: string[] = [];
    for (const r of rows) { const k = tupleKey(pkIdx.map((i) => r[i])); byKey.set(k, r); order.push(k); }
    for (const [k, row] of ov) {
      if (!byKey.has(k)) order.push(k);
      if (row === null) byKey.delete(k);
      else byKey.set(k, toTuple(t, { values: row, version: 0 } as StoredRow));
    }
    const out: Tuple[] = [];
    for (const k of order) { const r = byKey.get(k); if (r) { out.push(r); byKey.delete(k); } }
    out.sort((a, b) => { for (const i of pkIdx) { const d = compareValues(a[i], b[i]); if (d) return d; } return 0; });
    return out;
  }
}

/** Every row of a table from a snapshot, decoded, in pk order, with the stored pks. */
export async function readTable(snap: Snapshot, t: SqlTable, check: () => void): Promise<{ rows: Tuple[]; pks: unknown[][] }> {
  const rows: Tuple[] = [];
  const pks: unknown[][] = [];
  for await (const batch of snap.scanRows(t.id, { batchSize: 1024 })) {
    check();
    for (const r of batch) { rows.push(toTuple(t, r)); pks.push(r.pk); }
  }
  return { rows, pks };
}

export { toTuple } from '../exec/row-tuple';


/** Tuple positions of a table's primary-key columns (toTuple lays columns out in manifest order). */
export function pkPositions(t: SqlTable): number[] {
  return t.pk.map((p) => t.manifest.columns.findIndex((c) => c.name === p));
}

/** A value as the store's key for column `col` (undefined when it cannot match any stored key). */
export function storeKey(t: SqlTable, col: string, v: Value): JsonValue | undefined {
  const i = t.manifest.columns.findIndex((c) => c.name === col);
  const c = t.manifest.columns[i];
  const a = applyAffinity(v, t.affs[i]);
  if (a === null) return undefined;
  switch (c.ty) {
    case 'i64': case 'timestamp':
      if (typeof a === 'bigint') return toJson(a);
      if (typeof a === 'number' && Number.isInteger(a)) return a;
      return undefined;
    case 'f64': return typeof a === 'string' ? undefined : Number(a);
    case 'str': return toText(a)!;
    default: return cellKinds(t)[i] ? keyOfCell(c, a) : toJson(a);
  }
}


/** The manifest column an `index_scan` with `top` orders by (its index's first column); checks the node. */
function topColumn(n: PlanNode & { op: 'index_scan' }, t: SqlTable): number {
  if (n.prefix?.length || n.lower || n.upper) throw new DbError('validation_failed', 'index_scan: top cannot be combined with prefix, lower or upper', { path: '$.top' });
  if (!Number.isInteger(n.top) || n.top! < 0) throw new DbError('validation_failed', 'index_scan: top must be a non-negative integer', { path: '$.top' });
  const cols = n.index === 'primary' ? t.pk : t.manifest.indexes.find((i) => i.name === n.index)?.columns;
  if (!cols?.length) throw new DbError('validation_failed', `no index ${n.index} on ${t.id}`, { path: '$.index' });
  return t.manifest.columns.findIndex((c) => c.name === cols[0]);
}


const NO_COLUMNS = new Scope([]);

/** The value of a constant expression (a literal, a `$n`, or a folded-out expression of them). */
export function constantOf(e: Expr, ctx: ExecCtx): Value {
  if (e.kind === 'param') {
    const v = ctx.params[e.index - 1];
    if (v === undefined) throw new DbError('validation_failed', `no value bound for $${e.index}`);
    return v;
  }
  let f = ctx.constants.get(e);
  if (!f) ctx.constants.set(e, (f = new ExprCompiler(ctx).compile(e, NO_COLUMNS)));
  return f([], null);
}
