/** Turns joins with equality conditions between the two sides into hash joins. */
import type { Affinity, Expr, PlanNode } from '@mmdb/plan';
import type { Pass } from './optimizer';
import { bottomUp, colsOf, conjuncts, isBinary, outputNames, within } from './util';
import { comparisonCollation } from '../exec/collation';

const cls = (a: Affinity | undefined) => (a === 'integer' || a === 'real' || a === 'numeric' ? 'num' : a === 'text' ? 'text' : undefined);

/**
 * Hashing compares keys exactly; only pairs of columns of the same affinity class compare that way
 * in SQLite too, and only under the BINARY collating sequence.
 */
function sameClass(a: Expr, b: Expr): boolean {
  return a.kind === 'col' && b.kind === 'col' && cls(a.affinity) !== undefined && cls(a.affinity) === cls(b.affinity) && isBinary(comparisonCollation(a, b));
}

export const hashJoin: Pass = {
  name: 'hash_join',
  run: (plan, cat) => {
    let changed = false;
    const out = bottomUp(plan, (n: PlanNode) => {
      if (n.op !== 'join' || !n.on || n.strategy || n.kind === 'full' || n.kind === 'right') return n;
      const ln = outputNames(n.left, cat);
      const rn = outputNames(n.right, cat);
      if (!ln || !rn) return n;
      const equi: { left: Expr; right: Expr }[] = [];
      for (const c of conjuncts(n.on)) {
        if (c.kind !== 'binary' || c.op !== '=' || !sameClass(c.left, c.right)) continue;
        const a = colsOf(c.left);
        const b = colsOf(c.right);
        if (!a || !b) continue;
        if (within(a, ln) && within(b, rn)) equi.push({ left: c.left, right: c.right });
        else if (within(a, rn) && within(b, ln)) equi.push({ left: c.right, right: c.left });
      }
      if (!equi.length) return n;
      changed = true;
      return { ...n, equi, strategy: 'hash' };
    });
    return changed ? out : plan;
  },
};
