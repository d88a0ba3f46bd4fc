import * as crypto from 'crypto';

/** Crockford base32, as ULIDs use it. */
const ENC = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const POOL_BYTES = 16 * 1024;
const pool = Buffer.allocUnsafe(POOL_BYTES);
let pos = POOL_BYTES;
let lastMs = -1;
let timePart = '';

function encodeTime(ms: number): string {
  let s = '';
  for (let i = 0; i < 10; i++) {
    s = ENC[ms % 32] + s;
    ms = Math.floor(ms / 32);
  }
  return s;
}

/**
 * A request id: a ULID (48-bit ms time + 80 random bits, Crockford base32), made without
 * the per-character `crypto.randomBytes` calls of the `ulid` package: the random bits come
 * from a 16 KiB pool refilled by one `randomFillSync`, and the time part is encoded once per
 * millisecond. Not monotonic within a millisecond (request ids need uniqueness, not order);
 * `newUlid()` from @mmdb/core stays the generator for stored ids.
 */
export function requestId(now: number = Date.now()): string {
  if (now !== lastMs) {
    lastMs = now;
    timePart = encodeTime(now);
  }
  if (pos + 10 > POOL_BYTES) {
    crypto.randomFillSync(pool);
    pos = 0;
  }
  let s = timePart;
  for (let k = 0; k < 2; k++, pos += 5) {
    const b0 = pool[pos];
    const b1 = pool[pos + 1];
    const b2 = pool[pos + 2];
    const b3 = pool[pos + 3];
    const b4 = pool[pos + 4];
    s +=
      ENC[b0 >> 3] +
      ENC[((b0 & 7) << 2) | (b1 >> 6)] +
      ENC[(b1 >> 1) & 31] +
      ENC[((b1 & 1) << 4) | (b2 >> 4)] +
      ENC[((b2 & 15) << 1) | (b3 >> 7)] +
      ENC[(b3 >> 2) & 31] +
      ENC[((b3 & 3) << 3) | (b4 >> 5)] +
      ENC[b4 & 31];
  }
  return s;
}
