import { monotonicFactory, decodeTime } from 'ulid';

const nextUlid = monotonicFactory();

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
