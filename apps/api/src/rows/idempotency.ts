import * as crypto from 'crypto';
import { DbError, isUlid, isUuid, stringifyJson } from '@mmdb/core';
import type { Change, ChangeResult, CommitRequest, CommitResult, IdempotencyRecord, StoredResponse } from '@mmdb/storage';

/** The Idempotency-Key header, validated (ULID or UUID), or undefined. */
export function idempotencyKeyOf(headers: Record<string, string | string[] | undefined>): string | undefined {
  const raw = headers['idempotency-key'];
  if (raw === undefined) return undefined;
  const key: string = Array.isArray(raw) ? raw[0] : raw;
  if (isUlid(key as unknown)) return key.toUpperCase();
  if (isUuid(key as unknown)) return key.toLowerCase();
  throw new DbError('validation_failed', 'Idempotency-Key must be a ULID or a UUID');
}

/** A hash of what makes a request "the same": method, path and query, and the body bytes. */
export function fingerprint(method: string, url: string, body: string | Buffer): string {
  return crypto.createHash('sha256').update(method).update('\0').update(url).update('\0').update(body).digest('hex');
}

/**
 * Builds the `CommitRequest.idempotency` record for a mutating request, or undefined when
 * it carries no Idempotency-Key. `render` turns the commit's results into the response that
 * a replay returns (status, body, ETag).
 *
 * @example
 *   const idem = idempotencyFor(req, ttlMs, (r) => ({ status: 200, body: {...} }));
 *   const res = await t.commit({ changes, idempotency: idem });
 *   if (res.replayed) return replay(reply, res.replayed);
 */
export function idempotencyFor(
  req: { method: string; url: string; headers: Record<string, string | string[] | undefined>; body?: unknown },
  ttlMs: number,
  render: (results: readonly ChangeResult[], lsn: number) => StoredResponse,
): IdempotencyRecord | undefined {
  const key = idempotencyKeyOf(req.headers);
  if (!key) return undefined;
  const body = typeof req.body === 'string' || Buffer.isBuffer(req.body) ? req.body : stringifyJson(req.body ?? null);
  return { key, fingerprint: fingerprint(req.method, req.url, body), expiresAt: Date.now() + ttlMs, render };
}

/**
 * The answer an earlier request with this Idempotency-Key recorded, when it is still live:
 * the same request (fingerprint) → its stored response, to replay; another request → 409
 * `conflict`, the coordinator's words. Routes whose work starts before the commit (a SQL
 * script runs its statements, a migration plans, a token is minted) ask first; the commit
 * checks again in its frame, so a replay racing the first request is caught there.
 */
export async function priorAnswer(
  store: { idempotencyRecord(key: string): Promise<{ fingerprint: string; expiresAt: number; response: StoredResponse } | undefined> },
  record: Pick<IdempotencyRecord, 'key' | 'fingerprint'>,
): Promise<StoredResponse | undefined> {
  const prior = await store.idempotencyRecord(record.key);
  if (!prior || prior.expiresAt <= Date.now()) return undefined;
  if (prior.fingerprint !== record.fingerprint) throw new DbError('conflict', `Idempotency-Key "${record.key}" was already used with a different request`);
  return prior.response;
}

/** Answers with a stored response (status, headers, body). */
export function replay(reply: { status(n: number): unknown; header(k: string, v: string): unknown }, stored: StoredResponse): unknown {
  reply.status(stored.status);
  for (const [k, v] of Object.entries(stored.headers ?? {})) reply.header(k, v);
  reply.header('x-db-idempotent-replay', 'true');
  return stored.body;
}

/**
 * Commits `changes` with the request's Idempotency-Key record in the same frame (the one
 * mechanism: spec 5.6), and answers the rendered response, or the stored one on a replay (same
 * key, same request); the same key with another request is 409 `conflict` (from the store).
 */
export async function commitIdempotent(
  t: { commit(req: CommitRequest): Promise<CommitResult> },
  req: Parameters<typeof idempotencyFor>[0],
  reply: { status(n: number): unknown; header(k: string, v: string): unknown },
  ttlMs: number,
  changes: Change[],
  render: (results: readonly ChangeResult[], lsn: number) => StoredResponse,
): Promise<unknown> {
  const res = await t.commit({ changes, idempotency: idempotencyFor(req, ttlMs, render) });
  if (res.replayed) return replay(reply, res.replayed);
  const s = render(res.results, res.lsn);
  reply.status(s.status);
  for (const [k, v] of Object.entries(s.headers ?? {})) reply.header(k, v);
  return s.body;
}
