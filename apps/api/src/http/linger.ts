import type { IncomingMessage } from 'http';

/** Most bytes of a refused body read and thrown away before the answer (nginx's lingering close). */
export const LINGER_MAX_BYTES = 64 * 1024 * 1024;
/** Longest the server waits for the rest of a refused body. */
export const LINGER_MAX_MS = 10_000;

/**
 * Reads and discards what is left of a request body the server refuses (413), up to a bound,
 * then calls `done`. A client that writes its whole body before reading (Python's http.client and
 * requests do) otherwise has its socket reset while it still writes (EPIPE / ECONNRESET) and never
 * reads the JSON 413: the answer goes out after the body is in, or after the bound (then the
 * connection is closed as before).
 */
export function lingerThen(raw: IncomingMessage, done: () => void): void {
  if (raw.complete || raw.readableEnded || raw.destroyed) return done();
  let read = 0;
  let finished = false;
  const finish = () => {
    if (finished) return;
    finished = true;
    clearTimeout(timer);
    raw.off('data', onData).off('end', finish).off('error', finish).off('close', finish);
    done();
  };
  const onData = (c: Buffer) => {
    read += c.length;
    if (read > LINGER_MAX_BYTES) finish();
  };
  const timer = setTimeout(finish, LINGER_MAX_MS);
  raw.on('data', onData).on('end', finish).on('error', finish).on('close', finish);
  raw.resume();
}
