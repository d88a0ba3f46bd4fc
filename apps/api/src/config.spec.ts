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
