import { makeAggregate } from './aggregates';
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
