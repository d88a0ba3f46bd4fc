/**
 * A local HTTP server that answers from a script: each request takes the next step
 * (an answer, a connection reset, or a hang that answers only when told to).
 */
import * as http from 'http';
import type { AddressInfo } from 'net';

/** The real timer, taken before a test fakes timers: a server-side delay the fake clock must not drive. */
const realSetTimeout = setTimeout;

export type Step =
  | { status: number; headers?: Record<string, string>; body?: unknown }
  | { reset: true }
  | { hang: true }
  | { sse: string[]; end?: boolean; drop?: boolean };

export interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export class FaultServer {
  private server!: http.Server;
  private steps: Step[] = [];
  readonly seen: Seen[] = [];
  private waiters: Array<() => void> = [];
  private hung: http.ServerResponse[] = [];
  url = '';

  script(...steps: Step[]): this {
    this.steps.push(...steps);
    return this;
  }

  /** Resolves once `n` requests have arrived in total. */
  requests(n: number): Promise<void> {
    return new Promise((resolve) => {
      const check = () => (this.seen.length >= n ? resolve() : this.waiters.push(check));
      check();
    });
  }

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        this.seen.push({ method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString() });
        const step = this.steps.shift() ?? { status: 200, body: { ok: true } };
        if ('reset' in step) req.socket.destroy();
        else if ('hang' in step) this.hung.push(res);
        else if ('sse' in step) {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          step.sse.forEach((e, i) =>
            res.write(e, () => {
              // drop: the connection drops mid-stream (no last chunk), once the client has had time to read what was written
              if (step.drop && i === step.sse.length - 1) realSetTimeout(() => req.socket.destroy(), 50);
            }),
          );
          if (!step.drop && step.end !== false) res.end();
          else this.hung.push(res);
        } else {
          res.writeHead(step.status, { 'content-type': 'application/json', 'x-db-request-id': `req-${this.seen.length}`, ...step.headers });
          res.end(step.body === undefined ? '' : JSON.stringify(step.body));
        }
        const w = this.waiters;
        this.waiters = [];
        w.forEach((f) => f());
      });
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    for (const r of this.hung) r.destroy();
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}

export const err = (status: number, code: string, extra: Record<string, unknown> = {}): Step => ({
  status,
  body: { error: code, message: `${code} here`, request_id: `rid-${code}`, retry: status >= 500 || status === 429, ...extra },
});
