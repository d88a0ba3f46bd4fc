import { DbError } from '@mmdb/core';
import type { PlanNode } from '@mmdb/plan';
import type { Tuple, Value } from '../values';
import type { ColInfo } from './scope';

/** A table as the executor sees it: column layout of its tuples. */
export interface TableInfo {
  readonly id: string;
  /** Unqualified column names in tuple order (the last one is `#version`). */
  readonly cols: readonly ColInfo[];
  readonly pk: readonly string[];
  readonly hiddenRowid: boolean;
}

/** Writes requested by insert/update/delete nodes; implemented by the engine. */
export interface Writer {
  insert(node: PlanNode & { op: 'insert' }, row: Tuple): Tuple | null;
  update(node: PlanNode & { op: 'update' }, before: Tuple, after: Tuple): Tuple;
  delete(node: PlanNode & { op: 'delete' }, row: Tuple): void;
}

export interface NodeStats { rows: number; ms: number }

export interface Budget {
  /** Rows an operator may hold in memory at once (sort, hash, aggregate, preload, the answer), summed per query. */
  readonly maxRows: number;
  /** Wall-clock deadline (ms since epoch). */
  readonly deadline: number;
  /** Graph nodes a query's traversals may visit in all (BFS caps nodes, not only depth). */
  readonly maxNodes?: number;
}

/** A tenant's query limits (the executor's defaults; a request may only lower them). */
export interface QueryLimits {
  /** Milliseconds before `query_timeout`. */
  readonly timeoutMs: number;
  /** Rows held in memory at once, the answer included, before `resource_exhausted`. */
  readonly maxRows: number;
  /** Graph nodes visited by the query's traversals before `resource_exhausted`. */
  readonly maxNodes: number;
}

export const DEFAULT_LIMITS: QueryLimits = { timeoutMs: 30_000, maxRows: 2_000_000, maxNodes: 1_000_000 };

/**
 * Execution state of one query. A compiled operator tree is bound to one ExecCtx for its life; the
 * engine keeps idle (tree, ctx) pairs per cached plan and `reset`s the ctx for the next query, so a
 * tree is never used by two queries at once (each query takes a pair out of the pool, or compiles
 * its own) and nothing per-query survives a reset: params, leaf rows, budget, writer, CTE rows,
 * the held-row count, and (through `epoch`) the results of uncorrelated subqueries.
 */
export class ExecCtx {
  readonly ctes = new Map<string, readonly Tuple[]>();
  /** Compile-time: columns of the CTEs in scope. */
  readonly cteCols = new Map<string, readonly ColInfo[]>();
  /** Compile-time: the `cte_ref` nodes a recursive CTE streams into (exec/with-op.ts). */
  readonly cteStreamed = new Set<PlanNode>();
  /** Run-time: the stream of rows each of those `cte_ref` nodes reads. */
  readonly cteStreams = new Map<PlanNode, () => Iterable<Tuple[]>>();
  readonly stats = new Map<PlanNode, NodeStats>();
  /** Rows of the leaf nodes (scan/get/index_scan), filled before the operators run. */
  readonly leaves = new Map<PlanNode, Tuple[]>();
  /**
   * For a scan leaf answered whole from a cached table (no transaction overlay): the tuple
   * positions of its primary key and a lookup by key values, so a hash join whose keys are that
   * primary key probes it instead of hashing the whole table.
   */
  readonly pkIndex = new Map<PlanNode, { readonly cols: readonly number[]; get(values: readonly Value[]): Tuple | undefined }>();
  /** Per-query state a multi-model leaf prepared for its operator (graph adjacency, reached rows). */
  readonly aux = new Map<PlanNode, unknown>();
  /** How a node ran, for explain (index or exact scan, top-k algorithm, frontier sizes). */
  readonly strategies = new Map<PlanNode, string>();
  /** Milliseconds a leaf spent reading before the operators ran (explain adds it to the node's time). */
  readonly loadMs = new Map<PlanNode, number>();
  /** Compiled constant expressions of leaf keys and bounds (they read params at call time). */
  readonly constants = new Map<object, (row: Tuple, up: null) => Value>();
  /** Highest `$n` the compiled expressions read (checked again on reset). */
  maxParam = 0;
  /** Bumped by every reset: per-query caches inside compiled closures compare it. */
  epoch = 0;
  cancelled = false;
  /** Times this query gave the event loop back (exec/turns.ts) since the last reset. */
  yields = 0;
  private held = 0;
  private ticks = 0;
  private visited = 0;

  constructor(
    public params: Value[],
    readonly table: (schema: string) => TableInfo,
    public budget: Budget,
    public writer: Writer | null,
    readonly explain: boolean,
  ) {}

  /** Rows preloaded for a leaf node. */
  leafRows(node: PlanNode): Tuple[] {
    return this.leaves.get(node) ?? [];
  }

  /**
   * Readies a ctx (and the tree compiled against it) for another query. `keepLeaves`: the caller
   * sets every leaf's rows itself before each run (watch matching, over-rows.ts), so the leaf map
   * keeps its keys: clearing it (or deleting a key) allocates a new hash table, once per row.
   */
  reset(params: Value[], budget: Budget, writer: Writer | null, keepLeaves = false): void {
    if (params.length < this.maxParam) throw new DbError('validation_failed', `no value bound for $${params.length + 1}`);
    this.params = params;
    this.budget = budget;
    this.writer = writer;
    // Map.clear() allocates a fresh table even for an empty map: a reset per row (watch
    // matching, small plans) would otherwise make six of them each time
    if (this.leaves.size && !keepLeaves) this.leaves.clear();
    if (this.pkIndex.size) this.pkIndex.clear();
    if (this.aux.size) this.aux.clear();
    if (this.strategies.size) this.strategies.clear();
    if (this.loadMs.size) this.loadMs.clear();
    if (this.ctes.size) this.ctes.clear();
    if (this.cteStreams.size) this.cteStreams.clear();
    this.cancelled = false;
    this.held = 0;
    this.ticks = 0;
    this.yields = 0;
    this.visited = 0;
    this.epoch++;
  }

  /** Checked between batches: cancellation and the time budget. */
  check(): void {
    if (this.cancelled) throw new DbError('query_cancelled', 'query cancelled through POST /v1/queries/{id}/cancel');
    if ((++this.ticks & 15) === 0 && Date.now() > this.budget.deadline) {
      throw new DbError('query_timeout', `query ran past its time budget`);
    }
  }

  /** Accounts rows held in memory; throws resource_exhausted past the budget. */
  hold(n: number): void {
    this.held += n;
    if (this.held > this.budget.maxRows) {
      throw new DbError('resource_exhausted', `query holds more than ${this.budget.maxRows} rows in memory (memory budget)`);
    }
  }

  /** Accounts graph nodes a traversal visited; throws resource_exhausted past the budget. */
  visit(n: number): void {
    this.visited += n;
    const max = this.budget.maxNodes ?? Infinity;
    if (this.visited > max) {
      throw new DbError('resource_exhausted', `query visits more than ${max} graph nodes (node budget)`);
    }
  }

  release(n: number): void {
    this.held -= n;
  }
}
