import type { Readable } from 'stream';
import { DbError, parseJsonExact } from '@mmdb/core';

export interface NdjsonLimits {
  /** Longest accepted line in bytes. */
  readonly lineMax: number;
  /** Most bytes one stream may carry. */
  readonly streamMax: number;
}

export interface NdjsonLine {
  /** 1-based line number in the stream. */
  readonly line: number;
  readonly value: unknown;
}

/**
 * Reads an NDJSON stream line by line, counting bytes itself (fastify's body limit does not
 * apply to a raw stream): a line over `lineMax` or a stream over `streamMax` throws
 * `payload_too_large` naming the line; a line that is not JSON throws `invalid_body`.
 * Blank lines are skipped. `onLine` may be async (it is awaited: that is the backpressure).
 */
export async function readNdjson(
  stream: Readable,
  limits: NdjsonLimits,
  onLine: (l: NdjsonLine) => void | Promise<void>,
  hash?: (chunk: Buffer) => void,
): Promise<{ lines: number; bytes: number }> {
  let total = 0;
  let lineNo = 0;
  let parts: Buffer[] = [];
  let partBytes = 0;
  // Per line: no promise unless `onLine` returns one (a full chunk waiting for its commit).
  // The line is buf[start, end): read in place, without a view object per line.
  const emit = (buf: Buffer, start: number, end: number): void | Promise<void> => {
    lineNo++;
    if (end > start && buf[end - 1] === 0x0d) end--;
    const first = firstNonSpace(buf, start, end);
    if (first === end) return; // blank
    const s = buf.toString('utf8', start, end);
    if (buf[first] >= 0x80 && s.trim() === '') return; // Unicode-only whitespace
    let value: unknown;
    try {
      value = parseJsonExact(s);
    } catch (e) {
      throw new DbError('invalid_body', `line ${lineNo} is not valid JSON: ${(e as Error).message}`, { line: lineNo });
    }
    return onLine({ line: lineNo, value });
  };
  // After a failure the rest of the body is still read (and discarded, up to the stream cap)
  // so the client, which may be writing the whole body before reading, gets our answer.
  let failed: unknown;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    total += chunk.length;
    if (total > limits.streamMax) {
      failed ??= new DbError('payload_too_large', `NDJSON stream is over its ${limits.streamMax}-byte cap (at line ${lineNo + 1})`, {
        line: lineNo + 1,
      });
      break;
    }
    if (failed) continue;
    try {
      hash?.(chunk);
      let start = 0;
      for (;;) {
        const nl = chunk.indexOf(0x0a, start);
        if (nl < 0) break;
        if (partBytes + (nl - start) > limits.lineMax) throw tooLong(lineNo + 1, limits.lineMax);
        let wait: void | Promise<void>;
        if (parts.length) {
          const line = Buffer.concat([...parts, chunk.subarray(start, nl)]);
          parts = [];
          partBytes = 0;
          wait = emit(line, 0, line.length);
        } else wait = emit(chunk, start, nl);
        if (wait) await wait;
        start = nl + 1;
      }
      if (start < chunk.length) {
        const rest = chunk.subarray(start);
        partBytes += rest.length;
        if (partBytes > limits.lineMax) throw tooLong(lineNo + 1, limits.lineMax);
        parts.push(rest);
      }
    } catch (e) {
      failed = e;
    }
  }
  if (failed) throw failed;
  if (partBytes > 0) {
    const last = Buffer.concat(parts);
    await emit(last, 0, last.length);
  }
  return { lines: lineNo, bytes: total };
}

/**
 * Index of the first byte in [start, end) that is not ASCII space, tab or CR (`end` if none:
 * a blank line; Unicode whitespace is checked on the string).
 */
function firstNonSpace(buf: Buffer, start: number, end: number): number {
  let i = start;
  while (i < end && (buf[i] === 0x20 || buf[i] === 0x09 || buf[i] === 0x0d)) i++;
  return i;
}

function tooLong(line: number, max: number): DbError {
  return new DbError('payload_too_large', `NDJSON line ${line} is longer than ${max} bytes`, { line, line_max: max });
}

