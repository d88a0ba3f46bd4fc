/**
 * Point reads share one LevelDB snapshot per applied group (point-snapshot.ts, issue 25 §1):
 * classic-level's `get` without a snapshot creates one in the read's constructor on the event
 * loop, under LevelDB's mutex. Counted here on the real store: the `get`s made without a
 * snapshot and the snapshots made, while the answers stay those of the last acknowledged write.
 */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { KV_TOML } from '../test/kv-schema';
import { PointReadSnapshot } from './point-snapshot';
import { TenantStore } from './store';

type Db = TenantStore['db'];

/** Counts the database's `get`s and `getMany`s without an explicit snapshot, and the snapshots made and closed. */
function spyLevel(db: Db) {
  const n = { implicitGets: 0, snapshots: 0, closed: 0 };
  const get = db.get.bind(db);
  const getMany = db.getMany.bind(db);
  (db as unknown as { getMany: unknown }).getMany = (keys: Buffer[], o?: { snapshot?: unknown }) => {
    n.implicitGets += o?.snapshot ? 0 : 1;
    return getMany(keys, o as never);
  };
  const snapshot = db.snapshot.bind(db);
  (db as unknown as { get: unknown }).get = (key: Buffer, o?: { snapshot?: unknown }) => {
    if (!o?.snapshot) n.implicitGets++;
    return get(key, o as never);
  };
  (db as unknown as { snapshot: unknown }).snapshot = () => {
    n.snapshots++;
    const s = snapshot();
    const close = s.close.bind(s);
    (s as unknown as { close: unknown }).close = () => {
      n.closed++;
      return close();
    };
    return s;
  };
  return n;
}

const internals = (s: TenantStore) => s as unknown as { tableLsns: Map<string, number> };

describe('point reads and LevelDB snapshots', () => {
  let dir: string;
  let store: TenantStore;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'point-snap-'));
    // no row cache: every point read goes to LevelDB
    store = await TenantStore.open({ dir, sync: false, rowCacheRows: 0 });
    await store.registerSchema(KV_TOML);
    // no retirement by age within a test, however slow the host (the counts below are per group)
    (store as unknown as { pointReads: PointReadSnapshot }).pointReads = new PointReadSnapshot(store.db, () => ({ lsn: store.lastLsn, tableLsns: new Map(internals(store).tableLsns) }), 600_000);
  });

  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('makes one snapshot per applied group, not one per read, and reads what was acknowledged', async () => {
    await store.commit({ changes: Array.from({ length: 200 }, (_, i) => ({ op: 'put' as const, schema: 't.kv', row: { k: i, v: `a${i}` } })) });
    const n = spyLevel(store.db);
    const rows = await Promise.all(Array.from({ length: 200 }, (_, i) => store.getRow('t.kv', [i])));
    expect(rows.map((r) => r?.values.v)).toEqual(Array.from({ length: 200 }, (_, i) => `a${i}`));
    for (let i = 0; i < 50; i++) expect((await store.getRowJson('t.kv', [i]))?.json).toBe(JSON.stringify({ k: i, v: `a${i}` }));
    expect(await store.getRow('t.kv', [999])).toBeUndefined();
    expect(n).toEqual({ implicitGets: 0, snapshots: 1, closed: 0 });

    // a write acknowledged: the next read sees it, through a new snapshot; the old one is closed
    await store.commit({ changes: [{ op: 'put', schema: 't.kv', row: { k: 7, v: 'b7' } }, { op: 'delete', schema: 't.kv', pk: [8] }] });
    const writer = n.implicitGets; // the writer's own reads of the rows it changes (not point reads)
    expect((await store.getRow('t.kv', [7]))?.values.v).toBe('b7');
    expect(await store.getRow('t.kv', [8])).toBeUndefined();
    expect((await store.getRow('t.kv', [9]))?.values.v).toBe('a9');
    await new Promise((r) => setImmediate(r));
    expect(n).toEqual({ implicitGets: writer, snapshots: 2, closed: 1 });
  });

  it('reads several rows in one store read through the shared snapshot (getRows)', async () => {
    await store.commit({ changes: Array.from({ length: 20 }, (_, i) => ({ op: 'put' as const, schema: 't.kv', row: { k: i, v: `r${i}` } })) });
    const n = spyLevel(store.db);
    const many = jest.spyOn(store.db, 'getMany');
    const rows = await store.getRows('t.kv', [[3], [99], [0], [19], [3]]);
    expect(rows.map((r) => r?.values.v)).toEqual(['r3', undefined, 'r0', 'r19', 'r3']);
    expect(rows[0]).toEqual(await store.getRow('t.kv', [3]));
    expect(many).toHaveBeenCalledTimes(1);
    expect(n).toEqual({ implicitGets: 0, snapshots: 1, closed: 0 });
    await expect(store.getRows('t.nope', [[1]])).rejects.toMatchObject({ code: 'schema_not_found' });
  });

  it('never answers older than the last acknowledged write while writes run', async () => {
    await store.put('t.kv', { k: 1, v: '0' });
    const n = spyLevel(store.db);
    let acked = 0;
    const writer = (async () => {
      for (let i = 1; i <= 40; i++) {
        await store.put('t.kv', { k: 1, v: String(i) });
        acked = i;
      }
    })();
    let reads = 0;
    const readers = Array.from({ length: 4 }, async () => {
      while (acked < 40) {
        const floor = acked;
        const r = await store.getRow('t.kv', [1]);
        expect(Number(r!.values.v)).toBeGreaterThanOrEqual(floor);
        reads++;
      }
    });
    await Promise.all([writer, ...readers]);
    expect((await store.getRow('t.kv', [1]))?.values.v).toBe('40');
    // at most one snapshot per applied group (41 groups here), however many reads
    expect(reads).toBeGreaterThan(0);
    expect(n.snapshots).toBeLessThanOrEqual(41);
    expect(n.snapshots - n.closed).toBeLessThanOrEqual(1);
  });

  it('closes a shared snapshot no read retired once it is old (it would pin overwritten versions)', async () => {
    await store.put('t.kv', { k: 3, v: 'c' });
    const n = spyLevel(store.db);
    const reads = new PointReadSnapshot(store.db, () => ({ lsn: 0, tableLsns: new Map() }), 20);
    const held = reads.acquire(1, true)!;
    const second = reads.acquire(1, true)!;
    expect(second.snap).toBe(held.snap); // shared
    held.release();
    second.release();
    expect(n).toEqual({ implicitGets: 0, snapshots: 1, closed: 0 }); // no group applied: kept for the next read
    await new Promise((r) => setTimeout(r, 60));
    expect(n).toEqual({ implicitGets: 0, snapshots: 1, closed: 1 }); // retired by age, no reader left: closed
    const next = reads.acquire(1, true)!;
    expect(n.snapshots).toBe(2);
    expect(reads.acquire(2, false)).toBeUndefined(); // moved on while a group is written: none made
    next.release();
    expect(n.closed).toBe(2); // retired by the move, closed with its last reader
  });

  it("shares the point reads' snapshot with queries (readSnapshot): stable, at the store's position, one per applied group", async () => {
    await store.commit({ changes: Array.from({ length: 5 }, (_, i) => ({ op: 'put' as const, schema: 't.kv', row: { k: i, v: `q${i}` } })) });
    const n = spyLevel(store.db);
    const rowsOf = async (s: ReturnType<TenantStore['snapshot']>) => {
      const out: unknown[] = [];
      for await (const b of s.scanRows('t.kv')) for (const r of b) out.push(r.values.v);
      return out;
    };
    const a = store.readSnapshot();
    const b = store.readSnapshot();
    expect(await store.getRow('t.kv', [1])).toMatchObject({ values: { v: 'q1' } });
    expect(n.snapshots).toBe(1); // one LevelDB snapshot for both queries and the point read
    expect(a.stable).toBe(true);
    expect(a.lsn).toBe(store.lastLsn);
    expect(a.tableLsn('t.kv')).toBe(store.tableLsn('t.kv'));
    await a.release();
    expect(n.closed).toBe(0); // b still reads it
    await store.put('t.kv', { k: 9, v: 'late' });
    const writer = n.implicitGets; // the writer's own reads, if any (not the readers')
    expect(await rowsOf(b)).toEqual(['q0', 'q1', 'q2', 'q3', 'q4']); // its own moment, not the later write
    const c = store.readSnapshot();
    expect(n.snapshots).toBe(2);
    expect(await rowsOf(c)).toEqual(['q0', 'q1', 'q2', 'q3', 'q4', 'late']);
    expect(c.tableLsn('t.kv')).toBe(store.tableLsn('t.kv'));
    await b.release();
    expect(n.closed).toBe(1); // the first, retired by the write, closed with its last reader
    await c.release();
    expect(n.implicitGets).toBe(writer); // no reader made an implicit snapshot
  });

  it('answers a table LSN without a snapshot, the same as a snapshot would', async () => {
    const n = spyLevel(store.db);
    expect(store.tableLsn('t.kv')).toBeGreaterThan(0); // registered by a frame
    const before = store.tableLsn('t.kv');
    await store.put('t.kv', { k: 2, v: 'x' });
    const after = store.tableLsn('t.kv');
    expect(after).toBeGreaterThan(before);
    expect(store.tableLsn('t.nope')).toBe(0);
    expect(n.snapshots).toBe(0);
    const s = store.snapshot();
    try {
      expect(s.tableLsn('t.kv')).toBe(after);
    } finally {
      await s.release();
    }
  });
});
