import type { Expr } from '../expr';
/**
 * Range over a secondary index (or `index: "primary"` for the primary key). `prefix` fixes the
 * leading columns by equality; `lower`/`upper` bound the next column.
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
}
export const indexScan = (n: Omit<IndexScanNode, 'op'>): IndexScanNode => ({ op: 'index_scan', ...n });
