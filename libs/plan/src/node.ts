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
import type { FtsSearchNode } from './nodes/fts_search';
import type { VectorTopkNode } from './nodes/vector_topk';
import type { GraphExpandNode } from './nodes/graph_expand';
import type { GraphPathNode } from './nodes/graph_path';
import type { GraphDijkstraNode } from './nodes/graph_dijkstra';
import type { FuseNode } from './nodes/fuse';
import type { WindowNode } from './nodes/window';
import type { UnnestNode } from './nodes/unnest';

/**
 * Every plan node. The union is closed: every per-kind table below (and in the validator, the
 * optimizer's outputNames, the executor's operators) is a `Record<NodeKind, …>`, so a new kind
 * does not compile until every pass handles it.
 */
export type PlanNode =
  | ScanNode | GetNode | IndexScanNode | FilterNode | ProjectNode | JoinNode | AggregateNode | SortNode
  | LimitNode | DistinctNode | SetOpNode | ValuesNode | WithNode | CteRefNode | InsertNode | UpdateNode | DeleteNode
  | FtsSearchNode | VectorTopkNode | GraphExpandNode | GraphPathNode | GraphDijkstraNode | FuseNode | WindowNode | UnnestNode;

export type NodeKind = PlanNode['op'];
export type NodeOf<K extends NodeKind> = Extract<PlanNode, { op: K }>;

/** One entry per kind: `satisfies` fails to compile when a kind is missing. */
const KIND_SET = {
  scan: 1, get: 1, index_scan: 1, filter: 1, project: 1, join: 1, aggregate: 1, sort: 1, limit: 1, distinct: 1,
  set_op: 1, values: 1, with: 1, cte_ref: 1, insert: 1, update: 1, delete: 1,
  fts_search: 1, vector_topk: 1, graph_expand: 1, graph_path: 1, graph_dijkstra: 1, fuse: 1, window: 1, unnest: 1,
} as const satisfies Record<NodeKind, 1>;
export const NODE_KINDS = Object.keys(KIND_SET) as readonly NodeKind[];

/** Nodes that read stored data (rows or a multi-model index): where the Policy port applies. */
export const LEAF_KINDS = ['scan', 'get', 'index_scan', 'fts_search', 'vector_topk', 'graph_expand', 'graph_path', 'graph_dijkstra'] as const satisfies readonly NodeKind[];

/** A visitor with one handler per node kind: adding a kind breaks compilation until handled. */
export type PlanVisitor<R, C = void> = { readonly [K in NodeKind]: (node: NodeOf<K>, ctx: C) => R };

export function visit<R, C>(node: PlanNode, visitor: PlanVisitor<R, C>, ctx: C): R {
  const fn = visitor[node.op] as (n: PlanNode, c: C) => R;
  return fn(node, ctx);
}

type Kids<K extends NodeKind> = {
  readonly get: (n: NodeOf<K>) => PlanNode[];
  readonly map: (n: NodeOf<K>, f: (c: PlanNode) => PlanNode) => NodeOf<K>;
};
const none = { get: () => [], map: <N>(n: N) => n };
const one = <K extends NodeKind>(): Kids<K> => ({
  get: (n) => [(n as unknown as { input: PlanNode }).input],
  map: (n, f) => ({ ...n, input: f((n as unknown as { input: PlanNode }).input) }),
});
type Binary = { left: PlanNode; right: PlanNode };
const two = <K extends 'join' | 'set_op'>(): Kids<K> => ({
  get: (n) => [(n as Binary).left, (n as Binary).right],
  map: (n, f) => ({ ...n, left: f((n as Binary).left), right: f((n as Binary).right) }),
});

/** Child plan nodes per kind (subqueries inside expressions are not children: see PlanTransformer). */
const KIDS: { readonly [K in NodeKind]: Kids<K> } = {
  scan: none, get: none, index_scan: none, values: none, cte_ref: none,
  fts_search: none, vector_topk: none, graph_path: none, graph_dijkstra: none,
  filter: one(), project: one(), aggregate: one(), sort: one(), limit: one(), distinct: one(),
  insert: one(), update: one(), delete: one(), window: one(), unnest: one(),
  join: two(), set_op: two(),
  with: {
    get: (n) => [...n.ctes.map((c) => c.plan), n.input],
    map: (n, f) => ({ ...n, ctes: n.ctes.map((c) => ({ ...c, plan: f(c.plan) })), input: f(n.input) }),
  },
  graph_expand: {
    get: (n) => (n.input ? [n.input] : []),
    map: (n, f) => (n.input ? { ...n, input: f(n.input) } : n),
  },
  fuse: {
    get: (n) => [...n.inputs],
    map: (n, f) => ({ ...n, inputs: n.inputs.map(f) }),
  },
};

/** Child plan nodes of a node (not counting subqueries inside expressions). */
export function children(node: PlanNode): PlanNode[] {
  return (KIDS[node.op] as Kids<NodeKind>).get(node as never);
}

/** Rebuilds a node with its children mapped by `f` (bottom-up rewrites). Unchanged children keep the node. */
export function mapChildren(node: PlanNode, f: (n: PlanNode) => PlanNode): PlanNode {
  const kids = children(node);
  if (kids.length === 0) return node;
  const out = kids.map(f);
  let same = true;
  for (let i = 0; i < kids.length; i++) if (out[i] !== kids[i]) { same = false; break; }
  if (same) return node; // no copy of an unchanged node (a pass over a 64-join tree made 100s per query)
  let i = 0;
  return (KIDS[node.op] as Kids<NodeKind>).map(node as never, () => out[i++]); // `map` visits children in `get`'s order
}
