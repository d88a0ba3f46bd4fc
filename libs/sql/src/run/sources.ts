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
  /**
   * Column masks of a leaf: output column name (as the leaf names it: `alias.col` or `col`, lower
   * case) → the expression that replaces it, over the leaf's own columns. `applyPolicy` puts a
   * project above the (filtered) leaf that outputs the masked expressions, so every operator above
   * (WHERE, JOIN, GROUP BY, ORDER BY, aggregates, explain) sees only masked values; the leaf's own
   * filter (vector_topk / fts_search) has the masked columns substituted the same way.
   */
  leafMasks?(leaf: LeafNode): ReadonlyMap<string, Expr> | undefined;
  /**
   * WITH CHECK: a predicate every new row written to `schema` (INSERT, UPDATE) must pass, over the
   * table's bare column names, or undefined. A failing row fails the statement with 403 (run/write-check.ts).
   */
  writeCheck?(schema: string): Expr | undefined;
  /** Called with the optimized plan before it runs (or is cached): may refuse it (e.g. a node kind of a disabled add-on). */
  checkPlan?(plan: PlanNode): void;
}

export const NO_POLICY: Policy = { leafFilter: () => undefined };

const LEAVES = new Set<string>(LEAF_KINDS);

/**
 * The two ends of a graph leaf's relation: `reached` (whose rows it returns) and `start` (where it
 * starts), as schema ids; undefined when unknown (no graph reader).
 */
export type GraphEnds = (n: GraphLeafNode) => { reached: string; start: string } | undefined;
type GraphLeafNode = Extract<PlanNode, { op: 'graph_expand' | 'graph_path' | 'graph_dijkstra' }>;
const GRAPH = new Set(['graph_expand', 'graph_path', 'graph_dijkstra']);

/**
 * The plan with the policy's filters placed at every leaf (the plan itself under NO_POLICY).
 * A graph leaf is asked for by its relation's schema (the grant), then for its reached and start
 * tables: their filters go into the traversal itself (`filter`, `start_filter`), so a hidden node is
 * neither returned nor used as a hop; the reached table's masks project its row columns.
 */
export function applyPolicy(plan: PlanNode, policy: Policy, names?: (n: PlanNode) => string[] | null, ends?: GraphEnds): PlanNode {
  if (policy === NO_POLICY) return plan;
  const need = policy.leafMasks ? maskedNeeded(plan) : null;
  const keep = need ? (m: ReadonlyMap<string, Expr> | undefined) => (m ? pruneMasks(m, need) : m) : (m: ReadonlyMap<string, Expr> | undefined) => m;
  return transformPlan(plan, {
    node: (n) => {
      if (!LEAVES.has(n.op)) return n;
      if (GRAPH.has(n.op)) return graphLeaf(n as GraphLeafNode, policy, names, ends, keep);
      const masks = keep(policy.leafMasks?.(n as LeafNode));
      const f = policy.leafFilter(n as LeafNode);
      let leaf: PlanNode = n;
      if (masks && (leaf.op === 'vector_topk' || leaf.op === 'fts_search') && leaf.filter) leaf = { ...leaf, filter: substitute(leaf.filter, masks) };
      if (f) {
        if (leaf.op === 'vector_topk' || leaf.op === 'fts_search') leaf = { ...leaf, filter: andAll(leaf.filter ? [f, leaf.filter] : [f]) }; // the policy first: the caller's filter never runs on a hidden row
        else leaf = { op: 'filter', input: leaf, predicate: f };
      }
      return masked(n, leaf, masks, names);
    },
  });
}

function masked(n: PlanNode, leaf: PlanNode, masks: ReadonlyMap<string, Expr> | undefined, names?: (n: PlanNode) => string[] | null): PlanNode {
  if (!masks || !masks.size) return leaf;
  const out = names?.(n);
  if (!out) throw new DbError('internal_error', `column masks cannot be applied to a ${n.op} leaf here`);
  return { op: 'project', input: leaf, columns: out.map((name) => ({ name, expr: masks.get(name) ?? { kind: 'col', name } })) };
}

function graphLeaf(n: GraphLeafNode, policy: Policy, names: ((n: PlanNode) => string[] | null) | undefined, ends: GraphEnds | undefined, keep: (m: ReadonlyMap<string, Expr> | undefined) => ReadonlyMap<string, Expr> | undefined): PlanNode {
  const own = policy.leafFilter(n as LeafNode); // the relation's schema: its grant (and, ends unknown, the rows' filter)
  const e = ends?.(n);
  const at = (schema: string) => ({ ...n, schema }) as LeafNode;
  const f = e ? (e.reached === n.schema ? own : policy.leafFilter(at(e.reached))) : own;
  const sf = e ? (e.start === e.reached ? f : e.start === n.schema ? own : policy.leafFilter(at(e.start))) : undefined;
  const masks = keep(policy.leafMasks?.(e ? at(e.reached) : (n as LeafNode)));
  let leaf: GraphLeafNode = n;
  if (masks && leaf.filter) leaf = { ...leaf, filter: substitute(leaf.filter, masks) };
  if (f) leaf = { ...leaf, filter: andAll(leaf.filter ? [f, leaf.filter] : [f]) };
  if (sf) leaf = { ...leaf, start_filter: andAll(leaf.start_filter ? [sf, leaf.start_filter] : [sf]) };
  return masked(n, leaf, masks, names);
}

const NULL_EXPR: Expr = { kind: 'lit', value: null };
const lastPart = (name: string) => name.slice(name.lastIndexOf('.') + 1).toLowerCase();

/**
 * Masks cost per row (a hash is a SHA-256): a masked column the plan never names is output as NULL
 * instead of its mask (never as its stored value), so only the columns a query uses are masked.
 * Returns the column names the plan refers to (last part, lower case), or null when some plan
 * root (the query, a subquery, a CTE) outputs a leaf's columns as they are (then every mask is kept).
 */
function maskedNeeded(plan: PlanNode): Set<string> | null {
  const used = new Set<string>();
  const roots: PlanNode[] = [plan];
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) return v.forEach(walk);
    if (!v || typeof v !== 'object') return;
    const o = v as Record<string, unknown>;
    if (o.kind === 'col' && typeof o.name === 'string') used.add(lastPart(o.name));
    if (typeof o.kind === 'string' && o.plan && typeof (o.plan as PlanNode).op === 'string') roots.push(o.plan as PlanNode);
    if (o.op === 'with') for (const c of o.ctes as { plan: PlanNode }[]) roots.push(c.plan);
    for (const x of Object.values(o)) walk(x);
  };
  walk(plan);
  for (const r of roots) {
    let n = r;
    while (n.op === 'filter' || n.op === 'sort' || n.op === 'limit' || n.op === 'distinct' || n.op === 'with') n = n.input;
    if (n.op !== 'project' && n.op !== 'aggregate') return null;
  }
  return used;
}

function pruneMasks(masks: ReadonlyMap<string, Expr>, used: ReadonlySet<string>): ReadonlyMap<string, Expr> {
  let out: Map<string, Expr> | null = null;
  for (const [name] of masks) {
    if (used.has(lastPart(name))) continue;
    out ??= new Map(masks);
    out.set(name, NULL_EXPR);
  }
  return out ?? masks;
}

/** `e` with every masked column reference replaced by its mask. */
function substitute(e: Expr, masks: ReadonlyMap<string, Expr>): Expr {
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (!v || typeof v !== 'object') return v;
    const o = v as Record<string, unknown>;
    if (o.kind === 'col' && typeof o.name === 'string') return masks.get(o.name.toLowerCase()) ?? o;
    const r: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(o)) r[k] = walk(x);
    return r;
  };
  return walk(e) as Expr;
}

export function need<T>(reader: T | undefined, what: string): T {
  if (!reader) throw new DbError('not_found', `this engine has no ${what} reader`, { reader: what });
  return reader;
}
