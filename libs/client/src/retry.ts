/**
 * The retry rules of spec 7.3, as pure functions so they are tested on their own:
 * 429 waits Retry-After (seconds); 500/502/503/504 and transport failures back off
 * 0.25, 0.5, 1, 2 s (each capped at 4 s), at most 3 retries, and only for idempotent
 * requests; any other status is final.
 */
export const BACKOFF_MS = [250, 500, 1000, 2000] as const;
export const BACKOFF_CAP_MS = 4000;
export const MAX_RETRIES = 3;
const RETRY_STATUSES = new Set([500, 502, 503, 504]);

export interface RetryInput {
  /** Retries already made (0 on the first failure). */
  readonly attempt: number;
  /** The answer's status, or 0 for a transport failure (reset, refused, timeout). */
  readonly status: number;
  /** The Retry-After header, when the answer had one. */
  readonly retryAfter?: string | null;
  /** Whether repeating the request cannot apply it twice (safe method, or an Idempotency-Key). */
  readonly idempotent: boolean;
}

/** Milliseconds to wait before the next try, or null: do not retry. */
export function retryDelay(r: RetryInput): number | null {
  if (r.attempt >= MAX_RETRIES) return null;
  if (r.status === 429) return retryAfterMs(r.retryAfter) ?? backoff(r.attempt);
  if (!RETRY_STATUSES.has(r.status) && r.status !== 0) return null;
  if (!r.idempotent) return null;
  return backoff(r.attempt);
}

function backoff(attempt: number): number {
  return Math.min(BACKOFF_MS[Math.min(attempt, BACKOFF_MS.length - 1)], BACKOFF_CAP_MS);
}

/** Retry-After as delta-seconds or an HTTP date → ms (never negative). */
export function retryAfterMs(v: string | null | undefined): number | null {
  if (v == null || v.trim() === '') return null;
  if (/^\d+(\.\d+)?$/.test(v.trim())) return Math.round(Number(v) * 1000);
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, at - Date.now());
}
