/**
 * What a migration's backfill asks of the store: a background request is prepared in a group
 * of its own and reports how long the writer spent on it and how long foreground writes waited; a `migration` step's compare-and-set
 * on the cursor (`expect_cursor`) refuses a frame whose predecessor did not land; a mirror's
 * `target` rows are read ahead with the group's other reads; requests made in order are queued
 * in order.
 */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { KV_TOML as T } from '../test/kv-schema';
import type { CommitRequest } from './api';
import { TenantStore } from './store';

const SHADOW = T.replace('table = "kv"', 'table = "kv_shadow"');

describe('background requests and the backfill cursor check', () => {
  let dir: string;
  let store: TenantStore;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'background-'));
    store = await TenantStore.open({ dir });
    await store.registerSchema(T);
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('prepares a background request alone, after the foreground requests queued with it, and reports its preparation time', async () => {
    const put = (k: number): CommitRequest => ({ changes: [{ op: 'put', schema: 't.kv', row: { k, v: `v${k}` } }] });
    const bg: CommitRequest = { changes: [{ op: 'put', schema: 't.kv', row: { k: 100, v: 'bg' } }], background: true };
    const groups = () => (store as unknown as { coordinator: { stats: { groups: number } } }).coordinator.stats.groups;
    // Issued in one turn without the flag, they share one group.
    let g0 = groups();
    await Promise.all([store.commit(put(3)), store.commit(put(4)), store.commit(put(5))]);
    expect(groups() - g0).toBe(1);
    g0 = groups();
    // With a background request among them: the foreground ones first (one group), then it alone.
    const [a, b, c] = await Promise.all([store.commit(put(1)), store.commit(bg), store.commit(put(2))]);
    expect(groups() - g0).toBe(2);
    expect(typeof b.prepare_ms).toBe('number');
    expect(b.prepare_ms).toBeGreaterThanOrEqual(0);
    // The foreground requests written before it waited (queued → their batch issued), part of it before their preparation.
    expect(b.fg_wait_ms).toBeGreaterThan(0);
    expect(b.fg_queue_ms).toBeGreaterThanOrEqual(0);
    expect(b.fg_queue_ms).toBeLessThanOrEqual(b.fg_wait_ms!);
    expect(a.fg_wait_ms).toBeUndefined();
    expect(a.prepare_ms).toBeUndefined();
    expect(c.prepare_ms).toBeUndefined();
    expect([a.lsn, c.lsn, b.lsn]).toEqual([a.lsn, a.lsn + 1, a.lsn + 2]);
    // Background requests keep their order among themselves, behind the foreground ones.
    const bgs = [7, 8, 9].map((k) => store.commit({ changes: [{ op: 'put', schema: 't.kv', row: { k: 200 + k, v: 'b' } }], background: true }));
    const fgs = [7, 8].map((k) => store.commit(put(300 + k)));
    const [x7, x8, x9] = await Promise.all(bgs);
    const [y7, y8] = await Promise.all(fgs);
    expect(x7.lsn).toBeLessThan(x8.lsn);
    expect(x8.lsn).toBeLessThan(x9.lsn);
    expect(y8.lsn).toBeLessThan(x8.lsn);
    expect(y7.lsn).toBeLessThan(y8.lsn);
    expect((await store.getRow('t.kv', [100]))?.values).toEqual({ k: 100, v: 'bg' });
  });

  it('applies a backfill step only at the cursor it expects: the step before must have landed', async () => {
    const step = (cursor: number, expect: number[] | null): CommitRequest => ({
      changes: [{ op: 'migration', migration: 'm1', step: 'backfill', cursor: [cursor], state: { done: cursor }, expect_cursor: expect }],
    });
    // No backfill step yet: the first frame expects null.
    await expect(store.commit(step(5, [3]))).rejects.toMatchObject({ code: 'conflict', details: { expect_cursor: [3], cursor: null } });
    await store.commit(step(5, null));
    // Two frames in flight, the second expecting the first's cursor: both land, in order.
    const [x, y] = await Promise.all([store.commit(step(9, [5])), store.commit(step(12, [9]))]);
    expect(y.lsn).toBe(x.lsn + 1);
    expect(await store.migrationStep('m1')).toMatchObject({ step: 'backfill', cursor: [12] });
    // A frame whose predecessor was refused is refused too (nothing skipped), and logs nothing.
    const refused = store.commit(step(20, [15]));
    const after = store.commit(step(25, [20]));
    await expect(refused).rejects.toMatchObject({ code: 'conflict' });
    await expect(after).rejects.toMatchObject({ code: 'conflict' });
    expect(await store.migrationStep('m1')).toMatchObject({ cursor: [12] });
    // Another step in between (an abort) makes a backfill frame expecting the old cursor fail.
    await store.commit({ changes: [{ op: 'migration', migration: 'm1', step: 'abort' }] });
    await expect(store.commit(step(30, [12]))).rejects.toMatchObject({ code: 'conflict' });
    // The check is not logged: the frame holds the step as a reader of the log needs it.
    let last;
    for await (const f of store.frames()) last = f;
    expect(last!.changes).toEqual([{ op: 'migration', migration: 'm1', step: 'abort' }]);
  });

  it('a mirror with a target reads the target rows ahead: dual writes and re-mirrors see the current copy', async () => {
    await store.registerSchema(SHADOW);
    store.setRowMirror('t.kv', {
      target: 't.kv_shadow',
      mirror: (ev) => (ev.after ? [{ op: 'put', schema: 't.kv_shadow', row: { k: ev.after.values.k, v: `${String(ev.after.values.v)}!` } }] : [{ op: 'delete', schema: 't.kv_shadow', pk: ev.pk }]),
    });
    await store.commit({ changes: [1, 2, 3].map((k) => ({ op: 'put' as const, schema: 't.kv', row: { k, v: `a${k}` } })) });
    // A second write of each row: the copy's prior version is read (ahead) and replaced, its version following the source's.
    await store.commit({ changes: [1, 2].map((k) => ({ op: 'put' as const, schema: 't.kv', row: { k, v: `b${k}` } })) });
    await store.commit({ changes: [{ op: 'mirror', schema: 't.kv', pk: [3] }, { op: 'delete', schema: 't.kv', pk: [2] }], background: true });
    const rows = async (s: string) => {
      const snap = store.snapshot();
      const out: Array<[unknown, number]> = [];
      try {
        for await (const b of snap.scanRows(s)) for (const r of b) out.push([r.values.v, r.version]);
      } finally {
        await snap.release();
      }
      return out;
    };
    expect(await rows('t.kv')).toEqual([['b1', 2], ['a3', 1]]);
    expect(await rows('t.kv_shadow')).toEqual([['b1!', 2], ['a3!', 1]]);
  });

  it('queues requests in the order they were made, also across a disk check', async () => {
    const order: number[] = [];
    const all = [];
    for (let i = 0; i < 50; i++) {
      // Force a disk check on some of them (the check is due once a second).
      if (i % 10 === 0) (store as unknown as { lastDiskCheck: number }).lastDiskCheck = 0;
      all.push(store.commit({ changes: [{ op: 'put', schema: 't.kv', row: { k: i, v: 'x' } }] }).then((r) => order.push(r.lsn)));
    }
    await Promise.all(all);
    const lsns = [...order];
    expect(lsns).toEqual([...lsns].sort((a, b) => a - b));
    const frames = [];
    for await (const f of store.frames()) frames.push(f);
    const ks = frames.flatMap((f) => f.changes.filter((c) => c.op === 'put').map((c) => (c as { pk: unknown[] }).pk[0]));
    expect(ks).toEqual(Array.from({ length: 50 }, (_, i) => i));
  });
});
