/**
 * Indexes built in place (in-place.ts) on a real classic-level store: no shadow table and no row
 * copied; the new index's entries follow the backfill frames and every concurrent write (dual
 * writes of the entries alone); the cutover frame holds no derived key; a dropped index's
 * entries, or on abort and failure the built ones, are cleared after it; `verify` is clean and a
 * follower replaying the log ends in the same state.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { KEYSPACE, prefixRange, TenantStore } from '@mmdb/storage';
import { Migrations } from './index';
import { onFollower, USERS } from './testing/fixtures';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ROWS = 300;

describe('indexes built in place', () => {
  let dir: string;
  let store: TenantStore;
  let m: Migrations;
  const entries = async (index: string) => (await store.db.keys(prefixRange(KEYSPACE.index, ['app.users', index])).all()).length;
  const until = async (id: string, ok: () => boolean) => {
    for (const end = Date.now() + 30_000; !ok() && Date.now() < end; ) await sleep(10);
    expect(ok()).toBe(true);
    return m.get(id);
  };
  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'in-place-spec-'));
    store = await TenantStore.open({ dir, sync: false });
    await store.registerSchema(USERS);
    await store.commit({ changes: Array.from({ length: ROWS }, (_, i) => ({ op: 'put' as const, schema: 'app.users', row: { id: i, email: `u${i}@x`, age: i % 50 } })) });
    m = new Migrations(store);
    await m.attach();
  });
  afterEach(async () => {
    await m.close();
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('adds an index under concurrent writes and drops another: no shadow, no row rewritten, verify clean, a follower agrees', async () => {
    const r = await m.submit({ schema: 'app.users', operations: [{ op: 'add_index', name: 'by_age', columns: ['age'] }, { op: 'drop_index', name: 'by_email' }], throttle: { batch_size: 20 } }, 'tok');
    expect([r.plan, r.shadow, store.manifests().map((x) => x.id)]).toEqual(['in_place', null, ['app.users']]);
    // Writers during the backfill: updates (the age moves), inserts, deletes.
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < 40; i++) {
      writes.push(store.put('app.users', { id: i * 7, email: `v${i}@x`, age: 100 + i }));
      writes.push(store.put('app.users', { id: 1000 + i, email: `n${i}@x`, age: 7 }));
      if (i % 5 === 0) writes.push(store.commit({ changes: [{ op: 'delete', schema: 'app.users', pk: [i * 3 + 1] }] }));
    }
    await Promise.all(writes);
    const ready = await until(r.id, () => m.get(r.id).state === 'ReadyToCutover');
    expect(ready.progress.done).toBe(ready.progress.total);
    // Reads (and the manifest) are the old shape until cutover.
    expect(store.manifest('app.users')!.indexes.map((i) => i.name)).toEqual(['by_email']);
    const rowsBefore = (await store.db.keys(prefixRange(KEYSPACE.row, ['app.users'])).all()).length;
    const lsn = store.lastLsn;
    const done = await m.request(r.id, 'cutover', { actor: 'tok' });
    expect([done.state, done.cutover?.rows]).toEqual(['Completed', 0]);
    // The cutover frame: the manifest and the migration's records, not one row or index key.
    const frames = [];
    for await (const f of store.frames(lsn + 1)) frames.push(f);
    const cut = frames.find((f) => f.changes.some((c) => c.op === 'migration' && c.step === 'cutover'))!;
    expect(cut.changes.filter((c) => c.op === 'put' || c.op === 'delete')).toEqual([]);
    expect(cut.writes.filter((w) => w.key[0] === KEYSPACE.index.charCodeAt(0))).toEqual([]);
    await until(r.id, () => m.get(r.id).cleaned);
    expect(await entries('by_email')).toBe(0);
    // Clearing is refused for an index the table maintains.
    const clear = (index: string) => store.commit({ changes: [{ op: 'custom', participant: 'index', type: 'clear_index', payload: { schema: 'app.users', index } }] });
    await expect(clear('by_age')).rejects.toMatchObject({ code: 'conflict' });
    expect(await entries('by_age')).toBe(rowsBefore);
    const snap = store.snapshot();
    try {
      const sevens: number[] = [];
      for await (const rows of snap.scanIndex('app.users', 'by_age', { prefix: [7] })) sevens.push(...rows.map((x) => x.pk[0] as number));
      expect(sevens.length).toBe(40 + [...Array(ROWS).keys()].filter((i) => i % 50 === 7 && !(i % 7 === 0 && i / 7 < 40) && !((i - 1) % 3 === 0 && ((i - 1) / 3) % 5 === 0 && (i - 1) / 3 < 40)).length);
    } finally {
      await snap.release();
    }
    expect((await store.verify()).differences).toEqual([]);
    await onFollower(store, async (follower) => {
      expect(follower.schemaToml('app.users')).toBe(store.schemaToml('app.users'));
      expect((await follower.verify()).differences).toEqual([]);
    });
  });

  it('a unique index over duplicates fails naming them; abort and failure clear what was built', async () => {
    await store.put('app.users', { id: 5000, email: 'u3@x-dup', age: 3 });
    const bad = await m.submit({ schema: 'app.users', operations: [{ op: 'add_unique', name: 'one_age', columns: ['age'] }], throttle: { batch_size: 500 } }, 'tok');
    const failed = await until(bad.id, () => m.get(bad.id).state === 'Failed' && m.get(bad.id).cleaned);
    expect(failed.offending_keys.length).toBeGreaterThan(0);
    expect(failed.reason).toMatch(/^conflict: unique index "one_age"/);
    expect(await entries('one_age')).toBe(0);
    const slow = await m.submit({ schema: 'app.users', operations: [{ op: 'add_index', name: 'by_age', columns: ['age'] }], throttle: { batch_size: 10, max_rows_per_s: 200 } }, 'tok');
    await until(slow.id, () => m.get(slow.id).progress.done > 0);
    expect(await entries('by_age')).toBeGreaterThan(0);
    expect((await m.request(slow.id, 'abort', { actor: 'tok' })).state).toBe('Aborted');
    await until(slow.id, () => m.get(slow.id).cleaned);
    expect(await entries('by_age')).toBe(0);
    expect(store.manifest('app.users')!.indexes.map((i) => i.name)).toEqual(['by_email']);
    expect((await store.verify()).differences).toEqual([]);
  });
});
