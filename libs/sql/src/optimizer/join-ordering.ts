/**
 * Join ordering: in an inner (or cross) join the right input is the one held in memory (the hash
 * table, or the inner loop). Estimate each input's rows and put the smaller one on the right; a
 * project above the swapped join restores the original column order, so nothing above changes.
 * Estimates: get 1, index_scan with an equality prefix 10 (a range 100), filter a third of its input,
 * a scan its table's row count when the table cache knows it (else 1000), a join its larger input.
 */
import type { PlanNode } from '@mmdb/plan';
import type { OptCatalog, Pass } from './optimizer';
import { bottomUp } from './util';

/** Output column names of a node as the executor names them (case kept), or null when unknown here. */
function exactNames(n: PlanNode, cat: OptCatalog): string[] | null {
  switch (n.op) {
    case 'scan': case 'get': case 'index_scan':
      return cat.table(n.schema).cols.map((c) => (c.name.startsWith('#') ? `${c.name}:${n.alias ?? n.schema}` : n.alias ? `${n.alias}.${c.name}` : c.name));
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

export function estimateRows(n: PlanNode, cat: OptCatalog): number {
  switch (n.op) {
    case 'get': return 1;
    case 'index_scan': return n.prefix?.length ? 10 : 100;
    case 'scan': return n.limit ?? cat.rowCount?.(n.schema) ?? 1000;
    case 'filter': return Math.max(1, Math.ceil(estimateRows(n.input, cat) / 3));
    case 'project': case 'sort': case 'distinct': return estimateRows(n.input, cat);
    case 'limit': return n.limit?.kind === 'lit' && typeof n.limit.value === 'number' ? Math.min(n.limit.value, estimateRows(n.input, cat)) : estimateRows(n.input, cat);
    case 'join': return Math.max(estimateRows(n.left, cat), estimateRows(n.right, cat));
    case 'values': return n.rows.length;
    default: return 1000;
  }
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
