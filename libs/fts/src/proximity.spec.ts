import { proximityScore } from './proximity';

describe('BM25TP proximity score', () => {
  it('matches a hand computation (adjacent and distant pairs, same-term neighbours skipped)', () => {
    // merged by position: 0:t0, 1:t0, 2:t1, 6:t1 → only the neighbours (1, 2) are different
    // words (d = 1): acc0 += w1/1², acc1 += w0/1²
    const w = [2, 0.5];
    const K = 1.2 * (1 - 0.75 + (0.75 * 10) / 5);
    const expected = (Math.min(1, 2) * 0.5 * 2.2) / (0.5 + K) + (Math.min(1, 0.5) * 2 * 2.2) / (2 + K);
    expect(proximityScore([[0, 1], [2, 6]], w, 10, 5, 1.2, 0.75)).toBeCloseTo(expected, 12);
  });

  it('falls as the words move apart and is 0 with fewer than two words present', () => {
    const near = proximityScore([[0], [1]], [1, 1], 10, 10, 1.2, 0.75);
    const far = proximityScore([[0], [5]], [1, 1], 10, 10, 1.2, 0.75);
    expect(near).toBeGreaterThan(far);
    expect(far).toBeGreaterThan(0);
    expect(proximityScore([[0, 3], undefined], [1, 1], 10, 10, 1.2, 0.75)).toBe(0);
    expect(proximityScore([[0, 3], [1]], [1, 1], 10, 10, 1.2, 0.75)).toBeGreaterThan(proximityScore([[0, 3], [9]], [1, 1], 10, 10, 1.2, 0.75));
  });
});
