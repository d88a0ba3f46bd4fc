import { DbError } from '@mmdb/core';
import { DEFAULT_GRACE_SECONDS, MAX_GRACE_SECONDS, MAX_TTL_SECONDS } from './system-store';

/** `POST /v1/tenants/:tenant/tokens` body. */
export interface IssueParams {
  /** Seconds the token lives; null: no expiry. */
  readonly ttlSeconds: number | null;
}

/** `POST /v1/tenants/:tenant/tokens/:token_id/rotate` body. */
export interface RotateParams {
  readonly graceSeconds: number;
  /** Seconds the new token lives; null: no expiry; undefined: as long as the old one was issued for. */
  readonly ttlSeconds: number | null | undefined;
}

function fields(body: unknown, allowed: readonly string[]): Record<string, unknown> {
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body)) throw new DbError('validation_failed', 'the body must be a JSON object');
  for (const k of Object.keys(body)) {
    if (!allowed.includes(k)) {
      throw new DbError('validation_failed', `unknown field "${k}" (allowed: ${allowed.join(', ')})`, { field: k });
    }
  }
  return body as Record<string, unknown>;
}

/** A whole number of seconds in [min, max]; throws validation_failed naming the field. */
export function seconds(field: string, v: unknown, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw new DbError('validation_failed', `"${field}" must be an integer from ${min} to ${max}, got ${JSON.stringify(v) ?? String(v)}`, { field });
  }
  return v;
}

function ttl(v: unknown): number | null | undefined {
  if (v === undefined) return undefined;
  if (v === null) return null;
  return seconds('ttl_seconds', v, 1, MAX_TTL_SECONDS);
}

/** `{ttl_seconds?: 1…315360000 | null}`; absent or null: the token never expires. */
export function parseIssue(body: unknown): IssueParams {
  const b = fields(body, ['ttl_seconds']);
  return { ttlSeconds: ttl(b.ttl_seconds) ?? null };
}

/** `{grace_seconds?: 0…2592000 (default 300), ttl_seconds?: 1…315360000 | null}`. */
export function parseRotate(body: unknown): RotateParams {
  const b = fields(body, ['grace_seconds', 'ttl_seconds']);
  const graceSeconds = b.grace_seconds === undefined ? DEFAULT_GRACE_SECONDS : seconds('grace_seconds', b.grace_seconds, 0, MAX_GRACE_SECONDS);
  return { graceSeconds, ttlSeconds: ttl(b.ttl_seconds) };
}
