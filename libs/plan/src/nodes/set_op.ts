import type { PlanNode } from '../node';
/** UNION / INTERSECT / EXCEPT [ALL]. Output column names come from `left`. */
export interface SetOpNode { readonly op: 'set_op'; readonly kind: 'union' | 'intersect' | 'except'; readonly all?: boolean; readonly left: PlanNode; readonly right: PlanNode }
export const setOp = (kind: SetOpNode['kind'], left: PlanNode, right: PlanNode, all = false): SetOpNode => ({ op: 'set_op', kind, all, left, right });
