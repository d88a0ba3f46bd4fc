import type { Expr } from '../expr';
import type { PlanNode } from '../node';
/** Updates the rows of `schema` produced by `input` (a scan/filter over the same schema, alias `alias`). */
export interface UpdateNode {
  readonly op: 'update';
  readonly schema: string;
  readonly alias: string;
  readonly input: PlanNode;
  readonly set: ReadonlyArray<{ readonly column: string; readonly expr: Expr }>;
  readonly returning?: ReadonlyArray<{ readonly name: string; readonly expr: Expr }>;
}
export const update = (n: Omit<UpdateNode, 'op'>): UpdateNode => ({ op: 'update', ...n });
