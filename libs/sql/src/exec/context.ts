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
  /** Rows an operator may hold in memory at once (sort, hash, aggregate, preload), summed per query. */
  readonly maxRows: number;
  /** Wall-clock deadline (ms since epoch). */
  readonly deadline: number;
}

/** Per-query execution state. */
export class ExecCtx {
  readonly ctes = new Map<string, Tuple[]>();
  readonly cteCols = new Map<string, readonly ColInfo[]>();
  readonly stats = new Map<PlanNode, NodeStats>();
  cancelled = false;
  private held = 0;
  private ticks = 0;

  constructor(
    readonly params: Value[],
    readonly table: (schema: string) => TableInfo,
    /** Rows preloaded for leaf nodes (scan/get/index_scan), by node. */
    readonly leafRows: (node: PlanNode) => Tuple[],
    readonly budget: Budget,
    readonly writer: Writer | null,
    readonly explain: boolean,
  ) {}

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

  release(n: number): void {
    this.held -= n;
  }
}
