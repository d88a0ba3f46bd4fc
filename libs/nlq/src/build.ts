/**
 * The one place libs/nlq builds plan nodes: the query graph (ir.ts) becomes a plan tree of
 * libs/plan. Slots become `param` expressions, so a plan is a template the intent cache can
 * reuse with other literals. Relation hops compile to `graph_expand` (graph-hops.ts says when);
 * other links to joins on key columns (IN / EXISTS for the many side).
 */
import type { AggregateCall, Affinity, Expr, PlanNode } from '@mmdb/plan';
import type { ColRef, Cond, Query, Rhs } from './ir';
import { graphHops } from './graph-hops';
import type { RelInfo, SchemaModel } from './schema';

const alias = (n: number) => `n${n}`;

interface Edge {
  near: number; far: number; nearCols: readonly string[]; farCols: readonly string[]; up: boolean; neg: boolean;
  /** A graph hop: the near rows are those reached from the far rows following `dir`, one hop or (max null) any depth. */
  closure?: { readonly rel: RelInfo; readonly dir: 'forward' | 'reverse'; readonly max: 1 | null };
}

export class PlanBuilder {
  private graphs = 0;

  constructor(private readonly schema: SchemaModel, private readonly offsets: readonly number[]) {}

  private affinity(ref: ColRef, q: Query): Affinity | undefined {
    const c = this.schema.col(q.nodes[ref.node].table, ref.col);
    if (!c) return undefined;
    return c.ty === 'str' || c.ty === 'timestamp' ? 'text' : c.ty === 'f64' ? 'real' : c.ty === 'i64' || c.ty === 'bool' ? 'integer' : undefined;
  }

  col(ref: ColRef, q: Query): Expr {
    const a = this.affinity(ref, q);
    return a ? { kind: 'col', name: `${alias(ref.node)}.${ref.col}`, affinity: a } : { kind: 'col', name: `${alias(ref.node)}.${ref.col}` };
  }

  rhs(r: Rhs): Expr {
    return 'lit' in r ? { kind: 'lit', value: r.lit } : { kind: 'param', index: this.offsets[r.slot] + r.part + 1 };
  }

  private cond(c: Cond, q: Query): Expr {
    switch (c.kind) {
      case 'cmp': return { kind: 'binary', op: c.op, left: this.col(c.ref, q), right: this.rhs(c.rhs) };
      case 'colcmp': return { kind: 'binary', op: c.op, left: this.col(c.ref, q), right: this.col(c.other, q) };
      case 'diff': return { kind: 'binary', op: c.op, left: { kind: 'binary', op: '-', left: this.col(c.ref, q), right: this.col(c.minus, q) }, right: this.rhs(c.rhs) };
      case 'age': return { kind: 'binary', op: c.op, left: { kind: 'binary', op: '-', left: this.rhs(c.year), right: this.col(c.ref, q) }, right: this.rhs(c.rhs) };
      case 'null': return { kind: 'is_null', arg: this.col(c.ref, q), ...(c.not ? { not: true } : {}) };
      case 'like': return this.searched(c, q);
      case 'any': return c.alts.map((a) => and(a.map((x) => this.cond(x, q)))).reduce((x, y) => ({ kind: 'binary', op: 'or', left: x, right: y }));
    }
  }

  /**
   * Searched text: on a column the table declares `[[fulltext]]` (one-column key), the rows an
   * `fts_search` of the words as a phrase matches (every match: `limit: null`, plain BM25), as
   * `key IN (…)`, with the query a slot parameter (part 1), so the cached template serves any
   * words; elsewhere `col LIKE %words%` (part 0).
   */
  private searched(c: Extract<Cond, { kind: 'like' }>, q: Query): Expr {
    const table = this.schema.table(q.nodes[c.ref.node].table);
    if (!table.fulltext.includes(c.ref.col) || table.pk.length !== 1 || 'lit' in c.rhs) return { kind: 'like', arg: this.col(c.ref, q), pattern: this.rhs(c.rhs) };
    const key: Expr = { kind: 'col', name: table.pk[0] };
    const search: PlanNode = {
      op: 'fts_search', schema: table.id, field: c.ref.col, query: this.rhs({ slot: c.rhs.slot, part: c.rhs.part + 1 }), limit: null,
      ranking: { feedback: 'none', proximity: 'none' },
    };
    return { kind: 'in_subquery', arg: this.col({ node: c.ref.node, col: table.pk[0] }, q), plan: { op: 'project', input: search, columns: [{ name: 'k', expr: key }] } };
  }

  /** Edges of the tree rooted at `root`: `up` when the near side holds the key of the far side's primary key. */
  edges(q: Query, root: number): Map<number, Edge[]> {
    const out = new Map<number, Edge[]>();
    const seen = new Set([root]);
    const queue = [root];
    while (queue.length) {
      const n = queue.shift()!;
      for (const l of q.links) {
        const [near, far, nearCols, farCols] = l.a === n ? [l.a, l.b, l.aCols, l.bCols] : l.b === n ? [l.b, l.a, l.bCols, l.aCols] : [-1, -1, [], []];
        if (near < 0 || seen.has(far)) continue;
        seen.add(far);
        queue.push(far);
        const farPk = this.schema.table(q.nodes[far].table).pk;
        const closure = l.hop && (l.hop.closure || l.graph)
          ? { rel: l.hop.rel, dir: (near === l.hop.to) === (l.hop.dir === 'forward') ? 'forward' as const : 'reverse' as const, max: l.hop.closure ? null : 1 as const }
          : undefined;
        const up = !closure && !l.neg && farCols.length === farPk.length && farCols.every((c, i) => c === farPk[i]);
        (out.get(n) ?? out.set(n, []).get(n)!).push({ near, far, nearCols, farCols, up, neg: !!l.neg, ...(closure ? { closure } : {}) });
      }
    }
    return out;
  }

  /** The nodes reachable from root through `up` edges only (joined rows, not EXISTS). */
  private joined(q: Query, root: number): Set<number> {
    const e = this.edges(q, root);
    const s = new Set([root]);
    const walk = (n: number) => (e.get(n) ?? []).filter((x) => x.up).forEach((x) => (s.add(x.far), walk(x.far)));
    walk(root);
    return s;
  }

  private covers(q: Query, needed: readonly number[]): boolean {
    return [...new Set([...needed, q.focus, ...q.nodes.map((n) => n.id)])].some((r) => { const j = this.joined(q, r); return needed.every((n) => j.has(n)); });
  }

  /** Picks the root whose joined rows hold every node the answer reads. */
  root(q: Query, needed: readonly number[]): number {
    const cands = [...new Set([...needed, q.focus, ...q.nodes.map((n) => n.id)])];
    for (const r of cands) {
      const j = this.joined(q, r);
      if (needed.every((n) => j.has(n))) return r;
    }
    return q.focus;
  }

  /** The rows of node `n` joined with its `up` neighbours; `extra` predicates join its own filter. */
  subtree(q: Query, n: number, tree: Map<number, Edge[]>, extra: Expr[] = []): PlanNode {
    let plan: PlanNode = { op: 'scan', schema: q.nodes[n].table, alias: alias(n) };
    const preds: Expr[] = [...extra, ...q.nodes[n].conds.map((c) => this.cond(c, q))];
    for (const e of tree.get(n) ?? []) {
      const pairs = e.nearCols.map((c, i) => ({ left: this.col({ node: e.near, col: c }, q), right: this.col({ node: e.far, col: e.farCols[i] }, q) }));
      const on = and(pairs.map((p) => eq(p.left, p.right)));
      // the key pairs and a hash join are given, not left to the optimizer: it does not visit plans inside subqueries
      if (e.closure) preds.push({ kind: 'in_subquery', arg: this.col({ node: e.near, col: e.nearCols[0] }, q), plan: this.closure(q, e, tree), ...(e.neg ? { not: true } : {}) });
      else if (e.up) plan = { op: 'join', kind: 'inner', left: plan, right: this.subtree(q, e.far, tree), on, equi: pairs, strategy: 'hash' };
      else if (e.nearCols.length === 1) {
        // an uncorrelated IN (run once, a set lookup per row) rather than a correlated EXISTS
        const key = this.col({ node: e.far, col: e.farCols[0] }, q);
        const sub = this.subtree(q, e.far, tree, [{ kind: 'is_null', arg: key, not: true }]);
        preds.push({ kind: 'in_subquery', arg: this.col({ node: e.near, col: e.nearCols[0] }, q), plan: { op: 'project', input: sub, columns: [{ name: 'k', expr: key }] }, ...(e.neg ? { not: true } : {}) });
      } else {
        const sub = this.subtree(q, e.far, tree, [on]);
        preds.push({ kind: 'exists', plan: { op: 'project', input: sub, columns: [{ name: '1', expr: { kind: 'lit', value: 1 } }] }, ...(e.neg ? { not: true } : {}) });
      }
    }
    return preds.length ? { op: 'filter', input: plan, predicate: and(preds) } : plan;
  }

  /**
   * The keys reached from the far node's rows along a relation: a `graph_expand` (one hop, or
   * transitive: `max_depth` null) over the relation's adjacency, seeded with the far rows' keys,
   * giving the reached rows' key column. Every relation the schema model knows is declared in a
   * manifest, so the graph engine indexes it.
   */
  private closure(q: Query, e: Edge, tree: Map<number, Edge[]>): PlanNode {
    const { rel, dir, max } = e.closure!;
    // numbered in build order, not by node ids: questions that differ only in wording build equal plans
    const name = `g${this.graphs++}`;
    const reached = dir === 'forward' ? rel.target : rel.source;
    const key: Expr = { kind: 'col', name: `${name}.${this.schema.table(reached).pk[0]}` };
    const expand: PlanNode = {
      op: 'graph_expand', input: this.subtree(q, e.far, tree), schema: rel.via ?? rel.source, rel: rel.name,
      from: this.col({ node: e.far, col: e.farCols[0] }, q), direction: dir, min_depth: 1, max_depth: max, alias: name,
    };
    return { op: 'project', input: { op: 'filter', input: expand, predicate: { kind: 'is_null', arg: key, not: true } }, columns: [{ name: 'k', expr: key }] };
  }

  build(q: Query): PlanNode {
    this.graphs = 0;
    const needed: number[] = [];
    if (q.out.kind === 'rows') needed.push(...q.out.cols.map((c) => c.node));
    else needed.push(q.out.ref?.node ?? q.focus);
    if (q.group) needed.push(q.group.ref.node);
    if (q.order?.ref) needed.push(q.order.ref.node);
    if (q.having?.ref) needed.push(q.having.ref.node);
    if (q.order?.fn === 'count' && !q.order.ref) needed.push(q.focus);
    // hops compile to graph_expand, unless the answer needs rows joined across a hop
    const g = graphHops(q, this.schema);
    if (this.covers(g, needed)) q = g;
    const root = this.root(q, needed);
    let plan = this.subtree(q, root, this.edges(q, root));
    const base = plan;
    if (q.group) return this.grouped(q, plan);
    if (q.out.kind === 'agg') {
      const call = this.aggCall(q.out.fn, q.out.ref, q, 'value', q.out.distinct);
      return { op: 'aggregate', input: plan, group: [], aggregates: [call] };
    }
    if (q.order?.ref) {
      const key = this.col(q.order.ref, q);
      if (q.ties) {
        const best: PlanNode = { op: 'aggregate', input: base, group: [], aggregates: [{ name: 'best', fn: q.order.desc ? 'max' : 'min', args: [key] }] };
        plan = { op: 'filter', input: plan, predicate: eq(key, { kind: 'subquery', plan: best }) };
      } else plan = { op: 'sort', input: plan, keys: [{ expr: key, desc: q.order.desc }] };
    }
    // distinct keeps the first occurrence of each row in input order, so a sort above it holds
    // up-joins never repeat a root row: rows of the root alone need no DISTINCT (its duplicates are data)
    const cols = q.out.kind === 'rows' ? q.out.cols : [];
    plan = { op: 'project', input: plan, columns: this.names(cols, q) };
    if (cols.some((c) => c.node !== root)) plan = { op: 'distinct', input: plan };
    return q.limit ? { op: 'limit', input: plan, limit: this.rhs(q.limit) } : plan;
  }

  private names(cols: readonly ColRef[], q: Query): Array<{ name: string; expr: Expr }> {
    const used = new Set<string>();
    return cols.map((c) => {
      let name = c.col;
      if (used.has(name)) name = `${q.nodes[c.node].table.split('.').pop()}_${c.col}`;
      used.add(name);
      return { name, expr: this.col(c, q) };
    });
  }

  private aggCall(fn: string, ref: ColRef | undefined, q: Query, name: string, distinct?: boolean): AggregateCall {
    if (fn === 'count' || !ref) return ref && fn === 'count' ? { name, fn, args: [this.col(ref, q)], ...(distinct ? { distinct: true } : {}) } : { name, fn: 'count', args: [], star: true };
    return { name, fn, args: [this.col(ref!, q)], ...(distinct ? { distinct: true } : {}) };
  }

  private grouped(q: Query, input: PlanNode): PlanNode {
    const g = q.group!;
    const node = q.nodes[g.ref.node];
    const label = this.schema.labelOf(node.table);
    const keyCol = g.entity ? this.schema.table(node.table).pk[0] : g.ref.col;
    const aggregates: AggregateCall[] = [];
    if (g.entity && label) aggregates.push({ name: 'key', fn: 'any_value', args: [this.col({ node: g.ref.node, col: label }, q)] });
    const measure = q.order?.fn && q.order.distinct ? { fn: q.order.fn, ref: q.order.ref, distinct: true } : q.out.kind === 'agg' ? q.out : q.order?.fn ? { fn: q.order.fn, ref: q.order.ref } : { fn: 'count' as const, ref: undefined };
    aggregates.push(this.aggCall(measure.fn, measure.ref, q, 'value', 'distinct' in measure ? measure.distinct : false));
    if (q.having) aggregates.push(this.aggCall(q.having.fn, q.having.ref, q, 'having'));
    let plan: PlanNode = { op: 'aggregate', input, group: [{ name: 'group', expr: this.col({ node: g.ref.node, col: keyCol }, q) }], aggregates };
    if (q.having) plan = { op: 'filter', input: plan, predicate: { kind: 'binary', op: q.having.op, left: { kind: 'col', name: 'having' }, right: this.rhs(q.having.rhs) } };
    if (q.order) plan = { op: 'sort', input: plan, keys: [{ expr: { kind: 'col', name: 'value' }, desc: q.order.desc }] };
    if (q.limit) plan = { op: 'limit', input: plan, limit: this.rhs(q.limit) };
    const keyName = g.entity ? (label ?? keyCol) : g.ref.col;
    const keyExpr: Expr = { kind: 'col', name: g.entity && label ? 'key' : 'group' };
    const columns = g.keyOnly ? [{ name: keyName, expr: keyExpr }] : [{ name: keyName, expr: keyExpr }, { name: measure.fn, expr: { kind: 'col', name: 'value' } as Expr }];
    return { op: 'project', input: plan, columns };
  }
}

function eq(left: Expr, right: Expr): Expr {
  return { kind: 'binary', op: '=', left, right };
}

function and(xs: Expr[]): Expr {
  return xs.reduce((a, b) => ({ kind: 'binary', op: 'and', left: a, right: b }));
}
