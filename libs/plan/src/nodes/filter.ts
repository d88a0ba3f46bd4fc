import type { Expr } from '../expr';
import type { PlanNode } from '../node';
/** Keeps the rows where `predicate` is true (NULL and false drop the row). */
export interface FilterNode { readonly op: 'filter'; readonly input: PlanNode; readonly predicate: Expr }
export const filter = (input: PlanNode, predicate: Expr): FilterNode => ({ op: 'filter', input, predicate });
