import { BACKOFF_CAP_MS, MAX_RETRIES, retryAfterMs, retryDelay } from './retry';

describe('retryDelay: the rules of spec 7.3 as a table', () => {
  it.each([
    // [attempt, status, idempotent, Retry-After, expected ms or null]
    [0, 503, true, null, 250],
    [1, 503, true, null, 500],
    [2, 503, true, null, 1000],
    [3, 503, true, null, null], // at most 3 retries
    [0, 500, true, null, 250],
    [0, 502, true, null, 250],
    [0, 504, true, null, 250],
    [0, 0, true, null, 250], // no answer (reset, refused, timeout): like a 503
    [0, 503, false, null, null], // 5xx only for idempotent requests
    [0, 0, false, null, null],
    [0, 429, false, '2', 2000], // 429: any request, after Retry-After
    [1, 429, true, '0.5', 500],
    [2, 429, true, null, 1000], // no Retry-After: the backoff
    [3, 429, true, '1', null],
    [0, 501, true, null, null], // other 5xx: final
    [0, 400, true, null, null],
    [0, 404, true, null, null],
    [0, 409, true, null, null],
    [0, 412, true, null, null],
  ])('attempt %i, status %i, idempotent %s, Retry-After %s → %s', (attempt, status, idempotent, retryAfter, want) => {
    expect(retryDelay({ attempt, status, idempotent, retryAfter })).toBe(want);
  });

  it('the backoff table goes 0.25, 0.5, 1, 2 s and never above the 4 s cap', () => {
    expect(MAX_RETRIES).toBe(3);
    expect(BACKOFF_CAP_MS).toBe(4000);
    // the fourth step (2 s) lies past the third retry: retryDelay refuses it, the table keeps it for the cap rule
    expect([0, 1, 2].map((attempt) => retryDelay({ attempt, status: 503, idempotent: true }))).toEqual([250, 500, 1000]);
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    expect(retryAfterMs('3')).toBe(3000);
    expect(retryAfterMs(' ')).toBeNull();
    expect(retryAfterMs('soon')).toBeNull();
    const at = Date.now() + 5000;
    const ms = retryAfterMs(new Date(at).toUTCString())!;
    expect(ms).toBeGreaterThan(3000);
    expect(ms).toBeLessThanOrEqual(5000);
    expect(retryAfterMs(new Date(Date.now() - 60_000).toUTCString())).toBe(0);
  });
});
