/**
 * Two ways of reading a watch stream in tests: raw HTTP/1.1 over TLS (every byte the server
 * sends, comments and `retry:` included), and the `eventsource` npm client (v4) with a fetch
 * that presents the bearer token and trusts the test server's self-signed certificate.
 */
import * as https from 'https';

export interface SseBlock {
  id?: string;
  event?: string;
  data?: string;
  retry?: string;
  comments: string[];
}

/** Parses complete SSE blocks (separated by a blank line) off the front of `buf`. */
export function parseBlocks(buf: string): { blocks: SseBlock[]; rest: string } {
  const blocks: SseBlock[] = [];
  let at = 0;
  for (;;) {
    const end = buf.indexOf('\n\n', at);
    if (end < 0) break;
    const b: SseBlock = { comments: [] };
    for (const line of buf.slice(at, end).split('\n')) {
      if (line.startsWith(':')) b.comments.push(line.slice(1).trim());
      else {
        const i = line.indexOf(':');
        const k = i < 0 ? line : line.slice(0, i);
        const v = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
        if (k === 'id' || k === 'event' || k === 'data' || k === 'retry') b[k] = v;
      }
    }
    blocks.push(b);
    at = end + 2;
  }
  return { blocks, rest: buf.slice(at) };
}

/** A raw stream: status and headers, and every block as it arrives. */
export class RawStream {
  status = 0;
  headers: Record<string, string | string[] | undefined> = {};
  body = '';
  readonly blocks: SseBlock[] = [];
  ended = false;
  private rest = '';
  private waiters: Array<() => void> = [];
  private req!: import('http').ClientRequest;
  res: import('http').IncomingMessage | null = null;

  static open(url: string, ca: string, headers: Record<string, string>): Promise<RawStream> {
    const s = new RawStream();
    return new Promise((resolve, reject) => {
      s.req = https.request(url, { method: 'GET', headers, ca, agent: false }, (res) => {
        s.res = res;
        s.status = res.statusCode!;
        s.headers = res.headers;
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          s.body += d;
          const p = parseBlocks(s.rest + d);
          s.rest = p.rest;
          s.blocks.push(...p.blocks);
          s.wake();
        });
        res.on('end', () => {
          s.ended = true;
          s.wake();
        });
        res.on('error', () => {
          s.ended = true;
          s.wake();
        });
        resolve(s);
      });
      s.req.on('error', reject);
      s.req.end();
    });
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  /** Events (blocks with an `event:`) received so far. */
  events(name?: string): SseBlock[] {
    return this.blocks.filter((b) => b.event !== undefined && (name === undefined || b.event === name));
  }

  /** Waits until `pred` holds over the blocks received (or the timeout). */
  async until(pred: (s: RawStream) => boolean, ms = 10_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!pred(this)) {
      if (this.ended) throw new Error(`stream ended before the condition held; got:\n${this.body}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out; got:\n${this.body}`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, left);
        this.waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  }

  close(): void {
    this.req.destroy();
  }
}

/**
 * A WHATWG fetch for the eventsource client over node's https (the test CA trusted, the bearer
 * token on every request): undici's Agent is not an installed package here, and jest's sandbox
 * cannot reach Node's own dispatcher. The body is a web ReadableStream that errors when the
 * connection drops (a killed server), which is what makes the client reconnect.
 */
export function tokenFetch(token: string, ca: string): typeof fetch {
  return ((url: string, init: { method?: string; headers?: Record<string, string>; signal?: AbortSignal } = {}) =>
    new Promise<Response>((resolve, reject) => {
      const abort = () => {
        req.destroy();
        const e = new Error('aborted');
        e.name = 'AbortError';
        reject(e);
      };
      const req = https.request(url, { method: init.method ?? 'GET', headers: { ...(init.headers ?? {}), authorization: `Bearer ${token}` }, ca, agent: false }, (res) => {
        let done = false;
        const body = new ReadableStream<Uint8Array>({
          start(c) {
            res.on('data', (d: Buffer) => c.enqueue(new Uint8Array(d)));
            res.on('end', () => {
              if (!done) c.close();
              done = true;
            });
            res.on('close', () => {
              if (!done) c.error(new Error('connection closed'));
              done = true;
            });
          },
          cancel() {
            done = true;
            res.destroy();
          },
        });
        const headers = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
        resolve(new Response(body, { status: res.statusCode!, headers }));
      });
      req.on('error', reject);
      if (init.signal?.aborted) return abort();
      init.signal?.addEventListener('abort', abort, { once: true });
      req.end();
    })) as unknown as typeof fetch;
}

/** The part of the eventsource v4 client the tests use. */
export interface EventSourceLike extends EventTarget {
  readonly readyState: number;
  close(): void;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
export const { EventSource } = require('eventsource') as { EventSource: new (url: string, init?: { fetch?: typeof fetch }) => EventSourceLike };
