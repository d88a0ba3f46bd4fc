import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { KV_TOML as T } from '../test/kv-schema';
import { TenantStore } from './store';

describe('fencing epoch at runtime', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'epoch-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('stamps frames with the epoch set, keeps it across a restart, and refuses a lower one', async () => {
    let store = await TenantStore.open({ dir });
    expect(store.epoch).toBe(0);
    await store.registerSchema(T);
    await store.setEpoch(7);
    await store.put('t.kv', { k: 1 });
    await expect(store.setEpoch(6)).rejects.toMatchObject({ code: 'conflict' });
    await expect(store.setEpoch(-1)).rejects.toMatchObject({ code: 'validation_failed' });
    await store.setEpoch(7); // same epoch: a no-op
    const epochs: number[] = [];
    for await (const f of store.frames()) epochs.push(f.epoch);
    expect(epochs).toEqual([0, 7]);
    await store.close();
    store = await TenantStore.open({ dir });
    expect(store.epoch).toBe(7);
    await store.put('t.kv', { k: 2 });
    const last: number[] = [];
    for await (const f of store.frames(3)) last.push(f.epoch);
    expect(last).toEqual([7]);
    await store.close();
  });
});
