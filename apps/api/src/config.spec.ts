import { loadConfig } from './config';

describe('loadConfig: DB_WRITE_BUFFER_BYTES', () => {
  it('defaults to 16 MiB and takes 1 MiB to 1 GiB', () => {
    expect(loadConfig({}).writeBufferBytes).toBe(16 * 1024 * 1024);
    expect(loadConfig({ DB_WRITE_BUFFER_BYTES: String(64 * 1024 * 1024) }).writeBufferBytes).toBe(64 * 1024 * 1024);
    for (const bad of ['1000', 'big', '-1', String(2 * 1024 * 1024 * 1024)]) {
      expect(() => loadConfig({ DB_WRITE_BUFFER_BYTES: bad })).toThrow(/DB_WRITE_BUFFER_BYTES/);
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
});
