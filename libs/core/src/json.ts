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

/**
 * Whether `text` holds a number literal JSON.parse would change: an integer beyond
 * ±(2^53 − 1), or a literal whose double is not the literal (more digits than the double's
 * shortest form, or out of range: `1e400`, `1e-400`). One pass over the characters; only a
 * literal of 16+ digits or with a 3-digit exponent is looked at closely (digits inside a
 * string may look like one: that only costs the slow path).
 */
export function mayLoseNumbers(text: string): boolean {
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c < 48 || c > 57) continue;
    // a run of digits, dots and an exponent starting at i
    const start = text.charCodeAt(i - 1) === 45 ? i - 1 : i;
    let digits = 0;
    let expDigits = -1;
    let j = i;
    for (; j < n; j++) {
      const d = text.charCodeAt(j);
      if (d >= 48 && d <= 57) {
        if (expDigits >= 0) expDigits++;
        else digits++;
      } else if (d === 46 && expDigits < 0) continue;
      else if ((d === 101 || d === 69) && expDigits < 0) {
        expDigits = 0;
        const sign = text.charCodeAt(j + 1);
        if (sign === 43 || sign === 45) j++;
      } else break;
    }
    if ((digits >= 16 || expDigits >= 3) && literalChanges(text.slice(start, j))) return true;
    i = j;
  }
  return false;
}

const NUMBER_LITERAL = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

/** Whether JSON.parse changes this literal (see mayLoseNumbers). */
function literalChanges(s: string): boolean {
  // parseFloat reads a JSON number literal exactly as Number() does, several times faster
  const n = parseFloat(s);
  // the double's own shortest text (what JSON.stringify writes: a client's query vector): JSON.parse gives
  // exactly it; integers go on to the range check
  if (!Number.isInteger(n) && String(n) === s) return false;
  // a run found inside a string ("…d0433612291038065110eb…") need not be a literal at all:
  // the exact parser decides (compareNumber throws on a non-number)
  if (!NUMBER_LITERAL.test(s)) return true;
  if (!Number.isFinite(n)) return true;
  if (isInteger(s)) return !Number.isSafeInteger(n);
  const shortest = String(n);
  return shortest !== s && compareNumber(s, shortest) !== 0;
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

/**
 * A double that is a whole number beyond ±(2^53 − 1) is written in exponent form
 * (`2.3450746836043694e+18`, not `2345074683604369400`), so that reading the text back gives
 * the double again and never a bigint: digits alone mean an exact integer (an i64, or an
 * integer inside a json value).
 */
const NUMBER_STRINGIFIERS = [
  {
    test: (v: unknown) => typeof v === 'number' && (v > Number.MAX_SAFE_INTEGER || v < -Number.MAX_SAFE_INTEGER) && Number.isFinite(v),
    stringify: (v: unknown) => (v as number).toExponential(),
  },
];

/** An integer literal of 16+ digits in JSON.stringify's output (a double that needs the exponent form). */
const LONG_INTEGER_TOKEN = /(?:^|[[:,])-?\d{16,}(?=[,\]}]|$)/;

/**
 * JSON.stringify that writes bigints and LosslessNumbers as exact number literals and whole
 * doubles beyond ±(2^53 − 1) in exponent form (see NUMBER_STRINGIFIERS). JSON.stringify is
 * the fast path; lossless-json's stringify runs only when a bigint or LosslessNumber is inside
 * (JSON.stringify throws, or writes the marker) or a 16+ digit integer literal came out.
 */
export function stringifyJson(v: unknown): string {
  try {
    const s = JSON.stringify(v);
    if (s === undefined || (s.indexOf('"isLosslessNumber"') < 0 && !LONG_INTEGER_TOKEN.test(s))) return s;
  } catch (e) {
    if (!(e instanceof TypeError)) throw e;
  }
  return losslessStringify(v as never, undefined, undefined, NUMBER_STRINGIFIERS) as string;
}

/**
 * A primary-key tuple as the `{pk}` path segment of the row routes: components joined by `,`,
 * each percent-encoded (a string as is, any other value as its exact JSON text).
 */
export function pkSegment(pk: readonly unknown[]): string {
  return pk.map((v) => encodeURIComponent(typeof v === 'string' ? v : stringifyJson(v))).join(',');
}
