import { coerceValue, DbError, isLosslessNumber, parseJsonExact, pkSegment, stringifyJson } from './index';

function err(f: () => unknown): string {
  try {
    f();
    return 'ok';
  } catch (e) {
    return e instanceof DbError ? `${e.code}: ${e.message}` : String(e);
  }
}

describe('exact JSON (json.ts)', () => {
  it('parses integers beyond ±(2^53 − 1) as bigint, keeps doubles, marks literals a double cannot hold', () => {
    const v = parseJsonExact('{"a":12345678901234567891,"b":9007199254740991,"c":-9007199254740993,"d":1e308,"e":5e-324,"f":0.10000000000000000001,"g":1e400,"h":2.5}') as Record<string, unknown>;
    expect(v.a).toBe(12345678901234567891n);
    expect(v.b).toBe(9007199254740991);
    expect(v.c).toBe(-9007199254740993n);
    expect(v.d).toBe(1e308);
    expect(v.e).toBe(5e-324);
    expect(isLosslessNumber(v.f) && v.f.value).toBe('0.10000000000000000001');
    expect(isLosslessNumber(v.g) && v.g.value).toBe('1e400');
    expect(v.h).toBe(2.5);
    expect(() => parseJsonExact('{"a":123456789012345678901,')).toThrow(SyntaxError);
  });

  it('reads strings whose digit runs look like broken number literals (a hex hash)', () => {
    const text = '{"fingerprint":"aec59f019e6ce8ea0b6631dfea9221fa8f509d0433612291038065110eb67937","n":1,"s":"0123456789012345678.e+"}';
    expect(parseJsonExact(text)).toEqual({ fingerprint: 'aec59f019e6ce8ea0b6631dfea9221fa8f509d0433612291038065110eb67937', n: 1, s: '0123456789012345678.e+' });
  });

  it('writes bigints as exact digits and whole doubles beyond 2^53 in exponent form, so they read back as they were', () => {
    const v = { i: 9223372036854775807n, d: 2 ** 60, n: [-2345074683604369400, 0.30000000000000004, 9007199254740991], s: 'x,12345678901234567890]' };
    const text = stringifyJson(v);
    expect(text).toBe('{"i":9223372036854775807,"d":1.152921504606847e+18,"n":[-2.3450746836043694e+18,0.30000000000000004,9007199254740991],"s":"x,12345678901234567890]"}');
    expect(parseJsonExact(text)).toEqual(v);
    expect(stringifyJson({ plain: [1, 'a', null] })).toBe('{"plain":[1,"a",null]}');
    expect(pkSegment(['a,b', 9007199254740993n])).toBe('a%2Cb,9007199254740993');
  });
});

describe('coerceValue: canonical values, refusals quote what was sent', () => {
  it('i64 holds the signed 64-bit range exactly', () => {
    expect(coerceValue('n', 'i64', -9223372036854775808n)).toBe(-9223372036854775808n);
    expect(coerceValue('n', 'i64', 42)).toBe(42);
    expect(err(() => coerceValue('n', 'i64', 9223372036854775808n))).toBe('type_mismatch: column "n" expects i64 (a 64-bit integer), got 9223372036854775808');
    expect(err(() => coerceValue('n', 'i64', 1.5))).toMatch(/^type_mismatch: .*got 1.5$/);
  });

  it('json keeps big integers and refuses decimals a double cannot hold, naming the column', () => {
    const big = parseJsonExact('{"r":12345678901234567891}');
    expect(coerceValue('tags', 'json', big)).toEqual({ r: 12345678901234567891n });
    const bad = parseJsonExact('[1,{"x":0.10000000000000000001}]');
    expect(err(() => coerceValue('tags', 'json', bad))).toMatch(/^type_mismatch: column "tags" \(json\) holds the number 0.10000000000000000001/);
  });

  it('f64 takes the nearest double, −0 as 0; out of range is refused', () => {
    expect(Object.is(coerceValue('f', 'f64', -0), 0)).toBe(true);
    expect(coerceValue('f', 'f64', parseJsonExact('0.10000000000000000001'))).toBe(0.1);
    expect(coerceValue('f', 'f64', 2n ** 60n)).toBe(2 ** 60);
    expect(err(() => coerceValue('f', 'f64', parseJsonExact('1e400')))).toMatch(/got 1e400$/);
    expect(err(() => coerceValue('f', 'f64', parseJsonExact('1e-400')))).toMatch(/got 1e-400$/);
  });

  it('vectors: −0 as 0; a component out of range is quoted as sent', () => {
    const v = coerceValue('e', 'vector', [-0, 1, 2], 3) as number[];
    expect(Object.is(v[0], 0)).toBe(true);
    expect(err(() => coerceValue('e', 'vector', parseJsonExact('[1,2,3,1e400]'), 4))).toBe('type_mismatch: column "e" expects vector (an array of finite numbers), got [1,2,3,1e400]');
  });
});
