import { applyAffinity, bigOf, compareValues, fromJson, joinKey, realToText, textToNumeric, toInteger } from './values';

describe('values (SQLite semantics)', () => {
  it('reads numeric prefixes of text', () => {
    expect(textToNumeric('12abc')).toBe(12n);
    expect(textToNumeric(' 1.5e2x')).toBe(150);
    expect(textToNumeric('abc')).toBe(0n);
  });
  it('formats reals like %!.15g', () => {
    expect(realToText(2)).toBe('2.0');
    expect(realToText(1e20)).toBe('1.0e+20');
    expect(realToText(0.1 + 0.2)).toBe('0.3');
    expect(realToText(1e-5)).toBe('1.0e-05');
  });
  it('orders NULL < numbers < text, ints and reals by value', () => {
    expect(compareValues(null, 0n)).toBeLessThan(0);
    expect(compareValues(1n, 1.0)).toBe(0);
    expect(compareValues(2n, 1.5)).toBeGreaterThan(0);
    expect(compareValues(99n, 'a')).toBeLessThan(0);
  });
  it('applies affinities', () => {
    expect(applyAffinity('42', 'integer')).toBe(42n);
    expect(applyAffinity('4.0', 'integer')).toBe(4n);
    expect(applyAffinity('x', 'integer')).toBe('x');
    expect(applyAffinity(3n, 'real')).toBe(3);
    expect(applyAffinity(3n, 'text')).toBe('3');
    expect(toInteger(1e30)).toBe(9223372036854775807n);
  });
  it('joinKey gives equal values one key (1 and 1.0 alike) and different values or classes different keys', () => {
    expect(joinKey(1n)).toBe(joinKey(1));
    expect(new Map([[joinKey(0n), 1]]).get(joinKey(-0))).toBe(1); // Map keys compare -0 and 0 alike
    expect(joinKey(2n ** 60n)).toBe(joinKey(2 ** 60));
    expect(joinKey(9007199254740993n)).not.toBe(joinKey(9007199254740992n));
    expect(joinKey(1.5)).not.toBe(joinKey(1n));
    expect(joinKey('1')).not.toBe(joinKey(1n));
    expect(joinKey('i1')).not.toBe(joinKey(1n));
    for (const v of [1n, 1.5, 'x', 2n ** 62n, -(2 ** 55)]) expect(new Map([[joinKey(v), 1]]).get(joinKey(v))).toBe(1);
  });
});

describe('bigOf (shared small bigints)', () => {
  it('is BigInt(n) for every integer, inside the shared range and past it', () => {
    for (const n of [-1025, -1024, -1, 0, 1, 999, 65_535, 65_536, 2 ** 31, -(2 ** 40), Number.MAX_SAFE_INTEGER]) {
      expect(bigOf(n)).toBe(BigInt(n));
      expect(bigOf(n)).toBe(BigInt(n)); // the second ask answers the same value from the table
    }
    expect(fromJson(42, undefined)).toBe(42n);
    expect(fromJson(42, 'real')).toBe(42);
    expect(fromJson(-7, 'integer')).toBe(-7n);
  });
});
