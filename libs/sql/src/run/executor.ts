/**
 * The plan executor: one object per tenant store, built with the Sources port (every leaf reads
 * through it: rows and indexes from one storage snapshot per query, the full-text, vector and
 * graph readers beside it) and the Policy port (applied at every leaf). SQL, POST /query and the
 * vector / full-text / graph routes run their plans here; so will every later surface.
 */
import { DbError, isInternalTable } from '@mmdb/core';
import type { PkTuple, Snapshot, StoredResponse } from '@mmdb/storage';
import type { PlanNode } from '@mmdb/plan';
import type { Row, TableManifest } from '@mmdb/core';
import { findManifest, querySnapshot, sqlTable, type SqlTable } from '../catalog';
import { DEFAULT_LIMITS, ExecCtx, type Budget, type QueryLimits, type Writer } from '../exec/context';
import { compilePlan, type Op } from '../exec/ops';
import { TableCache } from '../exec/table-cache';
import { optimize, type OptCatalog, type PassReport } from '../optimizer/optimizer';
import { outputNames } from '../optimizer/util';
import type { Tuple, Value } from '../values';
import { LeafReader } from './leaves';
import { MultiModelReader, type SearchLeaf } from './multimodel';
import { outputKinds, type OutKind } from '../column-codec';
import { ImplicitTables } from './implicit';
import { applyPolicy, NO_POLICY, type GraphEnds, type Policy, type Sources } from './sources';
import { explainTree, round, isSmall as isSmallPlan, leafNodes, POOL_SIZE, SMALL_ROWS } from './walks';
import { makeWriter, type Txn } from './writer';
import { writeChecker, type RowCheck } from './write-check';
import { nextTurn, sliceMs } from '../exec/turns';

/** How long a query that scans tables waits for an in-flight commit group to apply before it takes an unstable snapshot (ms). */
const STABLE_WAIT_MS = 20;

export interface QueryOptions {
  params?: unknown[];
  /** `translate` (HTTP default, spec §4.5): DELETE answers the keys; `execute` removes rows (conformance runs). */
  deleteMode?: 'translate' | 'execute';
  explain?: boolean;
  queryId?: string;
  /** Milliseconds before `query_timeout` (the tenant's limit, default 30 s; only lowers it). */
  timeoutMs?: number;
  /** Rows a query may hold in memory (the tenant's limit, default 2,000,000; only lowers it). */
  maxRows?: number;
  /** Plan-cache key (set by run() for single SELECTs). */
  cacheKey?: string;
  /**
   * The acting user's policy for this request (row-level security, grants): replaces the
   * executor's own for this query. Plans prepared under it are cached under `policyKey`.
   */
  policy?: Policy;
  /** Distinguishes cached plans prepared under different policies (user and catalogue version). */
  policyKey?: string;
  /**
   * Read this storage snapshot (the caller's, released by the caller) instead of the store as
   * it is now: a watch subscription's snapshot event must be exactly the rows at a known LSN.
   */
  snapshot?: Snapshot;
  /** Who runs the statement (the acting user), for what it records (a migration's audit). */
  actor?: string;
  /**
   * The request's Idempotency-Key (spec 5.6): its record is committed in the frame of the
   * script's writes, so the answer is durable exactly when the write is (engine.ts,
   * `checkIdempotentScript`, says which scripts may carry one).
   */
  idempotency?: SqlIdempotency;
}

/** An Idempotency-Key for one `run` (see QueryOptions.idempotency). */
export interface SqlIdempotency {
  readonly key: string;
  /** Hash of the request: the same key with another fingerprint is 409 `conflict`. */
  readonly fingerprint: string;
  readonly expiresAt: number;
  /** The response a replay answers, rendered in the commit from the script's results so far. */
  answer(results: readonly RawResult[]): StoredResponse;
  /** Set by the engine when the store already held this key with this fingerprint: nothing was written; answer this. */
  replayed?: StoredResponse;
}

/** One statement's answer, values still in engine form (bigint integers). */
export type RawResult =
  | { kind: 'select'; names: string[]; rows: Tuple[]; explain?: unknown; kinds?: OutKind[] }
  | { kind: 'insert'; schema: string; rows: Row[]; names: string[]; returning: Tuple[]; kinds?: OutKind[] }
  | { kind: 'update'; schema: string; count: number; names: string[]; returning: Tuple[]; kinds?: OutKind[] }
  | { kind: 'delete'; schema: string; pks: PkTuple[]; translated: boolean }
  | { kind: 'ddl'; statement: string; schema?: string; created?: boolean }
  | { kind: 'transaction'; statement: 'begin' | 'commit' | 'rollback' };

export type SelectResult = Extract<RawResult, { kind: 'select' }>;

/** A running query, for cancellation. */
export interface Running { ctx: ExecCtx | null; cancelled: boolean; tenant?: string }

/** A plan optimized once (the plan cache's entries). */
export interface Prepared {
  plan: PlanNode;
  names: string[];
  passes: PassReport[];
  /** Manifests the statement was bound against: a different manifest makes the entry stale. */
  deps: [string, TableManifest][];
  /** The nodes preload reads (walks.ts leafNodes), also inside subqueries. */
  leaves: PlanNode[];
  /** Idle compiled operator trees of the plan, each bound to its own ExecCtx (see ExecCtx.reset). */
  pool: { ctx: ExecCtx; op: Op }[];
  /** Runs synchronously when its leaves are cached (querySmall). */
  small: boolean;
}

export class PlanExecutor {
  /** Decoded tuples per table, reused across queries whose stable snapshot has the same table LSN. */
  readonly tables: TableCache;
  /** Next INTEGER PRIMARY KEY per table, read by an insert's preload. */
  readonly maxPkHint = new Map<string, bigint>();
  private readonly leafReader: LeafReader;
  private readonly multi: MultiModelReader;

  constructor(readonly sources: Sources, readonly policy: Policy = NO_POLICY, readonly limits: QueryLimits = DEFAULT_LIMITS) {
    this.tables = TableCache.of(sources.store);
    this.implicit = new ImplicitTables(sources);
    this.leafReader = new LeafReader(sources.store, this.tables, (id) => this.table(id), this.maxPkHint, (t) => this.implicit.rows(t));
    this.multi = new MultiModelReader(sources, (id) => this.table(id), this.leafReader, (t) => this.implicit.kind(t));
  }

  /** A table by schema id (or SQL name; or a standalone vector / full-text table's implicit manifest), or 404 schema_not_found. */
  table(id: string): SqlTable {
    const store = this.sources.store;
    const named = store.manifest(id) ?? findManifest(store, id);
    // A migration's shadow is the store's own, not a table of the user's.
    const m = (named && !isInternalTable(named.table) ? named : undefined) ?? this.implicit.manifest(id);
    if (!m) throw new DbError('schema_not_found', `no such table: ${id}`, { schema: id });
    return sqlTable(store, m);
  }

  /** Implicit manifests of standalone vector and full-text tables (created by a first put, no manifest). */
  readonly implicit: ImplicitTables;

  /** A graph leaf's reached and start tables (undefined without a graph reader or relation: the leaf's own error then). */
  private readonly graphEnds: GraphEnds = (n) => {
    const graph = this.sources.graph;
    if (!graph) return undefined;
    let d;
    try { d = graph.resolve(n.schema, n.rel).def; } catch { return undefined; }
    const dir = n.op === 'graph_dijkstra' ? 'forward' : n.direction ?? 'forward';
    return dir === 'reverse' ? { reached: d.source, start: d.target } : dir === 'forward' ? { reached: d.target, start: d.source } : { reached: d.target, start: d.target };
  };

  /** Optimizes a plan (the policy applied first) and remembers what it needs to run again. */
  prepare(plan: PlanNode, names: string[], deps: [string, TableManifest][] = [], policy: Policy = this.policy): Prepared {
    const o = optimize(applyPolicy(plan, policy, (n) => outputNames(n, this.optCatalog()), this.graphEnds), this.optCatalog());
    policy.checkPlan?.(o.plan);
    return { plan: o.plan, names, passes: o.passes, deps, leaves: leafNodes(o.plan), pool: [], small: isSmallPlan(o.plan) };
  }

  writer(txn: Txn, check?: RowCheck): Writer {
    return makeWriter((id) => this.table(id), txn, this.maxPkHint, check);
  }

  optCatalog(): OptCatalog {
    return {
      table: (id: string) => this.table(id),
      rowCount: (id: string) => this.tables.rowCount(id),
      reached: (schema, rel, direction) => {
        const graph = this.sources.graph;
        if (!graph) throw new DbError('not_found', `relation "${rel}" is not declared`, { rel });
        const d = graph.resolve(schema, rel).def;
        return direction === 'reverse' ? d.source : d.target;
      },
    };
  }

  budget(opts: QueryOptions): Budget {
    const l = this.limits;
    return {
      maxRows: Math.min(opts.maxRows ?? l.maxRows, l.maxRows),
      deadline: Date.now() + Math.min(opts.timeoutMs ?? l.timeoutMs, l.timeoutMs),
      maxNodes: l.maxNodes,
    };
  }

  ctx(params: Value[], writer: Writer | null, opts: QueryOptions): ExecCtx {
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
    const policy = opts.policy ?? this.policy;
    const { plan, passes } = prepared ?? optimize(applyPolicy(plan0, policy, (n) => outputNames(n, this.optCatalog()), this.graphEnds), this.optCatalog(), { noIndex: !!txn && txn.overlay.size > 0 });
    if (!prepared) policy.checkPlan?.(plan);
    const leafList = prepared?.leaves ?? leafNodes(plan);
    let ctx: ExecCtx;
    const writer = txn ? this.writer(txn, writeChecker(policy, () => ctx)) : null;
    const pool = prepared && !opts.explain ? prepared.pool : null;
    const inst = pool?.pop();
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
      const plain = !opts.snapshot && (!txn || txn.overlay.size === 0);
      if (!plain || !(this.preloadCurrent(leafList, ctx) || (await this.preloadCurrentSearch(leafList, ctx)))) {
        // one snapshot; the multi-model leaves start their in-memory reads in this same turn
        const s = opts.snapshot ?? (snap = await this.snapshotFor(leafList));
        await Promise.all([this.leafReader.preload(leafList, s, ctx.leaves, txn, ctx), this.multi.preload(leafList, s, ctx, txn)]);
      }
      if (!op) op = compilePlan(plan, ctx, null);
      const rows: Tuple[] = [];
      let last = snap ? performance.now() : t0; // setup without a storage read (planning, compiling) counts towards the first slice
      for (const b of op.run(ctx, null)) {
        for (const r of b) rows.push(r);
        ctx.hold(b.length); // the answer is held too (rows materialized)
        if (performance.now() - last > sliceMs(ctx)) {
          // give the loop back (other requests, a cancel, SIGTERM): one slice per loop turn, the
          // queries in their first turns before the long-running ones (exec/turns.ts)
          await nextTurn(ctx);
          last = performance.now();
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
   * Answers every leaf from the store as it is now, in this turn, with no storage snapshot: the
   * storage leaves from the table cache at the current table LSNs, graph_expand leaves from their
   * built adjacency and the cache (MultiModelReader.expandCurrent); false when one cannot be.
   */
  private preloadCurrent(leaves: readonly PlanNode[], ctx: ExecCtx): boolean {
    let graph = false;
    for (const n of leaves) if (n.op === 'graph_expand') graph = true;
    if (!graph) return this.leafReader.preloadCurrent(leaves, ctx);
    return this.multi.expandCurrent(leaves.filter((n) => n.op === 'graph_expand'), ctx) && this.leafReader.preloadCurrent(leaves.filter((n) => n.op !== 'graph_expand'), ctx);
  }

  /**
   * Answers a plan whose leaves are search leaves (`fts_search`, `vector_topk`) and
   * table-cache leaves from the store as it is now, with no storage snapshot: each LevelDB
   * snapshot is taken under LevelDB's mutex on this thread, which its background thread holds
   * after a flush (the blocked stalls of issue 25 §1). The in-memory indexes and the table cache
   * follow the same applied frames; they agree while no group is between its apply and its
   * publication (`store.settled`), checked before and after. A search may be asynchronous, so the
   * table cache's last published LSN is compared before and after too: a frame applied in between
   * (or a lazily taken snapshot for positions that is not stable) discards what was read, and the
   * caller takes a snapshot as before. False also when a leaf cannot be answered so (a top-k
   * filter with a subquery, another multi-model leaf, a table not cached by key text).
   */
  private async preloadCurrentSearch(leaves: readonly PlanNode[], ctx: ExecCtx): Promise<boolean> {
    const searches = leaves.filter((n): n is SearchLeaf => n.op === 'fts_search' || n.op === 'vector_topk');
    const rest = leaves.filter((n) => !searches.includes(n as SearchLeaf));
    if (!searches.length || rest.some((n) => n.op !== 'scan' && n.op !== 'get' && n.op !== 'index_scan')) return false;
    // a leaf whose reader is missing takes the snapshot path (and its error there)
    if (searches.some((n) => (n.op === 'fts_search' ? !this.sources.fts : !this.sources.vector))) return false;
    const store = this.sources.store;
    const settled = () => store.settled !== false;
    const seen = this.tables.lastFrame;
    if (seen < 0 || !settled() || !this.leafReader.preloadCurrent(rest, ctx)) return false;
    let lazy: Snapshot | undefined;
    const positions = { rawGetMany: (keys: Buffer[]) => (lazy ??= querySnapshot(store)).rawGetMany(keys) } as unknown as Snapshot;
    let ok = false;
    try {
      // each leaf checks that no frame was applied (and the store is settled) once its hits and
      // rows are in hand, before the leaf builds its output
      ok = (await this.multi.searchCurrent(searches, positions, ctx, () => this.tables.lastFrame === seen && settled())) && (!lazy || lazy.stable);
    } finally {
      if (lazy) await lazy.release();
      if (!ok) {
        for (const n of rest) ctx.release(ctx.leaves.get(n)?.length ?? 0); // held by preloadCurrent
        for (const n of leaves) ctx.leaves.delete(n);
        ctx.pkIndex.clear();
      }
    }
    if (ok) this.currentFts++;
    return ok;
  }

  /** Plans with search leaves (full-text, vector) answered at the current LSN, without a storage snapshot (tests and metrics). */
  currentFts = 0;

  /**
   * The query's storage snapshot. A snapshot taken while a commit group is between its write and
   * its apply is *unstable*: the table cache cannot answer it (it may or may not hold that group's
   * rows), so every table it scans is read and decoded whole. When the plan scans tables (a scan,
   * a `top` index read, a multi-model leaf), waiting the few milliseconds until the group is applied
   * costs far less: retried every millisecond for up to STABLE_WAIT_MS (a writer that never pauses
   * gets the unstable one, as before). The query then reads after that group, which it was
   * concurrent with: either order is a valid one.
   */
  private async snapshotFor(leaves: readonly PlanNode[]): Promise<Snapshot> {
    let s = querySnapshot(this.sources.store);
    if (s.stable || !leaves.some((n) => n.op !== 'get' && n.op !== 'insert' && (n.op !== 'index_scan' || n.top !== undefined))) return s;
    const until = performance.now() + STABLE_WAIT_MS;
    while (!s.stable && performance.now() < until) {
      await s.release();
      await new Promise((r) => setTimeout(r, 1));
      s = querySnapshot(this.sources.store);
    }
    return s;
  }

  /**
   * Runs a small prepared plan synchronously when every leaf is answered from the table cache at
   * the store's current table LSNs; undefined when one is not (the caller takes the general path).
   * "Small" (Prepared.small) = no join, CTE, set operation or subquery, and only pk `get`s and
   * primary-key ranges as leaves: the work is bounded by the rows of those leaves (at most
   * SMALL_ROWS here), so not yielding to the event loop cannot starve a cancel request for long.
   */
  querySmall(p: Prepared, params: Value[], opts: QueryOptions): RawResult | undefined {
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
      if (!this.leafReader.preloadCurrent(p.leaves, ctx, SMALL_ROWS)) return undefined;
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
}
