/**
 * Join ordering: in an inner (or cross) join the right input is the one held in memory (the hash
 * table, or the inner loop). Estimate each input's rows and put the smaller one on the right; a
 * project above the swapped join restores the original column order, so nothing above changes.
 * Estimates (ESTIMATES, one per node kind): get 1, index_scan with an equality prefix 10 (a range 100),
 * filter a third of its input, a scan its table's row count when the table cache knows it (else 1000),
 * a join its larger input, vector_topk its k, fts_search its limit, graph_expand its starts × 4^depth.
 */
import type { NodeKind, NodeOf, PlanNode } from '@mmdb/plan';
import type { OptCatalog, Pass } from './optimizer';
import { bottomUp } from './util';

/** Output column names of a node as the executor names them (case kept), or null when unknown here. */
export function exactNames(n: PlanNode, cat: OptCatalog): string[] | null {
  switch (n.op) {
    case 'scan': case 'get': case 'index_scan':
      return cat.table(n.schema).cols.map((c) => (c.name.startsWith('#') ? `${c.name}:${n.alias ?? n.schema}` : n.alias ? `${n.alias}.${c.name}` : c.name));
    case 'vector_topk': case 'fts_search': {
      const own = n.op === 'vector_topk' ? '_distance' : '_score';
      return [...cat.table(n.schema).cols.map((c) => (c.name.startsWith('#') ? `${c.name}:${n.alias ?? n.schema}` : n.alias ? `${n.alias}.${c.name}` : c.name)), n.alias ? `${n.alias}.${own}` : own];
    }
    case 'unnest': {
      const i = exactNames(n.input, cat);
      return i && (i.some((x) => x.toLowerCase() === n.as.toLowerCase()) ? i : [...i, n.as]);
    }
    case 'window': {
      const i = exactNames(n.input, cat);
      return i && [...i, ...n.functions.map((f) => f.name)];
    }
    case 'project': return n.columns.map((c) => c.name);
    case 'filter': case 'sort': case 'limit': case 'distinct': return exactNames(n.input, cat);
    case 'join': {
      const l = exactNames(n.left, cat);
      const r = exactNames(n.right, cat);
      if (!l || !r) return null;
      return n.kind === 'semi' || n.kind === 'anti' ? l : [...l, ...r];
    }
    default: return null;
  }
}

type Est = (n: PlanNode, cat: OptCatalog) => number;
const same: Est = (n, cat) => estimateRows((n as { input: PlanNode }).input, cat);
const unknown: Est = () => 1000;
/** Average out-degree assumed for a traversal estimate. */
const FANOUT = 4;

/** Estimated output rows per node kind (one entry per kind: a new kind must say its estimate). */
const ESTIMATES: { readonly [K in NodeKind]: (n: NodeOf<K>, cat: OptCatalog) => number } = {
  get: () => 1,
  index_scan: (n) => (n.prefix?.length ? 10 : 100),
  scan: (n, cat) => n.limit ?? cat.rowCount?.(n.schema) ?? 1000,
  filter: (n, cat) => Math.max(1, Math.ceil(estimateRows(n.input, cat) / 3)),
  project: same, sort: same, distinct: same, window: same,
  // a few values per row, as a document's array holds
  unnest: (n, cat) => 2 * estimateRows(n.input, cat),
  limit: (n, cat) => (n.limit?.kind === 'lit' && typeof n.limit.value === 'number' ? Math.min(n.limit.value, estimateRows(n.input, cat)) : estimateRows(n.input, cat)),
  join: (n, cat) => Math.max(estimateRows(n.left, cat), estimateRows(n.right, cat)),
  values: (n) => n.rows.length,
  vector_topk: (n) => n.k,
  fts_search: (n) => (n.limit === null ? 1000 : n.limit ?? 20),
  graph_path: (n) => Math.min(n.max_depth ?? 64, 8) + 1,
  graph_dijkstra: () => 8,
  graph_expand: (n, cat) => {
    const starts = n.input ? estimateRows(n.input, cat) : 1;
    const depth = n.max_depth === null ? 6 : n.max_depth ?? n.min_depth ?? 1;
    return Math.min(1_000_000, starts * FANOUT ** Math.min(depth, 6));
  },
  fuse: (n, cat) => {
    const all = n.inputs.reduce((a, i) => a + estimateRows(i, cat), 0);
    return n.limit !== undefined ? Math.min(n.limit, all) : all;
  },
  aggregate: unknown, set_op: unknown, with: unknown, cte_ref: unknown, insert: unknown, update: unknown, delete: unknown,
};

/** Estimated rows a node outputs (join ordering; explain does not show it). */
export function estimateRows(n: PlanNode, cat: OptCatalog): number {
  return (ESTIMATES[n.op] as Est)(n, cat);
}

export const joinOrdering: Pass = {
  name: 'join_ordering',
  run: (plan, cat) => {
    let changed = false;
    const out = bottomUp(plan, (n: PlanNode) => {
      if (n.op !== 'join' || (n.kind !== 'inner' && n.kind !== 'cross') || n.strategy) return n;
      const l = estimateRows(n.left, cat);
      const r = estimateRows(n.right, cat);
      if (l >= r) return n;
      const names = exactNames(n, cat);
      if (!names || new Set(names.map((x) => x.toLowerCase())).size !== names.length) return n;
      changed = true;
      return {
        op: 'project',
        input: { ...n, left: n.right, right: n.left },
        columns: names.map((name) => ({ name, expr: { kind: 'col', name } })),
      };
    });
    return changed ? out : plan;
  },
};
