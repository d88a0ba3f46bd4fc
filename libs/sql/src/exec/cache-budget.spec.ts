import { totalmem } from 'os';
import { CachePool, SAMPLE_ROWS, defaultTableCacheBytes, tableBytes, tupleBytes, valueBytes, type PoolMember } from './cache-budget';

describe('table cache byte estimates', () => {
  it('follows V8 layouts: Smis are free, doubles and BigInts boxed, strings by width', () => {
    expect(valueBytes(null)).toBe(0);
    expect(valueBytes(42)).toBe(0);
    expect(valueBytes(0.5)).toBe(16);
    expect(valueBytes(2 ** 40)).toBe(16);
    expect(valueBytes(5n)).toBe(0); // small integers decode to shared bigints (values.ts bigOf)
    expect(valueBytes(100_000n)).toBe(24);
    expect(valueBytes('abc')).toBe(16 + 8);
    expect(valueBytes('é'.repeat(10))).toBe(16 + 16); // Latin-1: one byte a unit
    expect(valueBytes('€'.repeat(10))).toBe(16 + 24); // two bytes a unit, padded to 8
    expect(tupleBytes(['x'.repeat(100), 1, null])).toBe(48 + 3 * 8 + 16 + 104);
  });

  it('scales an even sample to the whole table, O(sample)', () => {
    const rows = Array.from({ length: 10_000 }, (_, i) => [i, `row ${i % 10}`]);
    const pks = rows.map((r) => [r[0]]);
    const exact = rows.reduce((a, r) => a + tupleBytes(r), 0) + rows.length * (48 + 8);
    const est = tableBytes(rows, pks, 0);
    expect(Math.abs(est - exact) / exact).toBeLessThan(0.01);
    expect(tableBytes(rows.slice(0, SAMPLE_ROWS), pks, 0)).toBeLessThan(est);
    expect(tableBytes(rows, pks, 2) - est).toBe(rows.length * 8); // 4 B a row per secondary index order
    expect(tableBytes([], [], 0)).toBe(0);
  });

  it('defaults to a quarter of the heap limit, at most an eighth of host memory', () => {
    const d = defaultTableCacheBytes();
    expect(d).toBeGreaterThan(0);
    expect(d).toBeLessThanOrEqual(totalmem() / 8);
  });

  it('a pool evicts the least recently used entry of any member until it fits', () => {
    const member = (entries: [string, number, number][]): PoolMember & { entries: [string, number, number][] } => ({
      entries,
      get bytes() { return this.entries.reduce((a, e) => a + e[1], 0); },
      oldestUse(keep) { const e = this.entries.find((x) => x[0] !== keep); return e ? e[2] : Infinity; },
      evictOldest(keep) { const i = this.entries.findIndex((x) => x[0] !== keep); if (i >= 0) this.entries.splice(i, 1); },
    });
    const a = member([['a1', 40, 1], ['a2', 40, 5]]);
    const b = member([['b1', 40, 3], ['new', 50, 9]]);
    const pool = new CachePool(100);
    pool.join(a);
    pool.join(b);
    pool.fit('new');
    // 170 > 100: a1 (used at 1) then b1 (at 3) go; a2 and the new entry stay
    expect(a.entries.map((e) => e[0])).toEqual(['a2']);
    expect(b.entries.map((e) => e[0])).toEqual(['new']);
    expect(pool.bytes).toBe(90);
  });
});
