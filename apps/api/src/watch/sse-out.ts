import type { ServerResponse } from 'http';
import { SseChunk } from './sse';
import type { SseOut } from './watch-session';

/**
 * A watch stream's response as the session writes it. Every write is flushed at once: the
 * response corks its socket until the next tick, which would put every socket write of a
 * fan-out turn after it, outside the slice that bounds it (watch/turns.ts).
 *
 * An event shared by many streams (`SseChunk`) goes to the socket itself, once the headers are
 * out: its bytes already framed as an HTTP/1.1 chunk (or bare, for a body that is not chunked),
 * made once for all its subscribers. Through `res.write` each socket write encoded the text
 * again, framed it in three pieces (size, data, CRLF) and went through the response's and the
 * socket's stream machinery: a fifth of a socket write's CPU, for hundreds of sockets per window
 * (apps/api DESIGN, "Many subscribers"). The socket is the response's: writes through either
 * keep their order, and `res.end()` writes the last chunk after them.
 */
export function sseOut(raw: ServerResponse): SseOut {
  let needDrain = false;
  const direct = (): boolean => raw.headersSent && !!raw.socket && !raw.socket.destroyed && !(raw as unknown as { outputSize?: number }).outputSize;
  return {
    write: (chunk) => {
      if (raw.writableEnded || raw.destroyed) return true;
      if (chunk instanceof SseChunk && direct()) {
        const chunked = (raw as unknown as { chunkedEncoding?: boolean }).chunkedEncoding;
        const ok = raw.socket!.write(chunked ? chunk.chunked : chunk.bytes);
        if (!ok) needDrain = true;
        return ok;
      }
      const ok = raw.write(typeof chunk === 'string' ? chunk : chunk.text);
      raw.socket?.uncork();
      return ok;
    },
    drained: () => {
      const socket = raw.socket;
      if (raw.destroyed || !socket) return Promise.resolve();
      const waitSocket = needDrain && socket.writableNeedDrain;
      needDrain = false;
      if (!raw.writableNeedDrain && !waitSocket) return Promise.resolve();
      return new Promise<void>((r) => {
        const done = (): void => {
          raw.off('drain', done);
          socket.off('drain', done);
          raw.off('close', done);
          r();
        };
        // (the response's drain follows its socket's; a direct write waits on the socket)
        if (waitSocket) socket.once('drain', done);
        else raw.once('drain', done);
        raw.once('close', done);
      });
    },
    get pendingBytes() {
      return raw.writableLength;
    },
    end: () => {
      if (!raw.writableEnded) raw.end();
    },
  };
}
