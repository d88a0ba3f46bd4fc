import type { PlanNode } from '../node';
/** Drops duplicate rows (NULLs equal each other here). */
export interface DistinctNode { readonly op: 'distinct'; readonly input: PlanNode }
export const distinct = (input: PlanNode): DistinctNode => ({ op: 'distinct', input });
