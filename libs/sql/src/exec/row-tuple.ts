/** A stored row decoded into the executor's tuple (manifest column order, then the row's version). */
import type { StoredRow } from '@mmdb/storage';
import type { SqlTable } from '../catalog';
import { cellKinds, decodeCell } from '../column-codec';
import { bigOf, fromJson, type Tuple, type Value } from '../values';

/** A stored row → tuple in manifest column order, then its version. */
export function toTuple(t: SqlTable, r: Pick<StoredRow, 'values' | 'version'>): Tuple {
  const cols = t.manifest.columns;
  const out = new Array<Value>(cols.length + 1);
  const kinds = cellKinds(t);
  for (let i = 0; i < cols.length; i++) out[i] = kinds[i] ? decodeCell(r.values[cols[i].name]) : fromJson(r.values[cols[i].name], t.affs[i]);
  out[cols.length] = bigOf(r.version ?? 0);
  return out;
}
