/**
 * One request path for every call: URL and headers, Idempotency-Key, timeout, the retry rules
 * (./retry.ts), error bodies → MmdbError, and the replication warning.
 */
import { randomUUID } from 'crypto';
import { EventEmitter } from 'events';
import { MmdbError, type MmdbWarning } from './errors';
import { retryDelay, MAX_RETRIES } from './retry';
import type { RetryClass } from './contract/routes';
import { makeAgent, type Dispatcher, type TlsOptions } from './tls';

export interface ClientOptions extends TlsOptions {
  /** Base URL, e.g. `https://127.0.0.1:8443`. */
  readonly url: string;
  /** Bearer token (a tenant token or the operator token). */
  readonly token?: string;
  /** Default tenant ULID for tenant routes. */
  readonly tenant?: string;
  /** Per-attempt time limit in ms (default 60,000); a timed-out attempt counts as a transport failure. */
  readonly timeoutMs?: number;
  /** Most retries (default 3, spec 7.3); 0 turns retrying off. */
  readonly maxRetries?: number;
  /** Called for each warning (also emitted as the client's `warning` event). */
  readonly onWarning?: (w: MmdbWarning) => void;
  /** Extra headers on every request. */
  readonly headers?: Readonly<Record<string, string>>;
}

export type Body = { json: unknown } | { text: string; contentType: string } | { stream: AsyncIterable<Uint8Array | string>; contentType: string };

export interface Call {
  readonly method: string;
  readonly path: string;
  readonly query?: Readonly<Record<string, string | number | boolean | undefined>>;
  readonly body?: Body;
  readonly headers?: Readonly<Record<string, string | undefined>>;
  readonly retry: RetryClass;
  /** Send an Idempotency-Key (always for `keyed` calls): the given one, else a new UUID, the same on every retry. */
  readonly key?: boolean;
  readonly idempotencyKey?: string;
  readonly signal?: AbortSignal;
  /** Return the unread body (an async iterable of bytes, for streams). No time limit applies past the headers. */
  readonly raw?: boolean;
}

/** Answer headers, by case-insensitive name. */
export interface AnswerHeaders {
  get(name: string): string | null;
}

export interface Answer<T = any> {
  readonly status: number;
  readonly headers: AnswerHeaders;
  readonly body: T;
}

class RawHeaders implements AnswerHeaders {
  constructor(private readonly h: Record<string, string | string[] | undefined>) {}
  get(name: string): string | null {
    const v = this.h[name.toLowerCase()];
    return v === undefined ? null : Array.isArray(v) ? v.join(', ') : v;
  }
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });

export class Transport extends EventEmitter {
  private agent: Promise<Dispatcher> | undefined;
  readonly base: string;
  private readonly origin: string;
  private readonly prefix: string;

  constructor(readonly options: ClientOptions) {
    super();
    this.base = options.url.replace(/\/+$/, '');
    const u = new URL(this.base);
    this.origin = u.origin;
    this.prefix = u.pathname.replace(/\/+$/, '');
  }

  /** The path and query of a call (after the base URL's own path, if any). */
  target(path: string, query?: Call['query']): string {
    let s = '';
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) s += `${s ? '&' : '?'}${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`;
    return this.prefix + path + s;
  }

  url(path: string, query?: Call['query']): string {
    return this.origin + this.target(path, query);
  }

  private dispatcher(): Promise<Dispatcher> {
    return (this.agent ??= makeAgent(this.options));
  }

  async request<T = any>(call: Call): Promise<Answer<T>> {
    const headers: Record<string, string> = { accept: 'application/json', ...this.options.headers };
    if (this.options.token) headers.authorization = `Bearer ${this.options.token}`;
    for (const [k, v] of Object.entries(call.headers ?? {})) if (v !== undefined) headers[k.toLowerCase()] = v;
    if (call.retry === 'keyed' || call.key || call.idempotencyKey) headers['idempotency-key'] = call.idempotencyKey ?? headers['idempotency-key'] ?? randomUUID();
    const b = call.body;
    let payload: string | AsyncIterable<Uint8Array | string> | undefined;
    if (b && 'json' in b) {
      payload = JSON.stringify(b.json);
      headers['content-type'] = 'application/json';
    } else if (b && 'text' in b) {
      payload = b.text;
      headers['content-type'] = b.contentType;
    } else if (b) {
      payload = b.stream;
      headers['content-type'] = b.contentType;
    }
    if (this.listenerCount('request') > 0) {
      const query = Object.fromEntries(Object.entries(call.query ?? {}).filter(([, v]) => v !== undefined));
      this.emit('request', { method: call.method, path: call.path, query, headers, body: b && 'json' in b ? JSON.parse(payload as string) : b && 'text' in b ? b.text : undefined });
    }
    // A streamed body is consumed by the first attempt: it can never be sent again (not even after a 429).
    const replayable = !(b && 'stream' in b);
    const idempotent = call.retry === 'safe' || (call.retry === 'keyed' && !!headers['idempotency-key']);
    const maxRetries = this.options.maxRetries ?? MAX_RETRIES;
    const agent = await this.dispatcher();
    const target = this.target(call.path, call.query);
    for (let attempt = 0; ; attempt++) {
      let got: Got | undefined;
      let failure: MmdbError;
      try {
        got = await this.attempt(agent, target, call, headers, payload);
      } catch (e) {
        if (call.signal?.aborted) throw call.signal.reason ?? e;
        const timeout = (e as Error)?.name === 'TimeoutError';
        failure = new MmdbError({ code: timeout ? 'timeout' : 'network_error', status: 0, message: `${call.method} ${call.path}: ${timeout ? 'no answer in time' : ((e as Error)?.cause as Error)?.message ?? (e as Error)?.message}`, retry: true, cause: e });
      }
      if (got) {
        const { status, headers: h } = got;
        this.warn(h, call);
        const ok = status >= 200 && status < 300;
        if (ok && got.text === undefined) return { status, headers: h, body: got.stream as T };
        const body = parseBody(h, got.text ?? '');
        if (this.listenerCount('response') > 0) this.emit('response', { method: call.method, path: call.path, status, headers: h, body });
        if (ok) return { status, headers: h, body: body as T };
        failure = MmdbError.fromBody(status, body, h.get('x-db-request-id') ?? undefined);
      }
      const delay = replayable && attempt < maxRetries ? retryDelay({ attempt, status: failure!.status, retryAfter: got?.headers.get('retry-after'), idempotent }) : null;
      if (delay === null) throw failure!;
      this.emit('retry', { attempt: attempt + 1, delayMs: delay, error: failure! });
      await sleep(delay, call.signal);
    }
  }

  /** One try: the answer, its body read as text inside the time limit (unless a raw 2xx stream is wanted). */
  private async attempt(agent: Dispatcher, target: string, call: Call, headers: Record<string, string>, payload: string | AsyncIterable<Uint8Array | string> | undefined): Promise<Got> {
    const ctl = new AbortController();
    const onAbort = () => ctl.abort(call.signal!.reason);
    call.signal?.addEventListener('abort', onAbort, { once: true });
    // Our own timer (not AbortSignal.timeout) so that tests with fake timers drive it.
    const timer = setTimeout(() => ctl.abort(Object.assign(new Error('timeout'), { name: 'TimeoutError' })), this.options.timeoutMs ?? 60_000);
    let streaming = false;
    try {
      const r = await agent.request({ origin: this.origin, path: target, method: call.method, headers, body: payload, signal: ctl.signal });
      const h = new RawHeaders(r.headers);
      if (call.raw && r.statusCode >= 200 && r.statusCode < 300) {
        // the caller's signal stays wired to the open stream, so aborting it ends a read that waits for data
        streaming = true;
        return { status: r.statusCode, headers: h, stream: r.body };
      }
      return { status: r.statusCode, headers: h, text: await r.body.text() };
    } catch (e) {
      if (ctl.signal.aborted && !call.signal?.aborted) throw ctl.signal.reason;
      throw e;
    } finally {
      clearTimeout(timer);
      if (!streaming) call.signal?.removeEventListener('abort', onAbort);
    }
  }

  private readonly deprecatedSeen = new Set<string>();

  private warn(h: AnswerHeaders, call: Call): void {
    const requestId = h.get('x-db-request-id') ?? undefined;
    if (h.get('x-db-replication')?.toLowerCase() === 'degraded') {
      this.report({
        kind: 'replication_degraded',
        message: `${call.method} ${call.path} committed, but its follower acknowledgements did not arrive in time: a failover could lose this write (spec 7.2)`,
        method: call.method,
        path: call.path,
        requestId,
      });
    }
    const dep = h.get('deprecation');
    if (dep && !this.deprecatedSeen.has(`${call.method} ${call.path}`)) {
      this.deprecatedSeen.add(`${call.method} ${call.path}`);
      const sunset = h.get('sunset') ?? undefined;
      this.report({ kind: 'deprecated', message: `${call.method} ${call.path} is deprecated${sunset ? ` and may stop working after ${sunset}` : ''}: see the API description`, method: call.method, path: call.path, requestId, sunset });
    }
  }

  private report(w: MmdbWarning): void {
    this.options.onWarning?.(w);
    if (this.listenerCount('warning') > 0) this.emit('warning', w);
    else if (!this.options.onWarning) process.emitWarning(w.message, { code: w.kind === 'deprecated' ? 'MMDB_DEPRECATED' : 'MMDB_REPLICATION_DEGRADED' });
  }

  async close(): Promise<void> {
    const a = await this.agent?.catch(() => undefined);
    this.agent = undefined;
    await a?.close();
  }
}

interface Got {
  readonly status: number;
  readonly headers: AnswerHeaders;
  /** The body; undefined for a raw 2xx stream left unread (then `stream`). */
  readonly text?: string;
  readonly stream?: AsyncIterable<Uint8Array>;
}

function parseBody(headers: AnswerHeaders, text: string): unknown {
  if (!text) return undefined;
  const type = headers.get('content-type') ?? '';
  if (type.includes('ndjson')) {
    try {
      return text.split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
    } catch {
      return text;
    }
  }
  if (type.includes('json')) {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  return text;
}
