import * as os from 'os';
import { defaultTableCacheBytes } from '@mmdb/sql';
import { loadConfig } from './config';

describe('loadConfig: LevelDB sizes', () => {
  it.each([
    ['DB_WRITE_BUFFER_BYTES', 'writeBufferBytes', 16 * 1024 * 1024, 64 * 1024 * 1024],
    // LevelDB's own table file size by default
    ['DB_TABLE_FILE_BYTES', 'tableFileBytes', 2 * 1024 * 1024, 32 * 1024 * 1024],
  ] as const)('%s defaults and takes 1 MiB to 1 GiB', (name, key, dflt, other) => {
    expect(loadConfig({})[key]).toBe(dflt);
    expect(loadConfig({ [name]: String(other) })[key]).toBe(other);
    for (const bad of ['1000', 'big', '-1', String(2 * 1024 * 1024 * 1024)]) {
      expect(() => loadConfig({ [name]: bad })).toThrow(new RegExp(name));
    }
  });
});

describe('loadConfig: DB_CHECKPOINT_FRAMES / DB_CHECKPOINT_MS', () => {
  it('defaults to 50,000 frames or an hour, takes 0 to turn one off, and names a bad value', () => {
    expect(loadConfig({})).toMatchObject({ checkpointFrames: 50_000, checkpointMs: 3_600_000 });
    expect(loadConfig({ DB_CHECKPOINT_FRAMES: '0', DB_CHECKPOINT_MS: '1000' })).toMatchObject({ checkpointFrames: 0, checkpointMs: 1000 });
    expect(() => loadConfig({ DB_CHECKPOINT_FRAMES: '-1' })).toThrow(/DB_CHECKPOINT_FRAMES/);
    expect(() => loadConfig({ DB_CHECKPOINT_MS: 'soon' })).toThrow(/DB_CHECKPOINT_MS/);
  });
});

describe('loadConfig: query limits', () => {
  it('reads the server limits and per-tenant overrides, refusing bad ones by name', () => {
    expect(loadConfig({}).queryLimits).toEqual({ timeoutMs: 30_000, maxRows: 2_000_000, maxNodes: 1_000_000 });
    const c = loadConfig({ DB_QUERY_TIMEOUT_MS: '5000', DB_TENANT_QUERY_LIMITS: '{"01arz3ndektsv4rrffq69g5fav": {"max_nodes": 10}}' });
    expect(c.queryLimits.timeoutMs).toBe(5000);
    expect(c.tenantQueryLimits).toEqual({ '01ARZ3NDEKTSV4RRFFQ69G5FAV': { maxNodes: 10 } });
    expect(() => loadConfig({ DB_TENANT_QUERY_LIMITS: '{"x": {"max_rowz": 1}}' })).toThrow(/DB_TENANT_QUERY_LIMITS\.x\.max_rowz/);
    expect(() => loadConfig({ DB_TENANT_QUERY_LIMITS: '{"x": {"max_rows": 0}}' })).toThrow(/positive integer/);
    expect(() => loadConfig({ DB_TENANT_QUERY_LIMITS: 'nope' })).toThrow(/DB_TENANT_QUERY_LIMITS must be JSON/);
    expect(() => loadConfig({ DB_QUERY_MAX_ROWS: '-1' })).toThrow(/DB_QUERY_MAX_ROWS/);
  });

  it('reads the table cache budget of the process (host-relative default) and per-tenant caps', () => {
    const def = loadConfig({}).tableCacheBytes;
    expect(def).toBe(defaultTableCacheBytes());
    expect(def).toBeGreaterThan(0);
    expect(def).toBeLessThanOrEqual(os.totalmem() / 8);
    expect(loadConfig({ DB_TABLE_CACHE_BYTES: '1048576' }).tableCacheBytes).toBe(1_048_576);
    expect(loadConfig({ DB_TABLE_CACHE_BYTES: '0' }).tableCacheBytes).toBe(0);
    expect(() => loadConfig({ DB_TABLE_CACHE_BYTES: 'lots' })).toThrow(/DB_TABLE_CACHE_BYTES/);
    const c = loadConfig({ DB_TENANT_QUERY_LIMITS: '{"01arz3ndektsv4rrffq69g5fav": {"table_cache_bytes": 65536}}' });
    expect(c.tenantQueryLimits).toEqual({ '01ARZ3NDEKTSV4RRFFQ69G5FAV': { tableCacheBytes: 65_536 } });
  });
});

describe('loadConfig: replication', () => {
  const OP = { DB_OPERATOR_TOKEN: 'operator-token-0123456789' };
  it('is off without DB_ETCD_ENDPOINTS (a single node, no lease)', () => {
    expect(loadConfig({}).replication).toBeUndefined();
    expect(loadConfig({ DB_ETCD_ENDPOINTS: ' ', DB_LEASE_TTL_MS: '1000' }).replication).toBeUndefined();
  });
  it('reads the issue\'s variables with their defaults', () => {
    expect(loadConfig({ ...OP, DB_ETCD_ENDPOINTS: 'http://127.0.0.1:2379, http://10.0.0.2:2379', DB_NODE_NAME: 'n1', DB_PORT: '9000' }).replication).toEqual({
      etcdEndpoints: ['http://127.0.0.1:2379', 'http://10.0.0.2:2379'],
      nodeName: 'n1',
      advertiseUrl: undefined,
      leaseTtlMs: 5000,
      syncFollowers: 0,
      syncMs: 1000,
      syncStrict: false,
      maxStaleMs: 15000,
      caFile: undefined,
    });
    const r = loadConfig({
      ...OP,
      DB_ETCD_ENDPOINTS: 'https://etcd:2379',
      DB_ADVERTISE_URL: 'https://n2.example:8443/',
      DB_LEASE_TTL_MS: '1500',
      DB_REPLICATION_SYNC_FOLLOWERS: '1',
      DB_REPLICATION_SYNC_MS: '250',
      DB_REPLICATION_SYNC_STRICT: 'true',
    }).replication!;
    expect(r).toMatchObject({ advertiseUrl: 'https://n2.example:8443', leaseTtlMs: 1500, syncFollowers: 1, syncMs: 250, syncStrict: true, maxStaleMs: 4500 });
    expect(loadConfig({ ...OP, DB_ETCD_ENDPOINTS: 'http://e:2379', DB_REPLICATION_MAX_STALE_MS: '2500' }).replication!.maxStaleMs).toBe(2500);
    expect(() => loadConfig({ ...OP, DB_ETCD_ENDPOINTS: 'http://e:2379', DB_REPLICATION_MAX_STALE_MS: '800' })).toThrow(/DB_REPLICATION_MAX_STALE_MS/);
    expect(r.nodeName).toMatch(/-8443$/);
  });
  it('names a bad value, and needs the operator token (nodes authenticate with it)', () => {
    const E = { ...OP, DB_ETCD_ENDPOINTS: 'http://127.0.0.1:2379' };
    expect(() => loadConfig({ DB_ETCD_ENDPOINTS: 'http://127.0.0.1:2379' })).toThrow(/DB_OPERATOR_TOKEN/);
    expect(() => loadConfig({ ...OP, DB_ETCD_ENDPOINTS: '127.0.0.1:2379' })).toThrow(/DB_ETCD_ENDPOINTS/);
    expect(() => loadConfig({ ...E, DB_NODE_NAME: 'bad name' })).toThrow(/DB_NODE_NAME/);
    expect(() => loadConfig({ ...E, DB_ADVERTISE_URL: 'n1:8443' })).toThrow(/DB_ADVERTISE_URL/);
    expect(() => loadConfig({ ...E, DB_LEASE_TTL_MS: '100' })).toThrow(/DB_LEASE_TTL_MS/);
    expect(() => loadConfig({ ...E, DB_REPLICATION_SYNC_FOLLOWERS: '-1' })).toThrow(/DB_REPLICATION_SYNC_FOLLOWERS/);
    expect(() => loadConfig({ ...E, DB_REPLICATION_SYNC_STRICT: 'maybe' })).toThrow(/DB_REPLICATION_SYNC_STRICT/);
    expect(() => loadConfig({ ...E, DB_REPLICATION_CA_FILE: '/nonexistent/ca.pem' })).toThrow(/DB_REPLICATION_CA_FILE/);
  });
});

describe('loadConfig: POST /ask (DB_NL_*)', () => {
  it('has no model by default; a URL turns it on with its model, key and timeout; bad values are named', () => {
    const c = loadConfig({});
    expect(c.nlModel).toBeUndefined();
    expect(c.nlCacheSize).toBe(1000);
    expect(c.nlLexiconRefreshMs).toBe(1000);
    expect(loadConfig({ DB_NL_MODEL_URL: 'http://127.0.0.1:9/v1', DB_NL_MODEL: 'm', DB_NL_MODEL_KEY: 'k' }).nlModel).toEqual({ url: 'http://127.0.0.1:9/v1', model: 'm', key: 'k', timeoutMs: 10_000 });
    expect(() => loadConfig({ DB_NL_MODEL_URL: 'ftp://x' })).toThrow(/DB_NL_MODEL_URL/);
    expect(() => loadConfig({ DB_NL_CACHE_SIZE: '0' })).toThrow(/DB_NL_CACHE_SIZE/);
  });
});
