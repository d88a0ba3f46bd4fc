import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { TenantStore } from './store';
import { SnapshotShare } from './shared-snapshot';

describe('SnapshotShare (one LevelDB snapshot per write generation)', () => {
  let dir: string;
  let store: TenantStore;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'shared-snap-'));
    store = await TenantStore.open({ dir });
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('hands the same snapshot to readers until a write completes, then a new one that sees it', async () => {
    const db = store.db;
    const share = new SnapshotShare(db);
    const k = Buffer.from('zz-shared-snap-test');
    await db.put(k, Buffer.from('1'));
    const a = share.acquire('k');
    const b = share.acquire('k');
    expect(b.snap).toBe(a.snap);
    await db.put(k, Buffer.from('2'));
    const c = share.acquire('k');
    expect(c.snap).not.toBe(a.snap);
    // the old readers still read their point in time; the new one sees the write
    expect(String(await db.get(k, { snapshot: a.snap }))).toBe('1');
    expect(String(await db.get(k, { snapshot: c.snap }))).toBe('2');
    await a.release();
    expect(String(await db.get(k, { snapshot: b.snap }))).toBe('1');
    await b.release();
    await b.release(); // idempotent
    // a changed key (the store's read position) also starts a new snapshot
    const d = share.acquire('k2');
    expect(d.snap).not.toBe(c.snap);
    await c.release();
    await d.release();
    share.close();
  });

  it('store.snapshot() readers see every committed write', async () => {
    const k = Buffer.from('zz-shared-snap-test-2');
    const s1 = store.snapshot();
    const s2 = store.snapshot();
    expect(await s1.rawGet(k)).toBeUndefined();
    await store.db.put(k, Buffer.from('x'));
    const s3 = store.snapshot();
    expect(String(await s3.rawGet(k))).toBe('x');
    expect(await s2.rawGet(k)).toBeUndefined();
    await Promise.all([s1.release(), s2.release(), s3.release()]);
  });
});
