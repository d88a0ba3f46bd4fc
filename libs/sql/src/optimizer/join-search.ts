/**
 * Join-order search for many-table inner joins (`FROM t1, t2, …, tN WHERE a1 = b2 AND …`).
 *
 * The binder builds a left-deep tree of the FROM list in the order written, and predicate pushdown
 * puts each cross-relation conjunct on the lowest join that has its columns; with the equalities in
 * another order than the tables (or tables linked only through others) that tree holds cross
 * products, which for 10-64 tables never end. This pass flattens a tree of inner/cross joins into
 * its relations and conjuncts and rebuilds it greedily, as SQLite's and DuckDB's planners do beyond
 * their exhaustive sizes (it runs only when the written order holds a join without a condition): start from the smallest estimated relation, then repeatedly add the
 * smallest relation *connected* to the joined set by a conjunct (a cross product only when no
 * conjunct connects any remaining relation), each conjunct placed on the first join that has all
 * its columns. hash_join then turns those equalities into hash joins. A project restores the
 * original column order, so nothing above changes. Greedy is O(n² · conjuncts): 64 relations plan
 * in well under a millisecond.
 */
import type { Expr, PlanNode } from '@mmdb/plan';
import { mapChildren } from '@mmdb/plan';
import type { OptCatalog, Pass } from './optimizer';
import { andAll, colsOf, conjuncts, outputNames } from './util';
import { estimateRows, exactNames } from './join-ordering';

const isInner = (n: PlanNode): n is PlanNode & { op: 'join' } => n.op === 'join' && (n.kind === 'inner' || n.kind === 'cross') && !n.strategy;

function flatten(n: PlanNode, rels: PlanNode[], preds: Expr[]): void {
  if (isInner(n)) {
    flatten(n.left, rels, preds);
    flatten(n.right, rels, preds);
    if (n.on) preds.push(...conjuncts(n.on));
  } else rels.push(n);
}

/** Rebuilds one join tree; null when it cannot be reordered safely (unknown or repeated names). */
function reorder(rels: PlanNode[], preds: Expr[], cat: OptCatalog): PlanNode | null {
  const names = rels.map((r) => outputNames(r, cat));
  const exact = rels.map((r) => exactNames(r, cat));
  if (names.some((x) => !x) || exact.some((x) => !x)) return null;
  const owner = new Map<string, number>();
  for (let i = 0; i < rels.length; i++) for (const c of names[i]!) { if (owner.has(c)) return null; owner.set(c, i); }
  // each conjunct as the set of relations it reads
  const uses: Set<number>[] = [];
  for (const p of preds) {
    const cols = colsOf(p);
    if (!cols) return null;
    const s = new Set<number>();
    for (const c of cols) { const o = owner.get(c); if (o === undefined) return null; s.add(o); }
    uses.push(s);
  }
  const est = rels.map((r) => estimateRows(r, cat));
  const joined = new Set<number>();
  const placed = new Array<boolean>(preds.length).fill(false);
  // per conjunct, how many of its relations are not joined yet; per relation, the conjuncts reading it
  const missing = uses.map((s) => s.size);
  const byRel: number[][] = rels.map(() => []);
  uses.forEach((s, k) => { for (const i of s) byRel[i].push(k); });
  let ready: number[] = uses.flatMap((s, k) => (s.size === 0 ? [k] : []));
  const join = (i: number) => {
    joined.add(i);
    for (const k of byRel[i]) if (--missing[k] === 0) ready.push(k);
  };
  const smallest = (ok: (i: number) => boolean) => {
    let best = -1;
    for (let i = 0; i < rels.length; i++) if (!joined.has(i) && (best < 0 || est[i] < est[best]) && ok(i)) best = i;
    return best;
  };
  // i joins the set through a conjunct whose other relations are all joined already
  const connected = (i: number) => byRel[i].some((k) => !placed[k] && missing[k] === 1 && uses[k].size > 1);
  let first = smallest((i) => byRel[i].some((k) => uses[k].size > 1));
  if (first < 0) first = smallest(() => true);
  join(first);
  let cur = rels[first];
  while (joined.size < rels.length) {
    let next = smallest(connected);
    if (next < 0) next = smallest(() => true);
    join(next);
    const on: Expr[] = [];
    ready.sort((a, b) => a - b);
    for (const k of ready) { placed[k] = true; on.push(preds[k]); }
    ready = [];
    cur = on.length ? { op: 'join', kind: 'inner', left: cur, right: rels[next], on: andAll(on)! } : { op: 'join', kind: 'cross', left: cur, right: rels[next] };
  }
  const rest = preds.filter((_, k) => !placed[k]);
  if (rest.length) cur = { op: 'filter', input: cur, predicate: andAll(rest)! };
  return { op: 'project', input: cur, columns: exact.flat().map((name) => ({ name: name!, expr: { kind: 'col', name: name! } })) };
}

/** Relations at which the search starts; two are left to join_ordering. */
const MIN_RELATIONS = 3;

function rewrite(n: PlanNode, cat: OptCatalog): PlanNode {
  if (!isInner(n)) return mapChildren(n, (c) => rewrite(c, cat));
  const rels: PlanNode[] = [];
  const preds: Expr[] = [];
  flatten(n, rels, preds);
  const inner = rels.map((r) => rewrite(r, cat));
  if (inner.length >= MIN_RELATIONS && hasCross(n)) {
    const out = reorder(inner, preds, cat);
    if (out) { state.changed = true; return out; }
  }
  // kept as written: the same tree over the rewritten relations (each relation rewritten once,
  // not again at every level of a left-deep tree)
  const at = { i: 0 };
  return rebuild(n, inner, at);
}

function rebuild(n: PlanNode, inner: PlanNode[], at: { i: number }): PlanNode {
  if (!isInner(n)) return inner[at.i++];
  const left = rebuild(n.left, inner, at);
  const right = rebuild(n.right, inner, at);
  return left === n.left && right === n.right ? n : { ...n, left, right };
}

/** A join of the tree with no condition: the written order has a cross product somewhere. */
function hasCross(n: PlanNode): boolean {
  return isInner(n) && (!n.on || hasCross(n.left) || hasCross(n.right));
}

const state = { changed: false };

export const joinSearch: Pass = {
  name: 'join_search',
  run: (plan, cat) => {
    state.changed = false;
    const out = rewrite(plan, cat);
    return state.changed ? out : plan;
  },
};
