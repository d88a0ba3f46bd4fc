import type { Expr } from '../expr';
import type { PlanNode } from '../node';
/** Computes the output columns, in order. */
export interface ProjectNode { readonly op: 'project'; readonly input: PlanNode; readonly columns: ReadonlyArray<{ readonly name: string; readonly expr: Expr }> }
export const project = (input: PlanNode, columns: ProjectNode['columns']): ProjectNode => ({ op: 'project', input, columns });
