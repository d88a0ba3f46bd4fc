/**
 * A prepared background request yields to foreground ones: one queued before its batch is
 * issued is written first, and the background request is prepared again after it (at most
 * twice, then it is written anyway); its result reports the foreground's waits.
 */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { KV_TOML as T } from '../test/kv-schema';
import type { CommitRequest, CommitResult } from './api';
import { TenantStore } from './store';

const SHADOW = T.replace('table = "kv"', 'table = "kv_shadow"');

interface Inner {
  coordinator: { submit(r: CommitRequest): Promise<CommitResult>; stats: { yielded: number; groups: number } };
}

describe('a background request yields to foreground requests queued while it is prepared', () => {
  let dir: string;
  let store: TenantStore;
  let coordinator: Inner['coordinator'];
  /** Foreground writes made from inside the mirror, i.e. while a backfill frame is being prepared. */
  let during: Array<Promise<CommitResult>>;
  let prepares: number;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'background-yield-'));
    store = await TenantStore.open({ dir });
    await store.registerSchema(T);
    await store.registerSchema(SHADOW);
    coordinator = (store as unknown as Inner).coordinator;
    during = [];
    prepares = 0;
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A mirror into the shadow that, on the backfill's copy of row 1, queues a foreground write `times` times. */
  const mirrorQueuing = (times: number) =>
    store.setRowMirror('t.kv', {
      target: 't.kv_shadow',
      mirror: (ev) => {
        if (ev.before === ev.after && ev.pk[0] === 1) {
          prepares++;
          if (during.length < times) during.push(coordinator.submit({ changes: [{ op: 'put', schema: 't.kv', row: { k: 100 + during.length, v: 'fg' } }] }));
        }
        return ev.after ? [{ op: 'put', schema: 't.kv_shadow', row: { k: ev.after.values.k, v: `${String(ev.after.values.v)}!` } }] : [];
      },
    });

  const frame = (): CommitRequest => ({ changes: [1, 2, 3].map((k) => ({ op: 'mirror' as const, schema: 't.kv', pk: [k] })), background: true });

  it('writes the foreground request first and the frame after it, prepared again, in order', async () => {
    await store.commit({ changes: [1, 2, 3].map((k) => ({ op: 'put' as const, schema: 't.kv', row: { k, v: `a${k}` } })) });
    mirrorQueuing(1);
    const y0 = coordinator.stats.yielded;
    const bg = await coordinator.submit(frame());
    const [fg] = await Promise.all(during);
    expect(coordinator.stats.yielded - y0).toBe(1);
    expect(prepares).toBe(2);
    expect(fg.lsn).toBe(bg.lsn - 1);
    // The write that made it yield waited (queued → its batch issued); part of that before its preparation began.
    expect(bg.fg_wait_ms).toBeGreaterThan(0);
    expect(bg.fg_queue_ms).toBeGreaterThanOrEqual(0);
    expect(bg.fg_queue_ms).toBeLessThanOrEqual(bg.fg_wait_ms!);
    expect((await store.getRow('t.kv', [100]))?.values.v).toBe('fg');
    expect((await Promise.all([1, 2, 3].map((k) => store.getRow('t.kv_shadow', [k])))).map((r) => r?.values.v)).toEqual(['a1!', 'a2!', 'a3!']);
    // The log holds each frame once, in LSN order, with no gap where the dropped preparation was.
    const lsns: number[] = [];
    for await (const f of store.frames()) lsns.push(f.lsn);
    expect(lsns).toEqual(Array.from({ length: lsns.length }, (_, i) => lsns[0] + i));
  });

  it('yields at most twice, then is written even while foreground requests keep coming', async () => {
    await store.commit({ changes: [1, 2, 3].map((k) => ({ op: 'put' as const, schema: 't.kv', row: { k, v: `a${k}` } })) });
    mirrorQueuing(10);
    const y0 = coordinator.stats.yielded;
    const bg = await coordinator.submit(frame());
    expect(coordinator.stats.yielded - y0).toBe(2);
    expect(prepares).toBe(3);
    const fgs = await Promise.all(during);
    expect(fgs).toHaveLength(3);
    // The two that made it yield were written before it; the third, queued during its last preparation, after it.
    expect(fgs[0].lsn).toBeLessThan(bg.lsn);
    expect(fgs[1].lsn).toBeLessThan(bg.lsn);
    expect(fgs[2].lsn).toBeGreaterThan(bg.lsn);
    expect((await store.getRow('t.kv_shadow', [3]))?.values.v).toBe('a3!');
  });

  it('a backfill step that yielded keeps its place among the background requests (the cursor check holds)', async () => {
    await store.commit({ changes: [1, 2, 3].map((k) => ({ op: 'put' as const, schema: 't.kv', row: { k, v: `a${k}` } })) });
    await store.commit({ changes: [{ op: 'migration', migration: 'm1', step: 'submit' }] });
    mirrorQueuing(1);
    const step = (cursor: number, expect: number[] | null): CommitRequest => ({
      changes: [...frame().changes, { op: 'migration', migration: 'm1', step: 'backfill', cursor: [cursor], state: { done: cursor }, expect_cursor: expect }],
      background: true,
    });
    const [x, y] = await Promise.all([coordinator.submit(step(3, null)), coordinator.submit(step(6, [3]))]);
    expect(coordinator.stats.yielded).toBeGreaterThanOrEqual(1);
    expect(y.lsn).toBeGreaterThan(x.lsn);
    expect((await store.migrationStep('m1'))?.cursor).toEqual([6]);
  });
});
