import { andAll, children, conjuncts, EXPR_KINDS, mapChildren, mapNodeExprs as planNodeExprs, type Collation, type Expr, type NodeKind, type NodeOf, type PlanNode } from '@mmdb/plan';
import type { OptCatalog } from './optimizer';

const EXPRS = new Set<string>(EXPR_KINDS);

/** Rewrites a plan bottom-up (children first; subquery plans are the passes' own business). */
export function bottomUp(n: PlanNode, f: (n: PlanNode) => PlanNode): PlanNode {
  return f(mapChildren(n, (c) => bottomUp(c, f)));
}

/** Maps every expression directly held by a node (not children, not inside subqueries). */
export function mapNodeExprs(n: PlanNode, f: (e: Expr) => Expr): PlanNode {
  return planNodeExprs(n, f);
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

export { conjuncts, andAll };

type Names = (n: PlanNode, cat: OptCatalog) => string[] | null;
const leafNames = (schema: string, alias: string | undefined, cat: OptCatalog): string[] =>
  cat.table(schema).cols.map((c) => (c.name.startsWith('#') ? `${c.name}:${alias ?? schema}` : alias ? `${alias}.${c.name}` : c.name).toLowerCase());
const same: Names = (n, cat) => outputNames((n as { input: PlanNode }).input, cat);
const unknown: Names = () => null;

/** Output column names per node kind (lower case), or null when unknown here. */
const NAMES: { readonly [K in NodeKind]: (n: NodeOf<K>, cat: OptCatalog) => string[] | null } = {
  scan: (n, cat) => leafNames(n.schema, n.alias, cat),
  get: (n, cat) => leafNames(n.schema, n.alias, cat),
  index_scan: (n, cat) => leafNames(n.schema, n.alias, cat),
  project: (n) => n.columns.map((c) => c.name.toLowerCase()),
  filter: same, sort: same, limit: same, distinct: same,
  join: (n, cat) => {
    const l = outputNames(n.left, cat);
    const r = outputNames(n.right, cat);
    if (!l || !r) return null;
    return n.kind === 'semi' || n.kind === 'anti' ? l : [...l, ...r];
  },
  aggregate: (n) => [...n.group.map((g) => g.name.toLowerCase()), ...n.aggregates.map((a) => a.name.toLowerCase())],
  unnest: (n, cat) => {
    const i = outputNames(n.input, cat);
    return i && (i.includes(n.as.toLowerCase()) ? i : [...i, n.as.toLowerCase()]);
  },
  window: (n, cat) => {
    const i = outputNames(n.input, cat);
    return i && [...i, ...n.functions.map((f) => f.name.toLowerCase())];
  },
  fts_search: (n, cat) => [...leafNames(n.schema, n.alias, cat), (n.alias ? `${n.alias}._score` : '_score').toLowerCase()],
  vector_topk: (n, cat) => [...leafNames(n.schema, n.alias, cat), (n.alias ? `${n.alias}._distance` : '_distance').toLowerCase()],
  // graph nodes: their row columns are the reached table's (resolved through the catalog)
  graph_expand: (n, cat) => {
    const input = n.input ? outputNames(n.input, cat) : [];
    const rows = reachedNames(n, cat);
    if (!input || !rows) return null;
    const q = (x: string) => (n.alias ? `${n.alias}.${x}` : x).toLowerCase();
    return [...input, ...rows, q('_node'), q('_depth'), ...(n.emit_path ? [q('_path')] : [])];
  },
  graph_path: unknown, graph_dijkstra: unknown,
  cte_ref: (n) => cteNames.get(n) ?? null,
  fuse: unknown, set_op: unknown, values: unknown, with: unknown,
  insert: unknown, update: unknown, delete: unknown,
};

function reachedNames(n: { schema: string; rel: string; direction?: 'forward' | 'reverse' | 'both'; alias?: string; row_columns?: boolean }, cat: OptCatalog): string[] | null {
  if (n.row_columns === false) return [];
  if (!cat.reached) return null;
  try {
    return leafNames(cat.reached(n.schema, n.rel, n.direction ?? 'forward'), n.alias, cat);
  } catch {
    return null;
  }
}

const cteNames = new WeakMap<PlanNode, string[]>();

/**
 * Notes the output names of every `cte_ref` whose CTE lists its columns (optimize() calls it once
 * per plan), so predicate pushdown, hash_join and join_search work inside CTE bodies too — a
 * recursive step `FROM r, edges e WHERE e.src = r.node` becomes a hash join instead of a filtered
 * cross product. A CTE's plan sees the CTEs before it (and itself when recursive); a reference
 * whose CTE has no column list stays unknown.
 */
export function noteCteRefs(plan: PlanNode): void {
  const visit = (n: PlanNode, scope: ReadonlyMap<string, readonly string[] | null>): void => {
    if (n.op === 'with') {
      const inner = new Map(scope);
      for (const c of n.ctes) {
        const own = new Map(inner);
        if (c.recursive) own.set(c.name.toLowerCase(), c.columns ?? null);
        visit(c.plan, own);
        inner.set(c.name.toLowerCase(), c.columns ?? null);
      }
      visit(n.input, inner);
      return;
    }
    if (n.op === 'cte_ref') {
      const cols = scope.get(n.name.toLowerCase());
      if (cols) cteNames.set(n, cols.map((c) => `${n.alias ?? n.name}.${c}`.toLowerCase()));
      return;
    }
    for (const k of children(n)) visit(k, scope);
  };
  visit(plan, new Map());
}

/** Output column names of a node (lower case), or null when unknown here. */
export function outputNames(n: PlanNode, cat: OptCatalog): string[] | null {
  // Memoized per node object and catalog: plan nodes are rebuilt, not mutated, by the passes, and
  // a left-deep join of N tables otherwise recomputes its inputs' names at every level (N²).
  const hit = memo.get(n);
  if (hit && hit.cat === cat) return hit.names;
  const names = (NAMES[n.op] as Names)(n, cat);
  memo.set(n, { cat, names });
  return names;
}
const memo = new WeakMap<PlanNode, { cat: OptCatalog; names: string[] | null }>();

/** Whether `names` holds `c` (a Set per long names array, kept: outputNames' arrays are memoized and never mutated). */
function has(names: string[], c: string): boolean {
  if (names.length <= 8) return names.includes(c);
  let set = nameSets.get(names);
  if (!set) nameSets.set(names, (set = new Set(names)));
  return set.has(c);
}
const nameSets = new WeakMap<string[], Set<string>>();

/** Whether every column of `cols` is one of `names`, or of `more` when given. */
export function within(cols: Set<string>, names: string[], more?: string[]): boolean {
  for (const c of cols) if (!has(names, c) && !(more && has(more, c))) return false;
  return true;
}
