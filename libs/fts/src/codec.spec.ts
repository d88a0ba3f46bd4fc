import { corruptFaults } from '@mmdb/core';
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

describe('decode faults in stored postings', () => {
  it('are corrupt_log faults, counted', () => {
    const good = encodeDocEntry(3, new Map([['alpha', [0, 2]], ['beta', [1]]]));
    const before = corruptFaults.count;
    for (const bad of [good.subarray(0, good.length - 2), Buffer.from([0x80]), Buffer.concat([Buffer.from([1, 0x7f]), Buffer.from('ab')])]) {
      let err: unknown;
      try { decodeDocPositions(bad); decodeDocEntry(bad); } catch (e) { err = e; }
      expect(err).toMatchObject({ code: 'corrupt_log' });
    }
    expect(corruptFaults.count).toBe(before + 3);
  });
});
