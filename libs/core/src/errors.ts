/**
 * The one error catalogue. Libs throw `DbError(code, message)`; only the HTTP edge
 * (apps/api, and es-compat for its own surface) turns a code into a status and body.
 *
 * @example
 *   throw new DbError('type_mismatch', 'column "age" expects i64, got "x"', { field: 'age' });
 */
export interface ErrorSpec {
  /** HTTP status the edge answers with. */
  readonly status: number;
  /** Whether an automatic retry is advised (spec §7.3). */
  readonly retry: boolean;
  /** One line saying when the code is used. */
  readonly when: string;
}

export const ERROR_CATALOGUE = {
  // spec §7.1
  invalid_body: { status: 400, retry: false, when: 'Body cannot be parsed, or its Content-Type does not match.' },
  type_mismatch: { status: 400, retry: false, when: 'A column value does not match its declared type; the message names the field.' },
  missing_required: { status: 400, retry: false, when: 'A required column was omitted.' },
  fk_violation: { status: 400, retry: false, when: 'A foreign key references a missing row, or a delete would orphan a reference.' },
  check_violation: { status: 400, retry: false, when: 'A row failed a CHECK constraint; the message names the constraint.' },
  dim_mismatch: { status: 400, retry: false, when: "Vector length differs from the table's locked dimension." },
  metric_mismatch: { status: 400, retry: false, when: "A vector request named a metric other than the table's locked metric." },
  unsupported_sql: { status: 400, retry: false, when: 'A SQL construct the engine does not run; the message names it.' },
  validation_failed: { status: 400, retry: false, when: 'Malformed body, plan or query parameter; the message names the problem.' },
  ambiguous_graph_direction: { status: 400, retry: false, when: 'A natural-language hop over a self-relation needs `direction`.' },
  unauthorized: { status: 401, retry: false, when: 'Bearer token missing, malformed, unknown, or not scoped to this tenant.' },
  quota_exceeded: { status: 402, retry: false, when: 'Credit is exhausted.' },
  addon_required: { status: 402, retry: false, when: 'The endpoint needs an add-on that is not enabled.' },
  forbidden: { status: 403, retry: false, when: 'The token cannot reach this resource.' },
  not_found: { status: 404, retry: false, when: 'Route, schema, row or migration is not registered.' },
  schema_not_found: { status: 404, retry: false, when: 'No schema is registered under the name.' },
  row_not_found: { status: 404, retry: false, when: 'Row GET for an absent primary key.' },
  conflict: { status: 409, retry: false, when: 'Row exists on insert-only write, unique index clash, idempotency replay mismatch, lease busy, wrong migration state.' },
  write_conflict: { status: 409, retry: false, when: 'If-Match named a version the row is not at, or a transaction lost to a concurrent write.' },
  precondition_failed: { status: 412, retry: false, when: 'If-Match supplied and the row does not exist.' },
  rate_limited: { status: 429, retry: true, when: 'Per-key request budget exceeded; Retry-After says when.' },
  internal_error: { status: 500, retry: true, when: 'Engine fault; quote X-DB-Trace-Id.' },
  service_unavailable: { status: 503, retry: true, when: 'Temporarily unable to serve: commit queue full, disk full, fenced or not the lease holder.' },
  gateway_timeout: { status: 504, retry: true, when: 'Replication ack did not arrive in budget.' },
  // codes we add
  payload_too_large: { status: 413, retry: false, when: 'Request body (or one NDJSON line, or an NDJSON stream) over its cap.' },
  query_cancelled: { status: 400, retry: false, when: 'The query was cancelled through POST /v1/queries/{id}/cancel.' },
  query_timeout: { status: 400, retry: false, when: "The query ran past its time budget." },
  resource_exhausted: { status: 400, retry: false, when: 'The query went over its memory (row) budget.' },
  stale_epoch: { status: 409, retry: false, when: "Replication: the follower's log diverges from the holder's (a newer epoch rewrote it) or names an epoch the node has not reached; re-sync." },
  corrupt_log: { status: 500, retry: false, when: 'A log frame failed its checksum or could not be decoded.' },
  resync_required: { status: 410, retry: false, when: 'A change-feed cursor cannot be resumed (log retention passed it, its epoch was rewritten, or the reader lagged past its bound): start again from a snapshot.' },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

export function isErrorCode(s: string): s is ErrorCode {
  return Object.prototype.hasOwnProperty.call(ERROR_CATALOGUE, s);
}

/** The only error type libs throw for a failure a client can act on. */
export class DbError extends Error {
  readonly code: ErrorCode;
  /** Extra fields merged into the error body (e.g. `current_version`, `field`, `index`). */
  readonly details: Readonly<Record<string, unknown>>;

  constructor(code: ErrorCode, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.name = 'DbError';
    this.code = code;
    this.details = details;
  }

  get status(): number {
    return ERROR_CATALOGUE[this.code].status;
  }

  get retry(): boolean {
    return ERROR_CATALOGUE[this.code].retry;
  }
}

export function isDbError(e: unknown): e is DbError {
  return e instanceof DbError;
}
