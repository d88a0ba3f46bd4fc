/**
 * A plan compiled once into the executor's own operators and run over rows the caller supplies
 * for its leaves instead of a snapshot's: how a watch subscription matches a changed row (the
 * same filter and projection code as the query). Row-level security enters here as it enters
 * a query: through the plan the operators are compiled from.
 */
import type { PlanNode } from '@mmdb/plan';
import { ExecCtx, type Budget, type TableInfo } from '../exec/context';
import { compilePlan } from '../exec/ops';
import { drain } from '../exec/op-kit';
import type { Tuple, Value } from '../values';

export interface RowsEvaluator {
  readonly names: readonly string[];
  /** `params`: the values of `$1…` (a VALUES node of params is how a caller feeds computed rows). */
  run(leaves: ReadonlyMap<PlanNode, Tuple[]>, params?: readonly Value[]): Tuple[];
}

const BUDGET: Budget = { maxRows: Number.MAX_SAFE_INTEGER, deadline: Number.POSITIVE_INFINITY };
/** A leaf's rows between runs (never written: operators only read a leaf's rows). */
const NO_ROWS: Tuple[] = [];

/** `params`: how many `$n` the plan reads (each `run` passes their values). */
export function overRows(table: (id: string) => TableInfo, plan: PlanNode, names: readonly string[], params = 0): RowsEvaluator {
  const ctx = new ExecCtx(new Array<Value>(params).fill(null), table, BUDGET, null, false);
  const op = compilePlan(plan, ctx, null);
  const width = names.length || op.cols.length;
  const setLeaf = (rows: Tuple[], n: PlanNode): void => void ctx.leaves.set(n, rows);
  // (a leaf keeps its key between runs, its rows swapped for an empty array: Map.delete shrank
  // the map's table and the next set grew it, a new table per row evaluation, referenced from
  // the long-lived ctx, so it outlived scavenges: the fan-out's largest promotion in process)
  const dropLeaf = (_: Tuple[], n: PlanNode): void => void ctx.leaves.set(n, NO_ROWS);
  return {
    names: names.length ? names : op.cols.map((c) => c.name),
    run: (leaves, values = []) => {
      ctx.reset(values as Value[], BUDGET, null, true);
      leaves.forEach(setLeaf); // (forEach: no iterator and entry pair per leaf and row)
      // (drain: the operators' array path where they have one, as a scan, filter and projection
      // do: no generator, no batch per operator and row; their generators otherwise)
      const rows = drain(op, ctx, null);
      const out: Tuple[] = new Array<Tuple>(rows.length);
      for (let i = 0; i < rows.length; i++) out[i] = rows[i].length > width ? rows[i].slice(0, width) : rows[i];
      leaves.forEach(dropLeaf); // (the rows released; clear() would allocate a new table per row)
      return out;
    },
  };
}
