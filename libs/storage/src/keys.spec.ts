import { corruptFaults } from '@mmdb/core';
import type { JsonValue } from '@mmdb/core';
import { decodeKey, decodeTuple, encodeTuple, keyOf, prefixEnd, prefixRange } from './keys';

/** The order the encoding promises: kind first (null < false < true < number < string), then value. */
function kind(v: JsonValue): number {
  if (v === null) return 0;
  if (v === false) return 1;
  if (v === true) return 2;
  if (typeof v === 'number') return 3;
  if (typeof v === 'string') return 4;
  return 5;
}

function compareValue(a: JsonValue, b: JsonValue): number {
  const ka = kind(a);
  const kb = kind(b);
  if (ka !== kb) return ka - kb;
  if (typeof a === 'number' && typeof b === 'number') return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === 'string' && typeof b === 'string') return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
  return 0;
}

function compareTuple(a: JsonValue[], b: JsonValue[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const c = compareValue(a[i], b[i]);
    if (c) return c;
  }
  return a.length - b.length;
}

// A seeded generator so failures reproduce.
function rng(seed: number) {
  return () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed / 0x7fffffff;
  };
}

function randomValue(r: () => number): JsonValue {
  const k = Math.floor(r() * 7);
  const ints = [0, 1, -1, 2 ** 53 - 1, -(2 ** 53 - 1), 255, 256, -256, 65536];
  switch (k) {
    case 0:
      return null;
    case 1:
      return r() < 0.5;
    case 2:
      return ints[Math.floor(r() * ints.length)];
    case 3:
      return Math.floor((r() - 0.5) * 2 ** 40);
    case 4:
      return (r() - 0.5) * 1e6;
    default: {
      const alphabet = ['a', 'b', 'z', '\u0000', '\u00ff', 'é', '😀', 'A', '0', '\u0001'];
      const n = Math.floor(r() * 5);
      let s = '';
      for (let i = 0; i < n; i++) s += alphabet[Math.floor(r() * alphabet.length)];
      return s;
    }
  }
}

describe('tuple key encoding', () => {
  it('sorts bytewise exactly as the tuple comparator, over random composite tuples', () => {
    const r = rng(42);
    const tuples: JsonValue[][] = [];
    for (let i = 0; i < 3000; i++) {
      const n = 1 + Math.floor(r() * 3);
      tuples.push(Array.from({ length: n }, () => randomValue(r)));
    }
    const byBytes = [...tuples].sort((a, b) => Buffer.compare(encodeTuple(a), encodeTuple(b)));
    const byValue = [...tuples].sort(compareTuple);
    for (let i = 0; i < tuples.length; i++) expect(compareTuple(byBytes[i], byValue[i])).toBe(0);
  });

  it('sorts i64 numerically with negatives first', () => {
    const xs = [5, -1, 0, -(2 ** 53 - 1), 2 ** 53 - 1, 300, -300, 1, 2 ** 31, -(2 ** 31)];
    const sorted = [...xs].sort((a, b) => Buffer.compare(encodeTuple([a]), encodeTuple([b])));
    expect(sorted).toEqual([...xs].sort((a, b) => a - b));
  });

  it('round-trips values, including NUL bytes inside strings and JSON values', () => {
    const t: JsonValue[] = [null, true, false, 0, -2.5, 'a\u0000b', '', 'é😀', [1, { b: 2, a: 1 }], { x: null }];
    expect(decodeTuple(encodeTuple(t))).toEqual(t);
    expect(decodeKey(keyOf('R', ['s', 1]))).toEqual(['s', 1]);
  });

  it('encodes long strings (the chunked path) with escaped NULs, in order', () => {
    const long = (tail: string) => 'x'.repeat(40) + tail;
    const vals = [long('\u0000a'), long(''), long('\u0000'), long('a\u0000\u0000b'), long('b'), long('a')];
    for (const v of vals) expect(decodeTuple(encodeTuple([v, 1]))).toEqual([v, 1]);
    const byBytes = [...vals].sort((a, b) => Buffer.compare(encodeTuple([a]), encodeTuple([b])));
    expect(byBytes).toEqual([...vals].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))));
  });

  it('writes a string as its UTF-8 bytes with NULs escaped, whichever path writes it (short ASCII, long, non-ASCII, NUL)', () => {
    // The definition: tag 0x30, the UTF-8 bytes with 0x00 escaped as 0x00 0xFF, then 0x00.
    const byDefinition = (s: string) => {
      const out = [0x30];
      for (const b of Buffer.from(s, 'utf8')) out.push(...(b === 0 ? [0, 0xff] : [b]));
      return Buffer.from([...out, 0]);
    };
    const r = rng(7);
    const chars = ['a', 'Z', '0', '~', '\u007f', '\u0001', '\u0000', 'é', '😀', ' '];
    const strings = ['', 'x'.repeat(63), 'x'.repeat(64), 'x'.repeat(65), 'x'.repeat(64) + 'é', 'é' + 'x'.repeat(10), 'a\u0000', '\u0080'];
    for (let i = 0; i < 2000; i++) strings.push(Array.from({ length: Math.floor(r() * 80) }, () => chars[Math.floor(r() * chars.length)]).join(''));
    for (const s of strings) {
      expect(encodeTuple([s])).toEqual(byDefinition(s));
      expect(keyOf('R', [s, 1]).subarray(1, 1 + byDefinition(s).length)).toEqual(byDefinition(s));
    }
  });

  it('keeps a string prefix apart from a longer string (component boundaries)', () => {
    const a = encodeTuple(['ab', 'c']);
    const b = encodeTuple(['abc']);
    expect(Buffer.compare(a, b)).toBeLessThan(0);
    const { gte, lt } = prefixRange('R', ['ab']);
    const k = keyOf('R', ['ab', 'zzz']);
    expect(Buffer.compare(k, gte) >= 0 && Buffer.compare(k, lt) < 0).toBe(true);
    const other = keyOf('R', ['abc']);
    expect(Buffer.compare(other, gte) >= 0 && Buffer.compare(other, lt) < 0).toBe(false);
    expect(prefixEnd(Buffer.from([1]))).toEqual(Buffer.from([1, 0xff]));
  });
});

describe('i64 beyond ±2^53 (bigint) in keys', () => {
  const ints: (number | bigint)[] = [
    -9223372036854775808n, -9223372036854775807n, -9007199254740993n, -9007199254740992n, -Number.MAX_SAFE_INTEGER, -1, 0,
    1, Number.MAX_SAFE_INTEGER, 9007199254740992n, 9007199254740993n, 9007199254740994n,
    9223372036854774784n, 9223372036854775806n, 9223372036854775807n,
  ];
  const sorted = [...new Set(ints)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

  it('decodes every value exactly and keeps numeric order (bytewise = numeric)', () => {
    const keys = sorted.map((v) => keyOf('I', ['t', v, 'after']));
    for (let i = 0; i < sorted.length; i++) {
      expect(decodeKey(keys[i])).toEqual(['t', sorted[i], 'after']);
      if (i > 0) expect(Buffer.compare(keys[i - 1], keys[i])).toBe(-1);
    }
  });

  it('keeps neighbours that share a double apart (2^53 + 1 is not 2^53)', () => {
    expect(encodeTuple([9007199254740993n]).equals(encodeTuple([9007199254740992n]))).toBe(false);
    expect(decodeTuple(encodeTuple([9007199254740993n, null]))).toEqual([9007199254740993n, null]);
  });
});

describe('decode faults in stored keys', () => {
  it('are corrupt_log faults, counted', () => {
    const before = corruptFaults.count;
    const good = encodeTuple(['abc', 5, { a: 1 }]);
    const bads = [Buffer.from([0x99]), good.subarray(0, 3), Buffer.concat([good.subarray(0, good.length - 1)])];
    for (const bad of bads) expect(() => decodeTuple(bad)).toThrow(expect.objectContaining({ code: 'corrupt_log' }));
    expect(corruptFaults.count).toBe(before + bads.length);
  });
});
