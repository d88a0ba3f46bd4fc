/**
 * The one error the client throws for an answer that is not 2xx, and for a transport failure
 * (code `network_error` or `timeout`, status 0) once retries are spent.
 *
 * @example
 *   try { await db.rows.put('app.users', '42', row, { ifMatch: 3 }); }
 *   catch (e) { if (e instanceof MmdbError && e.code === 'write_conflict') console.log(e.details.current_version); }
 */
export class MmdbError extends Error {
  /** The stable code of spec 7.1 (`write_conflict`, `rate_limited`, …), or `network_error` / `timeout`. */
  readonly code: string;
  /** HTTP status; 0 when no answer came. */
  readonly status: number;
  /** The server's request id (quote it in support tickets), when an answer came. */
  readonly requestId: string | undefined;
  /** Whether the server advised a retry. */
  readonly retry: boolean;
  /** The route's extra fields: `current_version`, `field`, `index`, `line`, `retry_after`, … */
  readonly details: Readonly<Record<string, unknown>>;

  constructor(init: { code: string; status: number; message: string; requestId?: string; retry?: boolean; details?: Record<string, unknown>; cause?: unknown }) {
    super(init.message, init.cause !== undefined ? { cause: init.cause } : undefined);
    this.name = 'MmdbError';
    this.code = init.code;
    this.status = init.status;
    this.requestId = init.requestId;
    this.retry = init.retry ?? false;
    this.details = init.details ?? {};
  }

  /** Builds the error from an answer's body (top-level or nested `error` form, spec 7). */
  static fromBody(status: number, body: unknown, requestId: string | undefined): MmdbError {
    const b = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>;
    const nested = b.error && typeof b.error === 'object' ? (b.error as Record<string, unknown>) : undefined;
    const code = String(nested?.code ?? (typeof b.error === 'string' ? b.error : '') ?? '') || `http_${status}`;
    const message = String(nested?.message ?? b.message ?? `HTTP ${status}`);
    const { error: _e, message: _m, request_id, retry, ...details } = b;
    return new MmdbError({
      code,
      status,
      message,
      requestId: typeof request_id === 'string' ? request_id : requestId,
      retry: typeof retry === 'boolean' ? retry : status === 429 || status >= 500,
      details,
    });
  }
}

/**
 * A warning the client reports without failing the call: `replication_degraded` (spec 7.2,
 * `X-DB-Replication: degraded` on a write), or `deprecated` (the route answered with a
 * `Deprecation` header; `sunset` says until when it works; once per route and client).
 */
export interface MmdbWarning {
  readonly kind: 'replication_degraded' | 'deprecated';
  readonly sunset?: string;
  readonly message: string;
  readonly method: string;
  readonly path: string;
  readonly requestId: string | undefined;
}
