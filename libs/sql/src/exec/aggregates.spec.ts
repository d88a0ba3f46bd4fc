import { makeAggregate } from './aggregates';
import fc from 'fast-check';
import type { Value } from '../values';

const run = (fn: string, vals: Value[]) => {
  const a = makeAggregate({ name: 'x', fn, args: [{ kind: 'col', name: 'v' }] });
  for (const v of vals) a.step([v]);
  return a.result();
};

describe('sum/total/avg', () => {
  it('sums integers exactly across the 2^53 boundary', () => {
    const big = 2n ** 52n;
    expect(run('sum', [big - 1n, big - 1n, big - 1n, 3n])).toBe(3n * (big - 1n) + 3n);
    expect(run('sum', Array.from({ length: 10_000 }, (_, i) => BigInt(i + 1)))).toBe(50_005_000n);
    expect(run('sum', [-(2n ** 62n), -(2n ** 62n), 5n])).toBe(-(2n ** 63n) + 5n);
  });

  it('raises integer overflow where an intermediate sum overflows, as SQLite does', () => {
    expect(() => run('sum', [9223372036854775807n, 1n, -5n])).toThrow(/overflow/);
    expect(() => run('sum', [2n ** 62n, 2n ** 62n])).toThrow(/overflow/);
    expect(run('total', [9223372036854775807n, 1n])).toBe(9223372036854775808);
  });

  it('switches to real arithmetic at the first real, and handles NULLs and strings', () => {
    expect(run('sum', [1n, 2n, 0.5, 3n])).toBe(6.5);
    expect(run('sum', [null, null])).toBeNull();
    expect(run('total', [null])).toBe(0);
    expect(run('avg', [1n, 2n, null, '6'])).toBe(3);
    expect(run('count', [1n, null, 3n])).toBe(2n);
  });
});

describe('compensated sums', () => {
  it('sums reals as SQLite does (Kahan-Babuska-Neumaier): ten 0.1 are 1.0', () => {
    const tenth = Array.from({ length: 10 }, () => 0.1);
    expect(run('sum', tenth)).toBe(1);
    expect(run('total', tenth)).toBe(1);
    expect(run('avg', tenth)).toBe(0.1);
    // where plain Kahan loses the small term, Neumaier's keeps it
    expect(run('sum', [1e100, 1, -1e100])).toBe(1);
    // the integers before the first real are the sum's start (split past 2^52 as SQLite does)
    expect(run('sum', [2n ** 60n + 3n, 0.5])).toBe(Number(2n ** 60n) + 3.5);
  });

  it('equals SQLite bit for bit on random reals and integers', () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const Database = require('better-sqlite3');
    const db = new Database(':memory:');
    db.exec('CREATE TABLE t(v)');
    const ins = db.prepare('INSERT INTO t VALUES (?)');
    fc.assert(fc.property(fc.array(fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e6, max: 1e6 }), fc.integer({ min: -1000, max: 1000 }).map((i) => BigInt(i)), fc.double({ noNaN: true, noDefaultInfinity: true })), { minLength: 1, maxLength: 40 }), (vals) => {
      db.exec('DELETE FROM t');
      for (const v of vals) ins.run(v);
      const want = db.prepare('SELECT total(v) t, avg(v) a FROM t').get();
      expect([vals, run('total', vals), run('avg', vals)]).toEqual([vals, want.t, want.a]);
    }), { numRuns: 300 });
    db.close();
  });

  it('kahan_sum adds in the order of its second argument, as Elasticsearch\'s CompensatedSum', () => {
    const k = (pairs: Array<[Value, Value]>) => {
      const a = makeAggregate({ name: 'x', fn: 'kahan_sum', args: [{ kind: 'col', name: 'v' }, { kind: 'col', name: 'o' }] });
      for (const p of pairs) a.step(p);
      return a.result();
    };
    expect(k(Array.from({ length: 10 }, (_, i) => [0.1, BigInt(i)]))).toBe(1);
    expect(k([])).toBe(0);
    expect(k([[null, 1n], [2.5, 2n]])).toBe(2.5);
    // plain Kahan (not Neumaier): a large term absorbs the compensation
    expect(k([[1e100, 1n], [1, 2n], [-1e100, 3n]])).toBe(0);
    // the same values in another arrival order sum in key order
    expect(k([[-1e100, 3n], [1, 2n], [1e100, 1n]])).toBe(0);
    expect(k([[1, 1n], [Infinity, 2n], [2, 3n]])).toBe(Infinity);
    fc.assert(fc.property(fc.array(fc.double({ noNaN: true, min: -1e3, max: 1e3 }), { maxLength: 30 }), (xs) => {
      let value = 0, delta = 0;
      for (const x of xs) { const c = x + delta; const u = value + c; delta = c - (u - value); value = u; }
      const shuffled = xs.map((x, i) => [x, BigInt(i)] as [Value, Value]).reverse();
      expect(k(shuffled)).toBe(value);
    }));
  });
});

describe('sorted_values', () => {
  it('the finite values ascending as exact doubles in a JSON array', () => {
    expect(run('sorted_values', [3n, null, 0.1, -2.5, 1 / 3, '7'])).toBe(JSON.stringify([-2.5, 0.1, 1 / 3, 3, 7]));
    expect(run('sorted_values', [])).toBe('[]');
    expect(JSON.parse(run('sorted_values', [1e-300, 2 ** 60]) as string)).toEqual([1e-300, 2 ** 60]);
  });
});
