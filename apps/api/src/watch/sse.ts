/**
 * The wire format of watch streams: event ids (`EPOCH:LSN`) and SSE framing. An id names the
 * last log frame an event covers and the epoch it was written under, so a client resuming
 * after a failover (its frame rewritten under a new lease holder) is told to resnapshot.
 */
import { DbError, stringifyJson } from '@mmdb/core';
import type { ChangeCursor } from '@mmdb/storage';

/** `EPOCH:LSN`, e.g. `1:42`. */
export function formatId(c: ChangeCursor): string {
  return `${c.epoch}:${c.lsn}`;
}

/**
 * Parses a resume position: `EPOCH:LSN` (an event id), or a bare `LSN` (the epoch is then the
 * one this log recorded for that frame: `epochOf`). `what` names the source for errors.
 */
export function parseId(raw: string, what: string, epochOf: (lsn: number) => number | undefined): ChangeCursor {
  const m = /^(?:(\d{1,15}):)?(\d{1,15})$/.exec(raw.trim());
  if (!m) throw new DbError('validation_failed', `${what} must be an event id EPOCH:LSN or an LSN, not "${raw.slice(0, 64)}"`, { field: what });
  const lsn = Number(m[2]);
  const epoch = m[1] !== undefined ? Number(m[1]) : (epochOf(lsn) ?? 0);
  return { epoch, lsn };
}

/** One SSE event: `id`, `event` and one `data` line of exact JSON (an i64 beyond 2^53 as its digits; JSON has no raw newlines). */
export function sseEvent(event: string, id: string | null, data: unknown): string {
  return `${id !== null ? `id: ${id}\n` : ''}event: ${event}\ndata: ${stringifyJson(data)}\n\n`;
}

/** A comment line (ignored by clients; keeps proxies from closing an idle connection). */
export function sseComment(text: string): string {
  return `: ${text}\n\n`;
}

/**
 * One event's text written to many sockets (the subscribers of one query): its UTF-8 bytes and
 * its HTTP/1.1 chunk (`<size hex>\r\n<bytes>\r\n`) are made once, at the first write that
 * needs them, and each socket takes the same `Buffer` (no per-socket encoding, framing or copy).
 * Once the bytes are made the text is dropped (read back from them when asked: a stream whose
 * headers are not out yet, a test): a kept event (fanout.ts keeps the last 8 per query) then
 * holds an off-heap buffer, not a string on the V8 heap that each scavenge would copy while it
 * is kept.
 */
export class SseChunk {
  /** The chunk: `<size hex>\r\n`, the text's UTF-8 bytes, `\r\n` (one allocation; `bytes` is a view of it). */
  private c: Buffer | null = null;
  private head = 0;
  private t: string | null;

  constructor(text: string) {
    this.t = text;
  }

  get text(): string {
    return this.t ?? this.bytes.toString('utf8');
  }

  toString(): string {
    return this.text;
  }

  /** The text's UTF-8 bytes. */
  get bytes(): Buffer {
    const c = this.chunked;
    return c.subarray(this.head, c.length - 2);
  }

  /** The bytes as one chunk of a chunked HTTP/1.1 body. */
  get chunked(): Buffer {
    if (!this.c) {
      const text = this.t!;
      const n = Buffer.byteLength(text, 'utf8');
      const head = `${n.toString(16)}\r\n`;
      const c = Buffer.allocUnsafe(head.length + n + 2);
      c.write(head, 0, 'latin1');
      c.write(text, head.length, 'utf8');
      c.write('\r\n', head.length + n, 'latin1');
      this.c = c;
      this.head = head.length;
      this.t = null;
    }
    return this.c;
  }
}
