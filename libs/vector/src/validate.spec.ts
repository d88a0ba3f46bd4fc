import { distance } from './metric';
import { checkVector, parseK, parseMode, parseVector, toNumbers, MAX_K } from './validate';
import { VectorTable } from './table';

const code = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return (e as { code: string }).code;
  }
  return 'none';
};

test('vectors: finite numbers only, non-empty, the locked length', () => {
  expect(Array.from(parseVector('v', [1, 2.5]))).toEqual([1, 2.5]);
  for (const bad of [[], [NaN], [Infinity], ['1'], [null], 'x', { 0: 1 }]) expect(code(() => parseVector('v', bad))).toBe('validation_failed');
  expect(code(() => parseVector('v', [1, 2], 3))).toBe('dim_mismatch');
});

test('checkVector: the same rules without a copy; the first bad component is named', () => {
  const v = [1, -0, 2.5e-300, -1e300];
  expect(checkVector('v', v, 4)).toBe(v);
  for (const [bad, msg] of [
    [[1, NaN], 'v[1]" is not finite'],
    [[1, 2, -Infinity], 'v[2]" is not finite'],
    [[Infinity, NaN], 'v[0]" is not finite'],
    [[0, '1'], 'v[1]" is not a number'],
    [[0, undefined], 'v[1]" is not a number'],
  ] as const) {
    expect(code(() => checkVector('v', bad))).toBe('validation_failed');
    expect(() => checkVector('v', bad)).toThrow(msg);
  }
  expect(code(() => checkVector('v', new Array(5000).fill(0)))).toBe('validation_failed');
  expect(code(() => checkVector('v', [1, 2], 3))).toBe('dim_mismatch');
  expect(toNumbers(Float32Array.of(0.5, -2))).toEqual([0.5, -2]);
});

test("top-k neither keeps nor changes the caller's query (one query buffer per table)", () => {
  for (const metric of ['cosine', 'l2'] as const) {
    const t = new VectorTable('t', { dim: 2, metric, index: 'hnsw', params: {} });
    t.upsert('a', [3, 0], null);
    t.upsert('b', [0, 2], null);
    const q = [0, 5];
    expect(t.topk(q, { k: 1, mode: 'fast' })[0].id).toBe('b');
    expect(q).toEqual([0, 5]);
    const f = Float32Array.of(4, 0);
    expect(t.topk(f, { k: 1, mode: 'high_recall' })[0].id).toBe('a');
    expect(Array.from(f)).toEqual([4, 0]);
    expect(t.topk(q, { k: 2, mode: 'fast' }).map((m) => m.id)).toEqual(['b', 'a']);
  }
});

test('k and mode', () => {
  expect(parseK(undefined)).toBe(10);
  expect(parseK(MAX_K)).toBe(MAX_K);
  for (const bad of [0, -1, 1.5, MAX_K + 1, '3']) expect(code(() => parseK(bad))).toBe('validation_failed');
  expect(parseMode(undefined)).toBe('high_recall');
  expect(parseMode('fast')).toBe('fast');
  expect(code(() => parseMode('turbo'))).toBe('validation_failed');
});

test('the documented distances', () => {
  expect(distance('l2', [0, 0], [3, 4])).toBeCloseTo(5);
  expect(distance('manhattan', [0, 0], [3, -4])).toBeCloseTo(7);
  expect(distance('cosine', [1, 0], [0, 2])).toBeCloseTo(1);
  expect(distance('cosine', [1, 1], [2, 2])).toBeCloseTo(0);
  expect(distance('dot', [1, 2], [3, 4])).toBeCloseTo(1 - 11);
});
