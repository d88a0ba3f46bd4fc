/**
 * WITH: common table expressions, recursive ones included.
 *
 * A CTE is evaluated into `ctx.ctes` before the query reads it, except a recursive CTE that the
 * query reads exactly once (one `cte_ref` in the main operator tree, none in a subquery, none in a
 * later CTE): that one is **streamed**, SQLite's way. Each step's rows are handed to the reader as
 * they are produced instead of being kept until the recursion ends, so `WITH RECURSIVE c(n) AS
 * (… n < 1000000) SELECT count(*) FROM c` holds one step's rows at a time, not a million: no rows
 * held in the memory budget, and no million live tuples for every young-generation GC to copy (the
 * pauses that made point reads wait, issue 25 §3). A reader that stops early (a LIMIT) stops the
 * recursion too.
 */
import { DbError } from '@mmdb/core';
import { children, forEachNode, type NodeOf, type PlanNode } from '@mmdb/plan';
import { tupleKey, type Tuple } from '../values';
import type { ExecCtx } from './context';
import { drain, mk, slices, YIELD_MS, type C, type CompileFn, type Op } from './op-kit';
import type { ColInfo, Env } from './scope';

interface Def { name: string; op: Op; rec?: { base: Op; step: Op; all: boolean }; stream?: PlanNode }

/** The one `cte_ref` of `name` the query reads, when the CTE may be streamed into it (see above). */
function streamTarget(name: string, input: PlanNode, later: readonly PlanNode[]): PlanNode | undefined {
  const isRef = (n: PlanNode) => n.op === 'cte_ref' && n.name.toLowerCase() === name;
  let everywhere = 0;
  let shadowed = false;
  const count = (n: PlanNode) => {
    if (isRef(n)) everywhere++;
    if (n.op === 'with' && n.ctes.some((x) => x.name.toLowerCase() === name)) shadowed = true;
  };
  forEachNode(input, count);
  for (const p of later) forEachNode(p, count);
  if (shadowed || everywhere !== 1) return undefined;
  // the reference must sit in the main operator tree (a subquery may run once per outer row)
  let found: PlanNode | undefined;
  const main = (n: PlanNode) => {
    if (isRef(n)) found = n;
    for (const k of children(n)) main(k);
  };
  main(input);
  return found;
}

/** Keeps the rows not seen before (UNION's distinct rows). */
const fresh = (rows: readonly Tuple[], seen: Set<string>): Tuple[] =>
  rows.filter((r) => { const k = tupleKey(r); if (seen.has(k)) return false; seen.add(k); return true; });

/**
 * Runs a recursive CTE. `stream`: yields each step's rows (and nothing is kept); otherwise keeps
 * them all in ctx.ctes and yields only empty batches (at most every YIELD_MS), so the driver can
 * give the event loop back in the middle of a long recursion.
 */
function* recurse(d: Def, ctx: ExecCtx, up: Env | null, stream: boolean): Generator<Tuple[]> {
  const rec = d.rec!;
  let mark = performance.now();
  const seen = new Set<string>();
  const all: Tuple[] = [];
  let steps = 0;
  let work: readonly Tuple[] = drain(rec.base, ctx, up);
  if (!rec.all) work = fresh(work, seen);
  while (work.length) {
    ctx.check();
    ctx.hold(work.length);
    if (stream) yield* slices(work, ctx);
    else for (const r of work) all.push(r);
    ctx.ctes.set(d.name, work);
    let next: Tuple[];
    if (rec.step.all) {
      next = rec.step.all(ctx, up).slice(); // per-row operators over arrays: cheap, no generators
    } else {
      // a step with a join or a sort of its own can be long: it yields inside, too
      next = [];
      for (const b of rec.step.run(ctx, up)) {
        for (const r of b) next.push(r);
        if (performance.now() - mark > YIELD_MS) { yield []; mark = performance.now(); }
      }
    }
    if (stream) ctx.release(work.length);
    work = rec.all ? next : fresh(next, seen);
    if ((++steps & 63) === 0 && performance.now() - mark > YIELD_MS) { yield []; mark = performance.now(); }
  }
  if (stream) ctx.ctes.delete(d.name);
  else ctx.ctes.set(d.name, all);
}

export function withOp(n: NodeOf<'with'>, c: C, compile: CompileFn): Op {
  const kids: Op[] = [];
  const defs: Def[] = [];
  n.ctes.forEach((cte, i) => {
    const name = cte.name.toLowerCase();
    const rename = (cols: readonly ColInfo[]) => {
      if (cte.columns && cte.columns.length !== cols.length) throw new DbError('validation_failed', `table ${cte.name} has ${cols.length} values for ${cte.columns.length} columns`);
      return cols.map((x, j) => ({ name: cte.columns?.[j] ?? x.name.slice(x.name.lastIndexOf('.') + 1), aff: x.aff }));
    };
    if (cte.recursive && cte.plan.op === 'set_op' && cte.plan.kind === 'union') {
      const base = compile(cte.plan.left, c);
      c.ctx.cteCols.set(name, rename(base.cols));
      const step = compile(cte.plan.right, c);
      const stream = streamTarget(name, n.input, n.ctes.slice(i + 1).map((x) => x.plan));
      if (stream) c.ctx.cteStreamed.add(stream);
      defs.push({ name, op: base, rec: { base, step, all: !!cte.plan.all }, stream });
      kids.push(base, step);
    } else {
      const op = compile(cte.plan, c);
      c.ctx.cteCols.set(name, rename(op.cols));
      defs.push({ name, op });
      kids.push(op);
    }
  });
  const input = compile(n.input, c);
  /** Evaluates every CTE into ctx.ctes (a streamed one: registers its stream for its reader). */
  const materialize = function* (ctx: ExecCtx, up: Env | null): Generator<Tuple[]> {
    for (const d of defs) {
      if (d.stream) { ctx.cteStreams.set(d.stream, () => recurse(d, ctx, up, true)); continue; }
      if (d.rec) { yield* recurse(d, ctx, up, false); continue; }
      const rows = drain(d.op, ctx, up);
      ctx.hold(rows.length);
      ctx.ctes.set(d.name, rows);
    }
  };
  return mk(n, input.cols, [...kids, input], function* (ctx, up) {
    const saved = defs.map((d) => ctx.ctes.get(d.name));
    try {
      yield* materialize(ctx, up);
      yield* input.run(ctx, up);
    } finally {
      defs.forEach((d, i) => {
        if (d.stream) ctx.cteStreams.delete(d.stream);
        if (saved[i]) ctx.ctes.set(d.name, saved[i]!); else ctx.ctes.delete(d.name);
      });
    }
  });
}

/** A `cte_ref` a recursive CTE streams into: reads the stream (no `all`: the stream yields between steps). */
export function streamedRefOp(n: NodeOf<'cte_ref'>, cols: readonly ColInfo[]): Op {
  const name = n.name.toLowerCase();
  return mk(n, cols, [], function* (ctx) {
    const s = ctx.cteStreams.get(n);
    if (s) yield* s();
    else yield* slices(ctx.ctes.get(name) ?? [], ctx);
  });
}
