/**
 * The route registry: every route of the service, its parameters, body, answers, error codes
 * and retry class. The server's OpenAPI document is built from this list (and checked against
 * the routes the server really registers); the client's calls are typed from the same models.
 */
import { t, type TSchema } from '../schema';
import * as M from './models';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'HEAD';

export interface ParamDef {
  readonly name: string;
  readonly in: 'path' | 'query' | 'header';
  readonly required?: boolean;
  readonly schema: TSchema<any>;
  readonly description?: string;
}

export interface AnswerDef {
  readonly status: number;
  readonly description: string;
  /** Default `application/json`. */
  readonly contentType?: string;
  readonly schema?: TSchema<any>;
}

/**
 * How the client may retry a route (spec 7.3: 5xx only for idempotent requests):
 * `safe` — reads and idempotent writes (GET, PUT, DELETE, read-only POSTs);
 * `keyed` — a mutating POST the server deduplicates by Idempotency-Key (the client always sends one);
 * `never` — a POST that is not idempotent and has no key support (issue a token).
 */
export type RetryClass = 'safe' | 'keyed' | 'never';

export interface RouteDef {
  readonly id: string;
  readonly method: Method;
  /** OpenAPI form: `/v1/tenants/{tenant}/rows/{schema}`. */
  readonly path: string;
  readonly summary: string;
  readonly tag: string;
  readonly auth: 'public' | 'tenant' | 'operator';
  readonly params?: readonly ParamDef[];
  readonly body?: { readonly contentType: string; readonly schema: TSchema<any>; readonly required?: boolean }[];
  readonly answers: readonly AnswerDef[];
  /** Route-specific error codes (the common ones of its `auth` are added by the document). */
  readonly errors: readonly string[];
  readonly retry: RetryClass;
  /** A prefix the server passes through to another protocol (the ES 7.x surface). */
  readonly passthrough?: boolean;
  /** Set when the route is deprecated (see COMPATIBILITY_POLICY): dates are ISO `YYYY-MM-DD`. */
  readonly deprecated?: Deprecation;
}

export interface Deprecation {
  readonly since: string;
  /** At least 12 months after `since`. */
  readonly sunset: string;
  /** What to use instead. */
  readonly replacement: string;
}

/** The answer headers of a deprecated route: `Deprecation` (RFC 9745, `@<unix seconds>`) and `Sunset` (RFC 8594, an HTTP date). */
export function deprecationHeaders(d: Deprecation): Record<string, string> {
  const since = Date.parse(`${d.since}T00:00:00Z`);
  const sunset = Date.parse(`${d.sunset}T00:00:00Z`);
  if (Number.isNaN(since) || Number.isNaN(sunset)) throw new Error(`bad deprecation dates ${d.since} / ${d.sunset}`);
  if (sunset - since < 365 * 86_400_000) throw new Error(`a deprecation lasts at least 12 months (${d.since} → ${d.sunset})`);
  return { deprecation: `@${since / 1000}`, sunset: new Date(sunset).toUTCString() };
}

const p = (name: string, description?: string): ParamDef => ({ name, in: 'path', required: true, schema: t.string(), description });
const q = (name: string, schema: TSchema<any>, description?: string, required = false): ParamDef => ({ name, in: 'query', required, schema, description });
const h = (name: string, description: string): ParamDef => ({ name, in: 'header', schema: t.string(), description });
const json = (schema: TSchema<any>, required = true) => [{ contentType: 'application/json', schema, required }];
const ok = (schema: TSchema<any> | undefined, description = 'OK', status = 200): AnswerDef => ({ status, description, schema });
const IDEM = h('Idempotency-Key', 'ULID or UUID; the same key and request replay the stored answer, another request 409');
const QID = h('X-DB-Query-Id', 'a ULID naming the query for cancellation (a new one if absent)');
const EXPLAIN = q('explain', t.enum(['true', 'false']), 'add the executed plan with statistics');
const T = p('tenant', 'tenant ULID');
const RT = q('tenant', t.string(), 'the tenant, when the node serves several');
const ROWERR = ['validation_failed', 'invalid_body', 'type_mismatch', 'missing_required', 'fk_violation', 'check_violation', 'schema_not_found', 'conflict', 'payload_too_large', 'gateway_timeout'];

const GRAPH_PARAMS: Record<string, ParamDef[]> = {
  neighbors: [q('node', t.string(), 'source key', true), q('rel', t.string(), 'relation', true)],
  bfs: [q('src', t.string(), 'start key', true), q('rel', t.string(), 'relation', true), q('depth', t.integer({ minimum: 0, maximum: 64, default: 3 }))],
  reverse: [q('rel', t.string(), 'relation', true), q('pk', t.string(), 'target key', true)],
  path: [q('rel', t.string(), 'relation', true), q('src', t.string(), '', true), q('dst', t.string(), '', true), q('max_depth', t.integer({ minimum: 0, maximum: 64, default: 64 }))],
  dijkstra: [q('rel', t.string(), 'relation', true), q('src', t.string(), '', true), q('dst', t.string(), '', true), q('weight_field', t.string()), q('weights_json', t.string(), 'JSON object "from|to" → weight')],
};
const GRAPH_ANSWERS: Record<string, TSchema<any>> = {
  neighbors: t.array(t.string()),
  bfs: t.array(M.BfsVisit),
  reverse: t.array(t.any()),
  path: M.PathAnswer,
  dijkstra: M.DijkstraAnswer,
};

export const ROUTES: readonly RouteDef[] = [
  // health (public)
  { id: 'health', method: 'GET', path: '/health', summary: 'Liveness', tag: 'health', auth: 'public', answers: [ok(M.Health)], errors: [], retry: 'safe' },
  { id: 'ready', method: 'GET', path: '/ready', summary: 'Readiness (strict with require=write|read)', tag: 'health', auth: 'public', params: [q('require', t.enum(['write', 'read']))], answers: [ok(M.Ready), { status: 503, description: 'not ready (strict probe)', schema: M.Ready }], errors: ['validation_failed'], retry: 'safe' },
  { id: 'metrics', method: 'GET', path: '/metrics', summary: 'Prometheus text exposition', tag: 'health', auth: 'public', answers: [{ status: 200, description: 'metrics', contentType: 'text/plain', schema: t.string() }], errors: [], retry: 'safe' },
  { id: 'openapi', method: 'GET', path: '/v1/openapi.json', summary: 'This document', tag: 'meta', auth: 'tenant', answers: [ok(t.object({ openapi: t.string() }))], errors: [], retry: 'safe' },
  // tenants and tokens
  { id: 'tenants.list', method: 'GET', path: '/v1/tenants', summary: 'List tenants (operator)', tag: 'tenants', auth: 'operator', answers: [ok(t.array(M.Tenant))], errors: [], retry: 'safe' },
  { id: 'tenants.create', method: 'POST', path: '/v1/tenants', summary: 'Provision a tenant and its first token (operator)', tag: 'tenants', auth: 'operator', answers: [ok(M.IssuedToken, 'created', 201)], errors: [], retry: 'never' },
  { id: 'ping', method: 'GET', path: '/v1/tenants/{tenant}/_ping', summary: 'No-op past authentication', tag: 'tenants', auth: 'tenant', params: [T], answers: [ok(t.object({ ok: t.boolean(), tenant: t.string() }))], errors: [], retry: 'safe' },
  { id: 'tokens.list', method: 'GET', path: '/v1/tenants/{tenant}/tokens', summary: 'Live tokens, oldest first', tag: 'tokens', auth: 'tenant', params: [T], answers: [ok(t.array(M.TokenInfo))], errors: [], retry: 'safe' },
  { id: 'tokens.issue', method: 'POST', path: '/v1/tenants/{tenant}/tokens', summary: 'Issue a token (the secret is shown once; a replay under the same Idempotency-Key shows it again to the same caller)', tag: 'tokens', auth: 'tenant', params: [T, IDEM], body: json(M.IssueTokenBody, false), answers: [ok(M.IssuedToken, 'created', 201)], errors: ['validation_failed', 'conflict'], retry: 'keyed' },
  { id: 'tokens.revoke', method: 'DELETE', path: '/v1/tenants/{tenant}/tokens/{token_id}', summary: 'Revoke a token (idempotent)', tag: 'tokens', auth: 'tenant', params: [T, p('token_id'), IDEM], answers: [ok(M.Revoked)], errors: [], retry: 'safe' },
  { id: 'users.list', method: 'GET', path: '/v1/tenants/{tenant}/users', summary: 'Database users and their grants (owner and token managers)', tag: 'security', auth: 'tenant', params: [T], answers: [ok(t.array(M.User))], errors: ['forbidden'], retry: 'safe' },
  { id: 'users.put', method: 'PUT', path: '/v1/tenants/{tenant}/users/{name}', summary: 'Create or replace a user (grants, attributes, manage_tokens; owner)', tag: 'security', auth: 'tenant', params: [T, p('name')], body: json(M.UserBody), answers: [ok(M.User)], errors: ['forbidden', 'validation_failed'], retry: 'safe' },
  { id: 'users.delete', method: 'DELETE', path: '/v1/tenants/{tenant}/users/{name}', summary: "Delete a user: its tokens reach nothing (owner)", tag: 'security', auth: 'tenant', params: [T, p('name')], answers: [ok(M.Deleted)], errors: ['forbidden'], retry: 'safe' },
  { id: 'users.issueToken', method: 'POST', path: '/v1/tenants/{tenant}/users/{name}/tokens', summary: 'Issue a token acting as this user', tag: 'security', auth: 'tenant', params: [T, p('name'), IDEM], body: json(M.IssueTokenBody, false), answers: [ok(M.UserToken, 'created', 201)], errors: ['forbidden', 'not_found', 'validation_failed', 'conflict'], retry: 'keyed' },
  { id: 'policies.list', method: 'GET', path: '/v1/tenants/{tenant}/policies', summary: 'Row-level security policies and masks (owner)', tag: 'security', auth: 'tenant', params: [T], answers: [ok(t.array(M.Policy))], errors: ['forbidden'], retry: 'safe' },
  { id: 'policies.put', method: 'PUT', path: '/v1/tenants/{tenant}/policies/{id}', summary: 'Create or replace a policy (owner)', tag: 'security', auth: 'tenant', params: [T, p('id')], body: json(M.PolicyBody), answers: [ok(M.Policy)], errors: ['forbidden', 'validation_failed'], retry: 'safe' },
  { id: 'policies.delete', method: 'DELETE', path: '/v1/tenants/{tenant}/policies/{id}', summary: 'Delete a policy (owner)', tag: 'security', auth: 'tenant', params: [T, p('id')], answers: [ok(M.Deleted)], errors: ['forbidden'], retry: 'safe' },
  { id: 'usage', method: 'GET', path: '/v1/tenants/{tenant}/usage', summary: 'Credits used and left, costs, add-ons', tag: 'security', auth: 'tenant', params: [T], answers: [ok(M.Usage)], errors: ['forbidden'], retry: 'safe' },
  { id: 'credits.put', method: 'PUT', path: '/v1/tenants/{tenant}/credits', summary: 'Set the tenant credits (operator)', tag: 'security', auth: 'operator', params: [T], body: json(M.CreditsBody), answers: [ok(M.Usage)], errors: ['forbidden', 'validation_failed'], retry: 'safe' },
  { id: 'addons.put', method: 'PUT', path: '/v1/tenants/{tenant}/addons/{name}', summary: 'Switch an add-on: vector, es, ask (operator)', tag: 'security', auth: 'operator', params: [T, p('name')], body: json(M.AddonBody), answers: [ok(M.Addons)], errors: ['forbidden', 'not_found', 'validation_failed'], retry: 'safe' },
  { id: 'tokens.rotate', method: 'POST', path: '/v1/tenants/{tenant}/tokens/{token_id}/rotate', summary: 'Rotate: a new token; the old one lives grace_seconds more', tag: 'tokens', auth: 'tenant', params: [T, p('token_id'), IDEM], body: json(M.RotateTokenBody, false), answers: [ok(M.IssuedToken, 'created', 201)], errors: ['validation_failed', 'conflict'], retry: 'keyed' },
  // schemas
  { id: 'schemas.list', method: 'GET', path: '/v1/tenants/{tenant}/schemas', summary: 'Schema ids', tag: 'schemas', auth: 'tenant', params: [T], answers: [ok(M.SchemaIds)], errors: [], retry: 'safe' },
  { id: 'schemas.put', method: 'POST', path: '/v1/tenants/{tenant}/schemas', summary: 'Register or update a TOML manifest', tag: 'schemas', auth: 'tenant', params: [T, IDEM], body: [{ contentType: 'text/plain', schema: t.string({ description: 'TOML manifest' }), required: true }], answers: [ok(M.SchemaPut)], errors: ['validation_failed', 'invalid_body', 'conflict', 'payload_too_large'], retry: 'keyed' },
  { id: 'schemas.deleteAll', method: 'DELETE', path: '/v1/tenants/{tenant}/schemas', summary: 'Drop every schema (operator)', tag: 'schemas', auth: 'operator', params: [T, IDEM], answers: [ok(M.SchemasDeleted)], errors: [], retry: 'safe' },
  { id: 'schemas.get', method: 'GET', path: '/v1/tenants/{tenant}/schemas/{id}', summary: 'The manifest as registered', tag: 'schemas', auth: 'tenant', params: [T, p('id', 'namespace.table')], answers: [{ status: 200, description: 'TOML', contentType: 'text/plain', schema: t.string() }], errors: ['schema_not_found'], retry: 'safe' },
  { id: 'schemas.delete', method: 'DELETE', path: '/v1/tenants/{tenant}/schemas/{id}', summary: 'Drop a schema with its rows and derived entries', tag: 'schemas', auth: 'tenant', params: [T, p('id'), IDEM], answers: [{ status: 204, description: 'dropped' }], errors: ['schema_not_found', 'fk_violation'], retry: 'safe' },
  // rows
  { id: 'rows.insert', method: 'POST', path: '/v1/tenants/{tenant}/rows/{schema}', summary: 'Upsert a row (expect=insert: insert only)', tag: 'rows', auth: 'tenant', params: [T, p('schema'), q('expect', t.enum(['insert'])), IDEM], body: json(M.Row), answers: [ok(M.RowWritten)], errors: ROWERR, retry: 'keyed' },
  { id: 'rows.batch', method: 'POST', path: '/v1/tenants/{tenant}/rows/{schema}/_batch', summary: 'Many rows: a JSON array in one frame, or streamed NDJSON committed every chunk rows', tag: 'rows', auth: 'tenant', params: [T, p('schema'), q('chunk', t.integer({ minimum: 1, maximum: 10000, default: 1000 })), q('expect', t.enum(['insert'])), IDEM], body: [{ contentType: 'application/json', schema: t.array(M.Row), required: true }, { contentType: 'application/x-ndjson', schema: t.string({ description: 'one JSON row per line' }), required: true }], answers: [ok(t.union([M.BatchWritten, M.NdjsonWritten]))], errors: ROWERR, retry: 'keyed' },
  { id: 'rows.get', method: 'GET', path: '/v1/tenants/{tenant}/rows/{schema}/{pk}', summary: 'Read a row (ETag: its version)', tag: 'rows', auth: 'tenant', params: [T, p('schema'), p('pk', 'key in path form: value, comma list, or JSON array')], answers: [ok(M.Row)], errors: ['row_not_found', 'schema_not_found', 'validation_failed'], retry: 'safe' },
  { id: 'rows.put', method: 'PUT', path: '/v1/tenants/{tenant}/rows/{schema}/{pk}', summary: 'Upsert a row, optionally conditional on If-Match', tag: 'rows', auth: 'tenant', params: [T, p('schema'), p('pk'), h('If-Match', 'a version, a quoted entity-tag, or *'), IDEM], body: json(M.Row), answers: [ok(M.RowWritten)], errors: [...ROWERR, 'write_conflict', 'precondition_failed'], retry: 'safe' },
  { id: 'rows.patch', method: 'PATCH', path: '/v1/tenants/{tenant}/rows/{schema}/{pk}', summary: 'Apply a JSON merge patch (RFC 7396) to a stored row, optionally conditional on If-Match', tag: 'rows', auth: 'tenant', params: [T, p('schema'), p('pk'), h('If-Match', 'a version, a quoted entity-tag, or *'), IDEM], body: [{ contentType: 'application/merge-patch+json', schema: M.Row, required: true }, { contentType: 'application/json', schema: M.Row, required: true }], answers: [ok(M.RowWritten)], errors: [...ROWERR, 'row_not_found', 'write_conflict', 'precondition_failed'], retry: 'safe' },
  { id: 'rows.delete', method: 'DELETE', path: '/v1/tenants/{tenant}/rows/{schema}/{pk}', summary: 'Delete a row with its derived entries (idempotent)', tag: 'rows', auth: 'tenant', params: [T, p('schema'), p('pk'), h('If-Match', 'a version, a quoted entity-tag, or *'), IDEM], answers: [ok(M.Deleted)], errors: ['validation_failed', 'schema_not_found', 'fk_violation', 'write_conflict', 'precondition_failed', 'gateway_timeout'], retry: 'safe' },
  // queries
  { id: 'query', method: 'POST', path: '/v1/tenants/{tenant}/query', summary: 'Run a JSON plan tree', tag: 'query', auth: 'tenant', params: [T, EXPLAIN, QID], body: json(M.Plan), answers: [ok(M.QueryAnswer)], errors: ['validation_failed', 'schema_not_found', 'query_cancelled', 'query_timeout', 'resource_exhausted'], retry: 'safe' },
  { id: 'sql', method: 'POST', path: '/v1/tenants/{tenant}/sql', summary: 'Run SQL (params bind $1…); an Idempotency-Key header is honoured on a one-frame write (apps/api README), and not sent by default', tag: 'query', auth: 'tenant', params: [T, EXPLAIN, QID], body: json(M.SqlBody), answers: [ok(M.SqlAnswer)], errors: ['validation_failed', 'unsupported_sql', 'schema_not_found', 'write_conflict', 'query_cancelled', 'query_timeout', 'resource_exhausted', ...ROWERR], retry: 'never' },
  { id: 'queries.cancel', method: 'POST', path: '/v1/queries/{id}/cancel', summary: 'Cancel a running query', tag: 'query', auth: 'tenant', params: [p('id', 'the X-DB-Query-Id ULID')], answers: [ok(M.Cancelled)], errors: [], retry: 'safe' },
  { id: 'ask', method: 'POST', path: '/v1/tenants/{tenant}/ask', summary: 'Ask in English (compiled to a cached plan)', tag: 'query', auth: 'tenant', params: [T, EXPLAIN], body: json(M.AskBody), answers: [ok(M.AskAnswer)], errors: ['validation_failed', 'ambiguous_graph_direction', 'schema_not_found', 'addon_required', 'quota_exceeded'], retry: 'safe' },
  { id: 'watch', method: 'GET', path: '/v1/tenants/{tenant}/watch', summary: 'Subscribe to the changes of an English query (SSE)', tag: 'watch', auth: 'tenant', params: [T, q('nl', t.string(), 'the question to watch', true), h('Last-Event-ID', 'resume after this event')], answers: [{ status: 200, description: 'text/event-stream, held open', contentType: 'text/event-stream', schema: t.string() }], errors: ['validation_failed', 'resync_required'], retry: 'safe' },
  // vector, full-text, graph
  { id: 'vector.put', method: 'POST', path: '/v1/tenants/{tenant}/vector/{table}/put', summary: 'Upsert an embedding', tag: 'vector', auth: 'tenant', params: [T, p('table')], body: json(M.VectorPut), answers: [ok(M.VectorPutAnswer)], errors: ['validation_failed', 'dim_mismatch', 'metric_mismatch', 'not_found'], retry: 'safe' },
  { id: 'vector.topk', method: 'POST', path: '/v1/tenants/{tenant}/vector/{table}/topk', summary: 'Nearest neighbours, closest first', tag: 'vector', auth: 'tenant', params: [T, p('table')], body: json(M.TopkBody), answers: [ok(t.array(M.VectorMatch))], errors: ['validation_failed', 'dim_mismatch', 'metric_mismatch'], retry: 'safe' },
  { id: 'fts.search', method: 'GET', path: '/v1/tenants/{tenant}/fts/{table}/{field}', summary: 'BM25 search, best first', tag: 'fts', auth: 'tenant', params: [T, p('table'), p('field'), q('q', t.string(), 'the query', true), q('limit', t.integer({ minimum: 1, maximum: 1000, default: 20 })), q('feedback', t.enum(['rm3', 'none']), 'RM3 pseudo-relevance feedback rerank; default none (plain BM25)'), q('proximity', t.enum(['bm25tp', 'none']), 'BM25TP proximity rescoring; default none (plain BM25)'), q('query_stopwords', t.enum(['auto', 'none']), 'drop request phrasing words from the query; default none')], answers: [ok(t.array(M.FtsHit))], errors: ['validation_failed'], retry: 'safe' },
  { id: 'fts.put', method: 'POST', path: '/v1/tenants/{tenant}/fts/{table}/{field}', summary: 'Index a standalone document', tag: 'fts', auth: 'tenant', params: [T, p('table'), p('field')], body: json(M.FtsDoc), answers: [ok(M.FtsPutAnswer)], errors: ['validation_failed'], retry: 'safe' },
  ...(['neighbors', 'bfs', 'reverse', 'path', 'dijkstra'] as const).map((k): RouteDef => ({
    id: `graph.${k}`,
    method: 'GET',
    path: `/v1/tenants/{tenant}/graph/{schema}/${k}`,
    summary: `Graph ${k}`,
    tag: 'graph',
    auth: 'tenant',
    params: [T, p('schema'), ...GRAPH_PARAMS[k]],
    answers: [ok(GRAPH_ANSWERS[k])],
    errors: ['validation_failed', 'schema_not_found', 'not_found'],
    retry: 'safe',
  })),
  // migrations
  { id: 'migrations.list', method: 'GET', path: '/v1/tenants/{tenant}/migrations', summary: 'Migrations, newest first, a page at a time', tag: 'migrations', auth: 'tenant', params: [T, q('limit', t.integer({ minimum: 1, maximum: 1000, default: 50 })), q('after', t.string(), 'the `next` of the previous page')], answers: [ok(M.MigrationPage)], errors: ['validation_failed'], retry: 'safe' },
  { id: 'migrations.submit', method: 'POST', path: '/v1/tenants/{tenant}/migrations', summary: 'Submit an online migration of one table: to a new manifest, or by operations', tag: 'migrations', auth: 'tenant', params: [T, IDEM], body: json(M.MigrationSubmit), answers: [ok(M.Migration, 'submitted', 201)], errors: ['validation_failed', 'invalid_body', 'schema_not_found', 'conflict'], retry: 'keyed' },
  { id: 'migrations.get', method: 'GET', path: '/v1/tenants/{tenant}/migrations/{id}', summary: 'One migration and its progress', tag: 'migrations', auth: 'tenant', params: [T, p('id')], answers: [ok(M.Migration)], errors: ['not_found'], retry: 'safe' },
  { id: 'migrations.cutover', method: 'POST', path: '/v1/tenants/{tenant}/migrations/{id}/cutover', summary: 'Cut over (only from ReadyToCutover)', tag: 'migrations', auth: 'tenant', params: [T, p('id'), IDEM], answers: [ok(M.Migration)], errors: ['not_found', 'conflict'], retry: 'keyed' },
  { id: 'migrations.abort', method: 'POST', path: '/v1/tenants/{tenant}/migrations/{id}/abort', summary: 'Abort (before cutover)', tag: 'migrations', auth: 'tenant', params: [T, p('id'), IDEM], answers: [ok(M.Migration)], errors: ['not_found', 'conflict'], retry: 'keyed' },
  { id: 'migrations.pause', method: 'POST', path: '/v1/tenants/{tenant}/migrations/{id}/pause', summary: 'Pause a backfill (from Backfilling)', tag: 'migrations', auth: 'tenant', params: [T, p('id'), IDEM], answers: [ok(M.Migration)], errors: ['not_found', 'conflict'], retry: 'keyed' },
  { id: 'migrations.resume', method: 'POST', path: '/v1/tenants/{tenant}/migrations/{id}/resume', summary: 'Resume a paused backfill', tag: 'migrations', auth: 'tenant', params: [T, p('id'), IDEM], answers: [ok(M.Migration)], errors: ['not_found', 'conflict'], retry: 'keyed' },
  { id: 'migrations.audit', method: 'GET', path: '/v1/tenants/{tenant}/migrations/_audit', summary: 'Append-only log of state transitions, oldest first, a page at a time', tag: 'migrations', auth: 'tenant', params: [T, q('migration', t.string(), 'one migration only'), q('limit', t.integer({ minimum: 1, maximum: 1000, default: 100 })), q('after', t.string(), 'the `next` of the previous page')], answers: [ok(M.AuditPage)], errors: ['validation_failed', 'not_found'], retry: 'safe' },
  // replication (operational; `tenant` picks the tenant when a node serves several)
  { id: 'replication.lease', method: 'GET', path: '/v1/replication/lease', summary: 'The writer lease, or null when vacant', tag: 'replication', auth: 'tenant', params: [RT], answers: [ok(M.Lease)], errors: ['validation_failed'], retry: 'safe' },
  { id: 'replication.status', method: 'GET', path: '/v1/replication/status', summary: "This node's role, epoch, position and followers (operator)", tag: 'replication', auth: 'operator', params: [RT], answers: [ok(M.ReplicationStatus)], errors: ['validation_failed'], retry: 'safe' },
  { id: 'replication.frames', method: 'GET', path: '/v1/replication/frames', summary: 'The log from a segment on: NDJSON lines of hex-encoded frames (operator)', tag: 'replication', auth: 'operator', params: [RT, q('since_segment', t.integer({ minimum: 0 }), 'first segment', true), q('epoch', t.integer({ minimum: 0 })), q('after_lsn', t.integer({ minimum: 0 })), q('follow', t.enum(['true', 'false'])), q('follower', t.string())], answers: [{ status: 200, description: 'NDJSON', contentType: 'application/x-ndjson', schema: t.string() }], errors: ['validation_failed', 'conflict', 'resync_required'], retry: 'safe' },
  { id: 'replication.checksum', method: 'GET', path: '/v1/replication/checksum', summary: "What this node's copy of the tenant holds, to compare nodes: {lsn, keys, sha256, verify} (operator)", tag: 'replication', auth: 'operator', params: [RT], answers: [ok(t.object({ tenant: t.string(), sha256: t.optional(t.string()), verify: t.optional(t.any()) }))], errors: ['validation_failed'], retry: 'safe' },
  { id: 'replication.snapshot', method: 'GET', path: '/v1/replication/snapshot', summary: "A consistent snapshot of the tenant's store for a follower's bootstrap: NDJSON start / keys / end lines (operator)", tag: 'replication', auth: 'operator', params: [RT], answers: [{ status: 200, description: 'NDJSON', contentType: 'application/x-ndjson', schema: t.string() }], errors: ['validation_failed'], retry: 'safe' },
  { id: 'replication.forgetFollower', method: 'DELETE', path: '/v1/replication/followers/{node}', summary: 'Forget a follower: the log stops keeping frames for it (operator)', tag: 'replication', auth: 'operator', params: [p('node', 'the follower node name'), RT], answers: [ok(t.object({ follower: t.string(), removed: t.boolean() }))], errors: ['validation_failed'], retry: 'safe' },
  { id: 'replication.ack', method: 'POST', path: '/v1/replication/ack', summary: 'A follower reports the LSN it has applied, once (JSON) or as a stream of lines kept open while it tails (NDJSON) (operator)', tag: 'replication', auth: 'operator', params: [RT], body: [...json(M.Ack), { contentType: 'application/x-ndjson', schema: t.string({ description: 'one acknowledgement per line, each counted as it arrives' }), required: true }], answers: [ok(t.any())], errors: ['validation_failed', 'conflict'], retry: 'safe' },
  { id: 'replication.stepDown', method: 'POST', path: '/v1/replication/step-down', summary: 'The holder gives its lease up (operator)', tag: 'replication', auth: 'operator', params: [RT], answers: [ok(t.object({ stepped_down: t.boolean(), lease: t.any() }))], errors: ['validation_failed', 'conflict'], retry: 'never' },
  { id: 'replication.settings', method: 'GET', path: '/v1/replication/settings', summary: "The tenant's sync settings: stored in its log, the node defaults, and those in force (operator)", tag: 'replication', auth: 'operator', params: [RT], answers: [ok(M.SyncSettings)], errors: ['validation_failed'], retry: 'safe' },
  { id: 'replication.putSettings', method: 'PUT', path: '/v1/replication/settings', summary: "Set the tenant's sync window and strictness, written in its log (operator; on the holder)", tag: 'replication', auth: 'operator', params: [RT], body: json(M.SyncSettingsChange), answers: [ok(M.SyncSettings)], errors: ['validation_failed', 'service_unavailable', 'gateway_timeout'], retry: 'safe' },
  { id: 'replication.handOver', method: 'POST', path: '/v1/replication/hand-over', summary: 'Hand the lease to a named node once it has caught up (operator)', tag: 'replication', auth: 'operator', params: [RT], body: json(M.HandOver), answers: [ok(t.any())], errors: ['validation_failed', 'conflict'], retry: 'never' },
  // the ES 7.x surface: a pass-through prefix
  { id: 'es', method: 'POST', path: '/v1/tenants/{tenant}/es/{path}', summary: 'Elasticsearch 7.x REST surface (reports 7.14.2): any ES 7 path under this prefix, with the ES methods and bodies', tag: 'es', auth: 'tenant', params: [T, p('path', 'the ES path, e.g. my-index/_search')], answers: [ok(t.any({ description: 'the ES 7.x answer' })), ok(t.any({ description: 'the ES 7.x answer (an index or document created)' }), 'created', 201)], errors: [], retry: 'never', passthrough: true },
];

export function routeById(id: string): RouteDef {
  const r = ROUTES.find((x) => x.id === id);
  if (!r) throw new Error(`no route ${id}`);
  return r;
}
