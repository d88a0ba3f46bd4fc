/**
 * One request path for every call: URL and headers, Idempotency-Key, timeout, the retry rules
 * (./retry.ts), error bodies → MmdbError, and the replication warning.
 */
import { randomUUID } from 'crypto';
import { EventEmitter } from 'events';
import { MmdbError, type MmdbWarning } from './errors';
import { retryDelay, MAX_RETRIES } from './retry';
import type { RetryClass } from './contract/routes';
import { tlsDispatcher, type TlsOptions } from './tls';

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
  /** Return the live Response (for streams) instead of reading the body. No timeout applies past the headers. */
  readonly raw?: boolean;
}

export interface Answer<T = any> {
  readonly status: number;
  readonly headers: Headers;
  readonly body: T;
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
  private dispatcher: Promise<unknown> | undefined;
  readonly base: string;

  constructor(readonly options: ClientOptions) {
    super();
    this.base = options.url.replace(/\/+$/, '');
  }

  url(path: string, query?: Call['query']): string {
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) qs.set(k, String(v));
    const s = qs.toString();
    return this.base + path + (s ? `?${s}` : '');
  }

  private tls(): Promise<unknown> {
    return (this.dispatcher ??= tlsDispatcher(this.options));
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
    // A streamed body is consumed by the first attempt: it can never be sent again.
    const idempotent = !(b && 'stream' in b) && (call.retry === 'safe' || (call.retry === 'keyed' && !!headers['idempotency-key']));
    const maxRetries = this.options.maxRetries ?? MAX_RETRIES;
    const dispatcher = await this.tls();
    const url = this.url(call.path, call.query);
    for (let attempt = 0; ; attempt++) {
      let res: Response | undefined;
      let failure: MmdbError;
      try {
        res = await this.attempt(url, call, headers, payload, dispatcher);
      } catch (e) {
        if (call.signal?.aborted) throw call.signal.reason ?? e;
        const timeout = (e as Error)?.name === 'TimeoutError';
        failure = new MmdbError({ code: timeout ? 'timeout' : 'network_error', status: 0, message: `${call.method} ${call.path}: ${timeout ? 'no answer in time' : ((e as Error)?.cause as Error)?.message ?? (e as Error)?.message}`, retry: true, cause: e });
      }
      if (res) {
        this.warn(res, call);
        if (res.ok) {
          if (call.raw) return { status: res.status, headers: res.headers, body: res as T };
          const body = await readBody(res);
          this.emit('response', { method: call.method, path: call.path, status: res.status, headers: res.headers, body });
          return { status: res.status, headers: res.headers, body: body as T };
        }
        const body = await readBody(res).catch(() => undefined);
        this.emit('response', { method: call.method, path: call.path, status: res.status, headers: res.headers, body });
        failure = MmdbError.fromBody(res.status, body, res.headers.get('x-db-request-id') ?? undefined);
      }
      const delay = attempt < maxRetries ? retryDelay({ attempt, status: failure!.status, retryAfter: res?.headers.get('retry-after'), idempotent }) : null;
      if (delay === null) throw failure!;
      this.emit('retry', { attempt: attempt + 1, delayMs: delay, error: failure! });
      await sleep(delay, call.signal);
    }
  }

  private async attempt(url: string, call: Call, headers: Record<string, string>, payload: unknown, dispatcher: unknown): Promise<Response> {
    const ctl = new AbortController();
    const onAbort = () => ctl.abort(call.signal!.reason);
    call.signal?.addEventListener('abort', onAbort, { once: true });
    // Our own timer (not AbortSignal.timeout) so that tests with fake timers drive it.
    const timer = setTimeout(() => ctl.abort(Object.assign(new Error('timeout'), { name: 'TimeoutError' })), this.options.timeoutMs ?? 60_000);
    try {
      // `dispatcher` and `duplex` are undici's extensions of RequestInit.
      const init: Record<string, unknown> = { method: call.method, headers, signal: ctl.signal };
      if (payload !== undefined) init.body = payload;
      if (payload !== undefined && typeof payload !== 'string') init.duplex = 'half';
      if (dispatcher) init.dispatcher = dispatcher;
      const res = await fetch(url, init as RequestInit);
      if (!call.raw || !res.ok) {
        // read the body inside the time limit
        const buf = await res.arrayBuffer();
        return new Response(res.status === 204 || res.status === 304 ? null : buf, { status: res.status, statusText: res.statusText, headers: res.headers });
      }
      return res;
    } catch (e) {
      if (ctl.signal.aborted && !call.signal?.aborted) throw ctl.signal.reason;
      throw e;
    } finally {
      clearTimeout(timer);
      call.signal?.removeEventListener('abort', onAbort);
    }
  }

  private readonly deprecatedSeen = new Set<string>();

  private warn(res: Response, call: Call): void {
    const requestId = res.headers.get('x-db-request-id') ?? undefined;
    if (res.headers.get('x-db-replication')?.toLowerCase() === 'degraded') {
      this.report({
        kind: 'replication_degraded',
        message: `${call.method} ${call.path} committed, but its follower acknowledgements did not arrive in time: a failover could lose this write (spec 7.2)`,
        method: call.method,
        path: call.path,
        requestId,
      });
    }
    const dep = res.headers.get('deprecation');
    if (dep && !this.deprecatedSeen.has(`${call.method} ${call.path}`)) {
      this.deprecatedSeen.add(`${call.method} ${call.path}`);
      const sunset = res.headers.get('sunset') ?? undefined;
      this.report({ kind: 'deprecated', message: `${call.method} ${call.path} is deprecated${sunset ? ` and may stop working after ${sunset}` : ''}: see the API description`, method: call.method, path: call.path, requestId, sunset });
    }
  }

  private report(w: MmdbWarning): void {
    this.options.onWarning?.(w);
    if (this.listenerCount('warning') > 0) this.emit('warning', w);
    else if (!this.options.onWarning) process.emitWarning(w.message, { code: w.kind === 'deprecated' ? 'MMDB_DEPRECATED' : 'MMDB_REPLICATION_DEGRADED' });
  }

  async close(): Promise<void> {
    const d = (await this.dispatcher?.catch(() => undefined)) as { close?: () => Promise<void> } | undefined;
    await d?.close?.();
  }
}

async function readBody(res: Response): Promise<unknown> {
  const text = await res.text();
  if (!text) return undefined;
  const type = res.headers.get('content-type') ?? '';
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
