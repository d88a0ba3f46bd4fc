import fc from 'fast-check';
import { textDistance } from './vector-text';
import { VECTOR_FUNCTIONS } from './vector-functions';
import type { Value } from '../values';

/** A parsed vector as the functions take it at run time (an array; the Value type names the SQL kinds only). */
const arr = (x: number[]) => x as unknown as Value;

const FNS = ['l2_distance', 'l1_distance', 'inner_product', 'negative_inner_product', 'cosine_distance'];

describe('vector distances read off the text', () => {
  test('equal the array form bit for bit, for every metric and number spelling', () => {
    const num = fc.oneof(
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.integer({ min: -1e6, max: 1e6 }).map((i) => i / 1e4), // 4 decimals, as the hybrid bench writes
      fc.constantFrom(0, -0, 1e22, 1e-22, 123456789012345, 1234567890123456789, 5e-324, 1.7976931348623157e308),
    );
    const spell = fc.constantFrom(
      (x: number) => JSON.stringify(x),
      (x: number) => x.toExponential(),
      (x: number) => x.toExponential().toUpperCase(),
      (x: number) => x.toPrecision(17),
      (x: number) => (Object.is(x, -0) ? '-0' : String(x)),
    );
    fc.assert(
      fc.property(fc.array(fc.tuple(num, spell, num), { minLength: 1, maxLength: 12 }), fc.constantFrom(...FNS), fc.constantFrom('', ' ', '\n\t'), (xs, fn, ws) => {
        const text = `${ws}[${ws}${xs.map(([x, s]) => s(x)).join(`${ws},${ws}`)}${ws}]${ws}`;
        const a: number[] = JSON.parse(text);
        const b = xs.map(([, , y]) => y);
        if (!a.every(Number.isFinite)) return;
        const want = VECTOR_FUNCTIONS[fn].fn([arr(a), arr(b)]);
        const got = textDistance(fn, text, b);
        expect(got === undefined ? 'undefined' : Number.isNaN(got) ? null : got).toBe(want);
      }),
      { numRuns: 3000 },
    );
  });

  test('the inline reading of plain decimals equals JSON.parse at its limits (15 significant digits, 22 decimals, leading zeros, -0, whitespace)', () => {
    // plain spellings with 0–25 decimals: the inline path up to its limits, num() past them
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.double({ min: -1e6, max: 1e6, noNaN: true }), fc.integer({ min: 0, max: 25 })), { minLength: 1, maxLength: 8 }), fc.constantFrom(...FNS), (xs, fn) => {
        const text = `[${xs.map(([x, d]) => x.toFixed(d)).join(',')}]`;
        const a: number[] = JSON.parse(text);
        const b = a.map((_, i) => (i % 3) - 0.75);
        const want = VECTOR_FUNCTIONS[fn].fn([arr(a), arr(b)]);
        const got = textDistance(fn, text, b);
        expect(got === undefined ? 'undefined' : Number.isNaN(got) ? null : got).toBe(want);
      }),
      { numRuns: 2000 },
    );
    const b = [0.25, -3];
    for (const t of ['[-0,0.0]', '[0.000000000000000000001,-0.0000000000000000000001]', '[123456789012345,0.123456789012345]', '[1234567890123456,0.1234567890123456]', '[9007199254740993,1]', '[ -1.5 ,\t2.25 ]', '[1.5,\n-2]', '[0.1e1,2]', '[-0.5E-1,3]']) {
      const want = VECTOR_FUNCTIONS.l2_distance.fn([arr(JSON.parse(t)), arr(b)]);
      expect(textDistance('l2_distance', t, b)).toBe(want);
    }
  });

  test('texts it does not read whole answer undefined (the general path then parses or fails)', () => {
    const b = [1, 2];
    for (const t of ['[1,2', '[1,2,]', '[1 2]', '[01,2]', '[1.,2]', '[.5,2]', '[1,2] x', '{"a":1}', '[1]', '[1,2,3]', '["1",2]', '[1e400,2]', '[+1,2]', '[]', '1,2', '[1,2]]', '[NaN,2]', '[1e,2]', '[-,2]', '[-.5,2]', '[00.5,2]', '[1,,2]', '[1,2,]', '[1.5.5,2]', '[1,-]', '[1,2 ]]'])
      expect(textDistance('l2_distance', t, b)).toBeUndefined();
    expect(textDistance('no_such', '[1,2]', b)).toBeUndefined();
  });

  test('the SQL functions answer the same from text and from arrays, errors included', () => {
    const q = [0.5, -1.25, 3];
    const row = '[0.1234, -2.5e-3, 7]';
    for (const fn of FNS) {
      const f = VECTOR_FUNCTIONS[fn].fn;
      const want = f([arr(JSON.parse(row)), arr(q)]);
      expect(f([row, arr(q)])).toBe(want); // the row text against a parsed vector
      expect(f([row, JSON.stringify(q)])).toBe(want); // both texts: the query parsed and remembered
      expect(f([row, JSON.stringify(q)])).toBe(want); // again, the query now cached
      expect(f([JSON.stringify(q), row])).toBe(want);
    }
    expect(VECTOR_FUNCTIONS.cosine_distance.fn(['[0,0,0]', arr(q)])).toBeNull(); // a zero vector: NULL, as the array form
    expect(() => VECTOR_FUNCTIONS.l2_distance.fn(['[1,2]', arr(q)])).toThrow(/different vector dimensions 2 and 3/);
    expect(() => VECTOR_FUNCTIONS.l2_distance.fn(['[1,"x",3]', arr(q)])).toThrow(/expected a vector/);
    expect(VECTOR_FUNCTIONS.l2_distance.fn([null, arr(q)])).toBeNull();
  });
});
