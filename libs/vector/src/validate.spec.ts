import { distance } from './metric';
import { parseK, parseMode, parseVector, MAX_K } from './validate';

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
