/**
 * Reads ahead of the writer (read-ahead.ts): a background request's rows are read when it is
 * queued, and a value some group wrote after that read was issued is never used (the writer
 * reads it again), whether the read is checked alone or through the store.
 */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { ClassicLevel } from 'classic-level';
import { KV_TOML as T } from '../test/kv-schema';
import type { CommitRequest } from './api';
import { WriteSet } from './context';
import { ReadAhead } from './read-ahead';
import type { Db } from './snapshot';
import { TenantStore } from './store';

const SHADOW = T.replace('table = "kv"', 'table = "kv_shadow"');
const b = (s: string) => Buffer.from(s);

describe('ReadAhead', () => {
  let dir: string;
  let db: Db;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'read-ahead-'));
    db = new ClassicLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
    await db.open();
    await db.batch([{ type: 'put', key: b('a'), value: b('1') }, { type: 'put', key: b('b'), value: b('2') }]);
  });
  afterEach(async () => {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const wrote = (...keys: string[]) => {
    const w = new WriteSet();
    for (const k of keys) w.set(b(k), b('new'));
    return w;
  };

  it('keeps the values no later group wrote and drops the others', async () => {
    const ra = new ReadAhead(db);
    expect(ra.start([], 5)).toBeUndefined();
    const e = ra.start([b('a'), b('b'), b('c')], 5)!;
    await e.ready;
    // Groups durable up to LSN 5 were in the store when the read began; LSN 6 wrote `a` after it.
    ra.written(6, wrote('a'));
    const v = (await ra.take(e))!;
    expect([...v.keys()].sort()).toEqual(['b', 'c']);
    expect(v.get('b')?.toString()).toBe('2');
    expect(v.has('c') && v.get('c') === undefined).toBe(true);
    expect(ra.stats).toMatchObject({ reads: 1, dropped: 1, keys: 2 });
  });

  it('checks a read against every group durable since it began, also with several reads outstanding', async () => {
    const ra = new ReadAhead(db);
    const first = ra.start([b('a'), b('b')], 5)!;
    ra.written(6, wrote('b'));
    const second = ra.start([b('a'), b('b')], 6)!;
    ra.written(7, wrote('a'));
    expect([...(await ra.take(first))!.keys()]).toEqual([]);
    // The second began after LSN 6 was durable: only LSN 7's write is missing from it.
    expect([...(await ra.take(second))!.keys()]).toEqual(['b']);
  });

  it('trusts no read once frames joined the log outside the writer, or older than the groups it remembers', async () => {
    const ra = new ReadAhead(db);
    const e = ra.start([b('a')], 1)!;
    ra.reset();
    expect(await ra.take(e)).toBeNull();
    const old = ra.start([b('a')], 1)!;
    for (let lsn = 2; lsn < 100; lsn++) ra.written(lsn, wrote('z'));
    expect(await ra.take(old)).toBeNull();
    // Nor one behind a group of more key writes than it keeps (a load).
    const behind = ra.start([b('a')], 100)!;
    ra.written(101, wrote(...Array.from({ length: 70_000 }, (_, i) => `k${i}`)));
    expect(await ra.take(behind)).toBeNull();
    // With nothing outstanding nothing is remembered: a new read starts clean.
    const fresh = ra.start([b('a')], 400)!;
    expect((await ra.take(fresh))!.get('a')?.toString()).toBe('1');
  });
});

describe('a background request read ahead, through the store', () => {
  let dir: string;
  let store: TenantStore;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'read-ahead-store-'));
    // No read cache: every row the backfill copies is read from the disk (ahead).
    store = await TenantStore.open({ dir, rowCacheRows: 0 });
    await store.registerSchema(T);
    await store.registerSchema(SHADOW);
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('copies a row as the group that became durable after its read ahead left it', async () => {
    store.setRowMirror('t.kv', {
      target: 't.kv_shadow',
      mirror: (ev) => (ev.after ? [{ op: 'put', schema: 't.kv_shadow', row: { k: ev.after.values.k, v: `${String(ev.after.values.v)}!` } }] : [{ op: 'delete', schema: 't.kv_shadow', pk: ev.pk }]),
    });
    await store.commit({ changes: [1, 2, 3].map((k) => ({ op: 'put' as const, schema: 't.kv', row: { k, v: `a${k}` } })) });
    const coordinator = (store as unknown as { coordinator: { submit(r: CommitRequest): Promise<unknown>; ahead: ReadAhead; depth: number } }).coordinator;
    // A large foreground group (row 2 among its rows) is prepared; the backfill frame is queued meanwhile (its read of
    // rows 1-3 goes ahead at once), then a foreground write of another row, which goes before it. So the frame is
    // prepared once the large group is durable: row 2 as that group left it, not as the read ahead saw it.
    const rows = [{ k: 2, v: 'b2' }, ...Array.from({ length: 2000 }, (_, i) => ({ k: 1000 + i, v: 'x' }))];
    const big = coordinator.submit({ changes: rows.map((row) => ({ op: 'put' as const, schema: 't.kv', row })) });
    while (coordinator.depth > 0) await new Promise((r) => setImmediate(r));
    const frame = coordinator.submit({ changes: [1, 2, 3].map((k) => ({ op: 'mirror' as const, schema: 't.kv', pk: [k] })), background: true });
    const write = coordinator.submit({ changes: [{ op: 'put', schema: 't.kv', row: { k: 5, v: 'c5' } }] });
    await Promise.all([big, frame, write]);
    expect(coordinator.ahead.stats.dropped).toBeGreaterThanOrEqual(1);
    expect(coordinator.ahead.stats.reads).toBeGreaterThanOrEqual(1);
    const shadow = await Promise.all([1, 2, 3].map((k) => store.getRow('t.kv_shadow', [k])));
    expect(shadow.map((r) => r?.values.v)).toEqual(['a1!', 'b2!', 'a3!']);
    expect(shadow[1]?.version).toBe(2);
  });
});
