import { decodeDocEntry, decodeDocPositions, decodeStats, encodeDocEntry, encodeStats } from './codec';

describe('codec', () => {
  it('round-trips doc entries with ASCII, non-ASCII and long terms', () => {
    const long = 'x'.repeat(300);
    const postings = new Map<string, number[]>([
      ['flow', [0, 5, 9]],
      ['東京', [1]],
      ['größe', [2, 200000]],
      [long, [3]],
    ]);
    const b = encodeDocEntry(42, postings);
    expect(decodeDocEntry(b)).toEqual({ length: 42, terms: ['flow', '東京', 'größe', long], tfs: [3, 1, 2, 1] });
    expect(decodeDocPositions(b)).toEqual(postings);
  });

  it('round-trips field totals, absent as zero', () => {
    expect(decodeStats(encodeStats({ docs: 3, total: 12 }))).toEqual({ docs: 3, total: 12 });
    expect(decodeStats(undefined)).toEqual({ docs: 0, total: 0 });
  });
});
