import type { Expr } from '../expr';
import type { PlanNode } from '../node';
export type JoinKind = 'inner' | 'left' | 'right' | 'full' | 'cross' | 'semi' | 'anti';
/**
 * Joins two inputs. Output: left columns then right columns (semi/anti: left only).
 * `equi` (filled by the optimizer, or given) lists equality key pairs used for a hash join;
 * `strategy` says which operator runs it.
 */
export interface JoinNode {
  readonly op: 'join';
  readonly kind: JoinKind;
  readonly left: PlanNode;
  readonly right: PlanNode;
  readonly on?: Expr;
  readonly equi?: ReadonlyArray<{ readonly left: Expr; readonly right: Expr }>;
  readonly strategy?: 'nested_loop' | 'hash';
}
export const join = (kind: JoinKind, left: PlanNode, right: PlanNode, on?: Expr): JoinNode => ({ op: 'join', kind, left, right, ...(on ? { on } : {}) });
