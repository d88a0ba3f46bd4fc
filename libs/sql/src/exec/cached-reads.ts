/**
 * Reads answered from a cached table's arrays (table-cache.ts): pk ranges by binary search over the
 * numeric keys, and the first n rows by a column (a heap over the rows, or the entry's index order).
 */
import { compareValues, type Tuple } from '../values';
import type { CachedTable } from './table-cache';

/** First position in sorted `a` with a[i] > x when `strict`, else with a[i] >= x. */
export function lowerBound(a: Float64Array, x: number, strict: boolean): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (strict ? a[mid] <= x : a[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The rows that can be among the first `n` when ordered by column `col` (nulls first; from the end
 * with `reverse`): the first n and every row tying with the n-th, in their original (pk) order.
 */
export function topByScan(rows: readonly Tuple[], col: number, n: number, reverse: boolean): Tuple[] {
  if (n <= 0) return [];
  if (rows.length <= n) return rows.slice();
  const cmp = reverse ? (a: Tuple[number], b: Tuple[number]) => compareValues(b, a) : compareValues;
  // a max-heap (under cmp) of the n first keys: its top is the n-th key, the threshold
  const heap: Tuple[number][] = [];
  for (const r of rows) {
    const v = r[col];
    if (heap.length < n) {
      let i = heap.push(v) - 1;
      while (i > 0) {
        const p = (i - 1) >> 1;
        if (cmp(heap[i], heap[p]) <= 0) break;
        const t = heap[p]; heap[p] = heap[i]; heap[i] = t;
        i = p;
      }
    } else if (cmp(v, heap[0]) < 0) {
      heap[0] = v;
      for (let i = 0; ;) {
        const l = 2 * i + 1;
        if (l >= n) break;
        const m = l + 1 < n && cmp(heap[l + 1], heap[l]) > 0 ? l + 1 : l;
        if (cmp(heap[m], heap[i]) <= 0) break;
        const t = heap[m]; heap[m] = heap[i]; heap[i] = t;
        i = m;
      }
    }
  }
  const limit = heap[0];
  const out: Tuple[] = [];
  for (const r of rows) if (cmp(r[col], limit) <= 0) out.push(r);
  return out;
}

/**
 * topByScan through the entry's order of an index (positions sorted by the column, built on the
 * second request for it at this table LSN, so a table rewritten between queries never pays a sort).
 */
export function topRows(e: CachedTable, index: string, col: number, n: number, reverse: boolean): Tuple[] {
  let order = e.orders.get(index);
  if (!order) {
    const uses = (e.orderUses.get(index) ?? 0) + 1;
    e.orderUses.set(index, uses);
    if (uses < 2) return topByScan(e.rows, col, n, reverse);
    const rows = e.rows;
    order = new Int32Array(rows.length);
    for (let i = 0; i < order.length; i++) order[i] = i;
    order.sort((a, b) => compareValues(rows[a][col], rows[b][col]) || a - b);
    e.orders.set(index, order);
  }
  const len = order.length;
  if (n <= 0 || len === 0) return [];
  const at = (j: number) => (reverse ? order![len - 1 - j] : order![j]);
  let k = Math.min(n, len);
  const last = e.rows[at(k - 1)][col];
  while (k < len && compareValues(e.rows[at(k)][col], last) === 0) k++;
  const pos = new Int32Array(k);
  for (let j = 0; j < k; j++) pos[j] = at(j);
  pos.sort();
  const out = new Array<Tuple>(k);
  for (let j = 0; j < k; j++) out[j] = e.rows[pos[j]];
  return out;
}
