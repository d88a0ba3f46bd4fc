/** Compiles plan expressions into closures over (row, enclosing env). */
import { DbError, stringifyJson } from '@mmdb/core';
import type { Affinity, Collation, Expr, PlanNode } from '@mmdb/plan';
import {
  applyAffinity, compareValues, hashKey, I64_MAX, I64_MIN, toInteger, toNumeric, toReal, toText, truthy,
  type Tuple, type Value,
} from '../values';
import { collationKey, comparisonCollation } from './collation';
import { likeMatch, SCALAR_FUNCTIONS } from './functions';
import { VECTOR_FUNCTIONS } from './vector-functions';
import type { Env, Scope } from './scope';
import type { ExecCtx } from './context';
import { compilePlan, type Op } from './ops';

export type Compiled = (row: Tuple, up: Env | null) => Value;

/** Static facts gathered while compiling: the deepest enclosing scope an expression reads. */
export interface CompileInfo { outerDepth: number }

const isNumAff = (a: Affinity | undefined) => a === 'integer' || a === 'real' || a === 'numeric';

export function exprAffinity(e: Expr, scope: Scope): Affinity | undefined {
  if (e.kind === 'col') {
    if (e.affinity) return e.affinity;
    try { return scope.resolve(e.name).aff; } catch { return undefined; }
  }
  if (e.kind === 'cast') return e.to;
  if (e.kind === 'collate') return exprAffinity(e.arg, scope);
  return undefined;
}

function litValue(e: { value: unknown; real?: boolean; int?: boolean }): Value {
  const v = e.value;
  if (e.int && typeof v === 'string') return BigInt(v);
  if (v === null || v === undefined) return null;
  if (typeof v === 'number') return e.real || !Number.isInteger(v) ? v : BigInt(v);
  if (typeof v === 'boolean') return v ? 1n : 0n;
  if (typeof v === 'string') return v;
  if (typeof v === 'bigint') return v; // an exact integer from a plan's JSON (beyond ±2^53)
  return stringifyJson(v);
}

export function arith(op: string, a: Value, b: Value): Value {
  if (a === null || b === null) return null;
  const x = typeof a === 'string' ? toNumeric(a)! : a;
  const y = typeof b === 'string' ? toNumeric(b)! : b;
  if (typeof x === 'bigint' && typeof y === 'bigint') {
    // SQLite: an integer result outside 64 bits is computed again in floating point (REAL)
    switch (op) {
      case '+': { const z = x + y; return z > I64_MAX || z < I64_MIN ? Number(x) + Number(y) : z; }
      case '-': { const z = x - y; return z > I64_MAX || z < I64_MIN ? Number(x) - Number(y) : z; }
      case '*': { const z = x * y; return z > I64_MAX || z < I64_MIN ? Number(x) * Number(y) : z; }
      case '/': if (y === 0n) return null; if (x === I64_MIN && y === -1n) return -Number(x); return x / y;
      case '%': return y === 0n ? null : x % y;
    }
  }
  const fx = Number(x);
  const fy = Number(y);
  switch (op) {
    case '+': return fx + fy;
    case '-': return fx - fy;
    case '*': return fx * fy;
    case '/': return fy === 0 ? null : fx / fy;
    case '%': {
      const ix = toInteger(fx)!;
      const iy = toInteger(fy)!;
      if (iy === 0n) return null;
      return Number(ix % (iy < 0n ? -iy : iy));
    }
  }
  throw new DbError('internal_error', `bad arithmetic operator ${op}`);
}

/** Comparison with SQLite's affinity rules applied to the operands, then their collating sequence when both are TEXT. */
/**
 * Both sides of a comparison after SQLite's affinity conversions (and a collation's folding). The
 * answer is one pair per comparer, rewritten by each call: callers destructure it at once. (A new
 * array per call was a young-generation allocation per compared pair: a nested-loop join's
 * millions of pairs kept the GC busy and its pauses in every other request's latency.)
 */
function comparer(affL: Affinity | undefined, affR: Affinity | undefined, coll?: Collation): (a: Value, b: Value) => [Value, Value] {
  const conv = affinityComparer(affL, affR);
  const fold = collationKey(coll);
  if (!fold) return conv;
  const pair: [Value, Value] = [null, null];
  return (a, b) => {
    const [x, y] = conv(a, b);
    pair[0] = fold(x);
    pair[1] = fold(y);
    return pair;
  };
}

function affinityComparer(affL: Affinity | undefined, affR: Affinity | undefined): (a: Value, b: Value) => [Value, Value] {
  const pair: [Value, Value] = [null, null];
  const out = (x: Value, y: Value): [Value, Value] => { pair[0] = x; pair[1] = y; return pair; };
  if (isNumAff(affL) && !isNumAff(affR)) return (a, b) => out(a, typeof b === 'string' ? applyAffinity(b, 'numeric') : b);
  if (isNumAff(affR) && !isNumAff(affL)) return (a, b) => out(typeof a === 'string' ? applyAffinity(a, 'numeric') : a, b);
  if (affL === 'text' && affR === undefined) return (a, b) => out(a, b !== null && typeof b !== 'string' ? toText(b) : b);
  if (affR === 'text' && affL === undefined) return (a, b) => out(a !== null && typeof a !== 'string' ? toText(a) : a, b);
  return out;
}

const CMP: Record<string, (c: number) => boolean> = {
  '=': (c) => c === 0, '<>': (c) => c !== 0, '<': (c) => c < 0, '<=': (c) => c <= 0, '>': (c) => c > 0, '>=': (c) => c >= 0,
};

export class ExprCompiler {
  constructor(readonly ctx: ExecCtx) {}

  compile(e: Expr, scope: Scope, info: CompileInfo = { outerDepth: 0 }): Compiled {
    const c = (x: Expr) => this.compile(x, scope, info);
    switch (e.kind) {
      case 'lit': {
        const v = litValue(e);
        return () => v;
      }
      case 'param': {
        // read per call: a compiled tree serves every query of a cached plan (ctx.reset swaps params)
        const ctx = this.ctx;
        const i = e.index - 1;
        if (ctx.params[i] === undefined) throw new DbError('validation_failed', `no value bound for $${e.index}`);
        if (e.index > ctx.maxParam) ctx.maxParam = e.index;
        return () => ctx.params[i];
      }
      case 'col': {
        const r = scope.resolve(e.name);
        const i = r.index;
        if (r.depth > info.outerDepth) info.outerDepth = r.depth;
        switch (r.depth) {
          case 0: return (row) => row[i];
          case 1: return (_row, up) => up!.row[i];
          case 2: return (_row, up) => up!.up!.row[i];
          default: {
            const d = r.depth;
            return (_row, up) => { let u = up!; for (let k = 1; k < d; k++) u = u.up!; return u.row[i]; };
          }
        }
      }
      case 'unary': {
        const a = c(e.arg);
        switch (e.op) {
          case '+': return a;
          case '-': return (r, u) => {
            const v = a(r, u);
            if (v === null) return null;
            const n = typeof v === 'string' ? toNumeric(v)! : v;
            if (typeof n === 'bigint') return n === I64_MIN ? -Number(n) : -n; // as SQLite: REAL past 64 bits
            return -n;
          };
          case 'not': return (r, u) => { const t = truthy(a(r, u)); return t === null ? null : t ? 0n : 1n; };
          case '~': return (r, u) => { const v = toInteger(a(r, u)); return v === null ? null : ~v; };
        }
        break;
      }
      case 'binary': return this.binary(e.op, e.left, e.right, scope, info);
      case 'is_null': {
        const a = c(e.arg);
        return e.not ? (r, u) => (a(r, u) !== null ? 1n : 0n) : (r, u) => (a(r, u) === null ? 1n : 0n);
      }
      case 'between': {
        const a = c(e.arg);
        const lo = c(e.low);
        const hi = c(e.high);
        const affA = exprAffinity(e.arg, scope);
        const cl = comparer(affA, exprAffinity(e.low, scope), comparisonCollation(e.arg, e.low));
        const ch = comparer(affA, exprAffinity(e.high, scope), comparisonCollation(e.arg, e.high));
        return (r, u) => {
          const v = a(r, u);
          const l = lo(r, u);
          const h = hi(r, u);
          let t1: boolean | null = null;
          let t2: boolean | null = null;
          if (v !== null && l !== null) { const [x, y] = cl(v, l); t1 = compareValues(x, y) >= 0; }
          if (v !== null && h !== null) { const [x, y] = ch(v, h); t2 = compareValues(x, y) <= 0; }
          let res: boolean | null;
          if (t1 === false || t2 === false) res = false;
          else if (t1 === null || t2 === null) res = null;
          else res = true;
          if (res === null) return null;
          return (e.not ? !res : res) ? 1n : 0n;
        };
      }
      case 'in_list': {
        const a = c(e.arg);
        const affA = exprAffinity(e.arg, scope);
        // SQLite: the values of an IN list have no affinity, even columns and CASTs ("a IN (x, y)"
        // is "a = +x OR a = +y"); only the left operand's affinity applies.
        const items = e.list.map((x) => ({ f: c(x), cmp: comparer(affA, undefined, comparisonCollation(e.arg, x)) }));
        const not = !!e.not;
        if (items.length === 0) return () => (not ? 1n : 0n);
        return (r, u) => {
          const v = a(r, u);
          if (v === null) return null;
          let sawNull = false;
          for (const it of items) {
            const w = it.f(r, u);
            if (w === null) { sawNull = true; continue; }
            const [x, y] = it.cmp(v, w);
            if (compareValues(x, y) === 0) return not ? 0n : 1n;
          }
          return sawNull ? null : not ? 1n : 0n;
        };
      }
      case 'in_subquery': {
        const a = c(e.arg);
        const affA = exprAffinity(e.arg, scope);
        const sub = this.subquery(e.plan, scope, info);
        const not = !!e.not;
        const affB = sub.op.cols[0]?.aff;
        const conv = comparer(affA, affB);
        // the left operand's collating sequence (the subquery's column declares none here)
        const fold = collationKey(comparisonCollation(e.arg, null));
        const keyOf = (v: Value) => hashKey(fold ? fold(v) : v);
        let cache: { set: Set<string>; hasNull: boolean; empty: boolean } | null = null;
        let epoch = -1;
        const ctx = this.ctx;
        const load = (r: Tuple, u: Env | null) => {
          if (cache && !sub.correlated && epoch === ctx.epoch) return cache;
          epoch = ctx.epoch;
          const set = new Set<string>();
          let hasNull = false;
          let empty = true;
          for (const batch of sub.op.run(this.ctx, { row: r, up: u })) {
            for (const row of batch) {
              empty = false;
              const w = row[0];
              if (w === null) hasNull = true;
              else set.add(keyOf(affA && isNumAff(affA) && typeof w === 'string' ? applyAffinity(w, 'numeric') : w));
            }
          }
          cache = { set, hasNull, empty };
          return cache;
        };
        return (r, u) => {
          const s = load(r, u);
          if (s.empty) return not ? 1n : 0n;
          const v0 = a(r, u);
          if (v0 === null) return null;
          const [v] = conv(v0, affB === 'text' ? '' : 0n);
          if (s.set.has(keyOf(v))) return not ? 0n : 1n;
          return s.hasNull ? null : not ? 1n : 0n;
        };
      }
      case 'exists': {
        const sub = this.subquery(e.plan, scope, info);
        const not = !!e.not;
        let cached: Value | undefined;
        let epoch = -1;
        const ctx = this.ctx;
        return (r, u) => {
          if (cached !== undefined && !sub.correlated && epoch === ctx.epoch) return cached;
          epoch = ctx.epoch;
          let found = false;
          for (const batch of sub.op.run(this.ctx, { row: r, up: u })) if (batch.length) { found = true; break; }
          cached = found !== not ? 1n : 0n;
          return cached;
        };
      }
      case 'subquery': {
        const sub = this.subquery(e.plan, scope, info);
        let cached: Value | undefined;
        let epoch = -1;
        const ctx = this.ctx;
        return (r, u) => {
          if (cached !== undefined && !sub.correlated && epoch === ctx.epoch) return cached;
          epoch = ctx.epoch;
          let v: Value = null;
          outer: for (const batch of sub.op.run(this.ctx, { row: r, up: u })) for (const row of batch) { v = row[0]; break outer; }
          cached = v;
          return v;
        };
      }
      case 'case': {
        const els = e.else ? c(e.else) : () => null;
        if (e.operand) {
          const op = c(e.operand);
          // SQLite compares `CASE x WHEN y` as `x = y`: the usual affinity rules, per WHEN
          const affOp = exprAffinity(e.operand, scope);
          const whens = e.whens.map((w) => ({ when: c(w.when), then: c(w.then), cmp: comparer(affOp, exprAffinity(w.when, scope), comparisonCollation(e.operand!, w.when)) }));
          return (r, u) => {
            const v = op(r, u);
            if (v !== null) for (const w of whens) {
              const x = w.when(r, u);
              if (x === null) continue;
              const [p, q] = w.cmp(v, x);
              if (compareValues(p, q) === 0) return w.then(r, u);
            }
            return els(r, u);
          };
        }
        const whens = e.whens.map((w) => ({ when: c(w.when), then: c(w.then) }));
        return (r, u) => {
          for (const w of whens) if (truthy(w.when(r, u)) === true) return w.then(r, u);
          return els(r, u);
        };
      }
      case 'collate': return c(e.arg); // the value is the operand's; the collation acts where it is compared
      case 'cast': {
        const a = c(e.arg);
        switch (e.to) {
          case 'integer': return (r, u) => toInteger(a(r, u));
          case 'real': return (r, u) => toReal(a(r, u));
          case 'text': return (r, u) => toText(a(r, u));
          case 'numeric': return (r, u) => {
            const v = a(r, u);
            if (v === null) return null;
            const n = typeof v === 'string' ? toNumeric(v)! : v;
            if (typeof n === 'number' && Number.isInteger(n) && Math.abs(n) < 9.2e18) return BigInt(n);
            return n;
          };
          default: return a;
        }
      }
      case 'like': {
        const a = c(e.arg);
        const p = c(e.pattern);
        const esc = e.escape ? c(e.escape) : null;
        const not = !!e.not;
        const glob = !!e.glob;
        return (r, u) => {
          const v = a(r, u);
          const pat = p(r, u);
          if (v === null || pat === null) return null;
          const ev = esc ? esc(r, u) : null;
          if (esc && ev === null) return null;
          const m = likeMatch(toText(v)!, toText(pat)!, ev === null ? null : toText(ev)!, glob);
          return m !== not ? 1n : 0n;
        };
      }
      case 'call': return this.call(e.name, e.args, scope, info);
    }
    throw new DbError('validation_failed', `unknown expression kind ${(e as Expr).kind}`);
  }

  private binary(op: string, l: Expr, rr: Expr, scope: Scope, info: CompileInfo): Compiled {
    const a = this.compile(l, scope, info);
    const b = this.compile(rr, scope, info);
    switch (op) {
      case '+': case '-': case '*': case '/': case '%':
        return (r, u) => arith(op, a(r, u), b(r, u));
      case '||':
        return (r, u) => {
          const x = a(r, u);
          if (x === null) return null;
          const y = b(r, u);
          if (y === null) return null;
          return toText(x)! + toText(y)!;
        };
      case 'and':
        return (r, u) => {
          const x = truthy(a(r, u));
          if (x === false) return 0n;
          const y = truthy(b(r, u));
          if (y === false) return 0n;
          return x === null || y === null ? null : 1n;
        };
      case 'or':
        return (r, u) => {
          const x = truthy(a(r, u));
          if (x === true) return 1n;
          const y = truthy(b(r, u));
          if (y === true) return 1n;
          return x === null || y === null ? null : 0n;
        };
      case '&': case '|': case '<<': case '>>':
        return (r, u) => {
          const x = toInteger(a(r, u));
          const y = toInteger(b(r, u));
          if (x === null || y === null) return null;
          if (op === '&') return x & y;
          if (op === '|') return x | y;
          const sh = op === '<<' ? y : -y;
          if (sh >= 64n) return 0n;
          if (sh <= -64n) return x < 0n ? -1n : 0n;
          return BigInt.asIntN(64, sh >= 0n ? x << sh : x >> -sh);
        };
    }
    const conv = comparer(exprAffinity(l, scope), exprAffinity(rr, scope), comparisonCollation(l, rr));
    if (op === 'is' || op === 'is not') {
      const want = op === 'is';
      return (r, u) => {
        const x = a(r, u);
        const y = b(r, u);
        if (x === null || y === null) return (x === y) === want ? 1n : 0n;
        const [p, q] = conv(x, y);
        return (compareValues(p, q) === 0) === want ? 1n : 0n;
      };
    }
    const test = CMP[op];
    if (!test) throw new DbError('validation_failed', `unknown operator ${op}`);
    return (r, u) => {
      const x = a(r, u);
      if (x === null) return null;
      const y = b(r, u);
      if (y === null) return null;
      const [p, q] = conv(x, y);
      return test(compareValues(p, q)) ? 1n : 0n;
    };
  }

  private call(name: string, args: readonly Expr[], scope: Scope, info: CompileInfo): Compiled {
    const n = name.toLowerCase();
    const f = SCALAR_FUNCTIONS[n] ?? VECTOR_FUNCTIONS[n];
    if (!f) {
      if (['count', 'sum', 'avg', 'total', 'group_concat', 'string_agg'].includes(n)) throw new DbError('validation_failed', `misuse of aggregate function ${n}()`);
      throw new DbError('validation_failed', `no such function: ${name}`, { function: name });
    }
    if (args.length < f.min || args.length > f.max) throw new DbError('validation_failed', `wrong number of arguments to function ${name}()`);
    const cs = args.map((x) => this.compile(x, scope, info));
    if (n === 'iif') return (r, u) => (truthy(cs[0](r, u)) === true ? cs[1](r, u) : cs[2](r, u));
    if (n === 'coalesce' || n === 'ifnull') return (r, u) => { for (const x of cs) { const v = x(r, u); if (v !== null) return v; } return null; };
    if (cs.length === 1) { const x = cs[0]; return (r, u) => f.fn([x(r, u)]); }
    return (r, u) => f.fn(cs.map((x) => x(r, u)));
  }

  private subquery(plan: PlanNode, scope: Scope, info: CompileInfo): { op: Op; correlated: boolean } {
    const subInfo: CompileInfo = { outerDepth: 0 };
    const op = compilePlan(plan, this.ctx, scope, subInfo);
    const correlated = subInfo.outerDepth > 0;
    if (subInfo.outerDepth - 1 > info.outerDepth) info.outerDepth = subInfo.outerDepth - 1;
    return { op, correlated };
  }
}
