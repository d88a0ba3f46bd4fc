/**
 * Top-k rewrites of the multi-model leaves:
 * - `ORDER BY <vector column> <op> <constant> LIMIT n [OFFSET m]` over a scan of a table with a
 *   `[vector]` (through a project and the WHERE filters above the scan) reads `vector_topk`
 *   {k: n + m, filter: the WHERE}: the k nearest among the rows that pass. The sort stays (it
 *   orders the k rows by the exact distance the query asked for). An operator whose metric is not
 *   the table's sets `metric`, which the executor answers with an exact scan.
 * - A filter directly above `vector_topk` / `fts_search` goes into it (same meaning: the best k
 *   among the rows that pass).
 * - A constant LIMIT directly above them (through a project) bounds their k / limit.
 * - A project directly above an unfiltered `fts_search` that reads only the key and `_score` sets
 *   its `keys_only`: the hits' rows are not read (`SELECT id FROM fts_search(…)`, `IN (…)`).
 * - An aggregate whose calls do not depend on their rows' order, over an `fts_search` with
 *   `limit: null` (through projects and filters), sets its `unordered`: every match, unranked;
 *   and `no_score` when none of them reads `_score`: each hit is its row, no copy with the score.
 */
import type { Expr, PlanNode } from '@mmdb/plan';
import { andAll, conjuncts } from '@mmdb/plan';
import { VECTOR_OPERATORS } from '../exec/vector-functions';
import type { OptCatalog, Pass } from './optimizer';
import { bottomUp } from './util';

const METRIC_OF: Record<string, 'l2' | 'cosine' | 'dot' | 'manhattan'> = Object.fromEntries(Object.values(VECTOR_OPERATORS).map((v) => [v.fn, v.metric]));

const num = (e: Expr | undefined): number | undefined =>
  e && e.kind === 'lit' && typeof e.value === 'number' && Number.isInteger(e.value) && !e.real && e.value >= 0 ? e.value : undefined;

const isConst = (e: Expr): boolean => e.kind === 'lit' || e.kind === 'param';

/** Aggregates whose result does not depend on the order of their rows (not group_concat, string_agg, …). */
const ORDER_FREE = new Set(['count', 'min', 'max', 'sum', 'total', 'avg', 'kahan_sum', 'sorted_values']); // kahan_sum: in its order argument's order

/** Whether an expression holds a subquery (`in_subquery`, `exists`, `subquery`: a conservative text test). */
const hasSubquery = (e: unknown): boolean => /"kind":"(in_subquery|exists|subquery)"/.test(JSON.stringify(e));

/** Whether an expression (or any part of a node's own expressions) may name a `_score` column (a conservative text test). */
const readsScore = (x: unknown): boolean => JSON.stringify(x).includes('_score');

/**
 * `n` with the every-match `fts_search` it reads through projects and filters marked unordered
 * (and `no_score` when `scoreFree`: nothing above reads `_score`), or null.
 */
function unorderedLeaf(n: PlanNode, scoreFree: boolean): PlanNode | null {
  if (n.op === 'fts_search') return n.limit === null && !n.unordered ? { ...n, unordered: true, ...(scoreFree ? { no_score: true } : {}) } : null;
  if (n.op !== 'project' && n.op !== 'filter') return null;
  const own = n.op === 'filter' ? n.predicate : n.columns;
  const inner = unorderedLeaf(n.input, scoreFree && !readsScore(own));
  return inner ? { ...n, input: inner } : null;
}

/** The leaf under filters: the scan and the AND of the filters' predicates. */
function underFilters(n: PlanNode): { scan: PlanNode & { op: 'scan' }; preds: Expr[] } | null {
  const preds: Expr[] = [];
  let cur = n;
  while (cur.op === 'filter') {
    preds.push(...conjuncts(cur.predicate));
    cur = cur.input;
  }
  return cur.op === 'scan' && cur.limit === undefined ? { scan: cur, preds } : null;
}

function vectorSort(lim: PlanNode & { op: 'limit' }, cat: OptCatalog): PlanNode | null {
  const l = num(lim.limit);
  const o = lim.offset ? num(lim.offset) : 0;
  const sort = lim.input;
  // beyond MAX_K the exact sort over the scan answers (a top-k node holds at most 10,000)
  if (l === undefined || o === undefined || l + o > 10_000 || sort.op !== 'sort' || !sort.keys.length || sort.keys[0].desc) return null;
  let key = sort.keys[0].expr;
  let below = sort.input;
  let project: (PlanNode & { op: 'project' }) | null = null;
  if (below.op === 'project') {
    project = below;
    if (key.kind === 'col') {
      const name = key.name.toLowerCase();
      const c = below.columns.find((x) => x.name.toLowerCase() === name);
      if (c) key = c.expr;
    }
    below = below.input;
  }
  if (key.kind !== 'call' || !METRIC_OF[key.name] || key.args.length !== 2) return null;
  const [a, b] = key.args;
  const colArg = a.kind === 'col' && isConst(b) ? a : b.kind === 'col' && isConst(a) ? b : null;
  const vec = colArg === a ? b : a;
  if (!colArg || colArg.kind !== 'col') return null;
  const leaf = underFilters(below);
  if (!leaf) return null;
  const t = cat.table(leaf.scan.schema);
  const v = t.manifest?.vector;
  if (!v) return null;
  const colName = colArg.name.toLowerCase();
  const expect = (leaf.scan.alias ? `${leaf.scan.alias}.${v.column}` : v.column).toLowerCase();
  if (colName !== expect) return null;
  const metric = METRIC_OF[key.name];
  const topk: PlanNode = {
    op: 'vector_topk', schema: leaf.scan.schema, ...(leaf.scan.alias ? { alias: leaf.scan.alias } : {}), column: v.column,
    vector: vec, k: l + o, ...(metric !== v.metric ? { metric } : {}), ...(leaf.preds.length ? { filter: andAll(leaf.preds)! } : {}),
  };
  const newBelow: PlanNode = project ? { ...project, input: topk } : topk;
  return { ...lim, input: { ...sort, input: newBelow } };
}

/** A project over an fts_search that reads only the table's key columns and `_score` (plain column references). */
function keysOnly(p: PlanNode & { op: 'project' }, s: PlanNode & { op: 'fts_search' }, cat: OptCatalog): boolean {
  const m = cat.table(s.schema).manifest;
  if (!m || m.primary_key.length === 0) return false;
  const q = s.alias ? `${s.alias}.`.toLowerCase() : '';
  const ok = new Set([...m.primary_key, '_score'].map((c) => `${q}${c}`.toLowerCase()));
  return p.columns.every((c) => c.expr.kind === 'col' && ok.has(c.expr.name.toLowerCase()));
}

export const topkPushdown: Pass = {
  name: 'topk_pushdown',
  run: (plan, cat) => {
    let changed = false;
    const out = bottomUp(plan, (n) => {
      if (n.op === 'limit') {
        const r = vectorSort(n, cat);
        if (r) { changed = true; return r; }
        const l = num(n.limit);
        const o = n.offset ? num(n.offset) : 0;
        if (l === undefined || o === undefined) return n;
        const inner = n.input.op === 'project' ? n.input.input : n.input;
        let bounded: PlanNode | null = null;
        if (inner.op === 'vector_topk' && inner.k > l + o) bounded = { ...inner, k: l + o };
        if (inner.op === 'fts_search' && (inner.limit === null || (inner.limit ?? 20) > l + o) && l + o >= 1 && l + o <= 1000) bounded = { ...inner, limit: l + o };
        if (!bounded) return n;
        changed = true;
        return { ...n, input: n.input.op === 'project' ? { ...n.input, input: bounded } : bounded };
      }
      if (n.op === 'aggregate' && n.aggregates.every((c) => ORDER_FREE.has(c.fn.toLowerCase()))) {
        const leaf = unorderedLeaf(n.input, !readsScore(n.group) && !readsScore(n.aggregates));
        if (leaf) {
          changed = true;
          return { ...n, input: leaf };
        }
      }
      if (n.op === 'project' && n.input.op === 'fts_search' && !n.input.keys_only && !n.input.filter && keysOnly(n, n.input, cat)) {
        changed = true;
        return { ...n, input: { ...n.input, keys_only: true } };
      }
      if (n.op === 'filter' && (n.input.op === 'vector_topk' || n.input.op === 'fts_search')) {
        // a conjunct holding a subquery stays in a filter above the leaf (the leaf's own filter passed no row with one)
        const own = conjuncts(n.predicate);
        const push = own.filter((c) => !hasSubquery(c));
        if (!push.length) return n;
        changed = true;
        const f = n.input.filter ? [n.input.filter, ...push] : push;
        const leaf = { ...n.input, filter: andAll(f)! };
        const keep = own.filter(hasSubquery);
        return keep.length ? { ...n, input: leaf, predicate: andAll(keep)! } : leaf;
      }
      return n;
    });
    return changed ? out : plan;
  },
};
