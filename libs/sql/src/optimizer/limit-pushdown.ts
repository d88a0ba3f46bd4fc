/** LIMIT over ORDER BY keeps only the top rows in the sort; LIMIT directly over a scan stops the scan. */
import type { PlanNode } from '@mmdb/plan';
import type { Pass } from './optimizer';
import { bottomUp } from './util';

const num = (e: unknown): number | undefined => {
  const x = e as { kind?: string; value?: unknown; real?: boolean } | undefined;
  return x && x.kind === 'lit' && typeof x.value === 'number' && Number.isInteger(x.value) && !x.real && x.value >= 0 ? x.value : undefined;
};

export const limitPushdown: Pass = {
  name: 'limit_pushdown',
  run: (plan) => {
    let changed = false;
    const out = bottomUp(plan, (n: PlanNode) => {
      if (n.op !== 'limit' || !n.limit) return n;
      const l = num(n.limit);
      const o = n.offset ? num(n.offset) : 0;
      if (l === undefined || o === undefined) return n;
      if (n.input.op === 'sort' && n.input.limit === undefined) {
        changed = true;
        return { ...n, input: { ...n.input, limit: l + o } };
      }
      if (n.input.op === 'scan' && n.input.limit === undefined) {
        changed = true;
        return { ...n, input: { ...n.input, limit: l + o } };
      }
      return n;
    });
    return changed ? out : plan;
  },
};
