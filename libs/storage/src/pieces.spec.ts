/**
 * Background preparation in pieces: a background request's preparation lets the event loop go
 * between pieces, and a divisible one (`split`) is cut short for a foreground request that
 * arrived meanwhile: its head is one frame, the foreground request the next, its tail the one
 * after; the caller is answered by the tail (or by the head's error, with no tail written).
 */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { KV_TOML as T } from '../test/kv-schema';
import type { Change, CommitRequest, CommittedFrame } from './api';
import type { CommitTrace } from './coordinator';
import { TenantStore } from './store';

/** A background request of puts of `ks`, divisible after any put (the head may end with `extra`). */
function divisible(ks: number[], extra: Change[] = []): CommitRequest {
  const changes: Change[] = ks.map((k) => ({ op: 'put', schema: 't.kv', row: { k, v: `bg${k}` } }));
  return {
    changes,
    background: true,
    split: (n) => (n >= ks.length ? null : { head: [...changes.slice(0, n), ...extra], tail: divisible(ks.slice(n), extra) }),
  };
}

const fg = (k: number): CommitRequest => ({ changes: [{ op: 'put', schema: 't.kv', row: { k, v: `fg${k}` } }] });

describe('background preparation in pieces', () => {
  let dir: string;
  let store: TenantStore;
  const open = async (pieceMs: number) => {
    store = await TenantStore.open({ dir, backgroundPieceMs: pieceMs });
    await store.registerSchema(T);
  };
  const frames = async () => {
    const out: CommittedFrame[] = [];
    for await (const f of store.frames()) out.push(f);
    return out;
  };
  const puts = (f: CommittedFrame) => f.changes.flatMap((c) => (c.op === 'put' ? [(c.pk as number[])[0]] : []));
  const splits = () => (store as unknown as { coordinator: { stats: { splits: number } } }).coordinator.stats.splits;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'pieces-'));
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a foreground write that arrives while a background request is prepared overtakes the rest of it', async () => {
    // A piece of a microsecond: the writer lets the event loop go after every change.
    await open(0.001);
    const ks = Array.from({ length: 40 }, (_, i) => 100 + i);
    const bg = store.commit(divisible(ks));
    // Made while the background request is being prepared (after the writer's first turn).
    const front = new Promise<Awaited<ReturnType<TenantStore['commit']>>>((r) => setImmediate(() => r(store.commit(fg(1)))));
    const [b, f] = await Promise.all([bg, front]);
    expect(splits()).toBeGreaterThanOrEqual(1);
    // The caller is answered by the last piece, with the preparation of every piece.
    expect(b.lsn).toBeGreaterThan(f.lsn);
    expect(b.prepare_ms).toBeGreaterThan(0);
    const all = await frames();
    const fgAt = all.findIndex((x) => x.lsn === f.lsn);
    const head = all[fgAt - 1];
    // The head (the puts prepared before the foreground write came), the foreground write, then the rest.
    expect(puts(head).length).toBeGreaterThanOrEqual(1);
    expect(puts(head).length).toBeLessThan(ks.length);
    expect(puts(all[fgAt])).toEqual([1]);
    const bgFrames = all.filter((x) => x.lsn !== f.lsn && puts(x).some((k) => k >= 100));
    expect(bgFrames.flatMap(puts)).toEqual(ks);
    expect(bgFrames[0].lsn).toBe(head.lsn);
    for (const k of [1, ...ks]) expect((await store.getRow('t.kv', [k]))?.values).toEqual({ k, v: k === 1 ? 'fg1' : `bg${k}` });
  });

  it('is not cut without a foreground request, nor when the store prepares background requests whole', async () => {
    await open(0.001);
    const b = await store.commit(divisible([1, 2, 3, 4]));
    expect(splits()).toBe(0);
    expect((await frames()).filter((x) => x.lsn === b.lsn).map(puts)).toEqual([[1, 2, 3, 4]]);
    await store.close();
    rmSync(dir, { recursive: true, force: true });
    dir = mkdtempSync(join(tmpdir(), 'pieces-'));
    await open(0);
    const bg = store.commit(divisible([10, 11, 12, 13]));
    const front = new Promise<Awaited<ReturnType<TenantStore['commit']>>>((r) => setImmediate(() => r(store.commit(fg(2)))));
    const [x, y] = await Promise.all([bg, front]);
    expect(splits()).toBe(0);
    expect(x.lsn).toBeLessThan(y.lsn);
    expect((await frames()).filter((f) => f.lsn === x.lsn).map(puts)).toEqual([[10, 11, 12, 13]]);
  });

  it('a head refused at its preparation fails the caller with its error, and no piece of it is written', async () => {
    await open(0.001);
    const ks = Array.from({ length: 20 }, (_, i) => 200 + i);
    // The head ends with a change that fails: the whole request is refused (the tail is never queued).
    const bg = store.commit(divisible(ks, [{ op: 'delete', schema: 't.none', pk: [1] }]));
    bg.catch(() => undefined);
    const front = new Promise<Awaited<ReturnType<TenantStore['commit']>>>((r) => setImmediate(() => r(store.commit(fg(3)))));
    await expect(bg).rejects.toMatchObject({ code: 'schema_not_found' });
    await front;
    for (const k of ks) expect(await store.getRow('t.kv', [k])).toBeUndefined();
    expect((await frames()).flatMap(puts)).toEqual([3]);
  });

  it('holds a background request for a foreground write in flight until it is answered (backgroundHoldMs), and not without it', async () => {
    type Traced = { coordinator: { stats: { holds: number }; trace: ((t: CommitTrace) => void) | null } };
    for (const hold of [60_000, 0]) {
      store = await TenantStore.open({ dir, backgroundHoldMs: hold });
      await store.registerSchema(T);
      const c = (store as unknown as Traced).coordinator;
      const traces: CommitTrace[] = [];
      c.trace = (t) => traces.push(t);
      // Both queued in one turn: the foreground write goes first, the background request is next.
      const f = store.commit(fg(7));
      const b = store.commit(divisible([20, 21, 22]));
      const [fr, br] = await Promise.all([f, b]);
      expect(br.lsn).toBeGreaterThan(fr.lsn);
      const [tf, tb] = [traces.find((t) => !t.background)!, traces.find((t) => t.background)!];
      if (hold) {
        // Its preparation began once the foreground write was answered (not while it was written).
        expect(c.stats.holds).toBe(1);
        expect(tb.taken!).toBeGreaterThanOrEqual(tf.resolved);
      } else expect(c.stats.holds).toBe(0);
      for (const k of [7, 20, 21, 22]) expect((await store.getRow('t.kv', [k]))?.values).toEqual({ k, v: k === 7 ? 'fg7' : `bg${k}` });
      await store.close();
      rmSync(dir, { recursive: true, force: true });
      dir = mkdtempSync(join(tmpdir(), 'pieces-'));
    }
    store = await TenantStore.open({ dir });
  });
});
