/**
 * Moves filter conjuncts down to the join side that has their columns; cross-side ones become join
 * conditions. Through a project directly over a (filtered) row leaf (the Policy port's column-mask
 * projection), conjuncts over columns it passes through unchanged go below it and join the leaf's
 * filter after its own conjuncts (the row-level security predicate is still evaluated first), so
 * pk and index selection see them; conjuncts over a masked column stay above (they compare masks).
 */
import type { Expr, PlanNode } from '@mmdb/plan';
import type { Pass, OptCatalog } from './optimizer';
import { andAll, bottomUp, colsOf, conjuncts, outputNames, within } from './util';

function push(n: PlanNode, preds: Expr[], cat: OptCatalog): PlanNode {
  if (!preds.length) return n;
  if (n.op === 'filter') return push(n.input, [...conjuncts(n.predicate), ...preds], cat);
  if (n.op === 'join' && (n.kind === 'inner' || n.kind === 'cross')) {
    const ln = outputNames(n.left, cat);
    const rn = outputNames(n.right, cat);
    if (ln && rn) {
      const l: Expr[] = [];
      const r: Expr[] = [];
      const on: Expr[] = n.on ? conjuncts(n.on) : [];
      const keep: Expr[] = [];
      for (const p of preds) {
        const cols = colsOf(p);
        if (!cols || cols.size === 0) keep.push(p);
        else if (within(cols, ln)) l.push(p);
        else if (within(cols, rn)) r.push(p);
        else if (within(cols, [...ln, ...rn])) on.push(p);
        else keep.push(p);
      }
      const joined: PlanNode = { ...n, kind: on.length ? 'inner' : n.kind, left: push(n.left, l, cat), right: push(n.right, r, cat), ...(on.length ? { on: andAll(on)! } : {}) };
      return keep.length ? { op: 'filter', input: joined, predicate: andAll(keep)! } : joined;
    }
  }
  if (n.op === 'project' && overRowLeaf(n.input)) {
    const through = new Set(n.columns.filter((c) => c.expr.kind === 'col' && c.expr.name.toLowerCase() === c.name.toLowerCase()).map((c) => c.name.toLowerCase()));
    const down: Expr[] = [];
    const keep: Expr[] = [];
    for (const p of preds) {
      const cols = colsOf(p);
      if (cols && cols.size > 0 && [...cols].every((c) => through.has(c.toLowerCase()))) down.push(p);
      else keep.push(p);
    }
    if (down.length) {
      const inner = n.input.op === 'filter' ? { ...n.input, predicate: andAll([...conjuncts(n.input.predicate), ...down])! } : { op: 'filter' as const, input: n.input, predicate: andAll(down)! };
      const proj: PlanNode = { ...n, input: inner };
      return keep.length ? { op: 'filter', input: proj, predicate: andAll(keep)! } : proj;
    }
  }
  return { op: 'filter', input: n, predicate: andAll(preds)! };
}

const ROW_LEAVES = new Set(['scan', 'get', 'index_scan']);
const overRowLeaf = (n: PlanNode): boolean => ROW_LEAVES.has(n.op) || (n.op === 'filter' && ROW_LEAVES.has(n.input.op));

export const predicatePushdown: Pass = {
  name: 'predicate_pushdown',
  run: (plan, cat) => {
    let changed = false;
    const out = bottomUp(plan, (n) => {
      if (n.op !== 'filter') return n;
      if (n.input.op !== 'join' && n.input.op !== 'filter' && !(n.input.op === 'project' && overRowLeaf(n.input.input))) return n;
      changed = true;
      return push(n.input, conjuncts(n.predicate), cat);
    });
    return changed ? out : plan;
  },
};
