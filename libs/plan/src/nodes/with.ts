import type { PlanNode } from '../node';
/**
 * Binds common table expressions visible to `input` (and to later CTEs) through `cte_ref`.
 * A recursive CTE's plan is a `set_op` union whose right side refers to the CTE itself; it runs
 * to a fixpoint.
 */
export interface CteDef { readonly name: string; readonly columns?: readonly string[]; readonly plan: PlanNode; readonly recursive?: boolean }
export interface WithNode { readonly op: 'with'; readonly ctes: readonly CteDef[]; readonly input: PlanNode }
export const withCtes = (ctes: readonly CteDef[], input: PlanNode): WithNode => ({ op: 'with', ctes, input });
