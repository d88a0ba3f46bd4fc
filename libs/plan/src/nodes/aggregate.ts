import type { AggregateCall, Expr } from '../expr';
import type { PlanNode } from '../node';
/** Groups by `group` and computes `aggregates`. Output: group columns then aggregate columns. No group → one row. */
export interface AggregateNode {
  readonly op: 'aggregate';
  readonly input: PlanNode;
  readonly group: ReadonlyArray<{ readonly name: string; readonly expr: Expr }>;
  readonly aggregates: readonly AggregateCall[];
}
export const aggregate = (input: PlanNode, group: AggregateNode['group'], aggregates: readonly AggregateCall[]): AggregateNode => ({ op: 'aggregate', input, group, aggregates });
