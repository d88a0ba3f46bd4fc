/**
 * Spec-driven walks (specs.ts): the expressions a node holds, the sub-expressions and subquery
 * plans of an expression, and `transformPlan`, the typed rewrite that visits every node of a
 * plan including the plans of subqueries inside expressions (row-level security and the
 * executor's Policy port need those too).
 */
import { children as childrenOf, mapChildren, type NodeKind, type NodeOf, type PlanNode } from './node';
import type { Expr } from './expr';
import { EXPR_SPECS, NODE_SPECS, SUB_SPECS, type Field } from './specs';

type Fe = (e: Expr) => Expr;
type Fp = (p: PlanNode) => PlanNode;

function mapValue(t: Field, v: unknown, fe: Fe, fp: Fp | null): unknown {
  if (v === undefined || v === null) return v;
  switch (t) {
    case 'expr': return fe(v as Expr);
    case 'exprs': return (v as Expr[]).map(fe);
    case 'rows': return (v as Expr[][]).map((r) => r.map(fe));
    case 'node': return fp ? fp(v as PlanNode) : v;
    case 'nodes': return fp ? (v as PlanNode[]).map(fp) : v;
    case 'named': case 'sets': case 'keys': case 'aggs': case 'ctes': case 'equi': case 'whens': case 'fields': case 'wfuncs':
      return (v as object[]).map((o) => mapObject(SUB_SPECS[t], o, fe, fp));
    case 'bound': case 'frame': case 'fbound': case 'ranking':
      return mapObject(SUB_SPECS[t], v as object, fe, fp);
    default: return v;
  }
}

function mapObject(spec: Readonly<Record<string, string>>, o: object, fe: Fe, fp: Fp | null): object {
  let out: Record<string, unknown> | null = null;
  const src = o as Record<string, unknown>;
  for (const [k, t] of Object.entries(spec)) {
    if (src[k] === undefined) continue;
    const r = mapValue(t.replace('?', '') as Field, src[k], fe, fp);
    if (r !== src[k]) (out ??= { ...src })[k] = r;
  }
  return out ?? o;
}

/** Maps every expression a node holds directly (not its children, not inside the expressions). */
export function mapNodeExprs<K extends NodeKind>(n: NodeOf<K>, f: Fe): NodeOf<K> {
  return mapObject(NODE_SPECS[n.op], n, f, null) as NodeOf<K>;
}

/** Maps the direct sub-expressions (`fe`) and subquery plans (`fp`) of an expression. */
export function mapExprChildren(e: Expr, fe: Fe, fp: Fp): Expr {
  return mapObject(EXPR_SPECS[e.kind], e, fe, fp) as Expr;
}

/** Every expression a node holds directly. */
export function nodeExprs(n: PlanNode): Expr[] {
  const out: Expr[] = [];
  mapNodeExprs(n, (e) => (out.push(e), e));
  return out;
}

/** Subquery plans inside the expressions of a node (not nested deeper than those plans). */
export function subplans(n: PlanNode): PlanNode[] {
  const out: PlanNode[] = [];
  const fe = (e: Expr): Expr => mapExprChildren(e, fe, (p) => (out.push(p), p));
  for (const e of nodeExprs(n)) fe(e);
  return out;
}

/**
 * A typed rewrite over a whole plan. `node` sees each node after its children and the
 * subquery plans inside its expressions were rewritten; `expr` each expression after its parts.
 * A transformer that returns its argument unchanged keeps the tree's identity (no copies).
 */
export interface PlanTransformer {
  node?(n: PlanNode): PlanNode;
  expr?(e: Expr): Expr;
  /** false: leave subquery plans inside expressions alone (default: enter them). */
  readonly subqueries?: boolean;
}

export function transformPlan(plan: PlanNode, t: PlanTransformer): PlanNode {
  const fp: Fp = (p) => transformPlan(p, t);
  const fe: Fe = (e) => {
    const inner = mapExprChildren(e, fe, t.subqueries === false ? (p) => p : fp);
    return t.expr ? t.expr(inner) : inner;
  };
  const withKids = mapChildren(plan, fp);
  const withExprs = mapNodeExprs(withKids, fe);
  return t.node ? t.node(withExprs) : withExprs;
}

/** Visits every node of a plan, subquery plans included (pre-order). */
export function forEachNode(plan: PlanNode, f: (n: PlanNode) => void): void {
  const walk = (n: PlanNode) => {
    f(n);
    for (const s of subplans(n)) walk(s);
    for (const c of childrenOf(n)) walk(c);
  };
  walk(plan);
}
