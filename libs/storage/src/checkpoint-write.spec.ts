import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { keyOf } from './keys';
import { TenantStore } from './store';

describe('writeCheckpoint (issue 25: no event-loop stall)', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'ckpt-write-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('adds large values to its one batch over several event-loop turns, and writes them all at once', async () => {
    const store = await TenantStore.open({ dir, sync: false });
    const db = (store as unknown as { db: { batch(): { put(k: Buffer, v: Buffer): unknown } } }).db;
    // which event-loop turn each value was added to the batch in
    let turn = 0;
    let ticking = true;
    const tick = () => {
      turn++;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    const turns: number[] = [];
    const batch = db.batch.bind(db);
    db.batch = () => {
      const b = batch();
      const put = b.put.bind(b);
      b.put = (k: Buffer, v: Buffer) => {
        turns.push(turn);
        return put(k, v);
      };
      return b;
    };
    const big = (i: number) => Buffer.alloc(3 << 20, i);
    const writes = Array.from({ length: 8 }, (_, i) => ({ key: keyOf('V', ['t', 'k', i]), value: big(i) }));
    await store.writeCheckpoint(writes);
    ticking = false;
    expect(turns).toHaveLength(8);
    expect(new Set(turns).size).toBeGreaterThanOrEqual(4); // 24 MB in steps of 4 MB
    const raw = (store as unknown as { db: { get(k: Buffer): Promise<Buffer | undefined> } }).db;
    for (let i = 0; i < 8; i++) expect((await raw.get(writes[i].key))?.equals(big(i))).toBe(true);
    await store.close();
  });
});
