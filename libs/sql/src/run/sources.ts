/**
 * The executor's two ports.
 *
 * `Sources`: where every leaf reads. Rows and indexes come from one storage snapshot per query
 * (taken by the executor from `store`); the full-text, vector and graph readers are the tenant's
 * in-memory indexes, read in the same turn of the event loop as the snapshot is taken (see
 * DESIGN.md "One snapshot"). The tenant registry (apps/api/src/tenancy) fills it; a bare
 * `new SqlEngine(store)` has rows only, and a multi-model node then answers `not_found`.
 *
 * `Policy`: applied by the executor to every leaf of every plan (subqueries and multi-model
 * leaves included) before it runs. A no-op today (NO_POLICY); the row-level security issue fills it.
 */
import { DbError } from '@mmdb/core';
import { andAll, LEAF_KINDS, transformPlan, type Expr, type PlanNode } from '@mmdb/plan';
import type { FtsParticipant } from '@mmdb/fts';
import type { VectorParticipant } from '@mmdb/vector';
import type { GraphIndex } from '@mmdb/graph';
import type { SqlStore } from '../catalog';

export interface Sources {
  readonly store: SqlStore;
  readonly fts?: FtsParticipant;
  readonly vector?: VectorParticipant;
  readonly graph?: GraphIndex;
}

export type LeafNode = Extract<PlanNode, { op: (typeof LEAF_KINDS)[number] }>;

export interface Policy {
  /**
   * A predicate every row a leaf reads must pass (over the leaf's output columns), or undefined.
   * Top-k leaves (vector_topk, fts_search) take it as their own filter, so they still return the
   * k best among the rows the caller may see.
   */
  leafFilter(leaf: LeafNode): Expr | undefined;
}

export const NO_POLICY: Policy = { leafFilter: () => undefined };

const LEAVES = new Set<string>(LEAF_KINDS);

/** The plan with the policy's filters placed at every leaf (the plan itself under NO_POLICY). */
export function applyPolicy(plan: PlanNode, policy: Policy): PlanNode {
  if (policy === NO_POLICY) return plan;
  return transformPlan(plan, {
    node: (n) => {
      if (!LEAVES.has(n.op)) return n;
      const f = policy.leafFilter(n as LeafNode);
      if (!f) return n;
      if (n.op === 'vector_topk' || n.op === 'fts_search') return { ...n, filter: andAll(n.filter ? [n.filter, f] : [f]) };
      // a traversal that reads no row columns reads them under a policy: the predicate is over the reached row
      const leaf = (n.op === 'graph_expand' || n.op === 'graph_path' || n.op === 'graph_dijkstra') && n.row_columns === false ? { ...n, row_columns: true } : n;
      return { op: 'filter', input: leaf, predicate: f };
    },
  });
}

export function need<T>(reader: T | undefined, what: string): T {
  if (!reader) throw new DbError('not_found', `this engine has no ${what} reader`, { reader: what });
  return reader;
}
