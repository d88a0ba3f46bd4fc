import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { isUlid } from '@mmdb/core';
import { defaultTableCacheBytes } from '@mmdb/sql';

/** Everything the server reads from its environment, validated once at start. */
export interface AppConfig {
  readonly dataDir: string;
  readonly host: string;
  readonly port: number;
  readonly tlsCert?: string;
  readonly tlsKey?: string;
  /** Plain HTTP, for running behind a TLS-terminating proxy only (DB_INSECURE_HTTP=1). */
  readonly insecureHttp: boolean;
  readonly operatorToken?: string;
  readonly bootstrapTenant?: string;
  readonly bootstrapToken?: string;
  readonly idempotencyTtlMs: number;
  /** JSON / text body cap (spec §8). */
  readonly bodyLimit: number;
  /** NDJSON `_batch`: longest accepted line, and the most bytes one stream may send. */
  readonly ndjsonLineMax: number;
  readonly ndjsonStreamMax: number;
  /** Commits in flight per tenant before writes answer 503. */
  readonly commitQueueMax: number;
  /** Free bytes under the data directory below which writes answer 503 and /ready reports disk pressure. */
  readonly minFreeBytes: number;
  /** Each tenant store's LevelDB memtable, in bytes (a store holds up to two). */
  readonly writeBufferBytes: number;
  /** Each tenant store's LevelDB table file size, in bytes (LevelDB's 2 MiB by default). */
  readonly tableFileBytes: number;
  /** fsync each commit group (false only for throwaway test runs). */
  readonly sync: boolean;
  /**
   * DB_DEFER_BACKFILL_SYNC: a migration's backfill frames are written without their own fsync
   * and synced by the writer a few at a time, or by a foreground commit's synced batch
   * (libs/storage DESIGN.md "Deferred sync"); `0` writes each with its own fsync.
   */
  readonly deferBackfillSync: boolean;
  /**
   * DB_BACKFILL_PIECE_US: a migration's backfill frame is prepared in pieces of this many µs,
   * the event loop let go between them, and cut short there for a foreground write (libs/storage
   * DESIGN.md "Background preparation in pieces"); `0` prepares each frame whole.
   */
  readonly backfillPieceUs: number;
  /**
   * DB_BACKFILL_HOLD_MS: a backfill frame is not prepared while a foreground write is still being
   * written and answered (for at most this many ms per write; libs/storage DESIGN.md "Hold for the
   * foreground"); `0` (the default) prepares it meanwhile.
   */
  readonly backfillHoldMs: number;
  /** Log retention: a tenant store checkpoints and drops old log segments after this many frames (0: by time only). */
  readonly checkpointFrames: number;
  /** … or after this many ms with new frames (0: by frames only). */
  readonly checkpointMs: number;
  /** Frames per log segment, the unit retention drops. */
  readonly logSegmentFrames: number;
  readonly logLevel: 'silent' | 'error' | 'warn' | 'info' | 'debug';
  /** Replication (apps/api/README.md "Replication"): absent without DB_ETCD_ENDPOINTS (a single node, no lease). */
  readonly replication?: ReplicationConfig;
  /** Sustained requests per second per tenant token (0: no rate limit). */
  readonly rateLimitRps: number;
  /** Requests one tenant token may send at once above the sustained rate (the bucket's size). */
  readonly rateLimitBurst: number;
  /** Query limits of every tenant (DB_QUERY_TIMEOUT_MS, DB_QUERY_MAX_ROWS, DB_QUERY_MAX_NODES). */
  readonly queryLimits: QueryLimitsConfig;
  /** Per-tenant overrides (DB_TENANT_QUERY_LIMITS: {"<tenant>": {"timeout_ms", "max_rows", "max_nodes", "table_cache_bytes"}}). */
  readonly tenantQueryLimits: Readonly<Record<string, Partial<QueryLimitsConfig>>>;
  /** DB_TABLE_CACHE_BYTES: the SQL table cache's byte budget for the whole process (every tenant's cache draws from it). */
  readonly tableCacheBytes: number;
  /** Watch streams: open subscribers per tenant before 429 (DB_WATCH_MAX). */
  readonly watchMax: number;
  /** Watch streams: commits landing within this many ms are coalesced into one event (DB_WATCH_COALESCE_MS). */
  readonly watchCoalesceMs: number;
  /** Watch streams: a comment (or a position event) every this many ms (DB_WATCH_HEARTBEAT_MS). */
  readonly watchHeartbeatMs: number;
  /** Watch streams: the `retry:` reconnect hint sent to clients, in ms (DB_WATCH_RETRY_MS). */
  readonly watchRetryMs: number;
  /** Watch streams: live frames buffered per subscriber before it reads the log instead (DB_WATCH_BUFFER_FRAMES). */
  readonly watchBufferFrames: number;
  /** Watch streams: most frames a subscriber may be behind (and the log held for it) before `reset` (DB_WATCH_MAX_LAG_FRAMES). */
  readonly watchMaxLagFrames: number;
  /** Watch fan-out: the longest stretch of its work between two turns of the event loop while requests are in flight or recent, in µs (DB_WATCH_BUSY_SLICE_US). */
  readonly watchBusySliceUs: number;
  /** POST /ask: intent-cache entries per tenant; how stale the value lexicon may be after writes (ms). */
  readonly nlCacheSize: number;
  readonly nlLexiconRefreshMs: number;
  /** The optional language model (OpenAI-compatible chat completions); off when the URL is unset. */
  readonly nlModel?: { readonly url: string; readonly model: string; readonly key?: string; readonly timeoutMs: number };
  /**
   * DB_MIGRATION_CUTOVER: `switch` (default: a rewrite migration's shadow builds every derived
   * entry and the cutover frame switches keys) or `rewrite` (the shadow holds rows only and the
   * cutover frame rewrites every row of a table with full-text, vector or relation sections, as
   * earlier versions did): kept to measure one against the other (tools/bench/migrations).
   */
  readonly migrationCutover: 'switch' | 'rewrite';
  /**
   * DB_MIGRATION_IN_PLACE: `on` (default: a migration that only adds or drops indexes, full-text
   * fields or relations builds them under the table's keys, no row copied) or `off` (such a
   * migration copies the rows into a shadow like any other): kept to measure one against the
   * other (tools/bench/migrations/derived.js --change index).
   */
  readonly migrationInPlace: boolean;
}

/** A query's time, memory (rows held) and graph (nodes visited) budgets; see docs in apps/api/README.md. */
export interface QueryLimitsConfig {
  readonly timeoutMs: number;
  readonly maxRows: number;
  readonly maxNodes: number;
  /** The tenant's table-cache cap in estimated bytes (absent: the process pool's budget alone). */
  readonly tableCacheBytes?: number;
}

const LIMIT_KEYS: Record<string, keyof QueryLimitsConfig> = { timeout_ms: 'timeoutMs', max_rows: 'maxRows', max_nodes: 'maxNodes', table_cache_bytes: 'tableCacheBytes' };

function tenantLimits(raw: string | undefined): Record<string, Partial<QueryLimitsConfig>> {
  if (!raw) return {};
  let v: unknown;
  try { v = JSON.parse(raw); } catch { throw new ConfigError('DB_TENANT_QUERY_LIMITS must be JSON: {"<tenant>": {"timeout_ms": n, "max_rows": n, "max_nodes": n, "table_cache_bytes": n}}'); }
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new ConfigError('DB_TENANT_QUERY_LIMITS must be a JSON object keyed by tenant id');
  const out: Record<string, Partial<QueryLimitsConfig>> = {};
  for (const [tenant, l] of Object.entries(v as Record<string, unknown>)) {
    if (!l || typeof l !== 'object' || Array.isArray(l)) throw new ConfigError(`DB_TENANT_QUERY_LIMITS.${tenant} must be an object`);
    const o: Partial<Record<keyof QueryLimitsConfig, number>> = {};
    for (const [k, n] of Object.entries(l as Record<string, unknown>)) {
      const key = LIMIT_KEYS[k];
      if (!key) throw new ConfigError(`DB_TENANT_QUERY_LIMITS.${tenant}.${k}: unknown limit (one of ${Object.keys(LIMIT_KEYS).join(', ')})`);
      if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 1) throw new ConfigError(`DB_TENANT_QUERY_LIMITS.${tenant}.${k} must be a positive integer`);
      o[key] = n;
    }
    out[tenant.toUpperCase()] = o;
  }
  return out;
}

/** Active-passive replication under an etcd lease (one lease per tenant). */
export interface ReplicationConfig {
  /** DB_ETCD_ENDPOINTS: etcd client URLs. */
  readonly etcdEndpoints: readonly string[];
  /** DB_NODE_NAME: this node's name in leases and positions (default: host name and port). */
  readonly nodeName: string;
  /** DB_ADVERTISE_URL: the HTTPS base URL peers and clients reach this node at (default: the listening URL). */
  readonly advertiseUrl?: string;
  /** DB_LEASE_TTL_MS (default 5000). */
  readonly leaseTtlMs: number;
  /** DB_REPLICATION_SYNC_FOLLOWERS: follower acknowledgements a write waits for (default 0). */
  readonly syncFollowers: number;
  /** DB_REPLICATION_SYNC_MS: how long a write waits for them (default 1000). */
  readonly syncMs: number;
  /** DB_REPLICATION_SYNC_STRICT: past the window answer 504 gateway_timeout instead of 2xx + `X-DB-Replication: degraded`. */
  readonly syncStrict: boolean;
  /**
   * DB_REPLICATION_MAX_STALE_MS: a node that does not hold the lease and has not heard from a
   * holder for longer refuses the tenant's routes with 503 (default 3 × DB_LEASE_TTL_MS; at
   * least 1500, above the holder's idle heartbeat of 1 s).
   */
  readonly maxStaleMs: number;
  /** DB_REPLICATION_CA_FILE: PEM CA (or certificates) followers trust for the holder's HTTPS; unset: pin the certificate the holder publishes in etcd. */
  readonly caFile?: string;
}

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, def: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be a non-negative integer, got "${raw}"`);
  const n = Number(raw.trim());
  if (n < min || n > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}

function bool(env: Env, name: string, def: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new ConfigError(`${name} must be a boolean (1/0, true/false), got "${raw}"`);
}

function replicationConfig(env: Env, port: number): ReplicationConfig | undefined {
  const raw = (env.DB_ETCD_ENDPOINTS ?? '').trim();
  if (!raw) return undefined;
  const etcdEndpoints = raw.split(',').map((s) => s.trim()).filter(Boolean);
  for (const e of etcdEndpoints) {
    if (!/^https?:\/\/[^\s/]+(:\d+)?\/?$/.test(e)) throw new ConfigError(`DB_ETCD_ENDPOINTS must be comma-separated http(s)://host:port URLs, got "${e}"`);
  }
  if (!env.DB_OPERATOR_TOKEN) throw new ConfigError('DB_ETCD_ENDPOINTS needs DB_OPERATOR_TOKEN: nodes authenticate to each other with it');
  const nodeName = env.DB_NODE_NAME || `${os.hostname()}-${port}`;
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(nodeName)) throw new ConfigError('DB_NODE_NAME must be 1-64 characters of [A-Za-z0-9._-]');
  const advertiseUrl = env.DB_ADVERTISE_URL || undefined;
  if (advertiseUrl !== undefined && !/^https?:\/\/[^\s/]+(:\d+)?\/?$/.test(advertiseUrl)) throw new ConfigError('DB_ADVERTISE_URL must be an http(s)://host:port URL');
  const caFile = env.DB_REPLICATION_CA_FILE || undefined;
  if (caFile !== undefined && !fs.existsSync(caFile)) throw new ConfigError(`DB_REPLICATION_CA_FILE: no file at ${caFile}`);
  const leaseTtlMs = int(env, 'DB_LEASE_TTL_MS', 5000, 500, 600_000);
  return {
    etcdEndpoints,
    nodeName,
    advertiseUrl: advertiseUrl?.replace(/\/$/, ''),
    leaseTtlMs,
    syncFollowers: int(env, 'DB_REPLICATION_SYNC_FOLLOWERS', 0, 0, 64),
    syncMs: int(env, 'DB_REPLICATION_SYNC_MS', 1000, 1, 600_000),
    syncStrict: bool(env, 'DB_REPLICATION_SYNC_STRICT', false),
    maxStaleMs: int(env, 'DB_REPLICATION_MAX_STALE_MS', 3 * leaseTtlMs, 1500, 86_400_000),
    caFile,
  };
}

const TOKEN_RE = /^[A-Za-z0-9._~+/=-]{16,512}$/;

/** Reads and validates the configuration; throws ConfigError naming the variable. */
export function loadConfig(env: Env = process.env): AppConfig {
  const dataDir = path.resolve(env.DB_DATA_DIR || './data');
  const host = env.DB_HOST || '127.0.0.1';
  const port = int(env, 'DB_PORT', 8443, 0, 65535);
  const tlsCert = env.DB_TLS_CERT || undefined;
  const tlsKey = env.DB_TLS_KEY || undefined;
  if (!!tlsCert !== !!tlsKey) throw new ConfigError('DB_TLS_CERT and DB_TLS_KEY must be set together');
  const insecureHttp = bool(env, 'DB_INSECURE_HTTP', false);
  const operatorToken = env.DB_OPERATOR_TOKEN || undefined;
  if (operatorToken !== undefined && !TOKEN_RE.test(operatorToken)) {
    throw new ConfigError('DB_OPERATOR_TOKEN must be 16-512 characters of [A-Za-z0-9._~+/=-]');
  }
  const bootstrapTenant = env.DB_BOOTSTRAP_TENANT || undefined;
  const bootstrapToken = env.DB_BOOTSTRAP_TOKEN || undefined;
  if (!!bootstrapTenant !== !!bootstrapToken) throw new ConfigError('DB_BOOTSTRAP_TENANT and DB_BOOTSTRAP_TOKEN must be set together');
  if (bootstrapTenant !== undefined && !isUlid(bootstrapTenant)) throw new ConfigError('DB_BOOTSTRAP_TENANT must be a ULID');
  if (bootstrapToken !== undefined && !TOKEN_RE.test(bootstrapToken)) {
    throw new ConfigError('DB_BOOTSTRAP_TOKEN must be 16-512 characters of [A-Za-z0-9._~+/=-]');
  }
  if (operatorToken !== undefined && operatorToken === bootstrapToken) throw new ConfigError('DB_OPERATOR_TOKEN must differ from DB_BOOTSTRAP_TOKEN');
  const rateLimitRps = int(env, 'DB_RATE_LIMIT_RPS', 20_000, 0, 10_000_000);
  // BURST defaults to 40,000, or to 2 × DB_RATE_LIMIT_RPS when only that is set.
  const rpsSet = env.DB_RATE_LIMIT_RPS !== undefined && env.DB_RATE_LIMIT_RPS !== '';
  const rateLimitBurst = int(env, 'DB_RATE_LIMIT_BURST', rpsSet ? Math.max(1, 2 * rateLimitRps) : 40_000, 1, 100_000_000);
  const nlModelUrl = env.DB_NL_MODEL_URL || undefined;
  if (nlModelUrl !== undefined && !/^https?:\/\/\S+$/.test(nlModelUrl)) throw new ConfigError('DB_NL_MODEL_URL must be an http(s) URL (the base of /chat/completions)');
  const nlModel = nlModelUrl
    ? { url: nlModelUrl, model: env.DB_NL_MODEL || 'default', key: env.DB_NL_MODEL_KEY || undefined, timeoutMs: int(env, 'DB_NL_MODEL_TIMEOUT_MS', 10_000, 100, 600_000) }
    : undefined;
  const logLevel = (env.DB_LOG_LEVEL || 'info') as AppConfig['logLevel'];
  if (!['silent', 'error', 'warn', 'info', 'debug'].includes(logLevel)) throw new ConfigError(`DB_LOG_LEVEL must be silent|error|warn|info|debug`);
  return {
    dataDir,
    host,
    port,
    tlsCert,
    tlsKey,
    insecureHttp,
    operatorToken,
    bootstrapTenant: bootstrapTenant?.toUpperCase(),
    bootstrapToken,
    idempotencyTtlMs: int(env, 'DB_IDEMPOTENCY_TTL_MS', 24 * 3600 * 1000, 1000),
    bodyLimit: 8 * 1024 * 1024,
    ndjsonLineMax: int(env, 'DB_NDJSON_LINE_MAX', 1024 * 1024, 64),
    ndjsonStreamMax: int(env, 'DB_NDJSON_STREAM_MAX', 1024 * 1024 * 1024, 1024),
    commitQueueMax: int(env, 'DB_COMMIT_QUEUE_MAX', 4096, 1),
    minFreeBytes: int(env, 'DB_MIN_FREE_BYTES', 64 * 1024 * 1024, 0),
    writeBufferBytes: int(env, 'DB_WRITE_BUFFER_BYTES', 16 * 1024 * 1024, 1024 * 1024, 1024 * 1024 * 1024),
    tableFileBytes: int(env, 'DB_TABLE_FILE_BYTES', 2 * 1024 * 1024, 1024 * 1024, 1024 * 1024 * 1024),
    sync: bool(env, 'DB_SYNC', true),
    deferBackfillSync: bool(env, 'DB_DEFER_BACKFILL_SYNC', true),
    backfillPieceUs: int(env, 'DB_BACKFILL_PIECE_US', 500, 0, 1_000_000),
    backfillHoldMs: int(env, 'DB_BACKFILL_HOLD_MS', 0, 0, 10_000),
    checkpointFrames: int(env, 'DB_CHECKPOINT_FRAMES', 50_000, 0),
    checkpointMs: int(env, 'DB_CHECKPOINT_MS', 60 * 60_000, 0),
    logSegmentFrames: int(env, 'DB_LOG_SEGMENT_FRAMES', 4096, 16, 1 << 24),
    logLevel,
    replication: replicationConfig(env, port),
    rateLimitRps,
    rateLimitBurst,
    queryLimits: {
      timeoutMs: int(env, 'DB_QUERY_TIMEOUT_MS', 30_000, 1),
      maxRows: int(env, 'DB_QUERY_MAX_ROWS', 2_000_000, 1),
      maxNodes: int(env, 'DB_QUERY_MAX_NODES', 1_000_000, 1),
    },
    tenantQueryLimits: tenantLimits(env.DB_TENANT_QUERY_LIMITS),
    tableCacheBytes: int(env, 'DB_TABLE_CACHE_BYTES', defaultTableCacheBytes(), 0),
    watchMax: int(env, 'DB_WATCH_MAX', 1000, 0, 1_000_000),
    watchCoalesceMs: int(env, 'DB_WATCH_COALESCE_MS', 50, 0, 60_000),
    watchHeartbeatMs: int(env, 'DB_WATCH_HEARTBEAT_MS', 15_000, 100, 3_600_000),
    watchRetryMs: int(env, 'DB_WATCH_RETRY_MS', 1000, 0, 3_600_000),
    watchBufferFrames: int(env, 'DB_WATCH_BUFFER_FRAMES', 256, 1, 1_000_000),
    watchMaxLagFrames: int(env, 'DB_WATCH_MAX_LAG_FRAMES', 100_000, 1, 1 << 30),
    watchBusySliceUs: int(env, 'DB_WATCH_BUSY_SLICE_US', 500, 50, 2000),
    nlCacheSize: int(env, 'DB_NL_CACHE_SIZE', 1000, 1, 1_000_000),
    nlLexiconRefreshMs: int(env, 'DB_NL_LEXICON_REFRESH_MS', 1000, 0, 3_600_000),
    ...(nlModel ? { nlModel } : {}),
    migrationCutover: cutoverMode(env.DB_MIGRATION_CUTOVER),
    migrationInPlace: inPlaceMode(env.DB_MIGRATION_IN_PLACE),
  };
}

function inPlaceMode(raw: string | undefined): boolean {
  if (raw === undefined || raw === '' || raw === 'on') return true;
  if (raw === 'off') return false;
  throw new ConfigError(`DB_MIGRATION_IN_PLACE must be "on" or "off", not "${raw}"`);
}

function cutoverMode(raw: string | undefined): 'switch' | 'rewrite' {
  if (raw === undefined || raw === '' || raw === 'switch') return 'switch';
  if (raw === 'rewrite') return 'rewrite';
  throw new ConfigError(`DB_MIGRATION_CUTOVER must be "switch" or "rewrite", not "${raw}"`);
}

/** Injection token for the AppConfig. */
export const APP_CONFIG = Symbol('APP_CONFIG');
