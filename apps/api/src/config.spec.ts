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
