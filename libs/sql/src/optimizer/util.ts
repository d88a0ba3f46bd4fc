import { EXPR_KINDS, mapChildren, type Collation, type Expr, type PlanNode } from '@mmdb/plan';
import type { OptCatalog } from './optimizer';

const EXPRS = new Set<string>(EXPR_KINDS);

/** Rewrites a plan bottom-up (children first). */
export function bottomUp(n: PlanNode, f: (n: PlanNode) => PlanNode): PlanNode {
  return f(mapChildren(n, (c) => bottomUp(c, f)));
}

/** Maps every expression directly held by a node (not children, not inside subqueries). */
export function mapNodeExprs(n: PlanNode, f: (e: Expr) => Expr): PlanNode {
  const walk = (v: unknown, key: string): unknown => {
    if (key === 'input' || key === 'left' || key === 'right' || key === 'ctes') return v;
    if (Array.isArray(v)) return v.map((x) => walk(x, ''));
    if (v && typeof v === 'object') {
      const o = v as Record<string, unknown>;
      if (typeof o.kind === 'string' && EXPRS.has(o.kind)) return f(o as unknown as Expr);
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(o)) out[k] = walk(x, k);
      return out;
    }
    return v;
  };
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(n)) out[k] = walk(v, k);
  return out as unknown as PlanNode;
}

/** Column names an expression reads (outside subqueries); `null` when it holds a subquery or parameter-free unknowns. */
export function colsOf(e: Expr): Set<string> | null {
  const out = new Set<string>();
  let ok = true;
  const walk = (x: Expr) => {
    switch (x.kind) {
      case 'col': out.add(x.name.toLowerCase()); return;
      case 'in_subquery': case 'exists': case 'subquery': ok = false; return;
      default:
        for (const v of Object.values(x)) {
          if (Array.isArray(v)) v.forEach((y) => { if (y && typeof y === 'object') { if ('kind' in y && EXPRS.has((y as Expr).kind)) walk(y as Expr); else for (const z of Object.values(y)) if (z && typeof z === 'object' && 'kind' in z) walk(z as Expr); } });
          else if (v && typeof v === 'object' && 'kind' in v && EXPRS.has((v as Expr).kind)) walk(v as Expr);
        }
    }
  };
  walk(e);
  return ok ? out : null;
}

/** True for the BINARY collating sequence (named or by default). */
export const isBinary = (c: Collation | undefined): boolean => !c || c === 'binary';

export function conjuncts(e: Expr): Expr[] {
  return e.kind === 'binary' && e.op === 'and' ? [...conjuncts(e.left), ...conjuncts(e.right)] : [e];
}

export function andAll(es: Expr[]): Expr | undefined {
  return es.length ? es.reduce((a, b) => ({ kind: 'binary', op: 'and', left: a, right: b })) : undefined;
}

/** Output column names of a node (lower case), or null when unknown here. */
export function outputNames(n: PlanNode, cat: OptCatalog): string[] | null {
  switch (n.op) {
    case 'scan': case 'get': case 'index_scan': {
      const t = cat.table(n.schema);
      return t.cols.map((c) => (c.name.startsWith('#') ? `${c.name}:${n.alias ?? n.schema}` : n.alias ? `${n.alias}.${c.name}` : c.name).toLowerCase());
    }
    case 'project': return n.columns.map((c) => c.name.toLowerCase());
    case 'filter': case 'sort': case 'limit': case 'distinct': return outputNames(n.input, cat);
    case 'join': {
      const l = outputNames(n.left, cat);
      const r = outputNames(n.right, cat);
      if (!l || !r) return null;
      return n.kind === 'semi' || n.kind === 'anti' ? l : [...l, ...r];
    }
    case 'aggregate': return [...n.group.map((g) => g.name.toLowerCase()), ...n.aggregates.map((a) => a.name.toLowerCase())];
    default: return null;
  }
}

export const within = (cols: Set<string>, names: string[]) => [...cols].every((c) => names.includes(c));
