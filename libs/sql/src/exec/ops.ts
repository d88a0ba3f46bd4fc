/** Operators: each plan node compiles to an Op whose run() yields batches of tuples. */
import { DbError, stringifyJson } from '@mmdb/core';
import { conjuncts, visit, type Expr, type NodeOf, type PlanNode, type PlanVisitor } from '@mmdb/plan';
import { compareValues, joinKey, toInteger, truthy, tupleKey, type Tuple, type Value } from '../values';
import type { ExecCtx } from './context';
import { collationKey, comparisonCollation, outputCollation, rowKeyer } from './collation';
import type { CompileInfo, Compiled } from './expr';
import { Scope, type ColInfo, type Env } from './scope';
import { makeAggregate } from './aggregates';
import { ftsSearchOp, fuseOp, graphExpandOp, graphPathOp, vectorTopkOp } from './multimodel-ops';
import { windowOp } from './window';
import { unnestOp } from './unnest';
import { streamedRefOp, withOp } from './with-op';
import { BATCH, cat, cheapAll, drain, drainSteps, expr, leafAll, leafColumns, mk, qualify, slices, type C, type Op } from './op-kit';

export { BATCH, leafColumns, type Op } from './op-kit';

/** Wraps an op to count rows and time for explain. */
function instrument(op: Op, ctx: ExecCtx): Op {
  if (!ctx.explain) return op;
  const st = { rows: 0, ms: 0 };
  ctx.stats.set(op.node, st);
  return {
    ...op,
    all: undefined, // explain counts rows per batch: every run goes through run()
    *run(c, up) {
      const it = op.run(c, up)[Symbol.iterator]();
      for (;;) {
        const t0 = performance.now();
        const r = it.next();
        st.ms += performance.now() - t0;
        if (r.done) return;
        st.rows += r.value.length;
        yield r.value;
      }
    },
  };
}


const VISITOR: PlanVisitor<Op, C> = {
  scan: (n, c) => mk(n, leafColumns(c.ctx, n.schema, n.alias), [], (ctx) => slices(ctx.leafRows(n), ctx), leafAll(n)),
  get: (n, c) => mk(n, leafColumns(c.ctx, n.schema, n.alias), [], (ctx) => slices(ctx.leafRows(n), ctx), leafAll(n)),
  index_scan: (n, c) => mk(n, leafColumns(c.ctx, n.schema, n.alias), [], (ctx) => slices(ctx.leafRows(n), ctx), leafAll(n)),
  cte_ref: (n, c) => {
    const cols = c.ctx.cteCols.get(n.name.toLowerCase());
    if (!cols) throw new DbError('validation_failed', `no such table: ${n.name}`);
    const name = n.name.toLowerCase();
    const out = cols.map((x) => ({ name: qualify(n.alias ?? n.name, x.name), aff: x.aff }));
    if (c.ctx.cteStreamed.has(n)) return streamedRefOp(n, out);
    return mk(n, out, [],
      (ctx) => slices(ctx.ctes.get(name) ?? [], ctx),
      (ctx) => { ctx.check(); return ctx.ctes.get(name) ?? []; });
  },
  values: (n, c) => {
    const e = expr(c, []);
    const rows = n.rows.map((r) => r.map(e));
    if (rows.some((r) => r.length !== n.columns.length)) throw new DbError('validation_failed', 'all VALUES rows must have the same number of terms');
    const all = (ctx: ExecCtx, up: Env | null) => { ctx.check(); return rows.map((r) => r.map((f) => f([], up))); };
    return mk(n, n.columns.map((name) => ({ name })), [], function* (ctx, up) { yield all(ctx, up); }, all);
  },
  filter: (n, c) => {
    const input = compile(n.input, c);
    const pred = expr(c, input.cols)(n.predicate);
    return mk(n, input.cols, [input], function* (ctx, up) {
      if (cheapAll(input)) {
        // over a leaf's own array: its rows in batches without copying them (a leaf's run copies each batch)
        const rows = input.all!(ctx, up);
        for (let i = 0; i < rows.length; i += BATCH) {
          ctx.check();
          const out: Tuple[] = [];
          for (let j = i, end = Math.min(rows.length, i + BATCH); j < end; j++) {
            const r = rows[j];
            const v = pred(r, up);
            if (v !== null && v !== 0n && (typeof v === 'bigint' || truthy(v) === true)) out.push(r);
          }
          yield out; // empty batches too (see below)
        }
        return;
      }
      for (const b of input.run(ctx, up)) {
        ctx.check();
        const out: Tuple[] = [];
        for (const r of b) {
          const v = pred(r, up);
          if (v !== null && v !== 0n && (typeof v === 'bigint' || truthy(v) === true)) out.push(r);
        }
        yield out; // empty batches too: they let the driver yield to the event loop (cancellation)
      }
    }, input.all && ((ctx, up) => {
      const rows = input.all!(ctx, up);
      const out: Tuple[] = [];
      for (let i = 0; i < rows.length; i++) {
        if ((i & (BATCH - 1)) === BATCH - 1) ctx.check();
        const r = rows[i];
        const v = pred(r, up);
        if (v !== null && v !== 0n && (typeof v === 'bigint' || truthy(v) === true)) out.push(r);
      }
      return out;
    }));
  },
  project: (n, c) => {
    const input = compile(n.input, c);
    const e = expr(c, input.cols);
    const fs = n.columns.map((col) => e(col.expr));
    const scope = new Scope(input.cols, c.outer);
    const cols = n.columns.map((col) => {
      const inner = col.expr.kind === 'col' ? scope.resolve(col.expr.name) : undefined;
      const coll = outputCollation(col.expr, inner?.coll);
      return {
        name: col.name,
        aff: col.expr.kind === 'col' ? col.expr.affinity ?? inner!.aff : col.expr.kind === 'cast' ? col.expr.to : undefined,
        ...(coll && coll !== 'binary' ? { coll } : {}),
      };
    });
    // a project that keeps the input's first columns in place (the column-mask projection over a
    // leaf): each row is one slice of its input, and only the other columns are computed
    let same = 0;
    while (same < n.columns.length && same < input.cols.length) {
      const x = n.columns[same].expr;
      if (x.kind !== 'col') break;
      const at = scope.find(x.name);
      if (at !== same) break;
      same++;
    }
    const rest = fs.slice(same);
    const row: (r: Tuple, up: Env | null) => Tuple = same === 0
      ? (r, up) => {
          const t = new Array<Value>(fs.length);
          for (let j = 0; j < fs.length; j++) t[j] = fs[j](r, up);
          return t;
        }
      : (r, up) => {
          const t = r.slice(0, same) as Value[];
          for (let j = 0; j < rest.length; j++) t.push(rest[j](r, up));
          return t;
        };
    return mk(n, cols, [input], function* (ctx, up) {
      for (const b of input.run(ctx, up)) {
        const out = new Array<Tuple>(b.length);
        for (let i = 0; i < b.length; i++) out[i] = row(b[i], up);
        yield out;
      }
    }, input.all && ((ctx, up) => {
      const rows = input.all!(ctx, up);
      const out = new Array<Tuple>(rows.length);
      for (let i = 0; i < rows.length; i++) {
        if ((i & (BATCH - 1)) === BATCH - 1) ctx.check();
        out[i] = row(rows[i], up);
      }
      return out;
    }));
  },
  join: (n, c) => joinOp(n, c),
  aggregate: (n0, c) => {
    // straight over the column-mask projection of a leaf: the keys and arguments take the
    // projected expressions themselves, so no masked copy of each row is materialized
    const n = collapseMaskProject(n0, c);
    const input = compile(n.input, c);
    const e = expr(c, input.cols);
    const keys = n.group.map((g) => e(g.expr));
    // a key with a collating sequence other than BINARY groups TEXT by its folded form; the group
    // shows the first value it met
    const keyOf = rowKeyer(n.group.map((g) => comparisonCollation(g.expr, null)));
    const aggs = n.aggregates.map((a) => ({ spec: a, args: a.args.map(e) }));
    const scope = new Scope(input.cols, c.outer);
    const cols: ColInfo[] = [
      ...n.group.map((g) => ({ name: g.name, aff: g.expr.kind === 'col' ? scope.resolve(g.expr.name).aff : undefined })),
      ...n.aggregates.map((a) => ({ name: a.name })),
    ];
    type Group = { key: Tuple; states: ReturnType<typeof makeAggregate>[] };
    const nk = keys.length;
    const na = aggs.length;
    /** One batch into the groups (a plain function: the hot loop stays out of the generator). */
    const feed = (b: readonly Tuple[], from: number, to: number, up: Env | null, groups: Map<string, Group>, argv: Value[][], fresh: () => Group['states'], ctx: ExecCtx) => {
      let only = nk === 0 ? groups.get('') : undefined;
      for (let x = from; x < to; x++) {
        const r = b[x];
        let g: Group | undefined;
        if (nk === 0) {
          if (!only) { only = { key: [], states: fresh() }; groups.set('', only); ctx.hold(1); }
          g = only;
        } else {
          const kv = new Array<Value>(nk);
          for (let i = 0; i < nk; i++) kv[i] = keys[i](r, up);
          const k = keyOf(kv);
          g = groups.get(k);
          if (!g) {
            g = { key: kv, states: fresh() };
            groups.set(k, g);
            ctx.hold(1);
          }
        }
        const states = g.states;
        for (let i = 0; i < na; i++) {
          const fs = aggs[i].args;
          const av = argv[i];
          for (let j = 0; j < fs.length; j++) av[j] = fs[j](r, up);
          states[i].step(av);
        }
      }
    };
    const finish = (groups: Map<string, Group>, fresh: () => Group['states'], ctx: ExecCtx): Tuple[] => {
      if (groups.size === 0 && nk === 0) groups.set('', { key: [], states: fresh() });
      const out: Tuple[] = [];
      for (const g of groups.values()) out.push([...g.key, ...g.states.map((s) => s.result())]);
      ctx.release(groups.size);
      return out;
    };
    return mk(n0, cols, [input], function* (ctx, up) {
      const groups = new Map<string, Group>();
      const fresh = () => aggs.map((a) => makeAggregate(a.spec));
      // argument arrays are reused row to row: aggregate states read them, never keep them
      const argv = aggs.map((a) => new Array<Value>(a.args.length));
      // a leaf's array fed in ranges; anything else (a filter over a large table) pulled batch by
      // batch, so its per-row work is split across the driver's slices (op-kit drainSteps)
      if (cheapAll(input)) {
        const rows = input.all!(ctx, up);
        for (let i = 0; i < rows.length; i += BATCH) {
          ctx.check();
          feed(rows, i, Math.min(rows.length, i + BATCH), up, groups, argv, fresh, ctx);
          if (i + BATCH < rows.length) yield [];
        }
      } else {
        for (const b of input.run(ctx, up)) {
          ctx.check();
          feed(b, 0, b.length, up, groups, argv, fresh, ctx);
          yield [];
        }
      }
      yield* slices(finish(groups, fresh, ctx), ctx);
    });
  },
  sort: (n, c) => {
    const input = compile(n.input, c);
    const e = expr(c, input.cols);
    const keys = n.keys.map((k) => {
      const f = e(k.expr);
      // a key with a collating sequence other than BINARY sorts TEXT by its folded form
      const fold = collationKey(comparisonCollation(k.expr, null));
      const g: typeof f = fold ? (r, u) => fold(f(r, u)) : f;
      return { f: g, desc: !!k.desc, nullsFirst: k.nulls ? k.nulls === 'first' : !k.desc };
    });
    const nk = keys.length;
    return mk(n, input.cols, [input], function* (ctx, up) {
      // slots of rows and their key values, column-wise (slot i's key j at kv[i * nk + j]); seq = input order
      const rows: Tuple[] = [];
      const kv: Value[] = [];
      const seq: number[] = [];
      const cmp = (x: number, y: number): number => {
        for (let i = 0; i < nk; i++) {
          const a = kv[x * nk + i];
          const bb = kv[y * nk + i];
          if (a === null || bb === null) {
            if (a === bb) continue;
            return (a === null) === keys[i].nullsFirst ? -1 : 1;
          }
          const d = compareValues(a, bb);
          if (d !== 0) return keys[i].desc ? -d : d;
        }
        return seq[x] - seq[y]; // ties keep input order (a stable sort)
      };
      const lim = n.limit;
      if (lim === 0) return;
      // top-N (ORDER BY … LIMIT): a max-heap of `lim` slots plus one scratch slot for the candidate
      const topN = lim !== undefined && lim < 1 << 16;
      const heap: number[] = [];
      const down = (i: number) => {
        const len = heap.length;
        for (;;) {
          const l = 2 * i + 1;
          if (l >= len) return;
          const r = l + 1;
          const m = r < len && cmp(heap[r], heap[l]) > 0 ? r : l;
          if (cmp(heap[m], heap[i]) <= 0) return;
          const t = heap[m]; heap[m] = heap[i]; heap[i] = t;
          i = m;
        }
      };
      const rise = (i: number) => {
        while (i > 0) {
          const p = (i - 1) >> 1;
          if (cmp(heap[i], heap[p]) <= 0) return;
          const t = heap[p]; heap[p] = heap[i]; heap[i] = t;
          i = p;
        }
      };
      let held = 0;
      let n0 = 0;
      for (const b of input.run(ctx, up)) {
        ctx.check();
        for (const r of b) {
          const no = n0++;
          if (!topN) {
            rows.push(r);
            seq.push(no);
            for (let j = 0; j < nk; j++) kv.push(keys[j].f(r, up));
            continue;
          }
          if (heap.length < lim!) {
            const slot = heap.length;
            rows[slot] = r; seq[slot] = no;
            for (let j = 0; j < nk; j++) kv[slot * nk + j] = keys[j].f(r, up);
            heap.push(slot);
            rise(slot);
            continue;
          }
          const sc = lim!; // the scratch slot
          seq[sc] = no;
          for (let j = 0; j < nk; j++) kv[sc * nk + j] = keys[j].f(r, up);
          if (cmp(sc, heap[0]) >= 0) continue;
          const slot = heap[0];
          rows[slot] = r; seq[slot] = no;
          for (let j = 0; j < nk; j++) kv[slot * nk + j] = kv[sc * nk + j];
          down(0);
        }
        const grow = topN ? heap.length - held : b.length;
        ctx.hold(grow);
        held += grow;
        yield [];
      }
      let order: number[];
      if (topN) order = heap.sort(cmp);
      else {
        order = new Array<number>(rows.length);
        for (let i = 0; i < rows.length; i++) order[i] = i;
        order.sort(cmp);
        if (lim !== undefined && order.length > lim) order.length = lim;
      }
      ctx.release(held);
      const out = new Array<Tuple>(order.length);
      for (let i = 0; i < order.length; i++) out[i] = rows[order[i]];
      yield* slices(out, ctx);
    });
  },
  limit: (n, c) => {
    const input = compile(n.input, c);
    const e = expr(c, []);
    const lim = n.limit ? e(n.limit) : null;
    const off = n.offset ? e(n.offset) : null;
    return mk(n, input.cols, [input], function* (ctx, up) {
      let l = lim ? toInteger(lim([], up)) : null;
      let o = off ? toInteger(off([], up)) ?? 0n : 0n;
      if (l !== null && l < 0n) l = null;
      if (o < 0n) o = 0n;
      let left = l === null ? Infinity : Number(l);
      let skip = Number(o);
      if (left === 0) return;
      for (const b of input.run(ctx, up)) {
        let batch = b;
        if (skip > 0) {
          if (batch.length <= skip) { skip -= batch.length; continue; }
          batch = batch.slice(skip);
          skip = 0;
        }
        if (batch.length >= left) { yield batch.slice(0, left); return; }
        left -= batch.length;
        yield batch;
      }
    });
  },
  distinct: (n, c) => {
    const input = compile(n.input, c);
    const keyOf = rowKeyer(input.cols.map((x) => x.coll));
    return mk(n, input.cols, [input], function* (ctx, up) {
      const seen = new Set<string>();
      for (const b of input.run(ctx, up)) {
        const out: Tuple[] = [];
        for (const r of b) {
          const k = keyOf(r);
          if (!seen.has(k)) { seen.add(k); out.push(r); }
        }
        ctx.hold(out.length);
        yield out;
      }
      ctx.release(seen.size);
    });
  },
  set_op: (n, c) => {
    const left = compile(n.left, c);
    const right = compile(n.right, c);
    if (left.cols.length !== right.cols.length) {
      throw new DbError('validation_failed', `SELECTs to the left and right of ${n.kind.toUpperCase()} do not have the same number of result columns`);
    }
    return mk(n, left.cols, [left, right], (ctx, up) => setOp(n, left, right, ctx, up));
  },
  with: (n, c) => withOp(n, c, compile),
  insert: (n, c) => {
    const input = compile(n.input, c);
    const tcols = leafColumns(c.ctx, n.schema, undefined);
    const ret = n.returning ? n.returning.map((r) => expr(c, tcols)(r.expr)) : null;
    return mk(n, (n.returning ?? []).map((r) => ({ name: r.name })), [input], function* (ctx, up) {
      if (!ctx.writer) throw new DbError('validation_failed', 'writes are not allowed here');
      for (const b of input.run(ctx, up)) {
        const out: Tuple[] = [];
        for (const r of b) {
          const stored = ctx.writer.insert(n, r);
          if (stored && ret) out.push(ret.map((f) => f(stored, up)));
        }
        if (out.length) yield out;
      }
    });
  },
  update: (n, c) => {
    const input = compile(n.input, c);
    const e = expr(c, input.cols);
    const info = c.ctx.table(n.schema);
    const sets = n.set.map((s) => {
      const i = info.cols.findIndex((x) => x.name.toLowerCase() === s.column.toLowerCase());
      if (i < 0) throw new DbError('validation_failed', `no such column: ${s.column}`, { column: s.column });
      return { i, f: e(s.expr) };
    });
    const tcols = leafColumns(c.ctx, n.schema, undefined);
    const ret = n.returning ? n.returning.map((r) => expr(c, tcols)(r.expr)) : null;
    const width = info.cols.length;
    return mk(n, (n.returning ?? []).map((r) => ({ name: r.name })), [input], function* (ctx, up) {
      if (!ctx.writer) throw new DbError('validation_failed', 'writes are not allowed here');
      const rows = drain(input, ctx, up);
      const out: Tuple[] = [];
      for (const r of rows) {
        const before = r.slice(0, width);
        const after = before.slice();
        for (const s of sets) after[s.i] = s.f(r, up);
        const stored = ctx.writer.update(n, before, after);
        if (ret) out.push(ret.map((f) => f(stored, up)));
      }
      if (out.length) yield out;
    });
  },
  delete: (n, c) => {
    const input = compile(n.input, c);
    const width = c.ctx.table(n.schema).cols.length;
    return mk(n, [], [input], function* (ctx, up) {
      if (!ctx.writer) throw new DbError('validation_failed', 'writes are not allowed here');
      for (const r of drain(input, ctx, up)) ctx.writer.delete(n, r.slice(0, width));
    });
  },
  fts_search: (n, c) => ftsSearchOp(n, c),
  vector_topk: (n, c) => vectorTopkOp(n, c),
  graph_expand: (n, c) => graphExpandOp(n, c, compile),
  graph_path: (n, c) => graphPathOp(n, c),
  graph_dijkstra: (n, c) => graphPathOp(n, c),
  fuse: (n, c) => fuseOp(n, c, compile),
  window: (n, c) => windowOp(n, c, compile),
  unnest: (n, c) => unnestOp(n, c, compile),
};

/** Candidate pairs a join tries before it hands a batch (maybe empty) up: a few ms of work at most. */
const PROBE_WORK = 1 << 13;

function joinOp(n: NodeOf<'join'>, c: C): Op {
  const left = compile(n.left, c);
  const right = compile(n.right, c);
  const both = [...left.cols, ...right.cols];
  const hash = n.strategy === 'hash' && n.equi && n.equi.length > 0;
  // with a hash join, the equi conjuncts are met by the hash match itself: only the rest is evaluated
  let residual: Expr | undefined = n.on;
  if (hash && n.on) {
    const eq = new Set(n.equi!.flatMap((q) => [stringifyJson([q.left, q.right]), stringifyJson([q.right, q.left])]));
    const rest = conjuncts(n.on).filter((x) => !(x.kind === 'binary' && x.op === '=' && eq.has(stringifyJson([x.left, x.right]))));
    residual = rest.length ? rest.reduce((a, b) => ({ kind: 'binary', op: 'and', left: a, right: b })) : undefined;
  }
  const on = residual ? expr(c, both)(residual) : null;
  const kind = n.kind;
  const outCols = kind === 'semi' || kind === 'anti' ? left.cols : both;
  const rw = right.cols.length;
  const lw = left.cols.length;
  const nullsR: Value[] = new Array(rw).fill(null);
  const nullsL: Value[] = new Array(lw).fill(null);
  const lk: Compiled[] = hash ? n.equi!.map((q) => expr(c, left.cols)(q.left)) : [];
  const rk: Compiled[] = hash ? n.equi!.map((q) => expr(c, right.cols)(q.right)) : [];
  const pass = (v: Value) => v !== null && v !== 0n && (typeof v === 'bigint' || truthy(v) === true);
  const nk = lk.length;
  /** Hash key of a row's equi values (null: a NULL key, which matches nothing). */
  const keyOf = (fs: Compiled[], r: Tuple, up: Env | null): unknown => {
    if (nk === 1) {
      const v = fs[0](r, up);
      return v === null ? null : joinKey(v);
    }
    const kv = new Array<Value>(nk);
    for (let i = 0; i < nk; i++) {
      const v = fs[i](r, up);
      if (v === null) return null;
      kv[i] = v;
    }
    return tupleKey(kv);
  };
  const NONE: number[] = [];
  const scratch: Value[] = new Array<Value>(lw + rw).fill(null);
  /**
   * Joins left rows from `from` on into `out` until it holds BATCH rows or has tried PROBE_WORK
   * candidate pairs (at a left-row boundary); returns the next left index. The work bound keeps a
   * nested loop whose condition rejects almost every pair (a large cross join) yielding often.
   * A plain function: the probe loop stays out of the generator.
   */
  const probe = (b: readonly Tuple[], from: number, out: Tuple[], rrows: readonly Tuple[], table: Map<unknown, number[]> | null, all: number[], matchedR: Uint8Array | null, up: Env | null): number => {
    let work = 0;
    for (let x = from; x < b.length; x++) {
      const l = b[x];
      let cands: number[] = all;
      if (table) {
        const k = keyOf(lk, l, up);
        cands = k === null ? NONE : table.get(k) ?? NONE;
      }
      let matched = false;
      // the condition is evaluated on one scratch row (this left row's values, then each candidate's):
      // only a pair that passes is copied out, so a nested loop rejecting most pairs allocates nothing
      const fast = on !== null && l.length === lw;
      if (fast) for (let j = 0; j < lw; j++) scratch[j] = l[j];
      for (let ci = 0; ci < cands.length; ci++) {
        const i = cands[ci];
        const r = rrows[i];
        let row: Tuple | null = null;
        if (fast && r.length === rw) {
          for (let j = 0; j < rw; j++) scratch[lw + j] = r[j];
          if (!pass(on(scratch, up))) continue;
        } else {
          row = cat(l, r);
          if (on && !pass(on(row, up))) continue;
        }
        row ??= cat(l, r);
        matched = true;
        if (kind === 'semi' || kind === 'anti') break;
        if (matchedR) matchedR[i] = 1;
        out.push(row);
      }
      if (kind === 'semi' && matched) out.push(l);
      else if (kind === 'anti' && !matched) out.push(l);
      else if (!matched && (kind === 'left' || kind === 'full')) out.push(l.concat(nullsR));
      work += cands.length + 1;
      if (out.length >= BATCH || work >= PROBE_WORK) return x + 1;
    }
    return b.length;
  };
  // A hash join whose right input is a bare scan, keyed on exactly that table's primary key:
  // when the scan is answered whole from the table cache, each left row probes the cache's pk map
  // instead of the join hashing every row of the table (a search's 10 hits joined to a big table).
  // (An inner join also runs the other way round: its right rows probe a left scan's pk.)
  const keyCols = (side: 'left' | 'right'): number[] | null => {
    const leaf = n[side];
    if (!hash || leaf.op !== 'scan' || leaf.limit !== undefined) return null;
    if (side === 'right' ? !(kind === 'inner' || kind === 'left' || kind === 'semi' || kind === 'anti') : kind !== 'inner') return null;
    const scope = new Scope((side === 'right' ? right : left).cols);
    return n.equi!.map((q) => (q[side].kind === 'col' ? scope.find((q[side] as { name: string }).name) : -1));
  };
  const rightKeys = keyCols('right');
  const leftKeys = keyCols('left');
  type PkIndex = { readonly cols: readonly number[]; get(values: readonly Value[]): Tuple | undefined };
  const covers = (pk: PkIndex | undefined, keys: number[] | null): pk is PkIndex => !!pk && !!keys && pk.cols.length === keys.length && pk.cols.every((c) => keys.filter((x) => x === c).length === 1);
  /** Rows of `outer` probe the scan's pk map; `scanOnRight`: the scan is the join's right input. */
  const probePk = function* (pk: PkIndex, keys: number[], scanOnRight: boolean, ctx: ExecCtx, up: Env | null): Iterable<Tuple[]> {
    // the outer side's key expressions, in the primary key's column order
    const fs = scanOnRight ? lk : rk;
    const order = pk.cols.map((c) => keys.indexOf(c));
    const vals = new Array<Value>(order.length);
    for (const b of (scanOnRight ? left : right).run(ctx, up)) {
      ctx.check();
      const out: Tuple[] = [];
      for (const o of b) {
        let hit: Tuple | undefined;
        let k = 0;
        for (; k < order.length; k++) {
          const v = fs[order[k]](o, up);
          if (v === null) break;
          vals[k] = v;
        }
        if (k === order.length) hit = pk.get(vals);
        const row = hit ? (scanOnRight ? cat(o, hit) : cat(hit, o)) : null;
        const matched = row !== null && (!on || pass(on(row, up)));
        if (kind === 'semi') { if (matched) out.push(o); }
        else if (kind === 'anti') { if (!matched) out.push(o); }
        else if (matched) out.push(row!);
        else if (kind === 'left') out.push(o.concat(nullsR));
      }
      yield out;
    }
  };
  return mk(n, outCols, [left, right], function* (ctx, up) {
    const rpk = rightKeys ? ctx.pkIndex.get(n.right) : undefined;
    const lpk = leftKeys ? ctx.pkIndex.get(n.left) : undefined;
    if (covers(rpk, rightKeys) || covers(lpk, leftKeys)) {
      const onRight = covers(rpk, rightKeys);
      ctx.strategies.set(n, `primary-key probe of the cached ${onRight ? 'right' : 'left'} table`);
      yield* probePk(onRight ? rpk! : lpk!, onRight ? rightKeys! : leftKeys!, onRight, ctx, up);
      return;
    }
    const rrows = yield* drainSteps(right, ctx, up);
    ctx.hold(rrows.length);
    let table: Map<unknown, number[]> | null = null;
    if (hash) {
      table = new Map();
      for (let i = 0; i < rrows.length; i++) {
        const k = keyOf(rk, rrows[i], up);
        if (k === null) continue;
        const l = table.get(k);
        if (l) l.push(i); else table.set(k, [i]);
      }
    }
    const matchedR = kind === 'right' || kind === 'full' ? new Uint8Array(rrows.length) : null;
    const all = table ? NONE : rrows.map((_, i) => i);
    for (const b of left.run(ctx, up)) {
      ctx.check();
      if (b.length === 0) { yield []; continue; }
      for (let x = 0; x < b.length;) {
        const out: Tuple[] = [];
        x = probe(b, x, out, rrows, table, all, matchedR, up);
        yield out;
        ctx.check();
      }
    }
    if (matchedR) {
      const out: Tuple[] = [];
      matchedR.forEach((m, i) => { if (!m) out.push(nullsL.concat(rrows[i])); });
      if (out.length) yield* slices(out, ctx);
    }
    ctx.release(rrows.length);
  });
}

function* setOp(n: NodeOf<'set_op'>, left: Op, right: Op, ctx: ExecCtx, up: Env | null): Iterable<Tuple[]> {
  if (n.kind === 'union' && n.all) {
    yield* left.run(ctx, up);
    yield* right.run(ctx, up);
    return;
  }
  // rows compare with the left SELECT's column collations (the right's where the left has none)
  const keyOf = rowKeyer(left.cols.map((c, i) => c.coll ?? right.cols[i]?.coll));
  if (n.kind === 'union') {
    const seen = new Set<string>();
    for (const op of [left, right]) {
      for (const b of op.run(ctx, up)) {
        const out = b.filter((r) => { const k = keyOf(r); if (seen.has(k)) return false; seen.add(k); return true; });
        ctx.hold(out.length);
        if (out.length) yield out;
      }
    }
    ctx.release(seen.size);
    return;
  }
  const counts = new Map<string, number>();
  for (const b of right.run(ctx, up)) for (const r of b) { const k = keyOf(r); counts.set(k, (counts.get(k) ?? 0) + 1); }
  ctx.hold(counts.size);
  const emitted = new Set<string>();
  const out: Tuple[] = [];
  for (const b of left.run(ctx, up)) {
    for (const r of b) {
      const k = keyOf(r);
      const cnt = counts.get(k) ?? 0;
      if (n.all) {
        if (n.kind === 'intersect' && cnt > 0) { out.push(r); counts.set(k, cnt - 1); }
        else if (n.kind === 'except') { if (cnt > 0) counts.set(k, cnt - 1); else out.push(r); }
      } else if (!emitted.has(k)) {
        if ((n.kind === 'intersect') === cnt > 0) { out.push(r); emitted.add(k); }
      }
    }
  }
  ctx.release(counts.size);
  yield* slices(out, ctx);
}

export function compile(node: PlanNode, c: C): Op {
  return instrument(visit(node, VISITOR, c), c.ctx);
}

/** Compiles a plan against an enclosing scope (null at top level). */
export function compilePlan(node: PlanNode, ctx: ExecCtx, outer: Scope | null, info: CompileInfo = { outerDepth: 0 }): Op {
  return compile(node, { ctx, outer, info });
}

const ROW_LEAF = new Set(['scan', 'get', 'index_scan']);

/**
 * `aggregate(project(leaf or filter(leaf)))` where the project outputs every column of the leaf
 * under its own name, in order (the Policy port's mask projection), as `aggregate(leaf…)` with the
 * project's expressions put in place of the columns the keys and arguments name. Not when they
 * hold a subquery (its correlated references would then reach the leaf's own columns).
 */
function collapseMaskProject(n: NodeOf<'aggregate'>, c: C): NodeOf<'aggregate'> {
  const p = n.input;
  if (p.op !== 'project') return n;
  const leaf = p.input.op === 'filter' ? p.input.input : p.input;
  if (!ROW_LEAF.has(leaf.op)) return n;
  const l = leaf as NodeOf<'scan'>;
  const names = leafColumns(c.ctx, l.schema, l.alias).map((x) => x.name.toLowerCase());
  if (names.length !== p.columns.length || p.columns.some((col, i) => col.name.toLowerCase() !== names[i])) return n;
  if (/"kind":"(subquery|exists|in_subquery)"/.test(stringifyJson([n.group, n.aggregates] as never))) return n;
  const out = new Scope(p.columns.map((col) => ({ name: col.name })), null);
  const inline = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(inline);
    if (!v || typeof v !== 'object') return v;
    const o = v as Record<string, unknown>;
    if (o.kind === 'col' && typeof o.name === 'string') {
      let i = -1;
      try { i = out.find(o.name); } catch { return o; }
      return i >= 0 ? p.columns[i].expr : o;
    }
    const r: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(o)) r[k] = inline(x);
    return r;
  };
  return { ...n, input: p.input, group: inline(n.group) as typeof n.group, aggregates: inline(n.aggregates) as typeof n.aggregates };
}
