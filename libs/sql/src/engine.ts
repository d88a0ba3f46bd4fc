/**
 * The SQL driver over one tenant store: parses a script, runs each statement (statements.ts) on
 * the plan executor (run/executor.ts) with one commit per statement or per BEGIN…COMMIT, keeps
 * the plan cache, and cancels running queries. JSON plans (POST /query) run on the same executor.
 */
import { DbError, isLosslessNumber, newUlid, stringifyJson, type JsonValue, type Row, type TableManifest } from '@mmdb/core';
import type { StoredRow } from '@mmdb/storage';
import { forEachNode, validatePlan, type PlanNode } from '@mmdb/plan';
import { parseSql } from './front/parser';
import type { AExpr, Select } from './front/ast';
import { Binder, type BindCatalog } from './front/binder';
import { findManifest, sqlTable, type SqlStore, type SqlTable } from './catalog';
import { ExprCompiler } from './exec/expr';
import { rememberVectorText } from './exec/vector-functions';
import { Scope } from './exec/scope';
import type { TableCache } from './exec/table-cache';
import type { QueryLimits } from './exec/context';
import { optimize, type PassReport } from './optimizer/optimizer';
import { I64_MAX, I64_MIN, toJson, truthy, type Tuple, type Value } from './values';
import { PlanCache } from './plan-cache';
import { PlanExecutor, type Prepared, type QueryOptions, type RawResult, type Running, type SelectResult } from './run/executor';
import { annotateTypes } from './run/annotate';
import { toTuple } from './run/leaves';
import { applyPolicy, type Policy, type Sources } from './run/sources';
import type { Txn } from './run/writer';
import { runStatement, stripDot } from './statements';

export type { QueryOptions, RawResult, SqlIdempotency } from './run/executor';
export { toTuple } from './run/leaves';
export { toRow } from './run/writer';
export { typeName } from './values';

export interface ColumnMeta { name: string; type: string }

/** What the tenant registry plugs into an engine: the multi-model readers and the row policy. */
export interface EnginePorts {
  readonly sources?: Omit<Sources, 'store'>;
  readonly policy?: Policy;
  /** The tenant's query limits (time, rows, graph nodes); DEFAULT_LIMITS when absent. */
  readonly limits?: QueryLimits;
  /**
   * The tenant's cap on its table cache, in estimated bytes (the process-wide pool,
   * DB_TABLE_CACHE_BYTES, bounds every tenant's together); absent: the pool's budget alone.
   */
  readonly tableCacheBytes?: number;
}

/**
 * Runs a change of a registered table's schema (ALTER TABLE): a target manifest, or the
 * operations (libs/migrations' names) a manifest cannot say, e.g. a rename. The app installs
 * one that runs it as an online migration with auto-cutover and resolves once it completes.
 */
export type SchemaChanger = (change: { schema: string; toml?: string; operations?: JsonValue[] }, opts: QueryOptions) => Promise<void>;

/** Longest statement text whose plan-cache key is memoized (`SqlEngine.run`). */
const KEY_MEMO_MAX_CHARS = 4096;

export class SqlEngine {
  /** @internal */
  readonly views = new Map<string, Select>();
  /** ALTER TABLE through an online migration (set by the app); without it ADD COLUMN is one schema frame. */
  schemaChanger: SchemaChanger | undefined;
  /** The plan executor every statement and plan runs on (Sources and Policy ports). */
  readonly exec: PlanExecutor;
  private readonly running = new Map<string, Running>();
  readonly planCache = new PlanCache(500);

  constructor(readonly store: SqlStore, readonly tenant?: string, ports: EnginePorts = {}) {
    this.exec = new PlanExecutor({ store, ...ports.sources }, ports.policy, ports.limits);
    if (ports.tableCacheBytes !== undefined) this.exec.tables.setBudgetBytes(ports.tableCacheBytes);
  }

  /** Decoded tuples per table (the executor's table cache). */
  get tables(): TableCache {
    return this.exec.tables;
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
      // only statement-sized texts: a 1,000-row INSERT (~35 KB) is not run twice, and 2,000 of them
      // held ~70 MB of heap after a bulk load (tools/bench/curve README)
      if (sql.length <= KEY_MEMO_MAX_CHARS) {
        if (this.keyMemo.size >= 2000) this.keyMemo.clear();
        this.keyMemo.set(sql, key);
      }
    }
    if (opts.policyKey) key = `${opts.policyKey}\u0000${key}`;
    const hit = this.planCache.get(key) as Prepared | undefined;
    if (hit && this.fresh(hit)) {
      const params = (opts.params ?? []).map(paramValue);
      if (hit.small && !opts.explain) {
        // a small plan whose leaves the table cache holds at the store's current LSNs: no await at all
        const r = this.exec.querySmall(hit, params, opts);
        if (r) return [r];
      }
      this.running.set(queryId, running);
      try {
        return [await this.exec.query(hit.plan, hit.names, params, null, opts, running, hit)];
      } finally {
        this.running.delete(queryId);
      }
    }
    const stmts = parseSql(sql);
    if (opts.idempotency) checkIdempotentScript(stmts);
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
          if (st.kind === 'commit' && txn.changes.length && (await this.commit(txn, opts, out))) return out;
          txn = null;
          out.push({ kind: 'transaction', statement: st.kind });
          continue;
        }
        const own = txn ?? { changes: [], overlay: new Map(), explicit: false };
        out.push(await runStatement(this, st, params, own, opts, running));
        if (!txn && own.changes.length && (await this.commit(own, opts, out))) return out;
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

  /**
   * Commits a statement's or a transaction's changes in one frame, with the request's
   * Idempotency-Key record when it carries one (its answer rendered from `out`, the results so
   * far). True when the store already held the key (a replay): nothing was written.
   */
  private async commit(txn: Txn, opts: QueryOptions, out: readonly RawResult[]): Promise<boolean> {
    const i = opts.idempotency;
    try {
      const res = await this.store.commit({
        changes: txn.changes,
        ...(i ? { idempotency: { key: i.key, fingerprint: i.fingerprint, expiresAt: i.expiresAt, render: () => i.answer(out) } } : {}),
      });
      if (!i || !res.replayed) return false;
      i.replayed = res.replayed;
      return true;
    } catch (e) {
      if (txn.explicit && e instanceof DbError && (e.code === 'write_conflict' || e.code === 'precondition_failed' || e.code === 'row_not_found')) {
        throw new DbError('write_conflict', `transaction lost to a concurrent write: ${e.message}`, { ...e.details });
      }
      throw e;
    }
  }

  /** @internal */
  catalog(deps?: Map<string, TableManifest>): BindCatalog {
    return {
      table: (name) => {
        const stored = findManifest(this.store, name);
        if (stored) deps?.set(stored.id, stored);
        const m = stored ?? this.exec.implicit.manifest(name);
        return m ? sqlTable(this.store, m) : undefined;
      },
      view: (name) => this.views.get(name.toLowerCase()),
      relation: (schema, rel) => {
        const graph = this.exec.sources.graph;
        if (!graph) throw new DbError('not_found', `relation "${rel}" is not declared (no graph reader)`, { rel });
        return graph.resolve(this.exec.table(schema).id, rel).def;
      },
    };
  }



  /** @internal */
  constant(e: AExpr): Value {
    const bound = new Binder(this.catalog()).expr(e, { items: [], parent: null, ctes: new Map() } as never, null);
    const ctx = this.exec.ctx([], null, {});
    return new ExprCompiler(ctx).compile(bound, new Scope([]))([], null);
  }

  /** Binds and optimizes a SELECT once, remembering the manifests it was bound against. */
  /** @internal */
  prepare(st: Select, policy?: Policy): Prepared {
    const deps = new Map<string, TableManifest>();
    const b = new Binder(this.catalog(deps)).bindSelect(st, null);
    return this.exec.prepare(b.plan, b.names, [...deps], policy);
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
      // a JSON plan is typed from the manifests, optimized once and cached by its text
      const key = `${opts.policyKey ?? ''}plan\u0000${stringifyJson(plan)}`;
      let p = this.planCache.get(key) as Prepared | undefined;
      if (!p || !this.fresh(p)) {
        validatePlan(plan); // what the caller built (a route, a surface) is checked like a posted plan
        const deps = new Map<string, TableManifest>();
        forEachNode(plan, (n) => {
          const schema = (n as { schema?: unknown }).schema;
          const m = typeof schema === 'string' ? this.store.manifest(schema) : undefined;
          if (m) deps.set(m.id, m);
        });
        p = this.exec.prepare(annotateTypes(plan, (id) => this.exec.table(id)), [], [...deps], opts.policy);
        this.planCache.set(key, p);
      }
      return (await this.exec.query(p.plan, p.names, (opts.params ?? []).map(paramValue), null, opts, running, p)) as SelectResult;
    } finally {
      this.running.delete(queryId);
    }
  }

  /** Binds a SELECT. */
  /** @internal */
  bind(st: Select): { plan: PlanNode; names: string[] } {
    const b = new Binder(this.catalog()).bindSelect(st, null);
    return { plan: b.plan, names: b.names };
  }

  /**
   * Binds one SELECT as written, with no optimizer pass (a pass may turn a predicate into a
   * leaf's key or bounds, which rows given to watch/over-rows.ts would then skip): what a watch
   * subscription matches changed rows against.
   */
  bindSelect(sql: string): { plan: PlanNode; names: string[] } {
    const stmts = parseSql(sql);
    if (stmts.length !== 1 || stmts[0].kind !== 'select') throw new DbError('unsupported_sql', 'a watch query is one SELECT statement');
    return this.bind(stmts[0]);
  }

  /** The table of a schema id as the executor sees it (tuple layout, affinities). */
  tableOf(id: string): SqlTable {
    return this.exec.table(id);
  }

  /** A plan with the executor's Policy placed at its leaves (what every query runs; watch subscriptions match through it too). */
  withPolicy(plan: PlanNode): PlanNode {
    return applyPolicy(plan, this.exec.policy);
  }

  /** Parses and binds one SELECT to a plan (used by explain and tests). */
  planSql(sql: string): { plan: PlanNode; names: string[]; passes: PassReport[] } {
    const stmts = parseSql(sql);
    if (stmts.length !== 1 || stmts[0].kind !== 'select') throw new DbError('validation_failed', 'expected one SELECT');
    const b = this.bind(stmts[0]);
    const o = optimize(b.plan, this.exec.optCatalog());
    return { plan: o.plan, names: b.names, passes: o.passes };
  }


  /** Evaluates a manifest CHECK expression against a row (register with store.setCheckEvaluator). */
  readonly checkEvaluator = (expr: string, row: Row, manifest: TableManifest): boolean | null => truthy(this.evalOver(expr, row, manifest));

  /**
   * The value of a SQL expression over one row of `manifest`'s table, as JSON, without a
   * read (a migration's `using` applied to a row inside its commit: the dual write).
   */
  readonly rowEvaluator = (expr: string, row: Row, manifest: TableManifest): JsonValue => toJson(this.evalOver(expr, row, manifest)) as JsonValue;

  private evalOver(expr: string, row: Row, manifest: TableManifest): Value {
    const t = sqlTable(this.store, manifest);
    const k = `${manifest.id}\u0000${manifest.columns.map((c) => `${c.name}:${c.ty}`).join(',')}\u0000${expr}`;
    let f = this.checks.get(k);
    if (!f) {
      const ast = parseSql(`SELECT ${expr}`)[0] as Select;
      const core = ast.body as import('./front/ast').SelectCore;
      const e = (core.columns[0] as { expr: import('./front/ast').AExpr }).expr;
      const scope = { items: [{ alias: manifest.table, internal: '', cols: t.columns.map((c) => ({ ...c })) }], parent: null, ctes: new Map() };
      const bound = stripDot(new Binder(this.catalog()).expr(e, scope as never, null));
      const ctx = this.exec.ctx([], null, {});
      f = new ExprCompiler(ctx).compile(bound, new Scope(t.cols));
      this.checks.set(k, f);
    }
    return f(toTuple(t, { values: row, version: 0 } as StoredRow), null);
  }
  private readonly checks = new Map<string, (r: Tuple, u: null) => Value>();
}



/** A `$n` parameter as a SQL value: arrays and objects as their JSON text (a vector, a json value). */
export function paramValue(v: unknown): Value {
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
  const text = stringifyJson(v);
  // an array of numbers (a query vector): its text's parse is this array, so the distance functions need not parse it again
  if (Array.isArray(v)) rememberVectorText(text, v);
  return text;
}

/**
 * Plan-cache key of a statement: its text with whitespace runs collapsed, unless it holds quotes or
 * comments (where whitespace can matter), then the exact text.
 */
function cacheKeyOf(sql: string): string {
  return /--|\/\*|['"`[]/.test(sql) ? sql : sql.trim().replace(/\s+/g, ' ');
}

/**
 * A script that carries an Idempotency-Key must write in at most one frame, and that frame must
 * be its last act, so the recorded answer is the one the script gives and a replay can never find
 * half of it applied: one statement (INSERT, UPDATE, DELETE or a SELECT), or `BEGIN; …; COMMIT;`
 * holding DML and SELECTs. DDL commits frames of its own (and is made repeatable by
 * IF [NOT] EXISTS), so it is refused with a key, as are several writes outside a transaction.
 */
export function checkIdempotentScript(stmts: readonly { kind: string }[]): void {
  const DML = new Set(['select', 'insert', 'update', 'delete']);
  const one = stmts.length === 1 && DML.has(stmts[0].kind);
  const txn = stmts.length >= 2 && stmts[0].kind === 'begin' && stmts[stmts.length - 1].kind === 'commit' && stmts.slice(1, -1).every((s) => DML.has(s.kind));
  if (!one && !txn) {
    throw new DbError(
      'validation_failed',
      'with an Idempotency-Key, /sql takes one INSERT, UPDATE, DELETE or SELECT statement, or one BEGIN; …; COMMIT; script of them (its writes are one frame, recorded with the key); DDL is repeatable with IF [NOT] EXISTS instead',
      { header: 'Idempotency-Key' },
    );
  }
}
