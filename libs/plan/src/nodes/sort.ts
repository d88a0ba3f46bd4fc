import type { Expr } from '../expr';
import type { PlanNode } from '../node';
export interface SortKey { readonly expr: Expr; readonly desc?: boolean; readonly nulls?: 'first' | 'last' }
/** Orders rows (NULLs first ascending, last descending, unless `nulls` says otherwise). Stable. */
export interface SortNode { readonly op: 'sort'; readonly input: PlanNode; readonly keys: readonly SortKey[]; readonly limit?: number }
export const sort = (input: PlanNode, keys: readonly SortKey[]): SortNode => ({ op: 'sort', input, keys });
