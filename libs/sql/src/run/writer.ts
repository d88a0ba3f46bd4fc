/**
 * The writer of insert / update / delete nodes: applies affinity, NOT NULL and the storage type,
 * allocates INTEGER PRIMARY KEY values, and queues the statement's changes (one commit per
 * statement, or per BEGIN…COMMIT script) with the transaction's own writes kept as an overlay.
 */
import { coerceValue, DbError, type Row } from '@mmdb/core';
import { cellKinds, encodeCell } from '../column-codec';
import { pkPositions, toTuple } from './leaves';
import type { Change, Precondition } from '@mmdb/storage';
import type { SqlTable } from '../catalog';
import type { Writer } from '../exec/context';
import { applyAffinity, checkInt, compareValues, fromJson, toJson, toText, truthy, tupleKey, typeName, type Tuple, type Value } from '../values';

/** An open transaction: its queued changes, and its own writes by table and pk key (null = deleted). */
export interface Txn { changes: Change[]; overlay: Map<string, Map<string, Row | null>>; explicit: boolean }

/** `check`: the acting user's WITH CHECK on each new row (run/write-check.ts), before it is queued. */
export function makeWriter(table: (id: string) => SqlTable, txn: Txn, maxPkHint: ReadonlyMap<string, bigint>, check?: (schema: string, row: Tuple) => void): Writer {
  const put = (t: SqlTable, row: Row, pre: Precondition | undefined) => {
    txn.changes.push({ op: 'put', schema: t.id, row, ...(pre ? { precondition: pre } : {}) });
    const pk = t.pk.map((p) => fromJson(row[p], t.affs[t.manifest.columns.findIndex((c) => c.name === p)]));
    let ov = txn.overlay.get(t.id);
    if (!ov) txn.overlay.set(t.id, (ov = new Map()));
    ov.set(pk.some((v) => v === null) ? `new:${txn.changes.length}` : tupleKey(pk), row);
  };
  const nextPk = new Map<string, bigint>();
  return {
    insert: (node, input) => {
      const t = table(node.schema);
      const cols = t.manifest.columns;
      const vals: Value[] = cols.map((c) => (c.default !== undefined ? fromJson(c.default, undefined) : null));
      const given = new Set<number>();
      node.columns.forEach((name, i) => {
        const j = cols.findIndex((c) => c.name.toLowerCase() === name.toLowerCase());
        vals[j] = input[i];
        given.add(j);
      });
      // INTEGER PRIMARY KEY without a value: the next key, as SQLite's rowid alias does
      if (t.pk.length === 1 && !t.hiddenRowid) {
        const j = cols.findIndex((c) => c.name === t.pk[0]);
        if (vals[j] === null && t.affs[j] === 'integer') {
          let next = nextPk.get(t.id);
          if (next === undefined) {
            const ov = txn.overlay.get(t.id);
            next = 1n;
            for (const r of ov?.values() ?? []) if (r && typeof r[t.pk[0]] === 'number') next = maxBig(next, BigInt(r[t.pk[0]] as number) + 1n);
            next = maxBig(next, maxPkHint.get(t.id) ?? 1n);
          }
          vals[j] = next;
          nextPk.set(t.id, next + 1n);
        }
      }
      const row = toRow(t, vals);
      const out = stored(t, row, 1);
      check?.(t.id, out);
      put(t, row, node.on_conflict === 'replace' ? undefined : { kind: 'insert' });
      return out;
    },
    update: (node, before, after) => {
      const t = table(node.schema);
      const width = t.manifest.columns.length;
      const version = Number(before[width] ?? 0);
      const pkIdx = pkPositions(t);
      const pkChanged = pkIdx.some((i) => compareValues(before[i], applyAffinity(after[i], t.affs[i])) !== 0);
      const row = toRow(t, after.slice(0, width));
      check?.(t.id, stored(t, row, version + 1));
      if (pkChanged) {
        const oldPk = pkIdx.map((i) => toJson(before[i]));
        txn.changes.push({ op: 'delete', schema: t.id, pk: oldPk, ...(version ? { precondition: { kind: 'if_match', version } } : {}) });
        txn.overlay.get(t.id)?.set(tupleKey(pkIdx.map((i) => before[i])), null);
        put(t, row, { kind: 'insert' });
      } else {
        put(t, row, version ? { kind: 'if_match', version } : { kind: 'exists' });
      }
      return stored(t, row, version + 1);
    },
    delete: (node, row) => {
      const t = table(node.schema);
      const pkIdx = pkPositions(t);
      const pk = pkIdx.map((i) => toJson(row[i]));
      txn.changes.push({ op: 'delete', schema: t.id, pk });
      let ov = txn.overlay.get(t.id);
      if (!ov) txn.overlay.set(t.id, (ov = new Map()));
      ov.set(tupleKey(pkIdx.map((i) => row[i])), null);
    },
  };
}

/** The tuple of a row as the store keeps it (what RETURNING answers): canonical values, then the version. */
function stored(t: SqlTable, row: Row, version: number): Tuple {
  return toTuple(t, { values: row, version });
}

function maxBig(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}

/** Tuple → row for the store: affinity, NOT NULL, then the column's storage type. */
export function toRow(t: SqlTable, vals: Value[]): Row {
  const row: Row = {};
  const kinds = cellKinds(t);
  t.manifest.columns.forEach((c, i) => {
    let v = applyAffinity(vals[i], t.affs[i]);
    if (v === null) {
      if (c.required && !(t.hiddenRowid && c.name === '_rowid')) {
        throw new DbError('missing_required', `NOT NULL constraint failed: ${t.manifest.table}.${c.name}`, { field: c.name });
      }
      if (t.hiddenRowid && c.name === '_rowid') return;
      row[c.name] = null;
      return;
    }
    switch (c.ty) {
      case 'i64':
        if (typeof v === 'number' && Number.isInteger(v)) v = BigInt(v);
        if (typeof v !== 'bigint') throw new DbError('type_mismatch', `column "${c.name}" expects an integer, got ${typeName(v)} ${JSON.stringify(toText(v))}`, { field: c.name });
        row[c.name] = toJson(checkInt(v)) as number | bigint;
        return;
      case 'f64':
        if (typeof v === 'bigint') v = Number(v);
        if (typeof v !== 'number' || !Number.isFinite(v)) throw new DbError('type_mismatch', `column "${c.name}" expects a real, got ${typeName(v)}`, { field: c.name });
        row[c.name] = v;
        return;
      case 'str':
        row[c.name] = toText(v)!;
        return;
      case 'bool':
        row[c.name] = truthy(v) === true;
        return;
      case 'timestamp':
        // RFC 3339 text becomes epoch milliseconds here (as the store would), so RETURNING and
        // later statements of the same script see the stored form
        row[c.name] = coerceValue(c.name, 'timestamp', typeof v === 'bigint' ? toJson(v) : v);
        return;
      default:
        row[c.name] = kinds[i] ? encodeCell(c, kinds[i]!, v) : toJson(v);
    }
  });
  return row;
}
