import type { ScanNode } from './nodes/scan';
import type { GetNode } from './nodes/get';
import type { IndexScanNode } from './nodes/index_scan';
import type { FilterNode } from './nodes/filter';
import type { ProjectNode } from './nodes/project';
import type { JoinNode } from './nodes/join';
import type { AggregateNode } from './nodes/aggregate';
import type { SortNode } from './nodes/sort';
import type { LimitNode } from './nodes/limit';
import type { DistinctNode } from './nodes/distinct';
import type { SetOpNode } from './nodes/set_op';
import type { ValuesNode } from './nodes/values';
import type { WithNode } from './nodes/with';
import type { CteRefNode } from './nodes/cte_ref';
import type { InsertNode } from './nodes/insert';
import type { UpdateNode } from './nodes/update';
import type { DeleteNode } from './nodes/delete';

/** Every plan node. A new kind must be added here, in NODE_KINDS, and in every visitor. */
export type PlanNode =
  | ScanNode | GetNode | IndexScanNode | FilterNode | ProjectNode | JoinNode | AggregateNode | SortNode
  | LimitNode | DistinctNode | SetOpNode | ValuesNode | WithNode | CteRefNode | InsertNode | UpdateNode | DeleteNode;

export type NodeKind = PlanNode['op'];
export type NodeOf<K extends NodeKind> = Extract<PlanNode, { op: K }>;

export const NODE_KINDS = [
  'scan', 'get', 'index_scan', 'filter', 'project', 'join', 'aggregate', 'sort', 'limit', 'distinct',
  'set_op', 'values', 'with', 'cte_ref', 'insert', 'update', 'delete',
] as const satisfies readonly NodeKind[];

/** A visitor with one handler per node kind: adding a kind breaks compilation until handled. */
export type PlanVisitor<R, C = void> = { readonly [K in NodeKind]: (node: NodeOf<K>, ctx: C) => R };

export function visit<R, C>(node: PlanNode, visitor: PlanVisitor<R, C>, ctx: C): R {
  const fn = visitor[node.op] as (n: PlanNode, c: C) => R;
  return fn(node, ctx);
}

/** Child plan nodes of a node (not counting subqueries inside expressions). */
export function children(node: PlanNode): PlanNode[] {
  switch (node.op) {
    case 'join':
    case 'set_op':
      return [node.left, node.right];
    case 'with':
      return [...node.ctes.map((c) => c.plan), node.input];
    case 'filter': case 'project': case 'aggregate': case 'sort': case 'limit': case 'distinct':
    case 'insert': case 'update': case 'delete':
      return [node.input];
    default:
      return [];
  }
}

/** Rebuilds a node with its children mapped by `f` (bottom-up rewrites). */
export function mapChildren(node: PlanNode, f: (n: PlanNode) => PlanNode): PlanNode {
  switch (node.op) {
    case 'join':
    case 'set_op':
      return { ...node, left: f(node.left), right: f(node.right) };
    case 'with':
      return { ...node, ctes: node.ctes.map((c) => ({ ...c, plan: f(c.plan) })), input: f(node.input) };
    case 'filter': case 'project': case 'aggregate': case 'sort': case 'limit': case 'distinct':
    case 'insert': case 'update': case 'delete':
      return { ...node, input: f(node.input) } as PlanNode;
    default:
      return node;
  }
}
