/**
 * An aggregate query's groups, maintained incrementally: each changed row adds its new
 * contribution and removes its old one, so a change costs O(1) per aggregate (min/max: O(distinct
 * values of the group) when the extreme itself leaves). The values added are computed by the
 * executor (the aggregate's group and argument expressions run over the changed row); this file
 * only keeps the running sums, counts and value multisets, with SQLite's result rules (the
 * same as exec/aggregates.ts: an all-integer sum stays an integer, NULLs are skipped, sum of
 * nothing is NULL, total of nothing 0.0).
 */
import type { AggregateCall } from '@mmdb/plan';
import { applyAffinity, compareValues, hashKey, toReal, tupleKey, type Tuple, type Value } from '../values';

interface Acc {
  add(v: Value, sign: 1 | -1): void;
  result(): Value;
}

function numeric(v: Exclude<Value, null>): bigint | number {
  const n = typeof v === 'string' ? applyAffinity(v, 'numeric') : v;
  if (typeof n === 'string') return toReal(n) ?? 0;
  return n as bigint | number;
}

function acc(spec: AggregateCall): Acc {
  const fn = spec.fn.toLowerCase();
  if (fn === 'count') {
    let n = 0;
    const star = spec.star || spec.args.length === 0;
    return { add: (v, s) => { if (star || v !== null) n += s; }, result: () => BigInt(n) };
  }
  if (fn === 'min' || fn === 'max') {
    const values = new Map<string, { v: Value; n: number }>();
    let best: Value | undefined; // cached extreme; undefined = recompute
    const better = (a: Value, b: Value) => (fn === 'min' ? compareValues(a, b) < 0 : compareValues(a, b) > 0);
    return {
      // a count may go below zero while a resume takes the groups back through the log (undoing
      // frames in any order); only values with a positive count are in the group
      add(v, s) {
        if (v === null) return;
        const k = hashKey(v);
        const e = values.get(k);
        const n = (e?.n ?? 0) + s;
        if (n === 0) {
          values.delete(k);
          if (best !== undefined && best !== null && compareValues(best, v) === 0) best = undefined;
          return;
        }
        if (e) e.n = n;
        else values.set(k, { v, n });
        if (n > 0 && s > 0 && best !== undefined && (best === null || better(v, best))) best = v;
      },
      result() {
        if (best === undefined) {
          best = null;
          for (const { v, n } of values.values()) if (n > 0 && (best === null || better(v, best))) best = v;
        }
        return best;
      },
    };
  }
  // sum, total, avg
  let isum = 0n;
  let fsum = 0;
  let reals = 0;
  let cnt = 0;
  return {
    add(v, s) {
      if (v === null) return;
      cnt += s;
      const n = numeric(v);
      if (typeof n === 'bigint') isum += s > 0 ? n : -n;
      else {
        fsum += s * n;
        reals += s;
      }
    },
    result() {
      const real = reals > 0;
      const asReal = () => Number(isum) + fsum;
      if (fn === 'total') return asReal();
      if (cnt === 0) return null;
      if (fn === 'avg') return asReal() / cnt;
      return real ? asReal() : isum;
    },
  };
}

interface Group {
  readonly key: Tuple;
  rows: number;
  readonly accs: Acc[];
}

/** The groups of one aggregate node. Input tuples: the group values, then one argument per aggregate (NULL for count(*)). */
export class AggregateState {
  private readonly groups = new Map<string, Group>();

  constructor(
    private readonly specs: readonly AggregateCall[],
    private readonly groupWidth: number,
  ) {}

  get size(): number {
    return this.groups.size;
  }

  /** Adds (sign 1) or removes (-1) one input tuple; returns the key of the group it touched. */
  apply(t: Tuple, sign: 1 | -1): string {
    const gk = t.slice(0, this.groupWidth);
    const k = tupleKey(gk);
    let g = this.groups.get(k);
    if (!g) {
      g = { key: gk, rows: 0, accs: this.specs.map(acc) };
      this.groups.set(k, g);
    }
    g.rows += sign;
    for (let i = 0; i < this.specs.length; i++) g.accs[i].add(t[this.groupWidth + i], sign);
    return k;
  }

  /**
   * The aggregate's output row of a group (group values, then results), or null when the group
   * has no rows (it is not in the result). With no GROUP BY the single group always has a row,
   * as in SQL (count 0 over an empty table).
   */
  output(k: string): Tuple | null {
    const g = this.groups.get(k);
    if (!g || (g.rows <= 0 && this.groupWidth > 0)) return this.groupWidth === 0 ? this.empty() : null;
    return [...g.key, ...g.accs.map((a) => a.result())];
  }

  /** Drops a group left with no rows (after its output was read). */
  prune(k: string): void {
    const g = this.groups.get(k);
    if (g && g.rows <= 0 && this.groupWidth > 0) this.groups.delete(k);
  }

  /** Drops every group left with no rows (after a rewind through the log). */
  pruneAll(): void {
    for (const k of [...this.groups.keys()]) this.prune(k);
  }

  /** Every group's output row. */
  outputs(): Tuple[] {
    if (this.groupWidth === 0) return [this.output('')!];
    const out: Tuple[] = [];
    for (const k of this.groups.keys()) {
      const r = this.output(k);
      if (r) out.push(r);
    }
    return out;
  }

  private empty(): Tuple {
    return this.specs.map((s) => acc(s).result());
  }
}
