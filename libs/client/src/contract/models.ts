/**
 * The bodies and answers of every route, as typed schemas (see ../schema.ts). The OpenAPI
 * document (served at GET /v1/openapi.json) and the client's types both come from here.
 */
import { t, type Static } from '../schema';

const ms = (description: string) => t.integer({ description: `${description} (ms since the Unix epoch)` });

export const Row = t.record(t.any(), { title: 'Row', description: 'A row: column name → value.' });
export type Row = Static<typeof Row>;

export const ErrorBody = t.object(
  {
    error: t.string({ description: 'Stable error code (spec 7.1); switch on this, not on the message.' }),
    message: t.string(),
    request_id: t.string({ description: 'Equal to X-DB-Request-Id; quote it in support tickets.' }),
    retry: t.boolean({ description: 'Whether an automatic retry is advised.' }),
  },
  { title: 'Error', description: 'Every non-2xx answer. Route-specific details (current_version, field, index, line, …) are extra keys.' },
);
export type ErrorBody = Static<typeof ErrorBody>;

export const Health = t.object({ status: t.string() }, { title: 'Health' });
export const Ready = t.object(
  {
    status: t.enum(['ok', 'degraded']),
    pressure: t.nullable(t.string({ description: 'comma list of disk_full, queue_full, closed, not_lease_holder, stale, loading (stale: past the replication staleness bound; loading: a tenant store still loading; both make require=read 503)' })),
    writable: t.optional(t.boolean()),
    readable: t.optional(t.boolean()),
  },
  { title: 'Ready' },
);

export const Tenant = t.object({ tenant: t.string(), created: ms('created') }, { title: 'Tenant' });
export const TokenInfo = t.object({ token_id: t.string(), created: ms('issued'), expires_at: t.nullable(ms('expiry')) }, { title: 'TokenInfo' });
export const IssuedToken = t.object(
  { tenant: t.string(), token_id: t.string(), token: t.string({ description: 'the secret, shown only in this answer' }), created: ms('issued'), expires_at: t.nullable(ms('expiry')) },
  { title: 'IssuedToken' },
);
export type IssuedToken = Static<typeof IssuedToken>;
export const UserToken = t.object(
  { tenant: t.string(), token_id: t.string(), token: t.string({ description: 'the secret, shown only in this answer' }), created: ms('issued'), expires_at: t.nullable(ms('expiry')), user: t.string({ description: 'the user it acts as' }) },
  { title: 'UserToken' },
);
export const IssueTokenBody = t.object({ ttl_seconds: t.optional(t.nullable(t.integer({ minimum: 1, maximum: 315360000 }))) }, { closed: true });
export const RotateTokenBody = t.object(
  {
    grace_seconds: t.optional(t.integer({ minimum: 0, maximum: 2592000, default: 300 })),
    ttl_seconds: t.optional(t.nullable(t.integer({ minimum: 1, maximum: 315360000 }))),
  },
  { closed: true },
);
export const Revoked = t.object({ revoked: t.boolean() });

// database users, policies, credits (apps/api/README.md "Users, grants…", "Credits and add-ons")
const Privilege = t.enum(['read', 'insert', 'update', 'delete', 'manage']);
export const UserBody = t.object(
  {
    grants: t.optional(t.record(t.array(Privilege), { description: 'schema id (or *) → privileges' })),
    attributes: t.optional(t.record(t.string(), { description: "read by user_attr('k') in policies" })),
    manage_tokens: t.optional(t.boolean()),
  },
  { title: 'UserBody' },
);
export const User = t.object(
  { name: t.string(), grants: t.record(t.array(Privilege)), attributes: t.record(t.string()), manage_tokens: t.boolean(), created: ms('created') },
  { title: 'User' },
);
export const Mask = t.object({ column: t.string(), kind: t.enum(['null', 'redact', 'hash', 'partial', 'expr']), n: t.optional(t.integer()), expr: t.optional(t.string()) }, { title: 'Mask' });
export const PolicyBody = t.object(
  {
    schema: t.string(),
    users: t.optional(t.array(t.string(), { description: 'user names, or * (default)' })),
    using: t.optional(t.string({ description: 'SQL boolean over the row: which rows the users see' })),
    check: t.optional(t.string({ description: 'SQL boolean every written row must meet' })),
    mask: t.optional(Mask),
  },
  { title: 'PolicyBody' },
);
export const Policy = t.object(
  { id: t.string(), schema: t.string(), users: t.array(t.string()), using: t.optional(t.string()), check: t.optional(t.string()), mask: t.optional(Mask) },
  { title: 'Policy' },
);
export const Addons = t.record(t.boolean(), { title: 'Addons', description: 'add-on (vector, es, ask) → enabled' });
export const Usage = t.object(
  {
    credits: t.nullable(t.integer({ description: 'the credit granted; null: unlimited' })),
    used: t.integer(),
    remaining: t.nullable(t.integer()),
    by_class: t.record(t.integer()),
    costs: t.record(t.integer(), { description: 'credits per request of each class' }),
    addons: Addons,
  },
  { title: 'Usage' },
);
export const CreditsBody = t.object({ credits: t.nullable(t.integer({ minimum: 0 })), reset: t.optional(t.boolean()) }, { title: 'CreditsBody' });
export const AddonBody = t.object({ enabled: t.boolean() }, { title: 'AddonBody' });

export const SchemaIds = t.array(t.string({ description: 'namespace.table' }));
export const SchemaPut = t.object({ id: t.string(), tenant: t.string(), created: t.boolean() }, { title: 'SchemaPut' });
export const SchemasDeleted = t.object({ deleted: t.integer(), ids: t.array(t.string()) });

export const RowWritten = t.object(
  { schema: t.string(), pk: t.string({ description: 'the key in path form, ready for a URL' }), version: t.integer(), created: t.boolean() },
  { title: 'RowWritten' },
);
export type RowWritten = Static<typeof RowWritten>;
export const BatchWritten = t.object(
  { schema: t.string(), count: t.integer(), created: t.integer({ description: 'rows that did not exist before' }), results: t.array(t.object({ pk: t.string(), version: t.integer(), created: t.boolean() })) },
  { title: 'BatchWritten' },
);
export type BatchWritten = Static<typeof BatchWritten>;
export const NdjsonWritten = t.object({ schema: t.string(), committed: t.integer(), chunks: t.integer() }, { title: 'NdjsonWritten' });
export type NdjsonWritten = Static<typeof NdjsonWritten>;
export const Deleted = t.object({ deleted: t.boolean() });

export const Plan = t.object({ op: t.string() }, { title: 'Plan', description: 'A JSON plan tree (libs/plan/README.md).' });
export const Explain = t.record(t.any(), { title: 'Explain' });
export const QueryAnswer = t.union([t.array(Row), t.object({ rows: t.array(Row), explain: Explain })]);
export const SqlBody = t.object(
  {
    sql: t.string(),
    params: t.optional(t.array(t.any(), { description: 'bound to $1, $2, …' })),
    format: t.optional(t.enum(['objects', 'arrays'])),
  },
  { title: 'SqlRequest' },
);
export const SqlAnswer = t.object(
  {
    kind: t.enum(['select', 'insert', 'update', 'delete', 'ddl', 'transaction']),
    columns: t.optional(t.array(t.object({ name: t.string(), type: t.nullable(t.string()) }))),
    rows: t.optional(t.array(t.any())),
    schema: t.optional(t.string()),
    count: t.optional(t.integer()),
    pk: t.optional(t.string()),
    pks: t.optional(t.array(t.string())),
    explain: t.optional(Explain),
  },
  { title: 'SqlResult' },
);
export const Cancelled = t.object({ cancelled: t.boolean() });

export const AskBody = t.object(
  {
    nl: t.string({ description: 'the English question' }),
    schemas: t.optional(t.array(t.string())),
    show_plan: t.optional(t.boolean()),
    direction: t.optional(t.enum(['forward', 'reverse'])),
  },
  { title: 'AskRequest' },
);
export const AskAnswer = t.object(
  {
    rows: t.array(Row),
    cache: t.enum(['hit', 'miss']),
    plan: t.optional(Plan),
    explain: t.optional(Explain),
    interpretation: t.optional(t.string()),
  },
  { title: 'AskResult' },
);

export const VectorPut = t.object(
  { id: t.string(), embedding: t.array(t.number()), metadata: t.optional(t.record(t.any())), metric: t.optional(t.enum(['cosine', 'dot', 'l2', 'manhattan'])) },
  { title: 'VectorEntry' },
);
export const VectorPutAnswer = t.object({ id: t.string(), table: t.string(), created: t.boolean(), lsn: t.any() });
export const TopkBody = t.object(
  {
    vector: t.array(t.number()),
    k: t.optional(t.integer({ minimum: 1, maximum: 1000, default: 10 })),
    mode: t.optional(t.enum(['fast', 'high_recall'])),
    filter: t.optional(t.record(t.any(), { description: 'metadata equalities' })),
    metric: t.optional(t.enum(['cosine', 'dot', 'l2', 'manhattan'])),
  },
  { title: 'TopkRequest' },
);
export const VectorMatch = t.object({ id: t.string(), distance: t.number(), metadata: t.optional(t.any()) }, { title: 'VectorMatch' });

export const FtsDoc = t.object({ doc_id: t.string(), text: t.string() }, { title: 'FtsDocument' });
export const FtsPutAnswer = t.object({ doc_id: t.string(), created: t.optional(t.boolean()), lsn: t.any() });
export const FtsHit = t.object({ doc_id: t.string(), score: t.number() }, { title: 'FtsHit' });

export const BfsVisit = t.object({ node: t.string(), depth: t.integer() }, { title: 'BfsVisit' });
export const PathAnswer = t.object({ reachable: t.boolean(), path: t.array(t.string()) });
export const DijkstraAnswer = t.object({ path: t.array(t.string()), total_weight: t.nullable(t.number()) });

export const MIGRATION_STATES = ['Pending', 'Backfilling', 'Paused', 'ReadyToCutover', 'Completed', 'Aborted', 'Failed'] as const;
export const Throttle = t.object(
  {
    max_rows_per_s: t.integer({ minimum: 1, default: 50000, description: 'ceiling on copied rows per second' }),
    batch_size: t.integer({ minimum: 1, default: 1000, description: 'the most rows in one backfill frame' }),
    slice_ms: t.optional(t.number({ minimum: 0.5, maximum: 1000, default: 3, description: 'time budget of one backfill frame (ms): a frame holds the rows that fit in it at the measured cost per row' })),
  },
  { title: 'Throttle' },
);
export const Migration = t.object(
  {
    id: t.string({ description: 'ULID' }),
    schema: t.string({ description: 'the migrated schema (namespace.table)' }),
    state: t.enum(MIGRATION_STATES),
    plan: t.enum(['rewrite', 'no_rewrite']),
    steps: t.array(t.string()),
    operations: t.nullable(t.array(t.record(t.any()))),
    auto_cutover: t.boolean(),
    throttle: Throttle,
    progress: t.object({ done: t.integer(), total: t.integer(), rate: t.number({ description: 'rows/s' }), eta_s: t.nullable(t.number({ description: 'seconds left at that rate' })) }),
    created_by: t.string({ description: 'the token id, `operator`, or `system`' }),
    created_at: t.integer({ description: 'UNIX seconds' }),
    updated_at: t.integer({ description: 'UNIX seconds' }),
    completed_at: t.nullable(t.integer({ description: 'UNIX seconds' })),
    reason: t.nullable(t.string({ description: 'why it failed' })),
    offending_keys: t.array(t.array(t.any()), { description: 'Failed: the first primary keys the new shape refuses (up to 10)' }),
    cleaned: t.boolean({ description: "whether the old shape's leftovers are removed" }),
  },
  { title: 'Migration' },
);
export type Migration = Static<typeof Migration>;
export const MigrationPage = t.object({ migrations: t.array(Migration), next: t.nullable(t.string({ description: 'the `after` of the next page' })) }, { title: 'MigrationPage' });
export const MigrationSubmit = t.object(
  {
    schema: t.string({ description: 'the schema to migrate (namespace.table)' }),
    manifest: t.optional(t.string({ description: 'the target manifest (TOML); give this or operations' })),
    operations: t.optional(t.array(t.record(t.any()), { description: 'operations on the current manifest (libs/migrations/README.md)' })),
    auto_cutover: t.optional(t.boolean({ default: false })),
    throttle: t.optional(
      t.object({ max_rows_per_s: t.optional(t.integer({ minimum: 1 })), batch_size: t.optional(t.integer({ minimum: 1 })), slice_ms: t.optional(t.number({ minimum: 0.5, maximum: 1000 })) }, { closed: true }),
    ),
  },
  { title: 'MigrationSubmit' },
);
export const AuditEntry = t.object(
  {
    id: t.string({ description: 'position in the log (sorts in order)' }),
    migration: t.string(),
    action: t.string({ description: 'submit, start, pause, resume, ready, cutover, auto-cutover, abort, failure' }),
    from: t.nullable(t.string()),
    to: t.string(),
    actor: t.string({ description: 'the token id, `operator`, or `system`' }),
    at: t.integer({ description: 'UNIX seconds' }),
  },
  { title: 'AuditEntry' },
);
export const AuditPage = t.object({ entries: t.array(AuditEntry), next: t.nullable(t.string()) }, { title: 'AuditPage' });

export const Lease = t.nullable(
  t.object(
    {
      tenant: t.optional(t.string()),
      holder: t.string({ description: 'the node holding the writer lease' }),
      epoch: t.integer({ description: 'the fencing epoch stamped in every frame' }),
      advertise_url: t.optional(t.string()),
      ttl_ms: t.optional(t.integer()),
      acquired_at: t.optional(t.integer()),
      expires_at: t.optional(t.integer()),
      handing_over_to: t.optional(t.nullable(t.string())),
    },
    { title: 'Lease' },
  ),
);
export const ReplicationStatus = t.object(
  { tenant: t.string(), node: t.optional(t.nullable(t.string())), role: t.string({ description: 'standalone, leader, follower, …' }), epoch: t.integer(), last_lsn: t.any() },
  { title: 'ReplicationStatus' },
);
export const Ack = t.object({ follower: t.string(), lsn: t.integer({ minimum: 0 }), epoch: t.optional(t.integer({ minimum: 0 })) }, { title: 'ReplicationAck' });
export const HandOver = t.object({ node: t.string() }, { title: 'HandOver' });
const syncFields = (d: string) => ({
  sync_followers: t.nullable(t.integer({ minimum: 0, maximum: 64, description: `follower acknowledgements a write waits for${d}` })),
  sync_ms: t.nullable(t.integer({ minimum: 1, maximum: 600000, description: `how long a write waits for them, ms${d}` })),
  strict: t.nullable(t.boolean({ description: `past the window: 504 gateway_timeout (true) or 2xx with X-DB-Replication: degraded (false)${d}` })),
});
export const SyncSettingsChange = t.object(
  {
    sync_followers: t.optional(syncFields('').sync_followers),
    sync_ms: t.optional(syncFields('').sync_ms),
    strict: t.optional(syncFields('').strict),
  },
  { title: 'SyncSettingsChange', description: 'absent: unchanged; null: back to the node default (DB_REPLICATION_SYNC_*)' },
);
export const SyncSettings = t.object(
  {
    tenant: t.string(),
    stored: t.object(syncFields('; null: the node default'), { title: 'StoredSyncSettings' }),
    node_defaults: t.any(),
    effective: t.any(),
    replicated: t.boolean({ description: 'false on a node without DB_ETCD_ENDPOINTS (the settings are kept, and apply once it replicates)' }),
  },
  { title: 'SyncSettings' },
);
export const FrameLine = t.object({ type: t.string() }, { title: 'FrameLine', description: 'one NDJSON line of the frames stream (a hex-encoded frame, or a control line)' });
