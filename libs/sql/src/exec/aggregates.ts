/** Aggregate states with SQLite semantics. */
import { DbError } from '@mmdb/core';
import type { AggregateCall } from '@mmdb/plan';
import { collationKey, comparisonCollation } from './collation';
import { Kbn, kahanSum, sortedValues } from './compensated';
import { applyAffinity, checkInt, compareValues, hashKey, toReal, toText, type Value } from '../values';

export interface AggState { step(args: Value[]): void; result(): Value }

export function makeAggregate(spec: AggregateCall): AggState {
  const inner = base(spec);
  if (!spec.distinct) return inner;
  const seen = new Set<string>();
  // DISTINCT tells TEXT apart under the argument's collating sequence (count(DISTINCT name) on NOCASE)
  const fold = spec.args.length === 1 ? collationKey(comparisonCollation(spec.args[0], null)) : null;
  return {
    step(args) {
      if (args[0] === null) return;
      const v = args[0];
      const k = hashKey(fold ? fold(v) : v);
      if (seen.has(k)) return;
      seen.add(k);
      inner.step(args);
    },
    result: () => inner.result(),
  };
}

function base(spec: AggregateCall): AggState {
  switch (spec.fn.toLowerCase()) {
    case 'count': {
      let n = 0; // a number while counting (bigint increments allocate); exact up to 2^53 rows
      if (spec.star || spec.args.length === 0) return { step: () => void n++, result: () => BigInt(n) };
      return { step: (a) => { if (a[0] !== null) n++; }, result: () => BigInt(n) };
    }
    case 'sum':
    case 'total':
    case 'avg': {
      // integers: exact in `small` (a double) while its magnitude stays below 2^53, moved into
      // the bigint `isum` before it could leave that range (bigint arithmetic allocates); from
      // the first real on, SQLite's compensated (Kahan-Babuska-Neumaier) sum from the integers' total
      let isum = 0n;
      let small = 0;
      let big = false;
      let fsum: Kbn | null = null;
      let cnt = 0;
      const fn = spec.fn.toLowerCase();
      const SAFE = 2 ** 52;
      return {
        step(a) {
          const v = a[0];
          if (v === null) return;
          cnt++;
          // SQLite: text that is wholly an integer adds as one; any other text (and every real)
          // turns the sum approximate (REAL), adding its numeric prefix ('abc' adds 0.0)
          let n = typeof v === 'string' ? applyAffinity(v, 'numeric') : v;
          if (typeof n === 'string') n = toReal(n)!;
          if (typeof n === 'bigint') {
            if (fsum) { fsum.addInt(n); return; }
            if (!big && n < 4503599627370496n && n > -4503599627370496n && small < SAFE && small > -SAFE) {
              small += Number(n); // partial sums below 2^53: exact, and far from overflowing
              return;
            }
            // from here on every step in bigint, so an overflow is caught where SQLite's is
            if (!big) { big = true; isum = BigInt(small); small = 0; }
            isum += n;
            if (fn === 'sum' && (isum > 9223372036854775807n || isum < -9223372036854775808n)) checkInt(isum);
          } else {
            if (!fsum) { fsum = new Kbn(isum + BigInt(small)); small = 0; isum = 0n; }
            fsum.add(Number(n));
          }
        },
        result() {
          if (small !== 0) { isum += BigInt(small); small = 0; }
          const real = fsum ? fsum.value() : 0;
          if (fn === 'total') return fsum ? real : Number(isum);
          if (cnt === 0) return null;
          if (fn === 'avg') return (fsum ? real : Number(isum)) / cnt;
          return fsum ? real : isum;
        },
      };
    }
    case 'kahan_sum': return kahanSum();
    case 'sorted_values': return sortedValues();
    case 'min':
    case 'max': {
      const sign = spec.fn.toLowerCase() === 'min' ? -1 : 1;
      let best: Value = null;
      // TEXT compares under the argument's collating sequence (min(name) on a NOCASE column)
      const fold = spec.args.length === 1 ? collationKey(comparisonCollation(spec.args[0], null)) : null;
      const cmp = fold ? (x: Value, y: Value) => compareValues(fold(x), fold(y)) : compareValues;
      return {
        step(a) {
          const v = a[0];
          if (v === null) return;
          if (best === null || cmp(v, best) * sign > 0) best = v;
        },
        result: () => best,
      };
    }
    case 'group_concat':
    case 'string_agg': {
      let s: string | null = null;
      const isAgg = spec.fn.toLowerCase() === 'string_agg';
      return {
        step(a) {
          if (a[0] === null) return;
          const sep = a.length > 1 ? (a[1] === null ? '' : toText(a[1])!) : isAgg ? ',' : ',';
          s = s === null ? toText(a[0])! : s + sep + toText(a[0])!;
        },
        result: () => s,
      };
    }
    case 'any_value': {
      let v: Value = null;
      let set = false;
      return { step: (a) => { v = a[0]; set = true; }, result: () => (set ? v : null) };
    }
  }
  throw new DbError('validation_failed', `no such aggregate function: ${spec.fn}`);
}
