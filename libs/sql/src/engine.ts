/**
 * The SQL engine over one tenant store: parse → bind → optimize → execute, DDL into manifests,
 * DML into one commit per statement (or one per BEGIN…COMMIT script).
 */
import { coerceValue, DbError, isLosslessNumber, newUlid, stringifyJson, type Row, type TableManifest } from '@mmdb/core';
import type { Change, PkTuple, Precondition, ScanOptions, Snapshot, StoredRow } from '@mmdb/storage';
import type { PlanNode, Expr } from '@mmdb/plan';
import { children as planChildren } from '@mmdb/plan';
import { parseSql } from './front/parser';
import type { Stmt, Select } from './front/ast';
import { Binder, type BindCatalog } from './front/binder';
import { findManifest, sqlTable, type SqlStore, type SqlTable } from './catalog';
import { createTableToml, manifestToml } from './ddl';
import { ExecCtx, type Budget, type Writer } from './exec/context';
import { compilePlan, type Op } from './exec/ops';
import { ExprCompiler } from './exec/expr';
import { Scope } from './exec/scope';
import { optimize, type PassReport } from './optimizer/optimizer';
import {
  applyAffinity, checkInt, compareValues, I64_MAX, I64_MIN, fromJson, toJson, toText, truthy, tupleKey, typeName, type Tuple, type Value,
} from './values';
import { cellKinds, decodeCell, encodeCell, keyOfCell, outKind, outputKinds, type OutKind } from './column-codec';
import { PlanCache } from './plan-cache';
import { TableCache, lowerBound, pkKeyOf, topByScan, topRows, type CachedTable } from './exec/table-cache';

export interface QueryOptions {
  params?: unknown[];
  /** `translate` (HTTP default, spec §4.5): DELETE answers the keys; `execute` removes rows (conformance runs). */
  deleteMode?: 'translate' | 'execute';
  explain?: boolean;
  queryId?: string;
  /** Milliseconds before `query_timeout` (default 30 s). */
  timeoutMs?: number;
  /** Rows a query may hold in memory (default 2,000,000). */
  maxRows?: number;
  /** Plan-cache key (set by run() for single SELECTs). */
  cacheKey?: string;
}

export interface ColumnMeta { name: string; type: string }

/** One statement's answer, values still in engine form (bigint integers). */
export type RawResult =
  | { kind: 'select'; names: string[]; rows: Tuple[]; explain?: unknown; kinds?: OutKind[] }
  | { kind: 'insert'; schema: string; rows: Row[]; names: string[]; returning: Tuple[]; kinds?: OutKind[] }
  | { kind: 'update'; schema: string; count: number; names: string[]; returning: Tuple[]; kinds?: OutKind[] }
  | { kind: 'delete'; schema: string; pks: PkTuple[]; translated: boolean }
  | { kind: 'ddl'; statement: string; schema?: string; created?: boolean }
  | { kind: 'transaction'; statement: 'begin' | 'commit' | 'rollback' };

interface Txn { changes: Change[]; overlay: Map<string, Map<string, Row | null>>; explicit: boolean }

/** A running query, for cancellation. */
interface Running { ctx: ExecCtx | null; cancelled: boolean; tenant?: string }

export class SqlEngine {
  private readonly views = new Map<string, Select>();
  /** Decoded tuples per table, reused across queries whose stable snapshot has the same table LSN. */
  readonly tables: TableCache;
  private readonly running = new Map<string, Running>();
  readonly planCache = new PlanCache(500);

  constructor(readonly store: SqlStore, readonly tenant?: string) {
    this.tables = TableCache.of(store);
  }

  /** Cancels a running query of this engine; false when it is not running. */
  cancel(queryId: string): boolean {
    const r = this.running.get(queryId);
    if (!r) return false;
    r.cancelled = true;
    if (r.ctx) r.ctx.cancelled = true;
    return true;
  }

  /** Runs a script; one result per statement (BEGIN…COMMIT commits its writes as one frame). */
  async run(sql: string, opts: QueryOptions = {}): Promise<RawResult[]> {
    const queryId = opts.queryId ?? `#${++this.seq}`;
    const running: Running = { ctx: null, cancelled: false };
    // a single SELECT seen before: its optimized plan, no parse/bind/optimize
    let key = this.keyMemo.get(sql);
    if (key === undefined) {
      key = cacheKeyOf(sql);
      if (this.keyMemo.size >= 2000) this.keyMemo.clear();
      this.keyMemo.set(sql, key);
    }
    const hit = this.planCache.get(key) as Prepared | undefined;
    if (hit && this.fresh(hit)) {
      const params = (opts.params ?? []).map(paramValue);
      if (hit.small && !opts.explain) {
        // a small plan whose leaves the table cache holds at the store's current LSNs: no await at all
        const r = this.querySmall(hit, params, opts);
        if (r) return [r];
      }
      this.running.set(queryId, running);
      try {
        return [await this.query(hit.plan, hit.names, params, null, opts, running, hit)];
      } finally {
        this.running.delete(queryId);
      }
    }
    const stmts = parseSql(sql);
    const params = (opts.params ?? []).map(paramValue);
    if (stmts.some((x) => x.kind !== 'select')) this.planCache.clear();
    const cacheKey = stmts.length === 1 && stmts[0].kind === 'select' ? key : undefined;
    opts = { ...opts, cacheKey };
    const out: RawResult[] = [];
    let txn: Txn | null = null;
    this.running.set(queryId, running);
    try {
      for (const st of stmts) {
        if (st.kind === 'begin') {
          if (txn) throw new DbError('validation_failed', 'cannot start a transaction within a transaction');
          txn = { changes: [], overlay: new Map(), explicit: true };
          out.push({ kind: 'transaction', statement: 'begin' });
          continue;
        }
        if (st.kind === 'commit' || st.kind === 'rollback') {
          if (!txn) throw new DbError('validation_failed', `cannot ${st.kind} - no transaction is active`);
          if (st.kind === 'commit' && txn.changes.length) await this.commit(txn);
          txn = null;
          out.push({ kind: 'transaction', statement: st.kind });
          continue;
        }
        const own = txn ?? { changes: [], overlay: new Map(), explicit: false };
        out.push(await this.statement(st, params, own, opts, running));
        if (!txn && own.changes.length) await this.commit(own);
      }
      if (txn) throw new DbError('validation_failed', 'transaction left open: end the script with COMMIT or ROLLBACK');
      return out;
    } finally {
      this.running.delete(queryId);
    }
  }

  private seq = 0;
  /** Statement text → its plan-cache key (normalizing whitespace costs more than a map lookup). */
  private readonly keyMemo = new Map<string, string>();

  /** A prepared plan is valid while every table it read at bind time has the same manifest. */
  private fresh(p: Prepared): boolean {
    for (const [id, m] of p.deps) if (this.store.manifest(id) !== m) return false;
    return true;
  }

  private async commit(txn: Txn): Promise<void> {
    try {
      await this.store.commit({ changes: txn.changes });
    } catch (e) {
      if (txn.explicit && e instanceof DbError && (e.code === 'write_conflict' || e.code === 'precondition_failed' || e.code === 'row_not_found')) {
        throw new DbError('write_conflict', `transaction lost to a concurrent write: ${e.message}`, { ...e.details });
      }
      throw e;
    }
  }

  private catalog(): BindCatalog {
    return {
      table: (name) => {
        const m = findManifest(this.store, name);
        return m ? sqlTable(this.store, m) : undefined;
      },
      view: (name) => this.views.get(name.toLowerCase()),
    };
  }

  private table(id: string): SqlTable {
    const m = this.store.manifest(id) ?? findManifest(this.store, id);
    if (!m) throw new DbError('schema_not_found', `no such table: ${id}`, { schema: id });
    return sqlTable(this.store, m);
  }

  private async statement(st: Stmt, params: Value[], txn: Txn, opts: QueryOptions, running: Running): Promise<RawResult> {
    switch (st.kind) {
      case 'select': {
        if (!opts.cacheKey || txn.overlay.size > 0) {
          const b = this.bind(st);
          return this.query(b.plan, b.names, params, txn, opts, running);
        }
        const p = this.prepare(st);
        this.planCache.set(opts.cacheKey, p);
        return this.query(p.plan, p.names, params, txn, opts, running, p);
      }
      case 'insert': {
        const m = this.requireTable(st.table);
        const t = sqlTable(this.store, m);
        const b = new Binder(this.catalog()).bindSelect(st.source, null);
        const visible = t.columns.filter((c) => !c.hidden).map((c) => c.name);
        const columns = st.columns ?? visible;
        for (const c of columns) if (!t.columns.some((x) => x.name.toLowerCase() === c.toLowerCase())) throw new DbError('validation_failed', `table ${m.table} has no column named ${c}`, { column: c });
        if (b.names.length !== columns.length) {
          throw new DbError('validation_failed', `table ${m.table} has ${columns.length} columns but ${b.names.length} values were supplied`);
        }
        if (st.orConflict === 'ignore') throw new DbError('unsupported_sql', 'INSERT OR IGNORE is not supported', { construct: 'INSERT OR IGNORE' });
        const returning = st.returning ? this.returning(st.returning, m) : undefined;
        const plan: PlanNode = {
          op: 'insert', schema: m.id, columns, input: b.plan,
          on_conflict: st.orConflict === 'replace' ? 'replace' : 'error',
          ...(returning ? { returning } : {}),
        };
        const before = txn.changes.length;
        const r = await this.query(plan, returning?.map((x) => x.name) ?? [], params, txn, opts, running);
        const rows = txn.changes.slice(before).filter((c): c is Extract<Change, { op: 'put' }> => c.op === 'put').map((c) => c.row);
        return { kind: 'insert', schema: m.id, rows, names: r.kind === 'select' ? r.names : [], returning: r.kind === 'select' ? r.rows : [], kinds: this.returningKinds(returning, m) };
      }
      case 'update': {
        const m = this.requireTable(st.table);
        const alias = st.alias ?? m.table;
        const sel: Select = { kind: 'select', body: { t: 'core', distinct: false, columns: [{ t: 'star' }], from: { t: 'table', name: st.table, alias }, where: st.where } };
        const binder = new Binder(this.catalog());
        const b = binder.bindSelect(sel, null);
        const filterInput = (b.plan as { input: PlanNode }).input; // project(*) → its input: scan or filter
        const scope = { items: [{ alias, internal: alias, cols: sqlTable(this.store, m).columns.map((c) => ({ ...c })) }], parent: null, ctes: new Map() };
        const set = st.sets.map((s) => ({ column: s.column, expr: binder.expr(s.expr, scope as never, null) }));
        const returning = st.returning ? this.returning(st.returning, m) : undefined;
        const plan: PlanNode = { op: 'update', schema: m.id, alias, input: filterInput, set, ...(returning ? { returning } : {}) };
        const before = txn.changes.length;
        const r = await this.query(plan, returning?.map((x) => x.name) ?? [], params, txn, opts, running);
        const count = txn.changes.slice(before).filter((c) => c.op === 'put').length;
        return { kind: 'update', schema: m.id, count, names: r.kind === 'select' ? r.names : [], returning: r.kind === 'select' ? r.rows : [], kinds: this.returningKinds(returning, m) };
      }
      case 'delete': {
        const m = this.requireTable(st.table);
        const alias = st.alias ?? m.table;
        const sel: Select = { kind: 'select', body: { t: 'core', distinct: false, columns: [{ t: 'star' }], from: { t: 'table', name: st.table, alias }, where: st.where } };
        const b = new Binder(this.catalog()).bindSelect(sel, null);
        const plan: PlanNode = { op: 'delete', schema: m.id, alias, input: (b.plan as { input: PlanNode }).input };
        const mode = opts.deleteMode ?? 'translate';
        const before = txn.changes.length;
        await this.query(plan, [], params, txn, opts, running);
        const dels = txn.changes.splice(before).filter((c): c is Extract<Change, { op: 'delete' }> => c.op === 'delete');
        if (mode === 'execute') txn.changes.push(...dels);
        else for (const d of dels) txn.overlay.get(m.id)?.delete(pkKey(d.pk));
        return { kind: 'delete', schema: m.id, pks: dels.map((d) => d.pk), translated: mode !== 'execute' };
      }
      case 'create_table': {
        const existing = findManifest(this.store, st.name);
        if (existing || this.views.has(st.name.toLowerCase())) {
          if (st.ifNotExists) return { kind: 'ddl', statement: 'create_table', schema: existing?.id, created: false };
          throw new DbError('conflict', `table ${st.name} already exists`, { schema: st.name });
        }
        if (st.asSelect) throw new DbError('unsupported_sql', 'CREATE TABLE … AS SELECT is not supported', { construct: 'CREATE TABLE AS' });
        this.requireNoTxn(txn, 'CREATE TABLE');
        const toml = createTableToml(st, this.store, (c) => this.constant(c.default!));
        const r = await this.store.registerSchema(toml);
        return { kind: 'ddl', statement: 'create_table', schema: r.id, created: r.created };
      }
      case 'create_index': {
        const m = this.requireTable(st.table);
        this.requireNoTxn(txn, 'CREATE INDEX');
        const all = this.store.manifests().flatMap((x) => x.indexes.map((i) => i.name.toLowerCase()));
        if (all.includes(st.name.toLowerCase())) {
          if (st.ifNotExists) return { kind: 'ddl', statement: 'create_index', schema: m.id, created: false };
          throw new DbError('conflict', `index ${st.name} already exists`);
        }
        const cols = st.columns.map((c) => {
          const col = m.columns.find((x) => x.name.toLowerCase() === c.toLowerCase());
          if (!col) throw new DbError('validation_failed', `no such column: ${c}`, { column: c });
          return col.name;
        });
        await this.store.registerSchema(manifestToml(this.store, m, (d) => d.indexes!.push({ name: st.name, columns: cols, unique: st.unique })));
        return { kind: 'ddl', statement: 'create_index', schema: m.id, created: true };
      }
      case 'create_view': {
        if (findManifest(this.store, st.name) || this.views.has(st.name.toLowerCase())) {
          if (st.ifNotExists) return { kind: 'ddl', statement: 'create_view', created: false };
          throw new DbError('conflict', `view ${st.name} already exists`);
        }
        new Binder(this.catalog()).bindSelect(st.select, null);
        this.views.set(st.name.toLowerCase(), st.select);
        return { kind: 'ddl', statement: 'create_view', created: true };
      }
      case 'drop': {
        this.requireNoTxn(txn, 'DROP');
        if (st.what === 'table') {
          const m = findManifest(this.store, st.name);
          if (!m) {
            if (st.ifExists) return { kind: 'ddl', statement: 'drop_table' };
            throw new DbError('schema_not_found', `no such table: ${st.name}`, { schema: st.name });
          }
          await this.store.dropSchema(m.id);
          return { kind: 'ddl', statement: 'drop_table', schema: m.id };
        }
        if (st.what === 'view') {
          if (!this.views.delete(st.name.toLowerCase()) && !st.ifExists) throw new DbError('not_found', `no such view: ${st.name}`);
          return { kind: 'ddl', statement: 'drop_view' };
        }
        if (st.what === 'index') {
          const m = this.store.manifests().find((x) => x.indexes.some((i) => i.name.toLowerCase() === st.name.toLowerCase()));
          if (!m) {
            if (st.ifExists) return { kind: 'ddl', statement: 'drop_index' };
            throw new DbError('not_found', `no such index: ${st.name}`);
          }
          await this.store.registerSchema(manifestToml(this.store, m, (d) => { d.indexes = d.indexes!.filter((i) => i.name.toLowerCase() !== st.name.toLowerCase()); }));
          return { kind: 'ddl', statement: 'drop_index', schema: m.id };
        }
        throw new DbError('unsupported_sql', 'triggers are not supported', { construct: 'DROP TRIGGER' });
      }
      case 'alter_add': {
        const m = this.requireTable(st.table);
        this.requireNoTxn(txn, 'ALTER TABLE');
        const c = st.column;
        if (c.pk || c.unique) throw new DbError('validation_failed', 'Cannot add a PRIMARY KEY or UNIQUE column');
        const { columnType } = await import('./ddl');
        await this.store.registerSchema(manifestToml(this.store, m, (d) => d.columns.push({
          name: c.name, ty: columnType(c.type), description: `sql:${c.type}`,
          ...(c.default ? { default: toJson(this.constant(c.default)) } : {}),
        })));
        return { kind: 'ddl', statement: 'alter_table', schema: m.id };
      }
      case 'reindex': {
        // indexes are maintained in the commit itself: REINDEX only checks the name
        const n = st.name?.toLowerCase();
        if (n && !findManifest(this.store, n) && !this.store.manifests().some((m) => m.indexes.some((i) => i.name.toLowerCase() === n))) {
          throw new DbError('validation_failed', `unable to identify the object to be reindexed: ${st.name}`);
        }
        return { kind: 'ddl', statement: 'reindex' };
      }
      case 'unsupported':
        throw new DbError('unsupported_sql', `${st.construct} is not supported`, { construct: st.construct });
      default:
        throw new DbError('unsupported_sql', `statement ${(st as Stmt).kind} is not supported here`);
    }
  }

  private requireNoTxn(txn: Txn, what: string): void {
    if (txn.explicit) throw new DbError('unsupported_sql', `${what} inside BEGIN … COMMIT is not supported`, { construct: what });
  }

  private requireTable(name: string): TableManifest {
    const m = findManifest(this.store, name);
    if (!m) throw new DbError('validation_failed', `no such table: ${name}`, { table: name });
    return m;
  }

  private returning(cols: import('./front/ast').ResultCol[], m: TableManifest): { name: string; expr: Expr }[] {
    const t = sqlTable(this.store, m);
    const binder = new Binder(this.catalog());
    const scope = { items: [{ alias: m.table, internal: '', cols: t.columns.map((c) => ({ ...c })) }], parent: null, ctes: new Map() };
    const out: { name: string; expr: Expr }[] = [];
    for (const rc of cols) {
      if (rc.t === 'star') {
        for (const c of t.columns) if (!c.hidden) out.push({ name: c.name, expr: { kind: 'col', name: c.name } });
      } else {
        const e = binder.expr(rc.expr, scope as never, null);
        out.push({ name: rc.alias ?? (rc.expr.t === 'id' ? rc.expr.name : rc.text), expr: stripDot(e) });
      }
    }
    return out;
  }

  /** json/vector kinds of RETURNING columns that name such a column (column-codec.ts). */
  private returningKinds(returning: { name: string; expr: Expr }[] | undefined, m: TableManifest): OutKind[] | undefined {
    if (!returning) return undefined;
    const t = sqlTable(this.store, m);
    return returning.map((r) => {
      const i = r.expr.kind === 'col' ? m.columns.findIndex((c) => c.name === (r.expr as { name: string }).name) : -1;
      return i >= 0 ? outKind(t, i) : undefined;
    });
  }

  private constant(e: import('./front/ast').AExpr): Value {
    const bound = new Binder(this.catalog()).expr(e, { items: [], parent: null, ctes: new Map() } as never, null);
    const ctx = this.ctx([], null, {});
    return new ExprCompiler(ctx).compile(bound, new Scope([]))([], null);
  }

  /** Binds and optimizes a SELECT once, remembering the manifests it was bound against. */
  private prepare(st: Select): Prepared {
    const deps = new Map<string, TableManifest>();
    const b = new Binder({
      table: (name) => {
        const m = findManifest(this.store, name);
        if (!m) return undefined;
        deps.set(m.id, m);
        return sqlTable(this.store, m);
      },
      view: (name) => this.views.get(name.toLowerCase()),
    }).bindSelect(st, null);
    const o = optimize(b.plan, this.optCatalog());
    return { plan: o.plan, names: b.names, passes: o.passes, deps: [...deps], leaves: leafNodes(o.plan), pool: [], small: isSmall(o.plan) };
  }

  /** Runs a JSON plan tree (POST /query): validated, optimized, executed on one snapshot. */
  async runPlan(plan: PlanNode, opts: QueryOptions = {}): Promise<Extract<RawResult, { kind: 'select' }>> {
    const queryId = opts.queryId ?? newUlid();
    const running: Running = { ctx: null, cancelled: false };
    this.running.set(queryId, running);
    try {
      if (plan.op === 'insert' || plan.op === 'update' || plan.op === 'delete') {
        throw new DbError('validation_failed', 'write nodes run through /sql or the row endpoints', { path: '$.op' });
      }
      return (await this.query(plan, [], (opts.params ?? []).map(paramValue), null, opts, running)) as Extract<RawResult, { kind: 'select' }>;
    } finally {
      this.running.delete(queryId);
    }
  }

  /** Binds a SELECT. */
  private bind(st: Select): { plan: PlanNode; names: string[] } {
    const b = new Binder(this.catalog()).bindSelect(st, null);
    return { plan: b.plan, names: b.names };
  }

  /** Parses and binds one SELECT to a plan (used by explain and tests). */
  planSql(sql: string): { plan: PlanNode; names: string[]; passes: PassReport[] } {
    const stmts = parseSql(sql);
    if (stmts.length !== 1 || stmts[0].kind !== 'select') throw new DbError('validation_failed', 'expected one SELECT');
    const b = this.bind(stmts[0]);
    const o = optimize(b.plan, this.optCatalog());
    return { plan: o.plan, names: b.names, passes: o.passes };
  }

  private optCatalog() {
    return { table: (id: string) => this.table(id), rowCount: (id: string) => this.tables.rowCount(id) };
  }

  private budget(opts: QueryOptions): Budget {
    return { maxRows: opts.maxRows ?? 2_000_000, deadline: Date.now() + (opts.timeoutMs ?? 30_000) };
  }

  private ctx(params: Value[], writer: Writer | null, opts: QueryOptions): ExecCtx {
    return new ExecCtx(params, (id) => this.table(id), this.budget(opts), writer, !!opts.explain);
  }

  /**
   * Runs a plan (already bound): optimize, preload leaves, execute.
   * A prepared plan's compiled operator tree is taken from its pool (and put back after a successful
   * run), so a repeated statement compiles nothing. Leaves are answered from the table cache at the
   * store's current table LSNs when every one of them can be (no storage snapshot at all); otherwise
   * from one storage snapshot.
   */
  async query(plan0: PlanNode, names: string[], params: Value[], txn: Txn | null, opts: QueryOptions, running?: Running, prepared?: Prepared): Promise<RawResult> {
    const t0 = performance.now();
    const { plan, passes } = prepared ?? optimize(plan0, this.optCatalog(), { noIndex: !!txn && txn.overlay.size > 0 });
    const leafList = prepared?.leaves ?? leafNodes(plan);
    const writer = txn ? this.writer(txn) : null;
    const pool = prepared && !opts.explain ? prepared.pool : null;
    const inst = pool?.pop();
    let ctx: ExecCtx;
    let op: Op | null = null;
    if (inst) {
      try { inst.ctx.reset(params, this.budget(opts), writer); } catch (e) { pool!.push(inst); throw e; }
      ctx = inst.ctx;
      op = inst.op;
    } else {
      ctx = this.ctx(params, writer, opts);
    }
    let snap: Snapshot | null = null;
    try {
      if (running) { running.ctx = ctx; if (running.cancelled) ctx.cancelled = true; }
      if (!(!txn || txn.overlay.size === 0) || !this.preloadCurrent(leafList, ctx)) {
        snap = this.store.snapshot();
        await this.preload(leafList, snap, ctx.leaves, txn, ctx);
      }
      if (!op) op = compilePlan(plan, ctx, null);
      const rows: Tuple[] = [];
      let last = Date.now();
      for (const b of op.run(ctx, null)) {
        for (const r of b) rows.push(r);
        if (Date.now() - last > 20) {
          // let a cancel request in between batches
          await new Promise((res) => setImmediate(res));
          last = Date.now();
        }
        ctx.check();
      }
      const res: RawResult = this.selectResult(names, op, rows);
      if (opts.explain) res.explain = { passes, plan, tree: explainTree(plan, ctx), total_ms: round(performance.now() - t0) };
      ctx.leaves.clear();
      if (pool && pool.length < POOL_SIZE) pool.push({ ctx, op });
      return res;
    } finally {
      if (running) running.ctx = null;
      if (snap) await snap.release();
    }
  }

  /**
   * Runs a small prepared plan synchronously when every leaf is answered from the table cache at
   * the store's current table LSNs; undefined when one is not (the caller takes the general path).
   * "Small" (Prepared.small) = no join, CTE, set operation or subquery, and only pk `get`s and
   * primary-key ranges as leaves: the work is bounded by the rows of those leaves (at most
   * SMALL_ROWS here), so not yielding to the event loop cannot starve a cancel request for long.
   */
  private querySmall(p: Prepared, params: Value[], opts: QueryOptions): RawResult | undefined {
    const inst = p.pool.pop();
    let ctx: ExecCtx;
    let op: Op | null = null;
    if (inst) {
      try { inst.ctx.reset(params, this.budget(opts), null); } catch (e) { p.pool.push(inst); throw e; }
      ctx = inst.ctx;
      op = inst.op;
    } else {
      ctx = this.ctx(params, null, opts);
    }
    // a tree goes back to the pool unless it failed while running (it may hold a half-run state)
    let reusable = true;
    try {
      if (!this.preloadCurrent(p.leaves, ctx, SMALL_ROWS)) return undefined;
      if (!op) op = compilePlan(p.plan, ctx, null);
      reusable = false;
      const rows: Tuple[] = [];
      for (const b of op.run(ctx, null)) for (const r of b) rows.push(r);
      reusable = true;
      return this.selectResult(p.names, op, rows);
    } finally {
      ctx.leaves.clear();
      if (op && reusable && p.pool.length < POOL_SIZE) p.pool.push({ ctx, op });
    }
  }

  /** Output json/vector kinds per plan root (a cached plan keeps its root node). */
  private readonly kindMemo = new WeakMap<PlanNode, OutKind[]>();

  private selectResult(names: string[], op: Op, rows: Tuple[]): Extract<RawResult, { kind: 'select' }> {
    const outNames = names.length ? names : op.cols.map((c) => c.name);
    const width = outNames.length;
    let trimmed = rows;
    for (let i = 0; i < rows.length; i++) {
      if (rows[i].length > width) { trimmed = rows.map((r) => (r.length > width ? r.slice(0, width) : r)); break; }
    }
    let kinds = this.kindMemo.get(op.node);
    if (!kinds) this.kindMemo.set(op.node, (kinds = outputKinds(op.node, outNames, (id) => this.table(id))));
    return { kind: 'select', names: outNames, rows: trimmed, ...(kinds.some((k) => k) ? { kinds } : {}) };
  }

  /**
   * Answers every leaf from the table cache as the store holds it now (no snapshot), or none:
   * false when one leaf cannot be (no current entry, a secondary index, an insert's key hint).
   */
  private preloadCurrent(nodes: readonly PlanNode[], ctx: ExecCtx, maxRows = Infinity): boolean {
    const got: Tuple[][] = [];
    let total = 0;
    for (const n of nodes) {
      if (n.op !== 'scan' && n.op !== 'get' && n.op !== 'index_scan') return false;
      const t = this.table(n.schema);
      const e = this.tables.current(t);
      if (!e) return false;
      const rows = this.fromEntry(n, t, e, ctx);
      if (!rows || (total += rows.length) > maxRows) return false;
      got.push(rows);
    }
    for (let i = 0; i < nodes.length; i++) {
      ctx.hold(got[i].length);
      ctx.leaves.set(nodes[i], got[i]);
    }
    return true;
  }

  /** A leaf's rows from a cached table, or undefined when the entry cannot answer it. */
  private fromEntry(n: PlanNode, t: SqlTable, e: CachedTable, ctx: ExecCtx): Tuple[] | undefined {
    if (n.op === 'scan') return (n.limit !== undefined ? e.rows.slice(0, n.limit) : e.rows) as Tuple[];
    if (n.op === 'get') {
      const key = n.key.map((x, i) => storeKey(t, t.pk[i], constantOf(x, ctx)));
      if (key.some((k) => k === undefined)) return [];
      const r = e.byPk.get(pkKeyOf(key));
      return r ? [r] : [];
    }
    if (n.op === 'index_scan' && n.top !== undefined) {
      const col = topColumn(n, t);
      if (n.index === 'primary' && t.pk.length === 1) {
        // the rows are in pk order already, and a one-column pk has no ties
        return (n.reverse ? e.rows.slice(Math.max(0, e.rows.length - n.top)) : e.rows.slice(0, n.top)) as Tuple[];
      }
      return topRows(e, n.index, col, n.top, !!n.reverse);
    }
    if (n.op === 'index_scan') {
      if (n.index !== 'primary' || !e.pkNums || (n.prefix ?? []).length) return undefined;
      const col = t.pk[0];
      const lo = n.lower ? storeKey(t, col, constantOf(n.lower.value, ctx)) : undefined;
      const hi = n.upper ? storeKey(t, col, constantOf(n.upper.value, ctx)) : undefined;
      if ((n.lower && lo === undefined) || (n.upper && hi === undefined)) return [];
      if ((lo !== undefined && typeof lo !== 'number') || (hi !== undefined && typeof hi !== 'number')) return undefined;
      const a = e.pkNums;
      const from = lo === undefined ? 0 : lowerBound(a, lo, !n.lower!.inclusive);
      const to = hi === undefined ? a.length : lowerBound(a, hi, !!n.upper!.inclusive);
      return from < to ? (e.rows.slice(from, to) as Tuple[]) : [];
    }
    return undefined;
  }

  /** Loads the rows of every leaf node (scan/get/index_scan) from the snapshot, with the transaction's own writes overlaid. */
  private async preload(nodes: readonly PlanNode[], snap: Snapshot, leaves: Map<PlanNode, Tuple[]>, txn: Txn | null, ctx: ExecCtx): Promise<void> {
    const fullScans = new Map<string, Promise<Tuple[]>>();
    const jobs: Promise<void>[] = [];
    const scanAll = (schema: string) => {
      let p = fullScans.get(schema);
      if (!p) {
        p = (async () => {
          const t = this.table(schema);
          const base = await this.tables.rows(snap, t, () => readTable(snap, t, () => ctx.check()));
          ctx.hold(base.length);
          return this.overlay(t, base as Tuple[], txn);
        })();
        fullScans.set(schema, p);
      }
      return p;
    };
    const constant = (e: Expr): Value => constantOf(e, ctx);
    const walk = (n: PlanNode) => {
      if (n.op === 'scan') jobs.push(scanAll(n.schema).then((rows) => { leaves.set(n, n.limit !== undefined ? rows.slice(0, n.limit) : rows); }));
      else if (n.op === 'get') {
        jobs.push((async () => {
          const t = this.table(n.schema);
          const cached = this.tables.lookup(snap, t);
          if (cached) { leaves.set(n, this.fromEntry(n, t, cached, ctx)!); return; }
          const key = n.key.map((e, i) => storeKey(t, t.pk[i], constant(e)));
          if (key.some((k) => k === undefined)) { leaves.set(n, []); return; }
          this.tables.noteMiss(snap, t, () => this.store.snapshot(), (s) => readTable(s, t, () => undefined));
          const r = await snap.getRow(t.id, key as PkTuple);
          leaves.set(n, r ? [toTuple(t, r)] : []);
        })());
      } else if (n.op === 'index_scan' && n.top !== undefined) {
        jobs.push((async () => {
          const t = this.table(n.schema);
          const col = topColumn(n, t);
          const cached = this.tables.lookup(snap, t);
          let rows: Tuple[];
          if (cached) rows = this.fromEntry(n, t, cached, ctx)!;
          else if (['i64', 'f64', 'timestamp'].includes(t.manifest.columns[col].ty)) {
            // numbers: the index's key order is their comparison order: read it until the n-th
            // entry and its ties, then put the rows back in pk order
            this.tables.noteMiss(snap, t, () => this.store.snapshot(), (s) => readTable(s, t, () => undefined));
            const top = n.top!;
            const opts: ScanOptions = { reverse: !!n.reverse, batchSize: Math.max(16, Math.min(1024, top + 1)) };
            const iter = n.index === 'primary' ? snap.scanRows(t.id, opts) : snap.scanIndex(t.id, n.index, opts);
            rows = [];
            let last: Value = null;
            read: for await (const batch of iter) {
              ctx.check();
              for (const r of batch) {
                const tu = toTuple(t, r);
                if (rows.length >= top && compareValues(tu[col], last) !== 0) break read;
                rows.push(tu);
                last = tu[col];
              }
            }
            if (top === 0) rows = [];
            const pkIdx = t.pk.map((p) => t.manifest.columns.findIndex((c) => c.name === p));
            rows.sort((a, b) => { for (const i of pkIdx) { const d = compareValues(a[i], b[i]); if (d) return d; } return 0; });
          } else {
            rows = topByScan(await scanAll(n.schema), col, n.top!, !!n.reverse);
          }
          ctx.hold(rows.length);
          leaves.set(n, rows);
        })());
      } else if (n.op === 'index_scan') {
        jobs.push((async () => {
          const t = this.table(n.schema);
          const idxCols = n.index === 'primary' ? t.pk : t.manifest.indexes.find((i) => i.name === n.index)?.columns ?? [];
          const prefix = (n.prefix ?? []).map((e, i) => storeKey(t, idxCols[i], constant(e)));
          if (prefix.some((k) => k === undefined)) { leaves.set(n, []); return; }
          const bcol = idxCols[prefix.length];
          const lo = n.lower ? storeKey(t, bcol, constant(n.lower.value)) : undefined;
          const hi = n.upper ? storeKey(t, bcol, constant(n.upper.value)) : undefined;
          if ((n.lower && lo === undefined) || (n.upper && hi === undefined)) { leaves.set(n, []); return; }
          const cached = this.tables.lookup(snap, t);
          const fromCache = cached && this.fromEntry(n, t, cached, ctx);
          if (fromCache) {
            ctx.hold(fromCache.length);
            leaves.set(n, fromCache);
            return;
          }
          const opts: ScanOptions = {
            ...(prefix.length && lo === undefined && hi === undefined ? { prefix: prefix as PkTuple } : {}),
            ...(lo !== undefined ? { [n.lower!.inclusive ? 'gte' : 'gt']: [...prefix, lo] } : prefix.length && hi !== undefined ? { gte: prefix } : {}),
            ...(hi !== undefined ? { [n.upper!.inclusive ? 'lte' : 'lt']: [...prefix, hi] } : prefix.length && lo !== undefined ? { lte: [...prefix, '\uffff'] } : {}),
          } as never;
          this.tables.noteMiss(snap, t, () => this.store.snapshot(), (s) => readTable(s, t, () => undefined));
          const iter = n.index === 'primary' ? snap.scanRows(t.id, opts) : snap.scanIndex(t.id, n.index, opts);
          const out: Tuple[] = [];
          for await (const batch of iter) {
            ctx.check();
            ctx.hold(batch.length);
            for (const r of batch) out.push(toTuple(t, r));
          }
          leaves.set(n, out);
        })());
      }
      if (n.op === 'insert') {
        const t = this.table(n.schema);
        if (t.pk.length === 1 && !t.hiddenRowid && t.affs[t.manifest.columns.findIndex((c) => c.name === t.pk[0])] === 'integer') {
          jobs.push((async () => {
            let next = 1n;
            for await (const b of snap.scanRows(t.id, { reverse: true, limit: 1 })) for (const r of b) {
              const v = r.values[t.pk[0]];
              if (typeof v === 'number') next = BigInt(v) + 1n;
            }
            this.maxPkHint.set(t.id, next);
          })());
        }
      }
    };
    for (const n of nodes) walk(n);
    await Promise.all(jobs);
  }

  private overlay(t: SqlTable, rows: Tuple[], txn: Txn | null): Tuple[] {
    const ov = txn?.overlay.get(t.id);
    if (!ov || ov.size === 0) return rows;
    const pkIdx = t.pk.map((p) => t.manifest.columns.findIndex((c) => c.name === p));
    const byKey = new Map<string, Tuple>();
    const order: string[] = [];
    for (const r of rows) { const k = tupleKey(pkIdx.map((i) => r[i])); byKey.set(k, r); order.push(k); }
    for (const [k, row] of ov) {
      if (!byKey.has(k)) order.push(k);
      if (row === null) byKey.delete(k);
      else byKey.set(k, toTuple(t, { values: row, version: 0 } as StoredRow));
    }
    const out: Tuple[] = [];
    for (const k of order) { const r = byKey.get(k); if (r) { out.push(r); byKey.delete(k); } }
    out.sort((a, b) => { for (const i of pkIdx) { const d = compareValues(a[i], b[i]); if (d) return d; } return 0; });
    return out;
  }

  private writer(txn: Txn): Writer {
    const put = (t: SqlTable, row: Row, pre: Precondition | undefined) => {
      txn.changes.push({ op: 'put', schema: t.id, row, ...(pre ? { precondition: pre } : {}) });
      const pk = t.pk.map((p) => fromJson(row[p], t.affs[t.manifest.columns.findIndex((c) => c.name === p)]));
      let ov = txn.overlay.get(t.id);
      if (!ov) txn.overlay.set(t.id, (ov = new Map()));
      ov.set(pk.some((v) => v === null) ? `new:${txn.changes.length}` : tupleKey(pk), row);
    };
    const nextPk = new Map<string, bigint>();
    return {
      insert: (node, input) => {
        const t = this.table(node.schema);
        const cols = t.manifest.columns;
        const vals: Value[] = cols.map((c) => (c.default !== undefined ? fromJson(c.default, undefined) : null));
        const given = new Set<number>();
        node.columns.forEach((name, i) => {
          const j = cols.findIndex((c) => c.name.toLowerCase() === name.toLowerCase());
          vals[j] = input[i];
          given.add(j);
        });
        // INTEGER PRIMARY KEY without a value: the next key, as SQLite's rowid alias does
        if (t.pk.length === 1 && !t.hiddenRowid) {
          const j = cols.findIndex((c) => c.name === t.pk[0]);
          if (vals[j] === null && t.affs[j] === 'integer') {
            let next = nextPk.get(t.id);
            if (next === undefined) {
              const ov = txn.overlay.get(t.id);
              next = 1n;
              for (const r of ov?.values() ?? []) if (r && typeof r[t.pk[0]] === 'number') next = maxBig(next, BigInt(r[t.pk[0]] as number) + 1n);
              next = maxBig(next, this.maxPkHint.get(t.id) ?? 1n);
            }
            vals[j] = next;
            nextPk.set(t.id, next + 1n);
          }
        }
        const row = toRow(t, vals);
        put(t, row, node.on_conflict === 'replace' ? undefined : { kind: 'insert' });
        return stored(t, row, 1);
      },
      update: (node, before, after) => {
        const t = this.table(node.schema);
        const width = t.manifest.columns.length;
        const version = Number(before[width] ?? 0);
        const pkIdx = t.pk.map((p) => t.manifest.columns.findIndex((c) => c.name === p));
        const pkChanged = pkIdx.some((i) => compareValues(before[i], applyAffinity(after[i], t.affs[i])) !== 0);
        const row = toRow(t, after.slice(0, width));
        if (pkChanged) {
          const oldPk = pkIdx.map((i) => toJson(before[i]));
          txn.changes.push({ op: 'delete', schema: t.id, pk: oldPk, ...(version ? { precondition: { kind: 'if_match', version } } : {}) });
          txn.overlay.get(t.id)?.set(tupleKey(pkIdx.map((i) => before[i])), null);
          put(t, row, { kind: 'insert' });
        } else {
          put(t, row, version ? { kind: 'if_match', version } : { kind: 'exists' });
        }
        return stored(t, row, version + 1);
      },
      delete: (node, row) => {
        const t = this.table(node.schema);
        const pkIdx = t.pk.map((p) => t.manifest.columns.findIndex((c) => c.name === p));
        const pk = pkIdx.map((i) => toJson(row[i]));
        txn.changes.push({ op: 'delete', schema: t.id, pk });
        let ov = txn.overlay.get(t.id);
        if (!ov) txn.overlay.set(t.id, (ov = new Map()));
        ov.set(tupleKey(pkIdx.map((i) => row[i])), null);
      },
    };
  }

  private readonly maxPkHint = new Map<string, bigint>();

  /** Evaluates a manifest CHECK expression against a row (register with store.setCheckEvaluator). */
  readonly checkEvaluator = (expr: string, row: Row, manifest: TableManifest): boolean | null => {
    const t = sqlTable(this.store, manifest);
    const k = `${manifest.id}\u0000${expr}`;
    let f = this.checks.get(k);
    if (!f) {
      const ast = parseSql(`SELECT ${expr}`)[0] as Select;
      const core = ast.body as import('./front/ast').SelectCore;
      const e = (core.columns[0] as { expr: import('./front/ast').AExpr }).expr;
      const scope = { items: [{ alias: manifest.table, internal: '', cols: t.columns.map((c) => ({ ...c })) }], parent: null, ctes: new Map() };
      const bound = stripDot(new Binder(this.catalog()).expr(e, scope as never, null));
      const ctx = this.ctx([], null, {});
      f = new ExprCompiler(ctx).compile(bound, new Scope(t.cols));
      this.checks.set(k, f);
    }
    const tuple = toTuple(t, { values: row, version: 0 } as StoredRow);
    return truthy(f(tuple, null));
  };
  private readonly checks = new Map<string, (r: Tuple, u: null) => Value>();
}

function maxBig(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}

function stripDot(e: Expr): Expr {
  return JSON.parse(JSON.stringify(e), (k, v) => (k === 'name' && typeof v === 'string' && v.startsWith('.') ? v.slice(1) : v));
}

function pkKey(pk: PkTuple): string {
  return tupleKey(pk.map((v) => fromJson(v, undefined)));
}

/** Every row of a table from a snapshot, decoded, in pk order, with the stored pks. */
async function readTable(snap: Snapshot, t: SqlTable, check: () => void): Promise<{ rows: Tuple[]; pks: unknown[][] }> {
  const rows: Tuple[] = [];
  const pks: unknown[][] = [];
  for await (const batch of snap.scanRows(t.id, { batchSize: 1024 })) {
    check();
    for (const r of batch) { rows.push(toTuple(t, r)); pks.push(r.pk); }
  }
  return { rows, pks };
}

/** The tuple of a row as the store keeps it (what RETURNING answers): canonical values, then the version. */
function stored(t: SqlTable, row: Row, version: number): Tuple {
  return toTuple(t, { values: row, version });
}

/** A stored row → tuple in manifest column order, then its version. */
export function toTuple(t: SqlTable, r: Pick<StoredRow, 'values' | 'version'>): Tuple {
  const cols = t.manifest.columns;
  const out = new Array<Value>(cols.length + 1);
  const kinds = cellKinds(t);
  for (let i = 0; i < cols.length; i++) out[i] = kinds[i] ? decodeCell(r.values[cols[i].name]) : fromJson(r.values[cols[i].name], t.affs[i]);
  out[cols.length] = BigInt(r.version ?? 0);
  return out;
}

/** Tuple → row for the store: affinity, NOT NULL, then the column's storage type. */
export function toRow(t: SqlTable, vals: Value[]): Row {
  const row: Row = {};
  const kinds = cellKinds(t);
  t.manifest.columns.forEach((c, i) => {
    let v = applyAffinity(vals[i], t.affs[i]);
    if (v === null) {
      if (c.required && !(t.hiddenRowid && c.name === '_rowid')) {
        throw new DbError('missing_required', `NOT NULL constraint failed: ${t.manifest.table}.${c.name}`, { field: c.name });
      }
      if (t.hiddenRowid && c.name === '_rowid') return;
      row[c.name] = null;
      return;
    }
    switch (c.ty) {
      case 'i64':
        if (typeof v === 'number' && Number.isInteger(v)) v = BigInt(v);
        if (typeof v !== 'bigint') throw new DbError('type_mismatch', `column "${c.name}" expects an integer, got ${typeName(v)} ${JSON.stringify(toText(v))}`, { field: c.name });
        row[c.name] = toJson(checkInt(v)) as number | bigint;
        return;
      case 'f64':
        if (typeof v === 'bigint') v = Number(v);
        if (typeof v !== 'number' || !Number.isFinite(v)) throw new DbError('type_mismatch', `column "${c.name}" expects a real, got ${typeName(v)}`, { field: c.name });
        row[c.name] = v;
        return;
      case 'str':
        row[c.name] = toText(v)!;
        return;
      case 'bool':
        row[c.name] = truthy(v) === true;
        return;
      case 'timestamp':
        // RFC 3339 text becomes epoch milliseconds here (as the store would), so RETURNING and
        // later statements of the same script see the stored form
        row[c.name] = coerceValue(c.name, 'timestamp', typeof v === 'bigint' ? toJson(v) : v);
        return;
      default:
        row[c.name] = kinds[i] ? encodeCell(c, kinds[i]!, v) : toJson(v);
    }
  });
  return row;
}

/** A value as the store's key for column `col` (undefined when it cannot match any stored key). */
function storeKey(t: SqlTable, col: string, v: Value): import('@mmdb/core').JsonValue | undefined {
  const i = t.manifest.columns.findIndex((c) => c.name === col);
  const c = t.manifest.columns[i];
  const a = applyAffinity(v, t.affs[i]);
  if (a === null) return undefined;
  switch (c.ty) {
    case 'i64': case 'timestamp':
      if (typeof a === 'bigint') return toJson(a);
      if (typeof a === 'number' && Number.isInteger(a)) return a;
      return undefined;
    case 'f64': return typeof a === 'string' ? undefined : Number(a);
    case 'str': return toText(a)!;
    default: return cellKinds(t)[i] ? keyOfCell(c, a) : toJson(a);
  }
}

/** A `$n` parameter as a SQL value: arrays and objects as their JSON text (a vector, a json value). */
function paramValue(v: unknown): Value {
  if (v === null || v === undefined) return null;
  if (typeof v === 'number') return Number.isInteger(v) ? BigInt(v) : v;
  if (typeof v === 'string') return v;
  if (typeof v === 'boolean') return v ? 1n : 0n;
  // beyond 64 bits: a REAL, as SQLite reads such a literal
  if (typeof v === 'bigint') return v > I64_MAX || v < I64_MIN ? Number(v) : v;
  if (isLosslessNumber(v)) {
    const n = Number(v.value);
    if (!Number.isFinite(n)) throw new DbError('validation_failed', `parameter ${v.value} is beyond the range of a double`);
    return n;
  }
  return stringifyJson(v);
}

/**
 * Plan-cache key of a statement: its text with whitespace runs collapsed, unless it holds quotes or
 * comments (where whitespace can matter), then the exact text.
 */
function cacheKeyOf(sql: string): string {
  return /--|\/\*|['"`[]/.test(sql) ? sql : sql.trim().replace(/\s+/g, ' ');
}

/** A SELECT bound and optimized once (the plan cache's entries). */
interface Prepared {
  plan: PlanNode;
  names: string[];
  passes: PassReport[];
  /** Manifests the statement was bound against: a different manifest makes the entry stale. */
  deps: [string, TableManifest][];
  /** The nodes preload reads: scan/get/index_scan (and insert), also inside subqueries. */
  leaves: PlanNode[];
  /** Idle compiled operator trees of the plan, each bound to its own ExecCtx (see ExecCtx.reset). */
  pool: { ctx: ExecCtx; op: Op }[];
  /** Runs synchronously when its leaves are cached (querySmall). */
  small: boolean;
}

/** The manifest column an `index_scan` with `top` orders by (its index's first column); checks the node. */
function topColumn(n: PlanNode & { op: 'index_scan' }, t: SqlTable): number {
  if (n.prefix?.length || n.lower || n.upper) throw new DbError('validation_failed', 'index_scan: top cannot be combined with prefix, lower or upper', { path: '$.top' });
  if (!Number.isInteger(n.top) || n.top! < 0) throw new DbError('validation_failed', 'index_scan: top must be a non-negative integer', { path: '$.top' });
  const cols = n.index === 'primary' ? t.pk : t.manifest.indexes.find((i) => i.name === n.index)?.columns;
  if (!cols?.length) throw new DbError('validation_failed', `no index ${n.index} on ${t.id}`, { path: '$.index' });
  return t.manifest.columns.findIndex((c) => c.name === cols[0]);
}

/** Leaf rows up to which a small plan runs synchronously (querySmall). */
const SMALL_ROWS = 4096;

/** Whether a plan is small (see querySmall): pk gets and pk ranges under per-row operators only. */
function isSmall(plan: PlanNode): boolean {
  let ok = true;
  const walk = (n: PlanNode) => {
    if (!ok) return;
    if (n.op === 'join' || n.op === 'with' || n.op === 'set_op' || n.op === 'scan' || n.op === 'cte_ref' || n.op === 'insert' || n.op === 'update' || n.op === 'delete') { ok = false; return; }
    if (n.op === 'index_scan' && n.index !== 'primary' && n.top === undefined) { ok = false; return; }
    forEachSubplan(n, () => { ok = false; });
    for (const c of planChildren(n)) walk(c);
  };
  walk(plan);
  return ok;
}

/** Idle compiled trees kept per cached plan (concurrent runs beyond this compile their own). */
const POOL_SIZE = 4;

const NO_COLUMNS = new Scope([]);

/** The value of a constant expression (a literal, a `$n`, or a folded-out expression of them). */
function constantOf(e: Expr, ctx: ExecCtx): Value {
  if (e.kind === 'param') {
    const v = ctx.params[e.index - 1];
    if (v === undefined) throw new DbError('validation_failed', `no value bound for $${e.index}`);
    return v;
  }
  let f = ctx.constants.get(e);
  if (!f) ctx.constants.set(e, (f = new ExprCompiler(ctx).compile(e, NO_COLUMNS)));
  return f([], null);
}

/** Every node of a plan that reads storage (scan/get/index_scan, insert's key hint), subqueries included. */
function leafNodes(plan: PlanNode): PlanNode[] {
  const out: PlanNode[] = [];
  const walk = (n: PlanNode) => {
    if (n.op === 'scan' || n.op === 'get' || n.op === 'index_scan' || n.op === 'insert') out.push(n);
    for (const c of planChildren(n)) walk(c);
    forEachSubplan(n, walk);
  };
  walk(plan);
  return out;
}

/** Subquery plans inside a node's expressions. */
export function forEachSubplan(n: PlanNode, f: (p: PlanNode) => void): void {
  const seen = (x: unknown): void => {
    if (!x || typeof x !== 'object') return;
    if (Array.isArray(x)) { x.forEach(seen); return; }
    const o = x as Record<string, unknown>;
    if ((o.kind === 'in_subquery' || o.kind === 'exists' || o.kind === 'subquery') && o.plan) { f(o.plan as PlanNode); }
    for (const [k, v] of Object.entries(o)) {
      if (k === 'plan' && (o.kind === 'in_subquery' || o.kind === 'exists' || o.kind === 'subquery')) continue;
      seen(v);
    }
  };
  const o = n as unknown as Record<string, unknown>;
  for (const [k, v] of Object.entries(o)) {
    if (k === 'input' || k === 'left' || k === 'right' || k === 'ctes') continue;
    seen(v);
  }
}

function explainTree(plan: PlanNode, ctx: ExecCtx): unknown {
  const node = (n: PlanNode): unknown => {
    const st = ctx.stats.get(n);
    const detail = n.op === 'scan' || n.op === 'get' || n.op === 'index_scan' ? `${n.schema}${'index' in n ? ` via ${n.index}` : ''}${n.op === 'index_scan' && n.top !== undefined ? ` top ${n.top}${n.reverse ? ' reverse' : ''}` : ''}` : n.op === 'join' ? `${n.kind} ${n.strategy ?? 'nested_loop'}` : undefined;
    return { op: n.op, ...(detail ? { detail } : {}), rows_out: st?.rows ?? 0, time_ms: round(st?.ms ?? 0), children: planChildren(n).map(node) };
  };
  return node(plan);
}

export { typeName };
