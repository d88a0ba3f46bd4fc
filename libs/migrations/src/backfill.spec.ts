/**
 * The backfill's throttle and key cursor: frames sized by the writer's measured preparation
 * time per row within the adaptive budget (at most `slice_ms`) and `batch_size`; the budget's
 * decrease and rests while the foreground waits, and its growth back; the rows/s
 * ceiling; the throttle's validation; a key cursor that resumes exactly after a primary key,
 * across a snapshot renewal, in key order.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { DbError, type Row } from '@mmdb/core';
import { DEFERRED_MARK, deferredMark, keyIdOf, logKey, metaKey, rowKey, TenantStore } from '@mmdb/storage';
import { countRows, DEFAULT_SLICE_MS, KeyCursor, Slicer } from './backfill';
import { Migrations, throttleOf } from './engine';
import { onFollower } from './testing/fixtures';

describe('throttle', () => {
  it('fills defaults and refuses bad or unknown fields, naming them', () => {
    expect(throttleOf(undefined)).toEqual({ max_rows_per_s: 50_000, batch_size: 1000, slice_ms: DEFAULT_SLICE_MS });
    expect(throttleOf({ slice_ms: 2.5 })).toEqual({ max_rows_per_s: 50_000, batch_size: 1000, slice_ms: 2.5 });
    expect(throttleOf({ batch_size: 10, max_rows_per_s: undefined })).toMatchObject({ batch_size: 10, max_rows_per_s: 50_000 });
    const bad: Array<[unknown, string]> = [
      [{ slice_ms: 0 }, 'throttle.slice_ms'],
      [{ slice_ms: 5000 }, 'throttle.slice_ms'],
      [{ slice_ms: '4' }, 'throttle.slice_ms'],
      [{ batch_size: 0 }, 'throttle.batch_size'],
      [{ max_rows_per_s: 1.5 }, 'throttle.max_rows_per_s'],
      [{ rows_per_s: 10 }, 'throttle.rows_per_s'],
      [[1], 'throttle'],
    ];
    for (const [t, key] of bad) expect(() => throttleOf(t as never)).toThrow(expect.objectContaining({ code: 'validation_failed', details: expect.objectContaining({ key }) }));
  });
});

describe('Slicer', () => {
  it('sizes frames by the preparation time per row, within slice_ms and batch_size', () => {
    const s = new Slicer({ max_rows_per_s: 1e9, batch_size: 1000, slice_ms: 4 });
    expect(s.next()).toBe(32); // unknown cost: a small first frame
    // 32 rows prepared in 1 ms (a commit of 2 ms in all): 1/32 ms per row → 128 rows fit in 4 ms.
    expect(s.done(32, 2, 1)).toBe(0);
    expect(s.next()).toBe(128);
    // The frame's whole commit does not count as the writer's time, only its preparation.
    for (let i = 0; i < 20; i++) s.done(128, 6, 4);
    expect(s.next()).toBe(128);
    // Cheaper rows: more per frame, never more than batch_size.
    for (let i = 0; i < 20; i++) s.done(1000, 1.5, 0.5);
    expect(s.next()).toBe(1000);
    // Costlier rows (a busy host): fewer per frame, at least one.
    for (let i = 0; i < 30; i++) s.done(100, 400, 400);
    expect(s.next()).toBe(1);
    // Without a reported preparation time the whole commit counts.
    const w = new Slicer({ max_rows_per_s: 1e9, batch_size: 1000, slice_ms: 4 });
    w.done(40, 2);
    expect(w.next()).toBe(80);
  });

  it('halves its budget while the foreground queues behind frames, spaces frames while it waits on log writes, and grows back', () => {
    const s = new Slicer({ max_rows_per_s: 1e9, batch_size: 1000, slice_ms: 4 });
    const q = (ms: number) => ({ waitMs: ms, queueMs: ms });
    const fsync = (ms: number) => ({ waitMs: ms, queueMs: 0.1 });
    expect(s.budget).toBe(4);
    // 100 rows prepared in 4 ms: 100 per frame; foreground waits within 8 ms (or none came): nothing changes.
    for (let i = 0; i < 5; i++) expect(s.done(100, 6, 4, i % 2 ? q(3) : undefined)).toBe(0);
    expect(s.next()).toBe(100);
    // A foreground write queued 20 ms behind a preparation: the budget halves (multiplicative decrease), so do the frames.
    expect(s.done(100, 6, 4, q(20))).toBe(0);
    expect(s.budget).toBe(2);
    expect(s.next()).toBe(50);
    // Down to a quarter of slice_ms (1 ms), then rests between frames that double (1, 2, 4 ms...), at most 50 ms.
    s.done(50, 3, 2, q(20));
    expect(s.budget).toBe(1);
    expect(s.next()).toBe(25);
    expect([s.done(25, 2, 1, q(20)), s.done(25, 2, 1, q(20)), s.done(25, 2, 1, q(20))]).toEqual([1, 2, 4]);
    expect(s.budget).toBe(1);
    for (let i = 0; i < 10; i++) s.done(25, 2, 1, q(100));
    expect(s.rest).toBe(50);
    // Calm frames: the rest halves away first, then the budget grows back a sixteenth of slice_ms per frame, up to slice_ms.
    const calm = Array.from({ length: 7 }, () => s.done(25, 2, 1, q(1)));
    expect(calm).toEqual([25, 12.5, 6.25, 3.125, 1.5625, 0, 0]);
    expect(s.budget).toBe(1.25);
    for (let i = 0; i < 100; i++) s.done(25, 2, 1, q(0));
    expect(s.budget).toBe(4);
    expect(s.next()).toBe(100);
    // Waits on the log write in flight (not behind a preparation): the frames keep their size and are spaced instead.
    expect([s.done(100, 6, 4, fsync(20)), s.done(100, 6, 4, fsync(20))]).toEqual([1, 2]);
    expect(s.budget).toBe(4);
    // A small slice_ms: the budget's floor is 0.5 ms.
    const small = new Slicer({ max_rows_per_s: 1e9, batch_size: 1000, slice_ms: 1 });
    for (let i = 0; i < 5; i++) small.done(10, 1, 1, q(50));
    expect(small.budget).toBe(0.5);
  });

  it('keeps under the ceiling', () => {
    // The ceiling: 1,000 rows/s means 100 rows may take no less than 100 ms.
    const c = new Slicer({ max_rows_per_s: 1000, batch_size: 1000, slice_ms: 4 });
    expect(c.done(100, 5, 4)).toBeCloseTo(95, 5);
    expect(c.rowsPerS).toBeGreaterThan(0);
  });
});

/** A store on disk per test, with one table and its rows (`toml`, then `rows` as puts). */
function storeWith(toml: string, rows: () => Row[]): { store: () => TenantStore } {
  let dir = '';
  let store: TenantStore | undefined;
  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'migrations-backfill-'));
    store = await TenantStore.open({ dir, sync: false });
    const { id } = await store.registerSchema(toml);
    await store.commit({ changes: rows().map((row) => ({ op: 'put' as const, schema: id, row })) });
  });
  afterEach(async () => {
    await store?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return { store: () => store! };
}

describe('KeyCursor', () => {
  const t = storeWith('namespace = "app"\ntable = "t"\nprimary_key = ["a", "b"]\n[[columns]]\nname = "a"\nty = "i64"\nrequired = true\n[[columns]]\nname = "b"\nty = "str"\nrequired = true\n', () =>
    Array.from({ length: 30 }, (_, a) => ['x', 'xy', 'y'].map((b) => ({ a, b }))).flat(),
  );

  const all = (from: number) => {
    const out: unknown[][] = [];
    for (let a = from; a < 30; a++) for (const b of ['x', 'xy', 'y']) out.push([a, b]);
    return out;
  };

  it('hands out every primary key after the cursor once, in key order, in takes of any size', async () => {
    const store = t.store();
    expect(await countRows(store, 'app.t')).toBe(90);
    const c = new KeyCursor(store, 'app.t', undefined);
    const got: unknown[][] = [];
    for (const n of [1, 7, 600, 5]) got.push(...(await c.take(n)));
    await c.close();
    expect(got).toEqual(all(0));
    // After a cursor: the key itself is skipped, even when another key extends its text ('x' < 'xy').
    const d = new KeyCursor(store, 'app.t', [4, 'x']);
    const next = await d.take(4);
    await d.close();
    expect(next).toEqual([[4, 'xy'], [4, 'y'], [5, 'x'], [5, 'xy']]);
  });

  it('resumes after the last key taken when its snapshot is renewed, and sees rows written before the renewal', async () => {
    const store = t.store();
    const c = new KeyCursor(store, 'app.t', undefined);
    const got = await c.take(10);
    // A renewal (as after SNAPSHOT_MS): keys read ahead but not taken are read again from the new snapshot.
    await c.close();
    await store.commit({ changes: [{ op: 'put', schema: 'app.t', row: { a: 29, b: 'z' } }] });
    for (;;) {
      const more = await c.take(13);
      if (!more.length) break;
      got.push(...more);
    }
    await c.close();
    expect(got).toEqual([...all(0), [29, 'z']]);
  });
});

/** Every row of the table copied into `shadow` by exactly one frame of the log, each frame's done count the one before plus its rows. */
async function expectCopiedOnce(store: TenantStore, shadow: string, rows: number): Promise<void> {
  const copied = new Map<string, number>();
  let lastDone = 0;
  for await (const f of store.frames()) {
    const step = f.changes.find((c) => c.op === 'migration' && c.step === 'backfill') as { state?: { done: number } } | undefined;
    if (!step) continue;
    const puts = f.changes.filter((c) => c.op === 'put' && c.schema === shadow);
    for (const c of puts) copied.set(JSON.stringify((c as { pk: unknown }).pk), (copied.get(JSON.stringify((c as { pk: unknown }).pk)) ?? 0) + 1);
    expect(step.state!.done).toBe(lastDone + puts.length);
    lastDone = step.state!.done;
  }
  expect(copied.size).toBe(rows);
  expect([...copied.values()].every((n) => n === 1)).toBe(true);
}

describe('a pipelined backfill', () => {
  const t = storeWith('namespace = "app"\ntable = "n"\nprimary_key = ["id"]\n[[columns]]\nname = "id"\nty = "i64"\nrequired = true\n[[columns]]\nname = "v"\nty = "i64"\n', () =>
    Array.from({ length: 3000 }, (_, i) => ({ id: i, v: i })),
  );

  it('starts again from the store cursor when a frame is refused with the next already in flight: every row copied once', async () => {
    const store = t.store();
    // One backfill frame refused as a full queue would (transient): the frame after it, already
    // submitted with its cursor check, must be refused too, and the backfill resumes at the cursor.
    const real = store.commit.bind(store);
    let frames = 0;
    let refusedAt: unknown = null;
    let conflicts = 0;
    store.commit = async (req) => {
      const step = req.changes.find((c) => c.op === 'migration' && c.step === 'backfill') as { cursor?: unknown } | undefined;
      if (step && ++frames === 6) {
        refusedAt = step.cursor;
        throw new DbError('service_unavailable', 'commit queue is full (test)');
      }
      try {
        return await real(req);
      } catch (e) {
        if ((e as { code?: string }).code === 'conflict') conflicts++;
        throw e;
      }
    };
    const m = new Migrations(store, { evaluate: () => null });
    await m.attach();
    const r = await m.submit({ schema: 'app.n', operations: [{ op: 'rename_column', from: 'v', to: 'w' }], throttle: { batch_size: 40, max_rows_per_s: 1e6 } }, 'tok');
    const end = Date.now() + 60_000;
    while (m.get(r.id).state !== 'ReadyToCutover' && Date.now() < end) await new Promise((res) => setTimeout(res, 10));
    expect(m.get(r.id)).toMatchObject({ state: 'ReadyToCutover', reason: null, progress: { done: 3000, total: 3000 } });
    expect(refusedAt).not.toBeNull();
    // The frame in flight behind the refused one was refused by its cursor check.
    expect(conflicts).toBeGreaterThanOrEqual(1);
    // Every row is in the shadow, each copied by exactly one durable frame.
    const shadow = store.manifests().find((x) => x.id !== 'app.n')!.id;
    expect(await countRows(store, shadow)).toBe(3000);
    await expectCopiedOnce(store, shadow, 3000);
    await m.close();
  }, 90_000);
});

describe('a backfill frame lost by a power loss before its deferred sync', () => {
  it('resumes at the cursor before it: every row copied by exactly one frame of the log, the done counts chained', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'migrations-lost-frame-'));
    // A synced store: backfill frames are written without their own fsync (deferred sync).
    let store = await TenantStore.open({ dir });
    try {
      const { id: table } = await store.registerSchema('namespace = "app"\ntable = "n"\nprimary_key = ["id"]\n[[columns]]\nname = "id"\nty = "i64"\nrequired = true\n[[columns]]\nname = "v"\nty = "i64"\n');
      await store.commit({ changes: Array.from({ length: 2000 }, (_, i) => ({ op: 'put' as const, schema: table, row: { id: i, v: i } })) });
      let m = new Migrations(store, { evaluate: () => null });
      await m.attach();
      const r = await m.submit({ schema: table, operations: [{ op: 'rename_column', from: 'v', to: 'w' }], throttle: { batch_size: 40, max_rows_per_s: 1000 } }, 'tok');
      while (m.get(r.id).progress.done < 400) await new Promise((res) => setTimeout(res, 5));
      expect((await m.request(r.id, 'pause', { actor: 'tok' })).state).toBe('Paused');
      await m.close();
      // One more frame: the writer's own clue of its last run is gone once that run is durable (so it cannot replace ours below).
      await store.registerSchema('namespace = "app"\ntable = "other"\nprimary_key = ["id"]\n[[columns]]\nname = "id"\nty = "i64"\nrequired = true\n');
      expect((store as unknown as { coordinator: { stats: { deferred: number } } }).coordinator.stats.deferred).toBeGreaterThan(5);
      // The last backfill frame before the pause (L) and the one before it (P).
      const steps: Array<{ lsn: number; change: Record<string, unknown>; puts: unknown[][] }> = [];
      for await (const f of store.frames()) {
        const change = f.changes.find((c) => c.op === 'migration' && c.step === 'backfill');
        if (change) steps.push({ lsn: f.lsn, change: change as unknown as Record<string, unknown>, puts: f.changes.filter((c) => c.op === 'put').map((c) => (c as { pk: unknown[] }).pk) });
      }
      const [P, L] = steps.slice(-2);
      const shadow = store.manifests().find((x) => x.id.includes('__mig_'))!;
      // What LevelDB loses with L's batch: its log frame and its shadow rows (the cursor stays L's below, as if a
      // later frame of its run had survived); the pause frame after it, synced while L's sync had not ended, survives.
      const db = (store as unknown as { db: { batch(): { del(k: Buffer): unknown; put(k: Buffer, v: Buffer): unknown; write(o: object): Promise<void> } } }).db;
      const batch = db.batch();
      batch.del(logKey(L.lsn));
      for (const pk of L.puts) batch.del(rowKey(keyIdOf(shadow), pk as never));
      // The clue of a run starting at L: recovery sets the cursor back to its value before the run (P's).
      batch.put(DEFERRED_MARK, deferredMark(L.lsn, [[metaKey('migration', r.id), Buffer.from(JSON.stringify({ ...P.change, lsn: P.lsn }))]]));
      await batch.write({ sync: true });
      await store.close();

      store = await TenantStore.open({ dir });
      expect(store.recovery.lostDeferred).toEqual([L.lsn]);
      m = new Migrations(store, { evaluate: () => null });
      await m.attach();
      await m.request(r.id, 'resume', { actor: 'tok' });
      const end = Date.now() + 60_000;
      while (m.get(r.id).state !== 'ReadyToCutover' && Date.now() < end) await new Promise((res) => setTimeout(res, 10));
      expect(m.get(r.id)).toMatchObject({ state: 'ReadyToCutover', progress: { done: 2000 } });
      expect(await countRows(store, shadow.id)).toBe(2000);
      for await (const f of store.frames(L.lsn)) {
        expect(f).toMatchObject({ lsn: L.lsn, changes: [] });
        break;
      }
      await expectCopiedOnce(store, shadow.id, 2000);
      await m.close();
    } finally {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});

describe('a backfill whose frames foreground writes cut short', () => {
  // holdMs 50: each frame's preparation also waits for a foreground write in flight to be answered (storage's backgroundHoldMs).
  it.each([0, 50])('copies every row by exactly one frame, the done counts chained; the shadow holds every write; a follower and a restart agree (hold %d ms)', async (holdMs) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'migrations-split-'));
    // A piece of a microsecond: the writer lets the event loop go after every row, so the
    // foreground writes below arrive while frames are prepared and cut them short.
    let store = await TenantStore.open({ dir, backgroundPieceMs: 0.001, backgroundHoldMs: holdMs });
    try {
      const { id: table } = await store.registerSchema('namespace = "app"\ntable = "n"\nprimary_key = ["id"]\n[[columns]]\nname = "id"\nty = "i64"\nrequired = true\n[[columns]]\nname = "v"\nty = "i64"\n');
      const N = 1500;
      await store.commit({ changes: Array.from({ length: N }, (_, i) => ({ op: 'put' as const, schema: table, row: { id: i, v: i } })) });
      const model = new Map<number, number>(Array.from({ length: N }, (_, i) => [i, i]));
      const m = new Migrations(store, { evaluate: () => null });
      await m.attach();
      const r = await m.submit({ schema: table, operations: [{ op: 'rename_column', from: 'v', to: 'w' }], throttle: { batch_size: 60, max_rows_per_s: 1e6 } }, 'tok');
      let n = 0;
      const writer = async (w: number) => {
        while (m.get(r.id).state === 'Pending' || m.get(r.id).state === 'Backfilling') {
          const id = (n * 37 + w * 501) % N;
          const v = -++n;
          await store.commit({ changes: [{ op: 'put', schema: table, row: { id, v } }] });
          model.set(id, v);
        }
      };
      await Promise.all([writer(0), writer(1)]);
      expect(m.get(r.id)).toMatchObject({ state: 'ReadyToCutover', progress: { done: N } });
      const stats = (store as unknown as { coordinator: { stats: { splits: number; holds: number } } }).coordinator.stats;
      expect(stats.splits).toBeGreaterThan(0);
      if (holdMs) expect(stats.holds).toBeGreaterThan(0);
      else expect(stats.holds).toBe(0);
      const shadow = store.manifests().find((x) => x.id.includes('__mig_'))!.id;
      await expectCopiedOnce(store, shadow, N);
      const rows = async (s: TenantStore) => {
        const out = new Map<number, unknown>();
        const snap = s.snapshot();
        try {
          for await (const b of snap.scanRows(shadow)) for (const row of b) out.set(Number(row.values.id), row.values.w);
        } finally {
          await snap.release();
        }
        return out;
      };
      expect(await rows(store)).toEqual(model);
      await onFollower(store, async (follower) => expect(await rows(follower)).toEqual(model));
      await m.close();
      await store.close();
      store = await TenantStore.open({ dir });
      expect(await rows(store)).toEqual(model);
    } finally {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
