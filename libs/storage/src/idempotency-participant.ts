/**
 * Retention of Idempotency-Key records (keyspace K): a `purge` custom change deletes
 * every record whose expiry has passed, in a frame like any other write (so followers
 * drop them too). The store runs it on a timer; `TenantStore.purgeIdempotency()` runs it now.
 */
import { DbError } from '@mmdb/core';
import type { CommitParticipant, CustomChange, DeriveContext, KeyWrite } from './api';
import { KEYSPACE } from './keys';
import { parseJson } from './records';

export const IDEMPOTENCY_PARTICIPANT = 'idempotency';
const K = Buffer.from(KEYSPACE.idempotency);
const K_END = Buffer.from([K[0] + 1]);

export const idempotencyParticipant: CommitParticipant = {
  name: IDEMPOTENCY_PARTICIPANT,

  async deriveCustom(ch: CustomChange, ctx: DeriveContext) {
    if (ch.type !== 'purge') throw new DbError('validation_failed', `unknown idempotency change "${ch.type}"`);
    const { now, limit } = ch.payload as { now: number; limit: number };
    const writes: KeyWrite[] = [];
    for (const [k, v] of await ctx.range({ gte: K, lt: K_END })) {
      if (writes.length >= limit) break;
      if (parseJson<{ expiresAt: number }>(v).expiresAt <= now) writes.push({ key: k, value: null });
    }
    return { writes, result: { purged: writes.length } };
  },
};
