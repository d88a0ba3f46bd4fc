/** Evaluates expressions that read no column, parameter or subquery once, at plan time. */
import type { Expr, PlanNode } from '@mmdb/plan';
import type { Pass } from './optimizer';
import { bottomUp, mapNodeExprs } from './util';
import { ExecCtx } from '../exec/context';
import { ExprCompiler } from '../exec/expr';
import { Scope } from '../exec/scope';
import { FTS_MATCH, FTS_SCORE } from '../exec/vector-functions';
import type { Value } from '../values';

function pure(e: Expr): boolean {
  if (e.kind === 'col' || e.kind === 'param' || e.kind === 'subquery' || e.kind === 'exists' || e.kind === 'in_subquery') return false;
  if (e.kind === 'call' && ['random', FTS_MATCH, FTS_SCORE].includes(e.name.toLowerCase())) return false;
  for (const v of Object.values(e)) {
    if (Array.isArray(v)) { for (const x of v) if (x && typeof x === 'object' && !(('kind' in x) ? pure(x as Expr) : Object.values(x).every((y) => !(y && typeof y === 'object' && 'kind' in y) || pure(y as Expr)))) return false; }
    else if (v && typeof v === 'object' && 'kind' in v && !pure(v as Expr)) return false;
  }
  return true;
}

function toLit(v: Value): Expr | null {
  if (v === null) return { kind: 'lit', value: null };
  if (typeof v === 'string') return { kind: 'lit', value: v };
  if (typeof v === 'number') return Number.isFinite(v) ? { kind: 'lit', value: v, ...(Number.isInteger(v) ? { real: true } : {}) } : null;
  if (v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER)) return { kind: 'lit', value: Number(v) };
  return { kind: 'lit', value: v.toString(), int: true };
}

export const constantFolding: Pass = {
  name: 'constant_folding',
  run: (plan) => {
    const ctx = new ExecCtx([], () => { throw new Error('no tables at plan time'); }, { maxRows: 1000, deadline: Date.now() + 1000 }, null, false);
    const comp = new ExprCompiler(ctx);
    let changed = false;
    const fold = (e: Expr): Expr => {
      if (e.kind === 'lit' || e.kind === 'cast' || e.kind === 'collate') return e; // a COLLATE stays: it is part of how the value compares later
      if (pure(e)) {
        try {
          const l = toLit(comp.compile(e, new Scope([]))([], null));
          if (l) { changed = true; return l; }
        } catch { /* errors surface when (and if) the expression runs */ }
      }
      return e;
    };
    const out = bottomUp(plan, (n: PlanNode) => (n.op === 'filter' || n.op === 'project' ? mapNodeExprs(n, fold) : n));
    return changed ? out : plan;
  },
};
