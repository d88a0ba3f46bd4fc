/** Binds the syntax tree to the plan tree: resolves names, expands *, plans aggregation and ordering. */
import { DbError } from '@mmdb/core';
import type { Affinity, AggregateCall, Collation, Expr, PlanNode, SortKey, WindowCall } from '@mmdb/plan';
import type { AExpr, FromItem, ResultCol, Select, SelectBody, SelectCore, WindowSpec } from './ast';
import { outputCollation } from '../exec/collation';
import { AGGREGATES } from '../exec/functions';
import { affinityOf } from '../affinity';
import { FTS_MATCH, FTS_SCORE, VECTOR_OPERATORS } from '../exec/vector-functions';
import { bindTableFunction, type TvfResult } from './table-functions';

/** What the binder needs to know about a table. */
export interface BindTable {
  readonly id: string;
  /** Visible columns in order, then hidden ones (`_rowid`). */
  readonly columns: ReadonlyArray<{ readonly name: string; readonly aff?: Affinity; readonly coll?: Collation; readonly hidden?: boolean }>;
  /** Column that `rowid` names, when there is one. */
  readonly rowid?: string;
}

export interface BindCatalog {
  table(name: string): BindTable | undefined;
  /** The source and target schemas of relation `rel` seen from `schema` (graph table functions). */
  relation?(schema: string, rel: string): { source: string; target: string };
  view?(name: string): Select | undefined;
}

/** `colls`: each output column's collating sequence (declared or from COLLATE), when it has one. */
export interface Bound { plan: PlanNode; names: string[]; affs: (Affinity | undefined)[]; colls?: (Collation | undefined)[] }

interface ItemCol { name: string; aff?: Affinity; coll?: Collation; hidden?: boolean }
interface Item { alias: string; internal: string; cols: ItemCol[]; rowid?: string }
interface BScope { items: Item[]; parent: BScope | null; ctes: Map<string, { names: string[]; affs: (Affinity | undefined)[]; colls?: (Collation | undefined)[] }> }

/** A column reference carrying the column's affinity and declared collation. */
const colExpr = (name: string, c: { aff?: Affinity; coll?: Collation }): Expr => ({
  kind: 'col', name, ...(c.aff ? { affinity: c.aff } : {}), ...(c.coll ? { collation: c.coll } : {}),
});

interface AggCtx {
  groups: { expr: Expr; key: string; name: string }[];
  aggs: AggregateCall[];
  aggKeys: Map<string, string>;
}

const lit = (v: unknown): Expr => {
  if (typeof v === 'bigint') {
    if (v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER)) return { kind: 'lit', value: Number(v) };
    return { kind: 'lit', value: v.toString(), int: true };
  }
  if (typeof v === 'number') return Number.isInteger(v) ? { kind: 'lit', value: v, real: true } : { kind: 'lit', value: v };
  return { kind: 'lit', value: v as string | null };
};

const key = (e: unknown) => JSON.stringify(e);

export class Binder {
  private aliasCount = new Map<string, number>();
  /** Window functions of the SELECT core being bound (null where they are not allowed). */
  private win: { calls: WindowCall[]; keys: Map<string, string>; defs: Record<string, WindowSpec> } | null = null;
  constructor(private readonly cat: BindCatalog) {}

  private uniqueAlias(a: string): string {
    const k = a.toLowerCase();
    const n = (this.aliasCount.get(k) ?? 0) + 1;
    this.aliasCount.set(k, n);
    return n === 1 ? a : `${a}#${n}`;
  }

  bindSelect(s: Select, parent: BScope | null): Bound {
    const ctes = new Map(parent?.ctes ?? []);
    const scopeBase: BScope = { items: [], parent, ctes };
    let withNode: { name: string; columns?: string[]; plan: PlanNode; recursive?: boolean }[] | undefined;
    if (s.with) {
      withNode = [];
      for (const cte of s.with.ctes) {
        const name = cte.name;
        let b: Bound;
        const recursive = s.with.recursive && refersTo(cte.select, name);
        if (recursive && cte.select.body.t === 'compound' && cte.select.body.op === 'union') {
          const left = this.bindBody(cte.select.body.left, { ...scopeBase, ctes: new Map(ctes) }, undefined);
          const names = cte.columns ?? left.names;
          ctes.set(name.toLowerCase(), { names, affs: left.affs, colls: left.colls });
          const right = this.bindBody(cte.select.body.right, { ...scopeBase, ctes: new Map(ctes) }, undefined);
          b = { plan: { op: 'set_op', kind: 'union', all: cte.select.body.all, left: left.plan, right: right.plan }, names, affs: left.affs, colls: left.colls };
        } else {
          b = this.bindSelect(cte.select, { ...scopeBase, ctes: new Map(ctes) });
        }
        const names = cte.columns ?? b.names;
        ctes.set(name.toLowerCase(), { names, affs: b.affs, colls: b.colls });
        withNode.push({ name: name.toLowerCase(), columns: names, plan: b.plan, ...(recursive ? { recursive: true } : {}) });
      }
    }
    const scope: BScope = { items: [], parent, ctes };
    let bound: Bound;
    if (s.body.t === 'core') bound = this.bindCore(s.body, scope, s);
    else {
      bound = this.bindBody(s.body, scope, undefined);
      if (s.orderBy) {
        const colls = bound.colls ?? [];
        const keys: SortKey[] = s.orderBy.map((o) => {
          const term = o.expr.t === 'collate' ? o.expr.arg : o.expr;
          const i = this.outputIndex(term, bound.names, null);
          if (i < 0) throw new DbError('validation_failed', `ORDER BY term does not match any column in the result set`);
          const c = colExpr(bound.names[i], { coll: colls[i] });
          return { expr: o.expr.t === 'collate' ? { kind: 'collate', arg: c, collation: o.expr.name } : c, desc: o.desc, ...(o.nulls ? { nulls: o.nulls } : {}) };
        });
        // As SQLite does for UNION, EXCEPT and INTERSECT (not UNION ALL): the ORDER BY is extended
        // by every output column it does not name, ascending, so rows tied on the named terms
        // come out (and are cut by LIMIT) in one defined order.
        if (s.body.t === 'compound' && !(s.body.all && s.body.op === 'union')) {
          const named = new Set(keys.map((k) => (k.expr.kind === 'collate' ? (k.expr.arg as { name: string }) : (k.expr as { name: string })).name));
          bound.names.forEach((name, i) => { if (!named.has(name)) keys.push({ expr: colExpr(name, { coll: colls[i] }), desc: false }); });
        }
        bound = { ...bound, plan: { op: 'sort', input: bound.plan, keys } };
      }
      bound = this.applyLimit(bound, s, scope);
    }
    if (withNode) bound = { ...bound, plan: { op: 'with', ctes: withNode, input: bound.plan } };
    return bound;
  }

  private applyLimit(b: Bound, s: Select, scope: BScope): Bound {
    if (!s.limit) return b;
    const e = (x: AExpr) => this.expr(x, { items: [], parent: scope.parent, ctes: scope.ctes }, null);
    return { ...b, plan: { op: 'limit', input: b.plan, limit: e(s.limit), ...(s.offset ? { offset: e(s.offset) } : {}) } };
  }

  private bindBody(body: SelectBody, scope: BScope, sel: Select | undefined): Bound {
    if (body.t === 'core') return this.bindCore(body, { items: [], parent: scope.parent, ctes: scope.ctes }, sel);
    if (body.t === 'values') {
      const names = body.rows[0].map((_, i) => `column${i + 1}`);
      const e = (x: AExpr) => this.expr(x, { items: [], parent: scope.parent, ctes: scope.ctes }, null);
      return { plan: { op: 'values', columns: names, rows: body.rows.map((r) => r.map(e)) }, names, affs: names.map(() => undefined) };
    }
    const l = this.bindBody(body.left, scope, undefined);
    const r = this.bindBody(body.right, scope, undefined);
    if (l.names.length !== r.names.length) {
      throw new DbError('validation_failed', `SELECTs to the left and right of ${body.op.toUpperCase()} do not have the same number of result columns`);
    }
    // a compound column's collation is the left-most SELECT's that has one (SQLite's multiSelectCollSeq)
    const colls = l.names.map((_, i) => l.colls?.[i] ?? r.colls?.[i]);
    return { plan: { op: 'set_op', kind: body.op, all: body.all, left: l.plan, right: r.plan }, names: l.names, affs: l.affs, ...(colls.some((c) => c) ? { colls } : {}) };
  }

  /** Index of an ORDER BY term among output columns: a position, an output name, or the same expression. */
  private outputIndex(e: AExpr, names: string[], exprs: (Expr | null)[] | null, bind?: (x: AExpr) => Expr): number {
    if (e.t === 'lit' && typeof e.v === 'bigint') {
      const k = Number(e.v);
      if (k < 1 || k > names.length) throw new DbError('validation_failed', `ORDER BY term out of range - should be between 1 and ${names.length}`);
      return k - 1;
    }
    if (e.t === 'id' && !e.table) {
      const i = names.findIndex((n) => n.toLowerCase() === e.name.toLowerCase());
      if (i >= 0 && (!exprs || !bind)) return i;
      if (i >= 0 && exprs && bind) {
        // an alias wins over a column of the same name only when it is a real alias
        return i;
      }
    }
    if (exprs && bind) {
      let k: string;
      try { k = key(bind(e)); } catch { return -1; }
      return exprs.findIndex((x) => x !== null && key(x) === k);
    }
    return -1;
  }

  private bindCore(core: SelectCore, scope: BScope, sel: Select | undefined): Bound {
    const outer = this.win;
    this.win = null;
    try {
      return this.bindCoreIn(core, scope, sel);
    } finally {
      this.win = outer;
    }
  }

  private bindCoreIn(core: SelectCore, scope: BScope, sel: Select | undefined): Bound {
    let plan: PlanNode | null = core.from ? this.from(core.from, scope) : null;
    if (!plan) plan = { op: 'values', columns: [], rows: [[]] };
    if (core.where) {
      if (hasAggregate(core.where)) throw new DbError('validation_failed', 'misuse of aggregate function in WHERE');
      plan = { op: 'filter', input: plan, predicate: this.expr(core.where, scope, null) };
    }
    // result columns (window functions allowed from here on)
    const win = (this.win = { calls: [], keys: new Map(), defs: core.windows ?? {} });
    const items: { ast: AExpr | null; expr?: Expr; name: string }[] = [];
    for (const rc of core.columns) this.expandResult(rc, scope, items);
    const orderBy = sel?.orderBy ?? [];
    const needAgg = !!core.groupBy || !!core.having || items.some((i) => i.ast && hasAggregate(i.ast)) ||
      orderBy.some((o) => hasAggregate(o.expr));
    let agg: AggCtx | null = null;
    if (needAgg) {
      agg = { groups: [], aggs: [], aggKeys: new Map() };
      for (const [i, g] of (core.groupBy ?? []).entries()) {
        let ge: Expr;
        if (g.t === 'lit' && typeof g.v === 'bigint') {
          const k = Number(g.v);
          if (k < 1 || k > items.length) throw new DbError('validation_failed', `GROUP BY term out of range - should be between 1 and ${items.length}`);
          ge = items[k - 1].ast ? this.expr(items[k - 1].ast!, scope, null) : items[k - 1].expr!;
        } else if (g.t === 'id' && !g.table && !this.tryResolve(g.name, scope) && items.some((it) => it.name.toLowerCase() === g.name.toLowerCase() && it.ast)) {
          ge = this.expr(items.find((it) => it.name.toLowerCase() === g.name.toLowerCase())!.ast!, scope, null);
        } else ge = this.expr(g, scope, null);
        if (hasAggregate(g)) throw new DbError('validation_failed', 'aggregate functions are not allowed in the GROUP BY clause');
        agg.groups.push({ expr: ge, key: key(ge), name: `#g${i}` });
      }
    }
    const bindOut = (x: AExpr) => this.expr(x, scope, agg);
    const exprs = items.map((it) => (it.ast ? bindOut(it.ast) : agg ? this.postAggExpr(it.expr!, agg) : it.expr!));
    let having: Expr | undefined;
    if (core.having) having = bindOut(core.having);
    // ORDER BY terms: output columns or extra hidden keys
    const hidden: Expr[] = [];
    const sortKeys: SortKey[] = [];
    const names = dedupe(items.map((i) => i.name));
    const simpleBind = (x: AExpr) => this.expr(x, scope, null);
    const colls = exprs.map((e) => outputCollation(e));
    if (orderBy.length && sel?.body.t === 'core') {
      for (const o of orderBy) {
        // `term COLLATE x`: the term names its column as it would alone; the key compares with x
        const explicit = o.expr.t === 'collate' ? o.expr.name : undefined;
        const term = o.expr.t === 'collate' ? o.expr.arg : o.expr;
        let idx = -1;
        if (term.t === 'lit' && typeof term.v === 'bigint') idx = this.outputIndex(term, names, null);
        else if (term.t === 'id' && !term.table) {
          const i = items.findIndex((it) => it.name.toLowerCase() === (term as { name: string }).name.toLowerCase());
          if (i >= 0) idx = i;
        }
        if (idx < 0 && !agg) {
          try {
            const k = key(simpleBind(term));
            idx = exprs.findIndex((x) => key(x) === k);
          } catch { /* bound below, errors surface there */ }
        }
        let e: Expr;
        if (idx >= 0) e = colExpr(names[idx], { coll: colls[idx] });
        else {
          const be = bindOut(term);
          const k = key(be);
          const j = exprs.findIndex((x) => key(x) === k);
          if (j >= 0) e = colExpr(names[j], { coll: colls[j] });
          else {
            hidden.push(be);
            e = colExpr(`#o${hidden.length - 1}`, { coll: outputCollation(be) });
          }
        }
        if (explicit) e = { kind: 'collate', arg: e, collation: explicit };
        sortKeys.push({ expr: e, desc: o.desc, ...(o.nulls ? { nulls: o.nulls } : {}) });
      }
    }
    if (agg) {
      plan = { op: 'aggregate', input: plan, group: agg.groups.map((g) => ({ name: g.name, expr: g.expr })), aggregates: agg.aggs };
      if (having) plan = { op: 'filter', input: plan, predicate: having };
    }
    if (win.calls.length) plan = { op: 'window', input: plan, functions: win.calls };
    const affOf = (e: Expr): Affinity | undefined => (e.kind === 'col' ? e.affinity : e.kind === 'cast' ? e.to : e.kind === 'collate' ? affOf(e.arg) : undefined);
    const affs = exprs.map(affOf);
    plan = {
      op: 'project',
      input: plan,
      columns: [...exprs.map((e, i) => ({ name: names[i], expr: e })), ...hidden.map((e, i) => ({ name: `#o${i}`, expr: e }))],
    };
    if (core.distinct) plan = { op: 'distinct', input: plan };
    if (sortKeys.length) plan = { op: 'sort', input: plan, keys: sortKeys };
    let b: Bound = { plan, names, affs, ...(colls.some((c) => c) ? { colls } : {}) };
    if (sel) b = this.applyLimit(b, sel, scope);
    if (hidden.length) b = { ...b, plan: { op: 'project', input: b.plan, columns: names.map((n) => ({ name: n, expr: { kind: 'col', name: n } })) } };
    return b;
  }

  private tryResolve(name: string, scope: BScope): boolean {
    try { this.resolve(undefined, name, scope); return true; } catch { return false; }
  }

  private expandResult(rc: ResultCol, scope: BScope, out: { ast: AExpr | null; expr?: Expr; name: string }[]): void {
    if (rc.t === 'star') {
      const items = rc.table ? scope.items.filter((i) => i.alias.toLowerCase() === rc.table!.toLowerCase()) : scope.items;
      if (rc.table && !items.length) throw new DbError('validation_failed', `no such table: ${rc.table}`);
      if (!scope.items.length) throw new DbError('validation_failed', 'no tables specified');
      for (const it of items) {
        for (const c of it.cols) {
          if (c.hidden) continue;
          out.push({ ast: null, expr: colExpr(`${it.internal}.${c.name}`, c), name: c.name });
        }
      }
      return;
    }
    const name = rc.alias ?? (rc.expr.t === 'id' ? rc.expr.name : rc.text);
    out.push({ ast: rc.expr, name });
  }

  /** A bare column in an aggregate query that is not a group key: SQLite takes it from some row of the group. */
  private postAggExpr(e: Expr, agg: AggCtx): Expr {
    const k = key(e);
    const g = agg.groups.find((x) => x.key === k);
    if (g) return { kind: 'col', name: g.name };
    const ak = `any:${k}`;
    let name = agg.aggKeys.get(ak);
    if (!name) {
      name = `#a${agg.aggs.length}`;
      agg.aggs.push({ name, fn: 'any_value', args: [e] });
      agg.aggKeys.set(ak, name);
    }
    return e.kind === 'col' ? colExpr(name, { aff: e.affinity, coll: e.collation }) : { kind: 'col', name };
  }

  // ---- FROM
  private from(f: FromItem, scope: BScope): PlanNode {
    if (f.t === 'table') {
      const cte = scope.ctes.get(f.name.toLowerCase());
      const alias = f.alias ?? f.name.slice(f.name.lastIndexOf('.') + 1);
      this.checkAlias(alias, scope);
      if (cte && !f.name.includes('.')) {
        const internal = this.uniqueAlias(alias);
        scope.items.push({ alias, internal, cols: cte.names.map((n, i) => ({ name: n, aff: cte.affs[i], coll: cte.colls?.[i] })) });
        return { op: 'cte_ref', name: f.name.toLowerCase(), alias: internal };
      }
      const view = this.cat.view?.(f.name);
      if (view) return this.derived(view, alias, scope);
      const t = this.cat.table(f.name);
      if (!t) throw new DbError('validation_failed', `no such table: ${f.name}`, { table: f.name });
      const internal = this.uniqueAlias(alias);
      scope.items.push({ alias, internal, cols: t.columns.map((c) => ({ ...c })), rowid: t.rowid });
      return { op: 'scan', schema: t.id, alias: internal };
    }
    if (f.t === 'sub') return this.derived(f.select, f.alias ?? `(subquery)`, scope);
    if (f.t === 'tvf') return this.tableFunction(f, scope, null).plan;
    const left = this.from(f.left, scope);
    const nLeft = scope.items.length;
    if (f.right.t === 'tvf' && (f.kind === 'inner' || f.kind === 'cross') && !f.using) {
      const r = this.tableFunction(f.right, scope, left);
      if (r.lateral) return f.on ? { op: 'filter', input: r.plan, predicate: this.expr(f.on, scope, null) } : r.plan;
      const on = f.on ? this.expr(f.on, scope, null) : undefined;
      return { op: 'join', kind: on ? 'inner' : f.kind, left, right: r.plan, ...(on ? { on } : {}) };
    }
    const right = this.from(f.right, scope);
    let on: Expr | undefined;
    if (f.on) on = this.expr(f.on, scope, null);
    if (f.using) {
      const conds: Expr[] = f.using.map((c) => {
        const li = scope.items.slice(0, nLeft).find((i) => i.cols.some((x) => x.name.toLowerCase() === c.toLowerCase()));
        const ri = scope.items.slice(nLeft).find((i) => i.cols.some((x) => x.name.toLowerCase() === c.toLowerCase()));
        if (!li || !ri) throw new DbError('validation_failed', `cannot join using column ${c} - column not present in both tables`);
        return { kind: 'binary', op: '=', left: this.colRef(li, c), right: this.colRef(ri, c) };
      });
      on = conds.reduce((a, b) => ({ kind: 'binary', op: 'and', left: a, right: b }));
      // the right side's USING columns are not repeated by *
      for (const it of scope.items.slice(nLeft)) for (const col of it.cols) if (f.using.some((u) => u.toLowerCase() === col.name.toLowerCase())) col.hidden = true;
    }
    const kind = f.kind === 'cross' && on ? 'inner' : f.kind;
    return { op: 'join', kind, left, right, ...(on ? { on } : {}) };
  }

  /** A table-valued function in FROM; `left`: the plan of the join's left side (LATERAL start). */
  private tableFunction(f: Extract<FromItem, { t: 'tvf' }>, scope: BScope, left: PlanNode | null): TvfResult {
    const alias = f.alias ?? f.name;
    this.checkAlias(alias, scope);
    const internal = this.uniqueAlias(alias);
    const cat = this.cat;
    const outer: BScope = { items: [], parent: scope.parent, ctes: scope.ctes };
    const r = bindTableFunction(f.name, f.args, internal, {
      table: (n) => cat.table(n),
      reached: (schema, rel, dir) => {
        if (!cat.relation) throw new DbError('unsupported_sql', 'graph table functions need the graph reader', { construct: 'graph table function' });
        const d = cat.relation(schema, rel);
        return dir === 'reverse' ? d.source : d.target;
      },
      // arguments see the enclosing query's scope (correlation), or the join's left side (LATERAL)
      expr: (e) => this.expr(e, outer, null),
      select: (s) => this.bindSelect(s, outer),
      ...(left ? { lateral: { plan: left, expr: (e: AExpr) => this.expr(e, scope, null) } } : {}),
    });
    scope.items.push({ alias, internal, cols: r.cols.map((c) => ({ ...c })) });
    return r;
  }

  private checkAlias(alias: string, scope: BScope): void {
    if (scope.items.some((i) => i.alias.toLowerCase() === alias.toLowerCase())) {
      throw new DbError('validation_failed', `ambiguous table name ${alias} (use an alias)`);
    }
  }

  private derived(sel: Select, alias: string, scope: BScope): PlanNode {
    const b = this.bindSelect(sel, { items: [], parent: scope.parent, ctes: scope.ctes });
    const internal = this.uniqueAlias(alias);
    scope.items.push({ alias, internal, cols: b.names.map((n, i) => ({ name: n, aff: b.affs[i], coll: b.colls?.[i] })) });
    return { op: 'project', input: b.plan, columns: b.names.map((n, i) => ({ name: `${internal}.${n}`, expr: colExpr(n, { aff: b.affs[i], coll: b.colls?.[i] }) })) };
  }

  private colRef(it: Item, name: string): Expr {
    const c = it.cols.find((x) => x.name.toLowerCase() === name.toLowerCase())!;
    return colExpr(`${it.internal}.${c.name}`, c);
  }

  private resolve(table: string | undefined, name: string, scope: BScope | null): Expr {
    for (let s = scope; s; s = s.parent) {
      const matches: Expr[] = [];
      for (const it of s.items) {
        if (table && it.alias.toLowerCase() !== table.toLowerCase() && it.alias.toLowerCase() !== table.toLowerCase().split('.').pop()) continue;
        let c = it.cols.find((x) => x.name.toLowerCase() === name.toLowerCase());
        if (!c && it.rowid && ['rowid', 'oid', '_rowid_'].includes(name.toLowerCase())) c = it.cols.find((x) => x.name === it.rowid);
        if (c) matches.push(colExpr(`${it.internal}.${c.name}`, c));
      }
      if (matches.length > 1 && !table) throw new DbError('validation_failed', `ambiguous column name: ${name}`, { column: name });
      if (matches.length) return matches[0];
    }
    throw new DbError('validation_failed', `no such column: ${table ? `${table}.` : ''}${name}`, { column: name });
  }

  // ---- expressions
  expr(e: AExpr, scope: BScope, agg: AggCtx | null): Expr {
    if (agg) {
      if (!hasAggregate(e) && !hasWindow(e)) {
        const plain = this.expr(e, scope, null);
        const k = key(plain);
        const g = agg.groups.find((x) => x.key === k);
        if (g) return plain.kind === 'col' ? colExpr(g.name, { aff: plain.affinity, coll: plain.collation }) : { kind: 'col', name: g.name };
        if (plain.kind === 'col') return this.postAggExpr(plain, agg);
        if (plain.kind === 'lit' || plain.kind === 'param') return plain;
      } else if (e.t === 'fn' && isAggCall(e)) {
        return this.aggCall(e, scope, agg);
      }
    }
    const x = (a: AExpr) => this.expr(a, scope, agg);
    switch (e.t) {
      case 'lit': return lit(e.v);
      case 'param': return { kind: 'param', index: e.index };
      case 'id': return this.resolve(e.table, e.name, scope);
      case 'unary': return { kind: 'unary', op: e.op, arg: x(e.arg) };
      case 'bin': {
        const v = VECTOR_OPERATORS[e.op];
        if (v) return { kind: 'call', name: v.fn, args: [x(e.l), x(e.r)] };
        // the full-text predicate: the fts_predicate pass turns it into an fts_search leaf
        if (e.op === '@@') return { kind: 'call', name: FTS_MATCH, args: [x(e.l), x(e.r)] };
        return { kind: 'binary', op: e.op as never, left: x(e.l), right: x(e.r) };
      }
      case 'like': return { kind: 'like', arg: x(e.arg), pattern: x(e.pattern), ...(e.escape ? { escape: x(e.escape) } : {}), ...(e.not ? { not: true } : {}), ...(e.glob ? { glob: true } : {}) };
      case 'between': return { kind: 'between', arg: x(e.arg), low: x(e.low), high: x(e.high), ...(e.not ? { not: true } : {}) };
      case 'isnull': return { kind: 'is_null', arg: x(e.arg), ...(e.not ? { not: true } : {}) };
      case 'case': return { kind: 'case', ...(e.operand ? { operand: x(e.operand) } : {}), whens: e.whens.map((w) => ({ when: x(w.when), then: x(w.then) })), ...(e.else ? { else: x(e.else) } : {}) };
      case 'cast': return { kind: 'cast', arg: x(e.arg), to: affinityOf(e.type) };
      case 'collate': return { kind: 'collate', arg: x(e.arg), collation: e.name };
      case 'in': {
        if (e.list) return { kind: 'in_list', arg: x(e.arg), list: e.list.map(x), ...(e.not ? { not: true } : {}) };
        const sel: Select = e.select ?? { kind: 'select', body: { t: 'core', distinct: false, columns: [{ t: 'star' }], from: { t: 'table', name: e.table! } } };
        const b = this.bindSelect(sel, scope);
        if (b.names.length !== 1) throw new DbError('validation_failed', `sub-select returns ${b.names.length} columns - expected 1`);
        return { kind: 'in_subquery', arg: x(e.arg), plan: b.plan, ...(e.not ? { not: true } : {}) };
      }
      case 'exists': return { kind: 'exists', plan: this.bindSelect(e.select, scope).plan, ...(e.not ? { not: true } : {}) };
      case 'subq': {
        const b = this.bindSelect(e.select, scope);
        if (b.names.length !== 1) throw new DbError('validation_failed', `sub-select returns ${b.names.length} columns - expected 1`);
        return { kind: 'subquery', plan: b.plan };
      }
      case 'fn': {
        if (e.over !== undefined) return this.windowCall(e, scope, agg);
        if (isAggCall(e)) {
          if (!agg) throw new DbError('validation_failed', `misuse of aggregate function ${e.name}()`);
          return this.aggCall(e, scope, agg);
        }
        if (e.distinct || e.star) throw new DbError('validation_failed', `DISTINCT/* used with a non-aggregate function ${e.name}()`);
        // score(): the BM25 score of the statement's `@@` match (the fts_predicate pass resolves it)
        if (e.name.toLowerCase() === 'score' && e.args.length <= 1) return { kind: 'call', name: FTS_SCORE, args: e.args.map(x) };
        return { kind: 'call', name: e.name, args: e.args.map(x) };
      }
    }
  }

  /** A window function call → a column `#wN` of the core's window node. */
  private windowCall(e: Extract<AExpr, { t: 'fn' }>, scope: BScope, agg: AggCtx | null): Expr {
    const win = this.win;
    if (!win) throw new DbError('validation_failed', `misuse of window function ${e.name}()`);
    let spec: WindowSpec;
    if (typeof e.over === 'string') {
      const d = win.defs[e.over];
      if (!d) throw new DbError('validation_failed', `no such window: ${e.over}`);
      spec = d;
    } else spec = e.over!;
    if (spec.base) {
      const b = win.defs[spec.base];
      if (!b) throw new DbError('validation_failed', `no such window: ${spec.base}`);
      if (spec.partition) throw new DbError('validation_failed', `cannot override PARTITION clause of window: ${spec.base}`);
      if (spec.order && b.order) throw new DbError('validation_failed', `cannot override ORDER BY clause of window: ${spec.base}`);
      if (b.frame) throw new DbError('validation_failed', `cannot override frame specification of window: ${spec.base}`);
      spec = { partition: b.partition, order: spec.order ?? b.order, frame: spec.frame };
    }
    const x = (a: AExpr) => this.expr(a, scope, agg);
    const call: WindowCall = {
      name: '',
      fn: e.name,
      args: e.args.map(x),
      ...(e.star ? { star: true } : {}),
      ...(e.distinct ? { distinct: true } : {}),
      ...(e.filter ? { filter: x(e.filter) } : {}),
      partition: (spec.partition ?? []).map(x),
      order: (spec.order ?? []).map((o) => ({ expr: x(o.expr), desc: o.desc, ...(o.nulls ? { nulls: o.nulls } : {}) })),
      ...(spec.frame ? {
        frame: {
          unit: spec.frame.unit,
          start: { type: spec.frame.start.type, ...(spec.frame.start.offset ? { offset: x(spec.frame.start.offset) } : {}) },
          end: { type: spec.frame.end.type, ...(spec.frame.end.offset ? { offset: x(spec.frame.end.offset) } : {}) },
          ...(spec.frame.exclude ? { exclude: spec.frame.exclude } : {}),
        },
      } : {}),
    };
    const k = key(call as never);
    let name = win.keys.get(k);
    if (!name) {
      name = `#w${win.calls.length}`;
      win.calls.push({ ...call, name });
      win.keys.set(k, name);
    }
    return { kind: 'col', name };
  }

  private aggCall(e: Extract<AExpr, { t: 'fn' }>, scope: BScope, agg: AggCtx): Expr {
    if (e.args.some(hasAggregate)) throw new DbError('validation_failed', `misuse of aggregate function ${e.name}()`);
    if (e.filter) throw new DbError('unsupported_sql', 'aggregate FILTER clause is not supported', { construct: 'FILTER' });
    const args = e.args.map((a) => this.expr(a, scope, null));
    if (e.distinct && args.length !== 1) throw new DbError('validation_failed', 'DISTINCT aggregates must have exactly one argument');
    if (e.name === 'count' && !e.star && args.length !== 1) throw new DbError('validation_failed', 'wrong number of arguments to function count()');
    if (['sum', 'avg', 'total', 'min', 'max'].includes(e.name) && args.length !== 1) throw new DbError('validation_failed', `wrong number of arguments to function ${e.name}()`);
    const call: AggregateCall = { name: '', fn: e.name, args, ...(e.distinct ? { distinct: true } : {}), ...(e.star ? { star: true } : {}) };
    const k = key({ ...call, name: '' });
    let name = agg.aggKeys.get(k);
    if (!name) {
      name = `#a${agg.aggs.length}`;
      agg.aggs.push({ ...call, name });
      agg.aggKeys.set(k, name);
    }
    return { kind: 'col', name };
  }
}

function isAggCall(e: AExpr): boolean {
  if (e.t !== 'fn' || !AGGREGATES.has(e.name) || e.over !== undefined) return false;
  if ((e.name === 'min' || e.name === 'max') && e.args.length > 1) return false;
  return true;
}

/** True when the expression has a window function call outside subqueries. */
function hasWindow(e: AExpr): boolean {
  return findWindow(e);
}

function findWindow(e: AExpr): boolean {
  switch (e.t) {
    case 'fn': return e.over !== undefined || e.args.some(findWindow);
    case 'unary': case 'isnull': case 'cast': case 'collate': return findWindow(e.arg);
    case 'bin': return findWindow(e.l) || findWindow(e.r);
    case 'like': return findWindow(e.arg) || findWindow(e.pattern) || (!!e.escape && findWindow(e.escape));
    case 'between': return findWindow(e.arg) || findWindow(e.low) || findWindow(e.high);
    case 'in': return findWindow(e.arg) || (e.list ?? []).some(findWindow);
    case 'case': return (!!e.operand && findWindow(e.operand)) || e.whens.some((w) => findWindow(w.when) || findWindow(w.then)) || (!!e.else && findWindow(e.else));
    default: return false;
  }
}

/** True when the expression has an aggregate call outside subqueries. */
export function hasAggregate(e: AExpr): boolean {
  switch (e.t) {
    case 'fn': return isAggCall(e) || e.args.some(hasAggregate);
    case 'unary': return hasAggregate(e.arg);
    case 'bin': return hasAggregate(e.l) || hasAggregate(e.r);
    case 'like': return hasAggregate(e.arg) || hasAggregate(e.pattern) || (!!e.escape && hasAggregate(e.escape));
    case 'between': return hasAggregate(e.arg) || hasAggregate(e.low) || hasAggregate(e.high);
    case 'in': return hasAggregate(e.arg) || (e.list ?? []).some(hasAggregate);
    case 'isnull': return hasAggregate(e.arg);
    case 'case': return (!!e.operand && hasAggregate(e.operand)) || e.whens.some((w) => hasAggregate(w.when) || hasAggregate(w.then)) || (!!e.else && hasAggregate(e.else));
    case 'cast': case 'collate': return hasAggregate(e.arg);
    default: return false;
  }
}

function refersTo(s: Select, name: string): boolean {
  return JSON.stringify(s, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)).toLowerCase().includes(`"name":"${name.toLowerCase()}"`);
}

function dedupe(names: string[]): string[] {
  const seen = new Map<string, number>();
  return names.map((n) => {
    const k = n.toLowerCase();
    const c = seen.get(k) ?? 0;
    seen.set(k, c + 1);
    return c === 0 ? n : `${n}:${c}`;
  });
}
