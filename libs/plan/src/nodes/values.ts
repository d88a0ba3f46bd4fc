import type { Expr } from '../expr';
/** Literal rows. */
export interface ValuesNode { readonly op: 'values'; readonly columns: readonly string[]; readonly rows: ReadonlyArray<readonly Expr[]> }
export const values = (columns: readonly string[], rows: ReadonlyArray<readonly Expr[]>): ValuesNode => ({ op: 'values', columns, rows });
