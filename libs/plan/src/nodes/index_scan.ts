import type { Expr } from '../expr';
/**
 * Range over a secondary index (or `index: "primary"` for the primary key). `prefix` fixes the
 * leading columns by equality; `lower`/`upper` bound the next column.
 * `top: n` (no prefix or bounds): only the rows that can be among the first `n` in index order
 * (from the end with `reverse`) — the first `n` entries and every entry tying with the n-th on the
 * index's first column — output in primary-key order, like a scan. It feeds a top-N `sort` (ORDER BY
 * the indexed column … LIMIT), which orders them; the optimizer's `index_order` pass sets it.
 */
export interface IndexScanNode {
  readonly op: 'index_scan';
  readonly schema: string;
  readonly alias?: string;
  readonly index: string;
  readonly prefix?: readonly Expr[];
  readonly lower?: { readonly value: Expr; readonly inclusive: boolean };
  readonly upper?: { readonly value: Expr; readonly inclusive: boolean };
  readonly reverse?: boolean;
  readonly top?: number;
}
export const indexScan = (n: Omit<IndexScanNode, 'op'>): IndexScanNode => ({ op: 'index_scan', ...n });
