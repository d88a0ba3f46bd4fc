/**
 * Compensated summation for the aggregate states (aggregates.ts):
 *  - `Kbn`: the Kahan-Babuska-Neumaier sum SQLite (3.43 on) keeps for `sum`, `total` and `avg` once
 *    a value is real (`kahanBabuskaNeumaierStep` and its int64 split in SQLite's func.c), so ten 0.1
 *    sum to 1.0 and our answers equal the reference engine's bit for bit;
 *  - `kahanSum`: the aggregate `kahan_sum(value, order)`, Elasticsearch's `CompensatedSum` (plain
 *    Kahan, in the order of `order`: the ES surface passes `_seq_no`, index order), so the ES
 *    surface's sums, averages and stats of doubles equal Elasticsearch's. The two differ in the
 *    last bit on about a third of random inputs, which is why both exist.
 */
import type { Value } from '../values';
import { toReal } from '../values';
import { KahanSum } from '@mmdb/core';

const SPLIT = 4503599627370496n; // 2^52: beyond it an int64 is added as two doubles

export class Kbn {
  private s = 0;
  private e = 0;
  /** Starts from an exact integer sum (SQLite's `kahanBabuskaNeumaierInit`). */
  constructor(start: bigint = 0n) {
    if (start <= -SPLIT || start >= SPLIT) {
      const sm = start % 16384n;
      this.s = Number(start - sm);
      this.e = Number(sm);
    } else this.s = Number(start);
  }
  add(r: number): void {
    const s = this.s;
    const t = s + r;
    if (Math.abs(s) > Math.abs(r)) this.e += (s - t) + r;
    else this.e += (r - t) + s;
    this.s = t;
  }
  addInt(i: bigint): void {
    if (i <= -SPLIT || i >= SPLIT) {
      const sm = i % 16384n;
      this.add(Number(i - sm));
      this.add(Number(sm));
    } else this.add(Number(i));
  }
  /** The sum, with the error term added unless it overflowed (SQLite's `sqlite3IsOverflow`). */
  value(): number {
    return Number.isFinite(this.e) ? this.s + this.e : this.s;
  }
}

/** Elasticsearch's CompensatedSum over `xs` in `order` (KahanSum, libs/core: the ES aggregation code's too). */
function kahan(xs: ArrayLike<number>, order?: ArrayLike<number>): number {
  const k = new KahanSum();
  for (let i = 0; i < xs.length; i++) k.add(xs[order ? order[i] : i]);
  return k.value;
}

/**
 * `kahan_sum(value, order)`: the values (NULLs skipped) buffered with their order keys, summed
 * at the end in ascending key order (rows that arrive in order are not sorted); 0.0 for none.
 */
export function kahanSum(): { step(a: Value[]): void; result(): Value } {
  const vals: number[] = [];
  const keys: number[] = [];
  let sorted = true;
  return {
    step(a) {
      if (a[0] === null) return;
      const k = a.length > 1 && a[1] !== null ? toReal(a[1])! : keys.length;
      if (keys.length && k < keys[keys.length - 1]) sorted = false;
      vals.push(toReal(a[0])!);
      keys.push(k);
    },
    result() {
      if (sorted) return kahan(vals);
      const idx = Array.from(vals, (_, i) => i).sort((x, y) => keys[x] - keys[y] || x - y);
      return kahan(vals, idx);
    },
  };
}

/**
 * `sorted_values(value)` (plans only): the finite values (NULLs skipped) ascending, as the text of
 * a JSON array of exact doubles (shortest round-trip form), so a surface can compute order
 * statistics (the ES surface's percentiles and median absolute deviation) from one aggregate node.
 */
export function sortedValues(): { step(a: Value[]): void; result(): Value } {
  const xs: number[] = [];
  return {
    step(a) {
      if (a[0] === null) return;
      const x = toReal(a[0])!;
      if (Number.isFinite(x)) xs.push(x);
    },
    result: () => JSON.stringify(Float64Array.from(xs).sort(), (_k, v) => (v instanceof Float64Array ? Array.from(v) : v)),
  };
}
