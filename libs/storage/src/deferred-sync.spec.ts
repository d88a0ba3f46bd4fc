/**
 * Deferred sync (DESIGN.md "Deferred sync"): a `redoable` background commit is written without
 * its own fsync, made durable by the writer's sync of the log files (or by the synced batch of
 * a foreground commit written over it), and only then applied, answered and published, in LSN
 * order; recovery fills the LSN of such a frame a power loss lost under a later frame.
 */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { ClassicLevel } from 'classic-level';
import { KV_TOML as T } from '../test/kv-schema';
import type { CommitRequest, CommitResult } from './api';
import { DEFERRED_MARK, deferredMark } from './deferred-sync';
import { logKey, metaKey, parseJson } from './records';
import { TenantStore } from './store';

interface Internals {
  coordinator: {
    stats: { deferred: number; logSyncs: number };
    host: { syncLog(): Promise<void>; currentLog(): Promise<string | null> };
  };
}

const put = (k: number, background = false): CommitRequest => ({
  changes: [{ op: 'put', schema: 't.kv', row: { k, v: `v${k}` } }],
  ...(background ? { background: true, redoable: true } : {}),
});

async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setTimeout(r, 2));
}

describe('deferred sync of redoable background commits', () => {
  let dir: string;
  let store: TenantStore;
  let host: Internals['coordinator']['host'];
  let stats: Internals['coordinator']['stats'];
  /** The writer's log syncs wait for open() while held. */
  let held: Array<() => void>;
  let holding: boolean;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'deferred-'));
    store = await TenantStore.open({ dir });
    await store.registerSchema(T);
    const c = (store as unknown as Internals).coordinator;
    host = c.host;
    stats = c.stats;
    held = [];
    holding = false;
    const sync = host.syncLog.bind(host);
    host.syncLog = async () => {
      if (holding) await new Promise<void>((r) => held.push(r));
      return sync();
    };
  });
  afterEach(async () => {
    holding = false;
    for (const r of held) r();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const release = () => {
    holding = false;
    for (const r of held.splice(0)) r();
  };

  it('writes it without sync and answers, applies and publishes it only once the log sync made it durable', async () => {
    holding = true;
    const before = store.lastLsn;
    let answered: CommitResult | null = null;
    const bg = store.commit(put(1, true)).then((r) => (answered = r));
    await until(() => held.length === 1);
    // Written (the batch is in the database) but not durable yet: not answered, not applied.
    expect(await (store as unknown as { db: ClassicLevel<Buffer, Buffer> }).db.get(logKey(before + 1))).toBeDefined();
    expect(answered).toBeNull();
    expect(store.lastLsn).toBe(before);
    expect(store.publishedLsn).toBe(before);
    release();
    await bg;
    expect(answered!.lsn).toBe(before + 1);
    expect(store.lastLsn).toBe(before + 1);
    expect(store.publishedLsn).toBe(before + 1);
    expect(stats).toMatchObject({ deferred: 1, logSyncs: 1 });
    expect((await store.getRow('t.kv', [1]))?.values).toEqual({ k: 1, v: 'v1' });
  });

  it('a foreground commit written over it before its sync ends makes it durable: both are answered without waiting for that sync, in LSN order', async () => {
    holding = true;
    const order: number[] = [];
    const bg = store.commit(put(1, true)).then((r) => order.push(r.lsn));
    await until(() => held.length === 1);
    // Queued while the frame's sync runs: written at once with its own sync, to the same log
    // file, which makes the frame durable too: neither waits for the held log sync.
    const fg = store.commit(put(2)).then((r) => order.push(r.lsn));
    await Promise.all([bg, fg]);
    expect(held.length).toBe(1);
    expect(order).toEqual([order[0], order[0] + 1]);
    expect((await store.getRow('t.kv', [1]))?.values).toEqual({ k: 1, v: 'v1' });
    release();
    const seen: number[] = [];
    for await (const f of store.frames()) seen.push(f.lsn);
    expect(seen.slice(-2)).toEqual(order);
  });

  it('a foreground commit queued when the frame is written covers it with its own synced batch (no sync of its own)', async () => {
    const current = host.currentLog.bind(host);
    let fg: Promise<CommitResult> | null = null;
    // Right after the frame's batch is written (the writer asks which log file it went to), a foreground commit arrives.
    host.currentLog = async () => {
      fg ??= store.commit(put(2));
      return current();
    };
    const bg = store.commit(put(1, true));
    await until(() => fg !== null);
    const [b, f] = await Promise.all([bg, fg!]);
    expect(f.lsn).toBe(b.lsn + 1);
    expect(stats).toMatchObject({ deferred: 1, logSyncs: 0 });
    // That batch recorded the frame it covered (recovery's clue, should a power loss keep it without the frame).
    const mark = await (store as unknown as { db: ClassicLevel<Buffer, Buffer> }).db.get(DEFERRED_MARK);
    expect(parseJson<{ from: number }>(mark!)).toEqual({ from: b.lsn, restore: [] });
  });

  it('writes a few frames before one sync covers them, none answered before it, all in LSN order', async () => {
    holding = true;
    const done: number[] = [];
    const all = [1, 2, 3, 4, 5].map((k) => store.commit(put(k, true)).then((r) => done.push(r.lsn)));
    // Three written without sync, then one sync for them; the other two after it, synced once the writer is idle.
    await until(() => stats.deferred === 5 && held.length === 2);
    expect(stats.logSyncs).toBe(2);
    expect(done).toEqual([]);
    release();
    await Promise.all(all);
    expect(done).toEqual([1, 2, 3, 4, 5].map((i) => done[0] + i - 1));
    expect(store.publishedLsn).toBe(done[4]);
  });

  it('answers every commit of a mixed load in LSN order, each once durable, whatever the log syncs and file checks take', async () => {
    // Random delays where the writer waits for the file system: runs start, grow, are covered and applied meanwhile.
    const jitter = () => new Promise((r) => setTimeout(r, Math.random() * 3));
    const sync = host.syncLog.bind(host);
    const current = host.currentLog.bind(host);
    host.syncLog = async () => (await jitter(), sync());
    host.currentLog = async () => (await jitter(), current());
    const order: number[] = [];
    const all: Array<Promise<unknown>> = [];
    for (let i = 0; i < 200; i++) {
      all.push(store.commit(put(1000 + i, i % 3 !== 0)).then((r) => order.push(r.lsn)));
      if (i % 17 === 0) await new Promise((r) => setTimeout(r, 1));
    }
    await Promise.all(all);
    expect(order).toEqual([...order].sort((a, b) => a - b));
    expect(stats.deferred).toBeGreaterThan(10);
    expect(store.publishedLsn).toBe(store.lastLsn);
    const snap = store.snapshot();
    let rows = 0;
    try {
      for await (const b of snap.scanRows('t.kv')) rows += b.length;
    } finally {
      await snap.release();
    }
    expect(rows).toBe(200);
  });

  it('writes every batch with sync when the store is opened with deferRedoableSync false', async () => {
    await store.close();
    store = await TenantStore.open({ dir, deferRedoableSync: false });
    await store.commit(put(1, true));
    expect((store as unknown as Internals).coordinator.stats).toMatchObject({ deferred: 0, logSyncs: 0 });
  });
});

describe('recovery after a power loss lost a deferred frame', () => {
  it('fills its LSN with an empty frame when a later frame survived, and goes on from the last one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'deferred-lost-'));
    try {
      let store = await TenantStore.open({ dir });
      await store.registerSchema(T);
      const lsns: number[] = [];
      for (const k of [1, 2, 3]) lsns.push((await store.commit(put(k, k === 2))).lsn);
      await store.close();
      // What a power loss can leave: frame 2 (deferred, its sync unfinished) lost with its keys,
      // frame 3 (synced by LevelDB, recording frame 2 as deferred under it) kept.
      const db = new ClassicLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
      await db.open();
      await db.batch().del(logKey(lsns[1])).put(DEFERRED_MARK, deferredMark(lsns[1], [])).write({ sync: true });
      await db.close();
      store = await TenantStore.open({ dir });
      expect(store.recovery.lostDeferred).toEqual([lsns[1]]);
      const frames = [];
      for await (const f of store.frames(lsns[0])) frames.push(f);
      expect(frames.map((f) => [f.lsn, f.changes.length])).toEqual([
        [lsns[0], 1],
        [lsns[1], 0],
        [lsns[2], 1],
      ]);
      expect(frames[1].meta).toMatchObject({ route: 'lost deferred frame' });
      expect((await store.commit(put(4))).lsn).toBe(lsns[2] + 1);
      await store.close();
      // Once filled, the clue is gone: the next open repairs nothing.
      store = await TenantStore.open({ dir });
      expect(store.recovery.lostDeferred).toEqual([]);
      await store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("starts each run's clue at the cursor the previous run left, whether this writer wrote it or a reopened store reads it", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'deferred-runs-'));
    const step = (cursor: number, expect: number | null, background: boolean): CommitRequest => ({
      changes: [{ op: 'migration', migration: 'm1', step: 'backfill', cursor: [cursor], state: { done: cursor }, expect_cursor: expect === null ? null : [expect] }],
      ...(background ? { background: true, redoable: true } : {}),
    });
    const clue = async (s: TenantStore) => {
      const mark = parseJson<{ from: number; restore: Array<[string, string]> }>((await (s as unknown as { db: ClassicLevel<Buffer, Buffer> }).db.get(DEFERRED_MARK))!);
      return { from: mark.from, cursors: mark.restore.map(([, v]) => parseJson<{ cursor: number[] }>(Buffer.from(v, 'hex')).cursor) };
    };
    try {
      let store = await TenantStore.open({ dir });
      await store.commit(step(5, null, false));
      // Each commit is answered once durable: every run below has ended (synced) before the next starts.
      const a = await store.commit(step(9, 5, true));
      expect(await clue(store)).toEqual({ from: a.lsn, cursors: [[5]] });
      await store.commit(step(12, 9, true));
      const b = await store.commit(step(15, 12, true));
      expect(await clue(store)).toEqual({ from: b.lsn, cursors: [[12]] });
      await store.close();
      store = await TenantStore.open({ dir });
      const c = await store.commit(step(20, 15, true));
      expect(await clue(store)).toEqual({ from: c.lsn, cursors: [[15]] });
      await store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('sets a backfill cursor the run moved back to its value before the run, so the lost frame is copied again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'deferred-cursor-'));
    try {
      let store = await TenantStore.open({ dir });
      const step = (cursor: number, expect: number | null, background: boolean, migration = 'm1'): CommitRequest => ({
        changes: [{ op: 'migration', migration, step: 'backfill', cursor: [cursor], state: { done: cursor }, expect_cursor: expect === null ? null : [expect] }],
        ...(background ? { background: true, redoable: true } : {}),
      });
      const p = await store.commit(step(5, null, false));
      const p2 = await store.commit(step(50, null, false, 'm2'));
      // A run of deferred frames of two backfills; the writer's clue is in their batches.
      const [l1, l2] = await Promise.all([store.commit(step(9, 5, true)), store.commit(step(12, 9, true)), store.commit(step(60, 50, true, 'm2'))]);
      const db = (store as unknown as { db: ClassicLevel<Buffer, Buffer> }).db;
      const markBytes = (await db.get(DEFERRED_MARK))!;
      const mark = parseJson<{ from: number; restore: Array<[string, string]> }>(markBytes);
      expect(mark.from).toBe(l1.lsn);
      expect(mark.restore.map(([k]) => k)).toEqual([metaKey('migration', 'm1').toString('hex'), metaKey('migration', 'm2').toString('hex')]);
      expect(mark.restore.map(([, v]) => parseJson<{ cursor: number[] }>(Buffer.from(v, 'hex')).cursor)).toEqual([[5], [50]]);
      await store.close();
      // A power loss lost the first of them and kept the second (its cursor, [12], is the one stored).
      const raw = new ClassicLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
      await raw.open();
      await raw.batch().del(logKey(l1.lsn)).put(DEFERRED_MARK, markBytes).write({ sync: true });
      await raw.close();
      store = await TenantStore.open({ dir });
      expect(store.recovery.lostDeferred).toEqual([l1.lsn]);
      // Back at the cursor before the run: the rows of both frames are copied again, none skipped.
      expect(await store.migrationStep('m1')).toMatchObject({ step: 'backfill', cursor: [5], lsn: p.lsn });
      expect(await store.migrationStep('m2')).toMatchObject({ step: 'backfill', cursor: [50], lsn: p2.lsn });
      expect(l2.lsn).toBe(l1.lsn + 1);
      await store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
