import { randomFillSync } from 'node:crypto';
import { monotonicFactory, decodeTime } from 'ulid';

/**
 * The ulid package's default PRNG makes one `getRandomValues` call (and a Uint8Array) per
 * character, 16 per id: a visible cost on every request (query ids). Same distribution
 * (a random byte / 256), drawn from a 4 KiB pool refilled by one `randomFillSync`.
 */
const POOL = Buffer.allocUnsafe(4096);
let poolAt = POOL.length;
function pooledRandom(): number {
  if (poolAt === POOL.length) {
    randomFillSync(POOL);
    poolAt = 0;
  }
  return POOL[poolAt++] / 256;
}

const nextUlid = monotonicFactory(pooledRandom);

/** A new ULID (monotonic within this process). */
export function newUlid(now: number = Date.now()): string {
  return nextUlid(now);
}

const ULID_RE = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUlid(s: unknown): s is string {
  return typeof s === 'string' && ULID_RE.test(s.toUpperCase());
}

export function isUuid(s: unknown): s is string {
  return typeof s === 'string' && UUID_RE.test(s);
}

export function ulidTime(id: string): number {
  return decodeTime(id);
}

/**
 * A log sequence number: the position of a frame in a tenant's log, from 1.
 * Kept as a JS number (exact up to 2^53, about 285 years at a million frames a second).
 */
export type Lsn = number;

export function encodeLsn(lsn: Lsn): Buffer {
  const b = Buffer.allocUnsafe(8);
  b.writeBigUInt64BE(BigInt(lsn));
  return b;
}

export function decodeLsn(b: Uint8Array, offset = 0): Lsn {
  return Number(Buffer.from(b.buffer, b.byteOffset, b.byteLength).readBigUInt64BE(offset));
}
