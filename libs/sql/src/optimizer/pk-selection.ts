/** A filter fixing every primary-key column by a constant turns the scan under it into a pk `get`; a pk range into an `index_scan`. */
import type { Expr, PlanNode } from '@mmdb/plan';
import type { Pass } from './optimizer';
import { bottomUp, conjuncts } from './util';

const isConst = (e: Expr) => e.kind === 'lit' || e.kind === 'param' || (e.kind === 'unary' && e.op === '-' && e.arg.kind === 'lit');

export const pkSelection: Pass = {
  name: 'pk_selection',
  run: (plan, cat, opts) => {
    if (opts.noIndex) return plan;
    let changed = false;
    const out = bottomUp(plan, (n: PlanNode) => {
      if (n.op !== 'filter' || n.input.op !== 'scan' || n.input.limit !== undefined) return n;
      const scan = n.input;
      const t = cat.table(scan.schema);
      const name = (c: string) => (scan.alias ? `${scan.alias}.${c}` : c).toLowerCase();
      const eq = new Map<string, Expr>();
      const lower: { value: Expr; inclusive: boolean }[] = [];
      const upper: { value: Expr; inclusive: boolean }[] = [];
      const first = t.pk.length ? name(t.pk[0]) : '';
      for (const c of conjuncts(n.predicate)) {
        if (c.kind !== 'binary') continue;
        let col: Expr = c.left;
        let val: Expr = c.right;
        let op = c.op;
        if (!(col.kind === 'col' && isConst(val))) {
          if (c.right.kind === 'col' && isConst(c.left)) {
            col = c.right; val = c.left;
            op = ({ '<': '>', '<=': '>=', '>': '<', '>=': '<=' } as Record<string, typeof op>)[op] ?? op;
          } else continue;
        }
        if (col.kind !== 'col') continue;
        const cname = col.name.toLowerCase();
        if (op === '=') eq.set(cname, val);
        else if (cname === first && t.cols.find((x) => name(x.name) === cname)?.aff === 'integer' && val.kind === 'lit' && typeof val.value === 'number') {
          if (op === '>' || op === '>=') lower.push({ value: val, inclusive: op === '>=' });
          if (op === '<' || op === '<=') upper.push({ value: val, inclusive: op === '<=' });
        }
      }
      if (t.pk.length && t.pk.every((p) => eq.has(name(p)))) {
        changed = true;
        return { ...n, input: { op: 'get', schema: scan.schema, ...(scan.alias ? { alias: scan.alias } : {}), key: t.pk.map((p) => eq.get(name(p))!) } };
      }
      if (lower.length === 1 || upper.length === 1) {
        changed = true;
        return {
          ...n,
          input: {
            op: 'index_scan', schema: scan.schema, ...(scan.alias ? { alias: scan.alias } : {}), index: 'primary',
            ...(lower.length === 1 ? { lower: lower[0] } : {}), ...(upper.length === 1 ? { upper: upper[0] } : {}),
          },
        };
      }
      return n;
    });
    return changed ? out : plan;
  },
};
