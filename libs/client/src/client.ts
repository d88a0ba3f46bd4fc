/**
 * The typed client: one method per route of the service (see ./contract/routes.ts), answers
 * typed from the same models the server's OpenAPI document is built from.
 *
 * @example
 *   const db = new Mmdb({ url: 'https://127.0.0.1:8443', token, tenant, caFile: 'data/tls/cert.pem' });
 *   await db.schemas.put(toml);
 *   await db.rows.insert('app.users', { id: 1, name: 'ann' });
 *   const { rows } = await db.sql<{ name: string }>('SELECT name FROM app.users WHERE id = $1', [1]);
 *   db.on('warning', (w) => console.warn(w.message)); // X-DB-Replication: degraded
 */
import type { Static } from './schema';
import type * as M from './contract/models';
import { MmdbError, type MmdbWarning } from './errors';
import type { PlanBuilder, PlanNode } from './plan';
import { watchEvents, type SseEvent, type WatchOptions } from './sse';
import { Transport, type Answer, type AnswerHeaders, type Call, type ClientOptions } from './transport';

export type Pk = string | number | boolean | ReadonlyArray<string | number | boolean>;
type S<X> = Static<X>;
export interface WriteOpts {
  /** Sent as Idempotency-Key (a UUID is made when absent, so retries never apply a write twice). */
  readonly idempotencyKey?: string;
  readonly signal?: AbortSignal;
}
export interface SqlResult<T> {
  readonly kind: 'select' | 'insert' | 'update' | 'delete' | 'ddl' | 'transaction';
  readonly columns?: { name: string; type: string | null }[];
  readonly rows: T[];
  readonly schema?: string;
  readonly count?: number;
  readonly pk?: string;
  readonly pks?: string[];
  readonly explain?: Record<string, unknown>;
}
export interface WatchEvent<T = unknown> {
  /** The event id (resume point; pass as `lastEventId` to continue later). */
  readonly id: string | undefined;
  /** The event name the server sent (`message` when none). */
  readonly event: string;
  /** The data, parsed as JSON when it is JSON. */
  readonly data: T;
}

/** The path form of a primary key: a value, or the components of a composite key joined by `,`. */
export function pkPath(pk: Pk): string {
  return Array.isArray(pk) ? pk.map((c) => encodeURIComponent(String(c))).join(',') : encodeURIComponent(String(pk));
}
const enc = encodeURIComponent;
const READ_ONLY_SQL = /^\s*(select|values|explain|show|describe|pragma)\b/i;

export class Mmdb {
  readonly transport: Transport;
  readonly tenant: string | undefined;

  constructor(options: ClientOptions | Transport, tenant?: string) {
    this.transport = options instanceof Transport ? options : new Transport(options);
    this.tenant = tenant ?? (options instanceof Transport ? options.options.tenant : options.tenant);
  }

  /** The same connection, for another tenant (operator token). */
  forTenant(tenant: string): Mmdb {
    return new Mmdb(this.transport, tenant);
  }

  /** `warning` (MmdbWarning) for X-DB-Replication: degraded; `retry` ({attempt, delayMs, error}) before each retry; `request` and `response` for every call (logging, tests). */
  on(event: 'warning', fn: (w: MmdbWarning) => void): this;
  on(event: 'retry', fn: (r: { attempt: number; delayMs: number; error: MmdbError }) => void): this;
  on(event: 'response', fn: (r: { method: string; path: string; status: number; headers: AnswerHeaders; body: unknown }) => void): this;
  /** Every request as it is about to be sent (once, before any retry): the body as sent (parsed JSON, or text; undefined for a stream). */
  on(event: 'request', fn: (r: { method: string; path: string; query: Record<string, string | number | boolean>; headers: Record<string, string>; body: unknown }) => void): this;
  on(event: string, fn: (...a: any[]) => void): this {
    this.transport.on(event, fn);
    return this;
  }

  close(): Promise<void> {
    return this.transport.close();
  }

  private t(): string {
    if (!this.tenant) throw new MmdbError({ code: 'validation_failed', status: 0, message: 'no tenant: pass `tenant` to the client or use forTenant()' });
    return `/v1/tenants/${enc(this.tenant)}`;
  }
  private async call<T>(c: Call): Promise<T> {
    return (await this.transport.request<T>(c)).body;
  }
  /** Any route, for what the typed calls do not cover. */
  request<T = unknown>(c: Call): Promise<Answer<T>> {
    return this.transport.request<T>(c);
  }

  health = () => this.call<S<typeof M.Health>>({ method: 'GET', path: '/health', retry: 'safe' });
  ready = (require?: 'write' | 'read') => this.call<S<typeof M.Ready>>({ method: 'GET', path: '/ready', query: { require }, retry: 'safe' });
  metrics = () => this.call<string>({ method: 'GET', path: '/metrics', retry: 'safe' });
  openapi = () => this.call<Record<string, any>>({ method: 'GET', path: '/v1/openapi.json', retry: 'safe' });
  ping = () => this.call<{ ok: boolean; tenant: string }>({ method: 'GET', path: `${this.t()}/_ping`, retry: 'safe' });

  readonly tenants = {
    list: () => this.call<S<typeof M.Tenant>[]>({ method: 'GET', path: '/v1/tenants', retry: 'safe' }),
    create: () => this.call<S<typeof M.IssuedToken>>({ method: 'POST', path: '/v1/tenants', retry: 'never' }),
  };

  readonly tokens = {
    list: () => this.call<S<typeof M.TokenInfo>[]>({ method: 'GET', path: `${this.t()}/tokens`, retry: 'safe' }),
    issue: (o: S<typeof M.IssueTokenBody> = {}) => this.call<S<typeof M.IssuedToken>>({ method: 'POST', path: `${this.t()}/tokens`, body: { json: o }, retry: 'keyed' }),
    revoke: (id: string) => this.call<S<typeof M.Revoked>>({ method: 'DELETE', path: `${this.t()}/tokens/${enc(id)}`, retry: 'safe', key: true }),
    rotate: (id: string, o: S<typeof M.RotateTokenBody> = {}) =>
      this.call<S<typeof M.IssuedToken>>({ method: 'POST', path: `${this.t()}/tokens/${enc(id)}/rotate`, body: { json: o }, retry: 'keyed' }),
  };

  readonly schemas = {
    list: () => this.call<string[]>({ method: 'GET', path: `${this.t()}/schemas`, retry: 'safe' }),
    /** Registers or updates a TOML manifest. */
    put: (toml: string, o: WriteOpts = {}) =>
      this.call<S<typeof M.SchemaPut>>({ method: 'POST', path: `${this.t()}/schemas`, body: { text: toml, contentType: 'text/plain' }, retry: 'keyed', ...o }),
    get: (id: string) => this.call<string>({ method: 'GET', path: `${this.t()}/schemas/${enc(id)}`, headers: { accept: 'text/plain' }, retry: 'safe' }),
    delete: async (id: string, o: WriteOpts = {}) => void (await this.call({ method: 'DELETE', path: `${this.t()}/schemas/${enc(id)}`, retry: 'safe', key: true, ...o })),
    /** Operator only. */
    deleteAll: (o: WriteOpts = {}) => this.call<S<typeof M.SchemasDeleted>>({ method: 'DELETE', path: `${this.t()}/schemas`, retry: 'safe', key: true, ...o }),
  };

  readonly rows = {
    /** Upsert (or, with `expect: 'insert'`, insert only: 409 conflict if the row exists). */
    insert: (schema: string, row: M.Row, o: WriteOpts & { expect?: 'insert' } = {}) =>
      this.call<M.RowWritten>({ method: 'POST', path: `${this.t()}/rows/${enc(schema)}`, query: { expect: o.expect }, body: { json: row }, retry: 'keyed', ...o }),
    get: <T = M.Row>(schema: string, pk: Pk) => this.call<T>({ method: 'GET', path: `${this.t()}/rows/${enc(schema)}/${pkPath(pk)}`, retry: 'safe' }),
    /** The row and its version (from ETag), or null when absent. */
    getVersioned: async <T = M.Row>(schema: string, pk: Pk): Promise<{ row: T; version: number } | null> => {
      try {
        const a = await this.transport.request<T>({ method: 'GET', path: `${this.t()}/rows/${enc(schema)}/${pkPath(pk)}`, retry: 'safe' });
        return { row: a.body, version: Number((a.headers.get('etag') ?? '').replace(/^W\//, '').replace(/"/g, '')) };
      } catch (e) {
        if (e instanceof MmdbError && e.code === 'row_not_found') return null;
        throw e;
      }
    },
    /** Upsert at a key; `ifMatch` (a version or `*`) makes it conditional (409 write_conflict, 412 precondition_failed). */
    put: (schema: string, pk: Pk, row: M.Row, o: WriteOpts & { ifMatch?: number | string } = {}) =>
      this.call<M.RowWritten>({ method: 'PUT', path: `${this.t()}/rows/${enc(schema)}/${pkPath(pk)}`, headers: { 'if-match': o.ifMatch?.toString() }, body: { json: row }, retry: 'safe', key: true, ...o }),
    /** A JSON merge patch (RFC 7396) of the stored row: named columns change, `null` sets NULL, others stay (404 row_not_found if absent). */
    patch: (schema: string, pk: Pk, patch: M.Row, o: WriteOpts & { ifMatch?: number | string } = {}) =>
      this.call<M.RowWritten>({ method: 'PATCH', path: `${this.t()}/rows/${enc(schema)}/${pkPath(pk)}`, headers: { 'if-match': o.ifMatch?.toString() }, body: { text: JSON.stringify(patch), contentType: 'application/merge-patch+json' }, retry: 'safe', key: true, ...o }),
    delete: (schema: string, pk: Pk, o: WriteOpts & { ifMatch?: number | string } = {}) =>
      this.call<S<typeof M.Deleted>>({ method: 'DELETE', path: `${this.t()}/rows/${enc(schema)}/${pkPath(pk)}`, headers: { 'if-match': o.ifMatch?.toString() }, retry: 'safe', key: true, ...o }),
    /** Many rows in one atomic frame (a JSON array). */
    batch: (schema: string, rows: readonly M.Row[], o: WriteOpts & { expect?: 'insert' } = {}) =>
      this.call<M.BatchWritten>({ method: 'POST', path: `${this.t()}/rows/${enc(schema)}/_batch`, query: { expect: o.expect }, body: { json: rows }, retry: 'keyed', ...o }),
    /**
     * Streams rows as NDJSON from an (async) iterable; the server commits every `chunk` rows.
     * A stream cannot be replayed, so it is never retried: for a resumable load send
     * `batch()` calls with an idempotency key per batch (what `mmdb import` does).
     */
    stream: (schema: string, rows: AsyncIterable<M.Row> | Iterable<M.Row>, o: WriteOpts & { chunk?: number } = {}) =>
      this.call<M.NdjsonWritten>({ method: 'POST', path: `${this.t()}/rows/${enc(schema)}/_batch`, query: { chunk: o.chunk }, body: { stream: ndjson(rows), contentType: 'application/x-ndjson' }, retry: 'keyed', ...o }),
  };

  /** SQL with `$1`… bound from `params`; rows typed as T. Only read-only statements are retried on 5xx. */
  sql = <T = M.Row>(sql: string, params?: readonly unknown[], o: { explain?: boolean; queryId?: string; signal?: AbortSignal; idempotent?: boolean; format?: 'objects' | 'arrays' } = {}) =>
    this.call<SqlResult<T>>({
      method: 'POST',
      path: `${this.t()}/sql`,
      query: { explain: o.explain || undefined },
      headers: { 'x-db-query-id': o.queryId },
      body: { json: { sql, ...(params ? { params } : {}), ...(o.format ? { format: o.format } : {}) } },
      retry: o.idempotent || READ_ONLY_SQL.test(sql) ? 'safe' : 'never',
      signal: o.signal,
    });

  /** Runs a plan tree (or a PlanBuilder) → rows. */
  query = <T = M.Row>(plan: PlanNode | PlanBuilder, o: { queryId?: string; signal?: AbortSignal } = {}) =>
    this.call<T[]>({ method: 'POST', path: `${this.t()}/query`, headers: { 'x-db-query-id': o.queryId }, body: { json: plan }, retry: 'safe', signal: o.signal });
  /** Runs a plan with `explain=true` → {rows, explain}. */
  explain = <T = M.Row>(plan: PlanNode | PlanBuilder) =>
    this.call<{ rows: T[]; explain: Record<string, unknown> }>({ method: 'POST', path: `${this.t()}/query`, query: { explain: true }, body: { json: plan }, retry: 'safe' });
  cancel = (queryId: string) => this.call<S<typeof M.Cancelled>>({ method: 'POST', path: `/v1/queries/${enc(queryId)}/cancel`, retry: 'safe' });

  /** Asks in English (spec 4.6). */
  ask = <T = M.Row>(nl: string, o: Omit<S<typeof M.AskBody>, 'nl'> & { explain?: boolean } = {}) => {
    const { explain, ...rest } = o;
    return this.call<Omit<S<typeof M.AskAnswer>, 'rows'> & { rows: T[] }>({ method: 'POST', path: `${this.t()}/ask`, query: { explain: explain || undefined }, body: { json: { nl, ...rest } }, retry: 'safe' });
  };

  /**
   * Subscribes to the changes of an English query (SSE, spec 4.7). Reconnects with
   * Last-Event-ID when the stream drops, and never yields an event twice. Stop with `break`
   * or the signal.
   */
  watch<T = unknown>(nl: string, o: WatchOptions = {}): AsyncIterable<WatchEvent<T>> {
    const connect = async (lastEventId: string | undefined, signal: AbortSignal) => {
      const a = await this.transport.request<AsyncIterable<Uint8Array>>({
        method: 'GET',
        path: `${this.t()}/watch`,
        query: { nl },
        headers: { accept: 'text/event-stream', 'last-event-id': lastEventId },
        retry: 'safe',
        raw: true,
        signal,
      });
      return a.body;
    };
    const events = watchEvents(connect, o);
    return {
      [Symbol.asyncIterator]: () => {
        const it = events[Symbol.asyncIterator]();
        return {
          next: async () => {
            const r = await it.next();
            return r.done ? r : { done: false, value: toWatchEvent<T>(r.value) };
          },
          return: async () => (await it.return(undefined), { done: true as const, value: undefined }),
        };
      },
    };
  }

  readonly vector = {
    put: (table: string, entry: S<typeof M.VectorPut>, o: WriteOpts = {}) =>
      this.call<S<typeof M.VectorPutAnswer>>({ method: 'POST', path: `${this.t()}/vector/${enc(table)}/put`, body: { json: entry }, retry: 'safe', ...o }),
    topk: (table: string, q: S<typeof M.TopkBody>) => this.call<S<typeof M.VectorMatch>[]>({ method: 'POST', path: `${this.t()}/vector/${enc(table)}/topk`, body: { json: q }, retry: 'safe' }),
  };

  readonly fts = {
    put: (table: string, field: string, doc: S<typeof M.FtsDoc>, o: WriteOpts = {}) =>
      this.call<S<typeof M.FtsPutAnswer>>({ method: 'POST', path: `${this.t()}/fts/${enc(table)}/${enc(field)}`, body: { json: doc }, retry: 'safe', ...o }),
    search: (table: string, field: string, q: string, o: { limit?: number; feedback?: 'rm3' | 'none'; proximity?: 'bm25tp' | 'none'; query_stopwords?: 'auto' | 'none' } = {}) =>
      this.call<S<typeof M.FtsHit>[]>({ method: 'GET', path: `${this.t()}/fts/${enc(table)}/${enc(field)}`, query: { q, ...o }, retry: 'safe' }),
  };

  private g<T>(schema: string, kind: string, query: Call['query']): Promise<T> {
    return this.call<T>({ method: 'GET', path: `${this.t()}/graph/${enc(schema)}/${kind}`, query, retry: 'safe' });
  }
  readonly graph = {
    neighbors: (schema: string, q: { node: string; rel: string }) => this.g<string[]>(schema, 'neighbors', q),
    bfs: (schema: string, q: { src: string; rel: string; depth?: number }) => this.g<S<typeof M.BfsVisit>[]>(schema, 'bfs', q),
    reverse: <T = unknown>(schema: string, q: { rel: string; pk: string }) => this.g<T[]>(schema, 'reverse', q),
    path: (schema: string, q: { rel: string; src: string; dst: string; max_depth?: number }) => this.g<S<typeof M.PathAnswer>>(schema, 'path', q),
    dijkstra: (schema: string, q: { rel: string; src: string; dst: string; weight_field?: string; weights?: Record<string, number> }) => {
      const { weights, ...rest } = q;
      return this.g<S<typeof M.DijkstraAnswer>>(schema, 'dijkstra', { ...rest, weights_json: weights ? JSON.stringify(weights) : undefined });
    },
  };

  /** Database users, policies, credits and add-ons (apps/api/README.md "Users, grants…", "Credits and add-ons"). */
  readonly security = {
    users: () => this.call<S<typeof M.User>[]>({ method: 'GET', path: `${this.t()}/users`, retry: 'safe' }),
    putUser: (name: string, body: S<typeof M.UserBody>) => this.call<S<typeof M.User>>({ method: 'PUT', path: `${this.t()}/users/${enc(name)}`, body: { json: body }, retry: 'safe' }),
    deleteUser: (name: string) => this.call<S<typeof M.Deleted>>({ method: 'DELETE', path: `${this.t()}/users/${enc(name)}`, retry: 'safe' }),
    /** A token acting as the user (keyed: a replay under the same Idempotency-Key shows the same token to the same caller). */
    issueToken: (name: string, body: S<typeof M.IssueTokenBody> = {}, o: WriteOpts = {}) =>
      this.call<S<typeof M.UserToken>>({ method: 'POST', path: `${this.t()}/users/${enc(name)}/tokens`, body: { json: body }, retry: 'keyed', ...o }),
    policies: () => this.call<S<typeof M.Policy>[]>({ method: 'GET', path: `${this.t()}/policies`, retry: 'safe' }),
    putPolicy: (id: string, body: S<typeof M.PolicyBody>) => this.call<S<typeof M.Policy>>({ method: 'PUT', path: `${this.t()}/policies/${enc(id)}`, body: { json: body }, retry: 'safe' }),
    deletePolicy: (id: string) => this.call<S<typeof M.Deleted>>({ method: 'DELETE', path: `${this.t()}/policies/${enc(id)}`, retry: 'safe' }),
    usage: () => this.call<S<typeof M.Usage>>({ method: 'GET', path: `${this.t()}/usage`, retry: 'safe' }),
    /** Operator: the credit granted (null: unlimited); `reset` starts a new period. */
    setCredits: (body: S<typeof M.CreditsBody>) => this.call<S<typeof M.Usage>>({ method: 'PUT', path: `${this.t()}/credits`, body: { json: body }, retry: 'safe' }),
    /** Operator: switch an add-on (`vector`, `es`, `ask`) → every add-on's state. */
    setAddon: (name: string, body: S<typeof M.AddonBody>) => this.call<S<typeof M.Addons>>({ method: 'PUT', path: `${this.t()}/addons/${enc(name)}`, body: { json: body }, retry: 'safe' }),
  };

  readonly migrations = {
    /** One page, newest first: `{migrations, next}` (pass `next` as `after` for the following page). */
    list: (o: { limit?: number; after?: string } = {}) => this.call<S<typeof M.MigrationPage>>({ method: 'GET', path: `${this.t()}/migrations`, query: o, retry: 'safe' }),
    /** Every migration, newest first (follows the pages). */
    all: async (): Promise<M.Migration[]> => {
      const out: M.Migration[] = [];
      let after: string | undefined;
      do {
        const page = await this.migrations.list({ limit: 1000, after });
        out.push(...page.migrations);
        after = page.next ?? undefined;
      } while (after);
      return out;
    },
    /**
     * Starts an online migration of one table to a new manifest (`manifest`, TOML text) or by
     * `operations`; `auto_cutover` cuts over by itself once ready; `throttle` bounds the backfill.
     */
    submit: (m: S<typeof M.MigrationSubmit>, o: WriteOpts = {}) => this.call<M.Migration>({ method: 'POST', path: `${this.t()}/migrations`, body: { json: m }, retry: 'keyed', ...o }),
    get: (id: string) => this.call<M.Migration>({ method: 'GET', path: `${this.t()}/migrations/${enc(id)}`, retry: 'safe' }),
    cutover: (id: string, o: WriteOpts = {}) => this.call<M.Migration>({ method: 'POST', path: `${this.t()}/migrations/${enc(id)}/cutover`, retry: 'keyed', ...o }),
    abort: (id: string, o: WriteOpts = {}) => this.call<M.Migration>({ method: 'POST', path: `${this.t()}/migrations/${enc(id)}/abort`, retry: 'keyed', ...o }),
    pause: (id: string, o: WriteOpts = {}) => this.call<M.Migration>({ method: 'POST', path: `${this.t()}/migrations/${enc(id)}/pause`, retry: 'keyed', ...o }),
    resume: (id: string, o: WriteOpts = {}) => this.call<M.Migration>({ method: 'POST', path: `${this.t()}/migrations/${enc(id)}/resume`, retry: 'keyed', ...o }),
    /** The audit log, oldest first, one page: `{entries, next}`; `migration` keeps one migration's. */
    audit: (o: { migration?: string; limit?: number; after?: string } = {}) => this.call<S<typeof M.AuditPage>>({ method: 'GET', path: `${this.t()}/migrations/_audit`, query: o, retry: 'safe' }),
  };

  /** Operational routes (spec 4.13); `tenant` picks the tenant when a node serves several (default: this client's). */
  readonly replication = {
    lease: () => this.call<S<typeof M.Lease>>({ method: 'GET', path: '/v1/replication/lease', query: { tenant: this.tenant }, retry: 'safe' }),
    status: () => this.call<S<typeof M.ReplicationStatus>>({ method: 'GET', path: '/v1/replication/status', query: { tenant: this.tenant }, retry: 'safe' }),
    /** The frames from `since_segment` on, one parsed NDJSON line each. */
    frames: (q: { since_segment: number; epoch?: number; after_lsn?: number; follower?: string }) =>
      this.call<S<typeof M.FrameLine>[]>({ method: 'GET', path: '/v1/replication/frames', query: { tenant: this.tenant, ...q }, headers: { accept: 'application/x-ndjson' }, retry: 'safe' }),
    checksum: () => this.call<{ tenant: string; sha256?: string; verify?: unknown }>({ method: 'GET', path: '/v1/replication/checksum', query: { tenant: this.tenant }, retry: 'safe' }),
    /** The store's snapshot for a follower's bootstrap, one parsed NDJSON line each. */
    snapshot: () => this.call<S<typeof M.FrameLine>[]>({ method: 'GET', path: '/v1/replication/snapshot', query: { tenant: this.tenant }, headers: { accept: 'application/x-ndjson' }, retry: 'safe' }),
    forgetFollower: (node: string) => this.call<{ follower: string; removed: boolean }>({ method: 'DELETE', path: `/v1/replication/followers/${enc(node)}`, query: { tenant: this.tenant }, retry: 'safe' }),
    ack: (a: S<typeof M.Ack>) => this.call<unknown>({ method: 'POST', path: '/v1/replication/ack', query: { tenant: this.tenant }, body: { json: a }, retry: 'safe' }),
    stepDown: () => this.call<{ stepped_down: boolean; lease: unknown }>({ method: 'POST', path: '/v1/replication/step-down', query: { tenant: this.tenant }, retry: 'never' }),
    settings: () => this.call<S<typeof M.SyncSettings>>({ method: 'GET', path: '/v1/replication/settings', query: { tenant: this.tenant }, retry: 'safe' }),
    putSettings: (change: S<typeof M.SyncSettingsChange>) => this.call<S<typeof M.SyncSettings>>({ method: 'PUT', path: '/v1/replication/settings', query: { tenant: this.tenant }, body: { json: change }, retry: 'safe' }),
    handOver: (node: string) => this.call<unknown>({ method: 'POST', path: '/v1/replication/hand-over', query: { tenant: this.tenant }, body: { json: { node } }, retry: 'never' }),
  };
}

function toWatchEvent<T>(e: SseEvent): WatchEvent<T> {
  let data: unknown = e.data;
  try {
    data = JSON.parse(e.data);
  } catch {
    /* not JSON: the text */
  }
  return { id: e.id, event: e.event, data: data as T };
}

async function* ndjson(rows: AsyncIterable<M.Row> | Iterable<M.Row>): AsyncGenerator<Uint8Array> {
  const te = new TextEncoder();
  let buf = '';
  for await (const r of rows as AsyncIterable<M.Row>) {
    buf += JSON.stringify(r) + '\n';
    if (buf.length >= 1 << 16) {
      yield te.encode(buf);
      buf = '';
    }
  }
  if (buf) yield te.encode(buf);
}
