import { isUlid, ulidTime } from '@mmdb/core';
import { requestId } from './request-id';

describe('requestId', () => {
  it('makes valid ULIDs that carry the given time', () => {
    const now = Date.UTC(2024, 4, 17, 12, 30, 45, 123);
    const id = requestId(now);
    expect(isUlid(id)).toBe(true);
    expect(id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(ulidTime(id)).toBe(now);
    expect(ulidTime(requestId(0))).toBe(0);
    expect(ulidTime(requestId(2 ** 48 - 1))).toBe(2 ** 48 - 1);
  });

  it('does not repeat across many ids in one millisecond, past pool refills', () => {
    const seen = new Set<string>();
    const now = Date.now();
    for (let i = 0; i < 20_000; i++) seen.add(requestId(now));
    expect(seen.size).toBe(20_000);
  });

  it('spreads its random part over the whole alphabet', () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 4000; i++) for (const ch of requestId().slice(10)) counts.set(ch, (counts.get(ch) ?? 0) + 1);
    expect(counts.size).toBe(32);
    // 64000 characters over 32 symbols: 2000 each on average
    for (const n of counts.values()) expect(n).toBeGreaterThan(1500);
  });
});
