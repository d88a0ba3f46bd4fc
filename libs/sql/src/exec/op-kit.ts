/** The parts every operator is built from (ops.ts and the operator files beside it). */
import type { PlanNode } from '@mmdb/plan';
import type { Tuple, Value } from '../values';
import type { ExecCtx } from './context';
import { ExprCompiler, type CompileInfo } from './expr';
import { Scope, type ColInfo, type Env } from './scope';
import { SLICE_MS } from './turns';

export const BATCH = 1024;
/** Longest an operator's own loop runs before it yields an empty batch (the driver yields to the event loop). */
export const YIELD_MS = SLICE_MS;

export interface Op {
  readonly node: PlanNode;
  readonly cols: readonly ColInfo[];
  readonly children: readonly Op[];
  run(ctx: ExecCtx, up: Env | null): Iterable<Tuple[]>;
  /**
   * Every output row at once, without generators (read-only: it may be a leaf's or a CTE's own
   * array). Only per-row operators over such inputs have it; `drain` uses it when present, which
   * is what makes a recursive CTE's many tiny steps cheap.
   */
  all?(ctx: ExecCtx, up: Env | null): readonly Tuple[];
}

export interface C { ctx: ExecCtx; outer: Scope | null; info: CompileInfo }

export function qualify(alias: string | undefined, name: string): string {
  return alias ? `${alias}.${name}` : name;
}

export function* slices(rows: readonly Tuple[], ctx: ExecCtx): Iterable<Tuple[]> {
  for (let i = 0; i < rows.length; i += BATCH) {
    ctx.check();
    yield rows.slice(i, i + BATCH); // a copy: leaf rows may be shared with the table cache
  }
}

/** a ++ b (faster than Array.prototype.concat for short tuples). */
export function cat(a: Tuple, b: Tuple): Tuple {
  const n = a.length;
  const out = new Array<Value>(n + b.length);
  for (let i = 0; i < n; i++) out[i] = a[i];
  for (let i = 0; i < b.length; i++) out[n + i] = b[i];
  return out;
}

/** All rows of an op (read-only). */
export function drain(op: Op, ctx: ExecCtx, up: Env | null): readonly Tuple[] {
  if (op.all) return op.all(ctx, up);
  const out: Tuple[] = [];
  for (const b of op.run(ctx, up)) {
    for (const r of b) out.push(r);
  }
  return out;
}

/**
 * All rows of an op, as `drain`, for an operator's generator that must not hold the event loop
 * for its whole input: a childless op (a leaf, values, a CTE reference) answers its array at once;
 * any other is pulled batch by batch with an empty batch yielded after each, so the driver can
 * give the loop back between slices (a filter or projection over a 200,000-row table is ~30 ms
 * of one turn through `all`). `const rows = yield* drainSteps(op, ctx, up)`.
 */
export function* drainSteps(op: Op, ctx: ExecCtx, up: Env | null): Generator<Tuple[], readonly Tuple[]> {
  if (op.all && !op.children.length) return op.all(ctx, up);
  const out: Tuple[] = [];
  for (const b of op.run(ctx, up)) {
    for (const r of b) out.push(r);
    yield [];
  }
  return out;
}

/** True when `op.all` only hands over an array it holds (a childless op), so calling it is not a long turn. */
export const cheapAll = (op: Op): boolean => !!op.all && !op.children.length;

export function expr(c: C, cols: readonly ColInfo[]) {
  const scope = new Scope(cols, c.outer);
  const comp = new ExprCompiler(c.ctx);
  return (e: Parameters<ExprCompiler['compile']>[0]) => comp.compile(e, scope, c.info);
}

export function mk(node: PlanNode, cols: readonly ColInfo[], children: Op[], run: (ctx: ExecCtx, up: Env | null) => Iterable<Tuple[]>, all?: Op['all']): Op {
  return all ? { node, cols, children, run, all } : { node, cols, children, run };
}

/** A leaf's rows as they are (read-only), for `all`. */
export const leafAll = (n: PlanNode) => (ctx: ExecCtx): readonly Tuple[] => { ctx.check(); return ctx.leafRows(n); };

/** Columns of a table leaf: the manifest's (named `alias.col` with an alias), then `#version:alias`. */
export const leafColumns = (ctx: ExecCtx, schema: string, alias: string | undefined): ColInfo[] =>
  ctx.table(schema).cols.map((c) => ({ name: c.name.startsWith('#') ? `${c.name}:${alias ?? schema}` : qualify(alias, c.name), aff: c.aff }));


/** Compiles a child plan (ops.ts's compile, passed to operator files to keep them free of a cycle). */
export type CompileFn = (node: PlanNode, c: C) => Op;
