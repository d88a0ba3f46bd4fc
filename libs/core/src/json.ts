/**
 * Exact JSON text ↔ values (libs/storage/MANIFEST.md, "Numbers").
 *
 * - Integers are JS numbers while they are safe (±(2^53 − 1)) and `bigint` beyond, so an i64
 *   (or a big integer inside a json value) is held exactly.
 * - A number literal that is not an integer and does not fit a double exactly (more digits
 *   than a double holds, or out of its range: `1e400`) parses to a `LosslessNumber` (the
 *   literal's text, from lossless-json) so a type check can quote it and refuse it
 *   (coerceValue) instead of storing a rounded value.
 *
 * Fast paths: `JSON.parse` unless the text holds a digit run of 16+ digits (a dot may sit
 * inside it) or a three-digit exponent, the only literals a double may not hold exactly
 * (15 significant digits always round-trip); `JSON.stringify` unless a bigint or a
 * LosslessNumber is inside (JSON.stringify throws on the bigint, or the value is marked).
 */
import { compareNumber, isInteger, isLosslessNumber, LosslessNumber, parse as losslessParse, stringify as losslessStringify } from 'lossless-json';

export { isLosslessNumber, LosslessNumber };

const SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** A literal that a double may not hold exactly: 16+ significant digits, or a 3-digit exponent. */
const MAY_NOT_FIT = /(?:\d\.?){16}|[eE][+-]?\d{3}/;

/** Whether `text` holds a number literal JSON.parse could change (a cheap, conservative scan). */
export function mayLoseNumbers(text: string): boolean {
  return MAY_NOT_FIT.test(text);
}

/** One number literal → number (fits), bigint (integer beyond ±2^53) or LosslessNumber (does not fit). */
export function parseNumberLiteral(s: string): number | bigint | LosslessNumber {
  if (isInteger(s)) {
    const n = Number(s);
    if (Number.isSafeInteger(n)) return n === 0 ? 0 : n;
    const b = BigInt(s);
    return b > SAFE || b < -SAFE ? b : Number(b);
  }
  const n = Number(s);
  if (Number.isFinite(n) && compareNumber(s, String(n)) === 0) return n === 0 ? 0 : n;
  return new LosslessNumber(s);
}

/** JSON.parse that never changes a number (see the file comment). Throws SyntaxError like JSON.parse. */
export function parseJsonExact(text: string): unknown {
  if (!mayLoseNumbers(text)) return JSON.parse(text);
  return losslessParse(text, null, parseNumberLiteral);
}

/** Whether a value holds a bigint or LosslessNumber anywhere (the slow serialization path). */
function hasExact(v: unknown): boolean {
  if (typeof v === 'bigint') return true;
  if (v === null || typeof v !== 'object') return false;
  if (isLosslessNumber(v)) return true;
  if (Array.isArray(v)) return v.some(hasExact);
  for (const k in v as Record<string, unknown>) if (hasExact((v as Record<string, unknown>)[k])) return true;
  return false;
}

/** JSON.stringify that writes bigints and LosslessNumbers as exact number literals. */
export function stringifyJson(v: unknown): string {
  try {
    const s = JSON.stringify(v);
    // a LosslessNumber serializes as an object with JSON.stringify: only then look deeper
    if (s === undefined || s.indexOf('"isLosslessNumber"') < 0 || !hasExact(v)) return s;
  } catch (e) {
    if (!(e instanceof TypeError) || !hasExact(v)) throw e;
  }
  return losslessStringify(v as never) as string;
}

/**
 * A primary-key tuple as the `{pk}` path segment of the row routes: components joined by `,`,
 * each percent-encoded (a string as is, any other value as its exact JSON text).
 */
export function pkSegment(pk: readonly unknown[]): string {
  return pk.map((v) => encodeURIComponent(typeof v === 'string' ? v : stringifyJson(v))).join(',');
}
