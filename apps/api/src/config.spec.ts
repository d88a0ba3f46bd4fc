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
