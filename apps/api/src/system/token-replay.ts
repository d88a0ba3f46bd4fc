/**
 * Idempotency-Key on the token routes (spec 5.6; apps/api/README.md, "Tokens"): the rows
 * routes' mechanism (`idempotencyFor`, `priorAnswer`, the record committed in the token
 * change's own frame), with one addition: a recorded answer never holds a token secret in
 * clear. The secret is sealed (AES-256-GCM) under a key derived from the caller's bearer
 * token, which the server never stores; a replay by the same caller opens it and answers
 * what the first request answered, while another caller presenting the key gets 409
 * `conflict` (it could not have made that request).
 */
import * as crypto from 'crypto';
import { DbError, type JsonValue } from '@mmdb/core';
import type { StoredResponse } from '@mmdb/storage';
import { idempotencyFor, priorAnswer, replay } from '../rows/idempotency';
import type { IssuedToken, TokenIdempotency } from './system-store';

const SEALED = 'sealed:v1:';

type Req = { method: string; url: string; headers: Record<string, string | string[] | undefined>; body?: unknown };

function bearer(req: Req): string {
  const h = req.headers.authorization;
  return String(Array.isArray(h) ? h[0] : h ?? '').replace(/^Bearer\s+/i, '');
}

function keyOf(req: Req): Buffer {
  return crypto.createHash('sha256').update('mmdb idempotent token answer\0').update(bearer(req)).digest();
}

function seal(secret: string, req: Req): string {
  const iv = crypto.randomBytes(12);
  const c = crypto.createCipheriv('aes-256-gcm', keyOf(req), iv);
  const data = Buffer.concat([c.update(secret, 'utf8'), c.final()]);
  return SEALED + Buffer.concat([iv, c.getAuthTag(), data]).toString('base64');
}

function open(sealed: string, req: Req, key: string): string {
  try {
    const b = Buffer.from(sealed.slice(SEALED.length), 'base64');
    const d = crypto.createDecipheriv('aes-256-gcm', keyOf(req), b.subarray(0, 12));
    d.setAuthTag(b.subarray(12, 28));
    return Buffer.concat([d.update(b.subarray(28)), d.final()]).toString('utf8');
  } catch {
    throw new DbError('conflict', `Idempotency-Key "${key}" was already used by another caller`);
  }
}

/**
 * The Idempotency-Key of a token request (undefined without one); `replayed` is set at once
 * when the tenant's store already holds this request's answer (else 409 for another request).
 */
export async function tokenIdempotency(
  store: Parameters<typeof priorAnswer>[0],
  req: Req,
  ttlMs: number,
  status: number,
): Promise<TokenIdempotency | undefined> {
  const record = idempotencyFor(req, ttlMs, () => ({ status, body: null }));
  if (!record) return undefined;
  const prior = await priorAnswer(store, record);
  const answer = (r: IssuedToken | { revoked: boolean }): StoredResponse => ({
    status,
    body: ('token' in r ? { ...r, token: seal(r.token, req) } : r) as unknown as JsonValue,
  });
  return { key: record.key, fingerprint: record.fingerprint, expiresAt: record.expiresAt, answer, ...(prior ? { replayed: prior } : {}) };
}

/** Answers a recorded token answer, its secret opened with this caller's bearer token. */
export function replayToken(reply: Parameters<typeof replay>[0], idem: TokenIdempotency, req: Req): unknown {
  const stored = idem.replayed!;
  const body = stored.body as Record<string, unknown>;
  const opened = typeof body?.token === 'string' && body.token.startsWith(SEALED) ? { ...body, token: open(body.token, req, idem.key) } : body;
  return replay(reply, { ...stored, body: opened as JsonValue });
}
