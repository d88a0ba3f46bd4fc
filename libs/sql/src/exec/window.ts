/**
 * The window operator, with SQLite's semantics: rows sorted by PARTITION BY then ORDER BY keys
 * (stable), peer groups of equal ORDER BY keys, ROWS / RANGE / GROUPS frames with EXCLUDE, the
 * ranking and offset functions (which ignore the frame), first/last/nth_value and every
 * aggregate over the frame. Output: input columns then one column per function. As SQLite, the
 * functions are computed last-listed first, each over the previous one's sorted order, so the
 * rows come out in the first function's order.
 */
import { DbError } from '@mmdb/core';
import type { Expr, FrameBound, NodeOf, WindowCall } from '@mmdb/plan';
import { compareValues, toInteger, truthy, type Tuple, type Value } from '../values';
import { makeAggregate, type AggState } from './aggregates';
import { collationKey, comparisonCollation } from './collation';
import type { ExecCtx } from './context';
import type { Compiled } from './expr';
import { AGGREGATES } from './functions';
import { drainSteps, expr, mk, slices, type C, type CompileFn, type Op } from './op-kit';
import type { ColInfo, Env } from './scope';

const RANKING = new Set(['row_number', 'rank', 'dense_rank', 'percent_rank', 'cume_dist', 'ntile', 'lag', 'lead']);
const VALUE = new Set(['first_value', 'last_value', 'nth_value']);

function fail(msg: string): never {
  throw new DbError('validation_failed', msg);
}

interface Key { f: Compiled; desc: boolean; nullsFirst: boolean }

function keyOf(e: (x: Expr) => Compiled, k: { expr: Expr; desc?: boolean; nulls?: 'first' | 'last' }): Key {
  const f = e(k.expr);
  const fold = collationKey(comparisonCollation(k.expr, null));
  return { f: fold ? (r, u) => fold(f(r, u)) : f, desc: !!k.desc, nullsFirst: k.nulls ? k.nulls === 'first' : !k.desc };
}

function cmpKeys(keys: readonly Key[], a: Value[], b: Value[]): number {
  for (let i = 0; i < keys.length; i++) {
    const x = a[i];
    const y = b[i];
    if (x === null || y === null) {
      if (x === y) continue;
      return (x === null) === keys[i].nullsFirst ? -1 : 1;
    }
    const d = compareValues(x, y);
    if (d !== 0) return keys[i].desc ? -d : d;
  }
  return 0;
}

function checkFrame(w: WindowCall): void {
  const f = w.frame;
  if (!f) return;
  const rank = (b: FrameBound) => ['unbounded_preceding', 'preceding', 'current_row', 'following', 'unbounded_following'].indexOf(b.type);
  if (f.start.type === 'unbounded_following' || f.end.type === 'unbounded_preceding' || rank(f.start) > rank(f.end) && !(f.start.type === 'following' && f.end.type === 'following') && !(f.start.type === 'preceding' && f.end.type === 'preceding')) {
    fail('unsupported frame specification');
  }
  if (f.unit === 'range' && (f.start.offset || f.end.offset) && w.order.length !== 1) {
    fail('RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY term');
  }
}

/** One function compiled: how its value is computed for every row of a sorted partition. */
interface Fn {
  readonly w: WindowCall;
  readonly args: Compiled[];
  readonly filter: Compiled | null;
  readonly order: Key[];
  readonly partition: Key[];
  readonly offsets: { start: Compiled | null; end: Compiled | null };
}

export function windowOp(n: NodeOf<'window'>, c: C, compile: CompileFn): Op {
  const input = compile(n.input, c);
  const e = expr(c, input.cols);
  const fns: Fn[] = n.functions.map((w) => {
    const fn = w.fn.toLowerCase();
    if (!RANKING.has(fn) && !VALUE.has(fn) && !AGGREGATES.has(fn)) throw new DbError('validation_failed', `no such window function: ${w.fn}`);
    if (w.distinct) throw new DbError('unsupported_sql', 'DISTINCT is not supported for window functions', { construct: 'DISTINCT in a window' });
    if (w.filter && !AGGREGATES.has(fn)) throw new DbError('validation_failed', 'FILTER clause may only be used with aggregate window functions');
    checkFrame(w);
    return {
      w: { ...w, fn },
      args: w.args.map(e),
      filter: w.filter ? e(w.filter) : null,
      order: w.order.map((k) => keyOf(e, k)),
      partition: w.partition.map((p) => keyOf(e, { expr: p })),
      offsets: { start: w.frame?.start.offset ? e(w.frame.start.offset) : null, end: w.frame?.end.offset ? e(w.frame.end.offset) : null },
    };
  });
  const width = input.cols.length;
  const cols: ColInfo[] = [...input.cols, ...n.functions.map((w) => ({ name: w.name }))];
  return mk(n, cols, [input], function* (ctx, up) {
    const rows: Tuple[] = (yield* drainSteps(input, ctx, up)).map((r) => r.slice(0, width));
    ctx.hold(rows.length);
    // as SQLite: the last-listed window is computed first, over the input's order (which an
    // OVER () numbering sees); each function appends its value, so columns are put back in order
    const vals: Value[][] = new Array(fns.length);
    let order = rows.map((_, i) => i);
    for (let k = fns.length - 1; k >= 0; k--) {
      const r = computeOne(fns[k], order.map((i) => rows[i]), ctx, up);
      order = r.order.map((j) => order[j]);
      vals[k] = new Array(rows.length);
      r.order.forEach((_, pos) => { vals[k][order[pos]] = r.values[pos]; });
    }
    const out = order.map((i) => { const t = rows[i].slice(); for (let k = 0; k < fns.length; k++) t.push(vals[k][i]); return t; });
    ctx.release(rows.length);
    yield* slices(out, ctx);
  });
}

/** Sorts by the function's partition and order keys; `order[p]` = the input index at sorted position p, `values[p]` its value. */
function computeOne(f: Fn, rows: Tuple[], ctx: ExecCtx, up: Env | null): { order: number[]; values: Value[] } {
  const keys = [...f.partition, ...f.order];
  const kv = rows.map((r) => keys.map((k) => k.f(r, up)));
  const idx = rows.map((_, i) => i);
  idx.sort((a, b) => cmpKeys(keys, kv[a], kv[b]) || a - b);
  const np = f.partition.length;
  const values: Value[] = new Array(rows.length);
  let s = 0;
  while (s < idx.length) {
    let e = s + 1;
    while (e < idx.length && cmpKeys(f.partition, kv[idx[s]].slice(0, np), kv[idx[e]].slice(0, np)) === 0) e++;
    const part = idx.slice(s, e);
    const vals = partitionValues(f, part.map((i) => rows[i]), part.map((i) => kv[i].slice(np)), ctx, up);
    for (let j = 0; j < part.length; j++) values[s + j] = vals[j];
    s = e;
    ctx.check();
  }
  return { order: idx, values };
}

function offsetValue(f: Compiled | null, row: Tuple, up: Env | null, unit: string): number {
  if (!f) return 0;
  const v = f(row, up);
  if (unit === 'range') {
    const x = typeof v === 'bigint' ? Number(v) : v;
    if (typeof x !== 'number' || !(x >= 0)) fail('frame starting offset must be a non-negative number');
    return x;
  }
  const i = typeof v === 'bigint' ? v : typeof v === 'number' && Number.isInteger(v) ? BigInt(v) : null;
  if (i === null || i < 0n) fail('frame starting offset must be a non-negative integer');
  return Number(i);
}

function partitionValues(f: Fn, rows: Tuple[], ok: Value[][], ctx: ExecCtx, up: Env | null): Value[] {
  const n = rows.length;
  const order = f.order;
  // peer groups: group[i] = index of i's group, gStart/gEnd = row bounds of each group
  const group = new Array<number>(n);
  const gStart: number[] = [];
  const gEnd: number[] = [];
  for (let i = 0; i < n; i++) {
    if (i === 0 || cmpKeys(order, ok[i - 1], ok[i]) !== 0) { gStart.push(i); if (i > 0) gEnd.push(i - 1); }
    group[i] = gStart.length - 1;
  }
  gEnd.push(n - 1);
  const fn = f.w.fn;
  const arg = (j: number, i: number): Value => (f.args[j] ? f.args[j](rows[i], up) : null);
  const out = new Array<Value>(n);
  switch (fn) {
    case 'row_number': for (let i = 0; i < n; i++) out[i] = BigInt(i + 1); return out;
    case 'rank': for (let i = 0; i < n; i++) out[i] = BigInt(gStart[group[i]] + 1); return out;
    case 'dense_rank': for (let i = 0; i < n; i++) out[i] = BigInt(group[i] + 1); return out;
    case 'percent_rank': for (let i = 0; i < n; i++) out[i] = n > 1 ? gStart[group[i]] / (n - 1) : 0; return out;
    case 'cume_dist': for (let i = 0; i < n; i++) out[i] = (gEnd[group[i]] + 1) / n; return out;
    case 'ntile': {
      for (let i = 0; i < n; i++) {
        const v = arg(0, i);
        const b = typeof v === 'bigint' ? Number(v) : typeof v === 'number' && Number.isInteger(v) ? v : NaN;
        if (!(b > 0)) fail('argument of ntile must be a positive integer');
        const size = Math.floor(n / b);
        const large = n % b;
        // the first `large` buckets hold size+1 rows
        const cut = large * (size + 1);
        out[i] = BigInt(size === 0 ? i + 1 : i < cut ? Math.floor(i / (size + 1)) + 1 : large + Math.floor((i - cut) / size) + 1);
      }
      return out;
    }
    case 'lag': case 'lead': {
      for (let i = 0; i < n; i++) {
        let off = 1;
        if (f.args.length > 1) {
          const v = arg(1, i);
          if (v === null) { out[i] = null; continue; }
          off = Number(toInteger(v));
        }
        const j = fn === 'lag' ? i - off : i + off;
        out[i] = j >= 0 && j < n ? arg(0, j) : f.args.length > 2 ? arg(2, i) : null;
      }
      return out;
    }
    default: break;
  }
  // frame functions
  const frame = f.w.frame ?? { unit: 'range' as const, start: { type: 'unbounded_preceding' as const }, end: { type: 'current_row' as const } };
  const unit = frame.unit;
  const numKey = (i: number): number | null => {
    const v = ok[i][0];
    return typeof v === 'bigint' ? Number(v) : typeof v === 'number' ? v : null;
  };
  const desc = order[0]?.desc ?? false;
  /** First row index whose key is ≥ bound in the sort direction (from the non-NULL rows). */
  const rangeBound = (i: number, b: FrameBound, off: number, isStart: boolean): number => {
    const v = numKey(i);
    if (v === null) return isStart ? gStart[group[i]] : gEnd[group[i]] + 1;
    const sign = b.type === 'preceding' ? -1 : 1;
    const target = desc ? v - sign * off : v + sign * off;
    // in sort order: asc → keys increase; find the first row (isStart) with key ≥ target (asc) / ≤ target (desc),
    // or for the end the first row with key > target (asc) / < target (desc)
    let lo = 0;
    let hi = n;
    const before = (j: number): boolean => {
      if (ok[j][0] === null) return order[0].nullsFirst; // NULLs sit at one end
      const x = numKey(j);
      if (x === null) return desc; // text sorts after every number: last ascending, first descending
      if (isStart) return desc ? x > target : x < target;
      return desc ? x >= target : x <= target;
    };
    while (lo < hi) { const m = (lo + hi) >> 1; if (before(m)) lo = m + 1; else hi = m; }
    return lo;
  };
  const startOf = (i: number): number => {
    const b = frame.start;
    switch (b.type) {
      case 'unbounded_preceding': return 0;
      case 'current_row': return unit === 'rows' ? i : gStart[group[i]];
      default: {
        const off = offsetValue(f.offsets.start, rows[i], up, unit);
        if (unit === 'rows') return b.type === 'preceding' ? Math.max(0, i - off) : i + off;
        if (unit === 'groups') { const g = group[i] + (b.type === 'preceding' ? -off : off); return g < 0 ? 0 : g >= gStart.length ? n : gStart[g]; }
        return rangeBound(i, b, off, true);
      }
    }
  };
  const endOf = (i: number): number => { // exclusive
    const b = frame.end;
    switch (b.type) {
      case 'unbounded_following': return n;
      case 'current_row': return unit === 'rows' ? i + 1 : gEnd[group[i]] + 1;
      default: {
        const off = offsetValue(f.offsets.end, rows[i], up, unit);
        if (unit === 'rows') return b.type === 'preceding' ? i - off + 1 : Math.min(n, i + off + 1);
        if (unit === 'groups') { const g = group[i] + (b.type === 'preceding' ? -off : off); return g < 0 ? 0 : g >= gStart.length ? n : gEnd[g] + 1; }
        return rangeBound(i, b, off, false);
      }
    }
  };
  const exclude = frame.exclude ?? 'no_others';
  const members = (i: number): number[] => {
    const s = Math.max(0, startOf(i));
    const e = Math.min(n, endOf(i));
    const out2: number[] = [];
    for (let j = s; j < e; j++) {
      if (exclude === 'current_row' && j === i) continue;
      if (exclude === 'group' && group[j] === group[i]) continue;
      if (exclude === 'ties' && group[j] === group[i] && j !== i) continue;
      out2.push(j);
    }
    return out2;
  };
  const passes = (j: number): boolean => {
    if (!f.filter) return true;
    return truthy(f.filter(rows[j], up)) === true;
  };
  if (VALUE.has(fn)) {
    for (let i = 0; i < n; i++) {
      const m = members(i);
      if (fn === 'first_value') out[i] = m.length ? arg(0, m[0]) : null;
      else if (fn === 'last_value') out[i] = m.length ? arg(0, m[m.length - 1]) : null;
      else {
        const v = f.args[1] ? f.args[1](rows[i], up) : null;
        const k = typeof v === 'bigint' ? Number(v) : typeof v === 'number' && Number.isInteger(v) ? v : NaN;
        if (!(k > 0)) fail('second argument to nth_value must be a positive integer');
        out[i] = k <= m.length ? arg(0, m[k - 1]) : null;
      }
    }
    return out;
  }
  // aggregates over the frame
  const spec = { name: f.w.name, fn, args: f.w.args, ...(f.w.star ? { star: true } : {}) };
  const step = (st: AggState, j: number) => { if (passes(j)) st.step(f.args.map((a) => a(rows[j], up))); };
  if (frame.start.type === 'unbounded_preceding' && exclude === 'no_others') {
    // the frame only grows: one running state
    const st = makeAggregate(spec);
    let done = 0;
    for (let i = 0; i < n; i++) {
      const e = Math.min(n, endOf(i));
      while (done < e) step(st, done++);
      out[i] = st.result();
    }
    return out;
  }
  let lastKey = '';
  let lastVal: Value = null;
  for (let i = 0; i < n; i++) {
    const s = Math.max(0, startOf(i));
    const e = Math.min(n, endOf(i));
    const key = exclude === 'no_others' ? `${s}:${e}` : '';
    if (key && key === lastKey) { out[i] = lastVal; continue; }
    const st = makeAggregate(spec);
    for (const j of exclude === 'no_others' ? range(s, e) : members(i)) step(st, j);
    out[i] = lastVal = st.result();
    lastKey = key;
    if ((i & 255) === 0) ctx.check();
  }
  return out;
}

function* range(s: number, e: number): Iterable<number> {
  for (let j = s; j < e; j++) yield j;
}
