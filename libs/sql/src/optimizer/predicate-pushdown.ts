/** Moves filter conjuncts down to the join side that has their columns; cross-side ones become join conditions. */
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
  return { op: 'filter', input: n, predicate: andAll(preds)! };
}

export const predicatePushdown: Pass = {
  name: 'predicate_pushdown',
  run: (plan, cat) => {
    let changed = false;
    const out = bottomUp(plan, (n) => {
      if (n.op !== 'filter') return n;
      if (n.input.op !== 'join' && n.input.op !== 'filter') return n;
      changed = true;
      return push(n.input, conjuncts(n.predicate), cat);
    });
    return changed ? out : plan;
  },
};
