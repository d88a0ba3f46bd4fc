/**
 * Key switches (a migration's O(1) cutover, storage side) on a real classic-level store: a
 * `schema_put` with `physical` points a table at another table's row and index keys in one
 * frame; reads, index scans, writes and foreign keys follow; the old keys are cleared in the
 * background; the mapping survives a reopen and a follower replaying the log; a `background`
 * drop of the other table keeps the keys the first one uses, and otherwise clears its own
 * in the background.
 */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { KEYSPACE, prefixRange } from './keys';
import { TenantStore } from './store';

const table = (name: string, extra = '') => `namespace = "app"
table = "${name}"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "i64"
required = true
[[columns]]
name = "v"
ty = "str"
[[indexes]]
name = "by_v"
columns = ["v"]
unique = true
${extra}`;

const count = async (store: TenantStore, space: string, id: string) => (await store.db.keys({ ...prefixRange(space, [id]) }).all()).length;
const settle = async (f: () => Promise<boolean>) => {
  const end = Date.now() + 20_000;
  while (!(await f()) && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
};

describe('key switches (schema_put physical)', () => {
  const dirs: string[] = [];
  const dir = () => {
    const d = mkdtempSync(join(tmpdir(), 'physical-'));
    dirs.push(d);
    return d;
  };
  afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

  it('points a table at another table\'s keys in one frame; old keys go in the background; reopen and followers agree', async () => {
    const d = dir();
    let store = await TenantStore.open({ dir: d, sync: false });
    await store.registerSchema(table('t'));
    await store.registerSchema(table('t_new'));
    await store.registerSchema(table('child', '[[foreign_keys]]\nname = "to_t"\ncolumns = ["id"]\nreferences = "app.t"\non_delete = "restrict"\n'));
    await store.commit({ changes: [1, 2, 3].map((i) => ({ op: 'put' as const, schema: 'app.t', row: { id: i, v: `old${i}` } })) });
    await store.commit({ changes: [1, 2, 3].map((i) => ({ op: 'put' as const, schema: 'app.t_new', row: { id: i, v: `new${i}` } })) });
    // Unknown or own keys are refused.
    await expect(store.commit({ changes: [{ op: 'schema_put', toml: table('t'), physical: 'app.nope' }] })).rejects.toMatchObject({ code: 'validation_failed' });
    await expect(store.commit({ changes: [{ op: 'schema_put', toml: table('t'), physical: 'app.t' }] })).rejects.toMatchObject({ code: 'validation_failed' });

    await store.commit({ changes: [{ op: 'schema_put', toml: table('t'), physical: 'app.t_new' }] });
    expect(store.manifest('app.t')!.physical).toBe('app.t_new');
    expect((await store.getRow('app.t', [2]))?.values).toEqual({ id: 2, v: 'new2' });
    const snap = store.snapshot();
    const viaIndex: unknown[] = [];
    for await (const rows of snap.scanIndex('app.t', 'by_v', {})) viaIndex.push(...rows.map((x) => x.values.v));
    await snap.release();
    expect(viaIndex).toEqual(['new1', 'new2', 'new3']);
    // Writes go to the new keys; the unique index there is enforced; foreign keys resolve through them.
    await store.put('app.t', { id: 4, v: 'w4' });
    await expect(store.put('app.t', { id: 5, v: 'new1' })).rejects.toMatchObject({ code: 'conflict' });
    await store.put('app.child', { id: 4, v: 'c' });
    await expect(store.delete('app.t', [4])).rejects.toMatchObject({ code: 'fk_violation' });
    await settle(async () => (await count(store, KEYSPACE.row, 'app.t')) + (await count(store, KEYSPACE.index, 'app.t')) === 0);
    expect(await count(store, KEYSPACE.row, 'app.t')).toBe(0);
    expect(await count(store, KEYSPACE.index, 'app.t')).toBe(0);
    expect(await store.db.keys({ ...prefixRange(KEYSPACE.meta, ['retiring']) }).all()).toEqual([]);

    // The other table's background drop keeps the keys app.t now uses.
    await store.commit({ changes: [{ op: 'schema_drop', schema: 'app.t_new', background: true }] });
    expect((await store.getRow('app.t', [4]))?.values).toEqual({ id: 4, v: 'w4' });
    // A later manifest change keeps the switch.
    await store.registerSchema(table('t', '[[checks]]\nname = "short"\nexpr = "length(v) < 10"\n'));
    expect(store.manifest('app.t')!.physical).toBe('app.t_new');
    expect((await store.verify()).differences).toEqual([]);

    await store.close();
    store = await TenantStore.open({ dir: d, sync: false });
    expect(store.manifest('app.t')!.physical).toBe('app.t_new');
    expect((await store.getRow('app.t', [3]))?.values).toEqual({ id: 3, v: 'new3' });
    expect((await store.verify()).differences).toEqual([]);

    // A follower replaying the log ends with the same keys and rows.
    const f = await TenantStore.open({ dir: dir(), sync: false });
    try {
      const bytes: Buffer[] = [];
      for await (const e of store.logFrames()) bytes.push(e.bytes);
      await f.applyFrames(bytes);
      expect(f.manifest('app.t')!.physical).toBe('app.t_new');
      for (const k of [1, 2, 3, 4]) expect((await f.getRow('app.t', [k]))?.values).toEqual((await store.getRow('app.t', [k]))?.values);
      await settle(async () => (await count(f, KEYSPACE.row, 'app.t')) === 0);
      expect(await count(f, KEYSPACE.row, 'app.t')).toBe(0);
      expect((await f.verify()).differences).toEqual([]);
    } finally {
      await f.close();
    }
    await store.close();
  });

  it('a background drop clears its own row and index keys after the frame (and its marker)', async () => {
    const store = await TenantStore.open({ dir: dir(), sync: false });
    try {
      await store.registerSchema(table('s'));
      await store.commit({ changes: Array.from({ length: 50 }, (_, i) => ({ op: 'put' as const, schema: 'app.s', row: { id: i, v: `v${i}` } })) });
      await store.commit({ changes: [{ op: 'schema_drop', schema: 'app.s', background: true }] });
      expect(store.manifest('app.s')).toBeUndefined();
      await settle(async () => (await count(store, KEYSPACE.row, 'app.s')) + (await count(store, KEYSPACE.index, 'app.s')) === 0);
      expect(await count(store, KEYSPACE.row, 'app.s')).toBe(0);
      expect(await count(store, KEYSPACE.index, 'app.s')).toBe(0);
      expect(await store.db.keys({ ...prefixRange(KEYSPACE.meta, ['retiring']) }).all()).toEqual([]);
      expect((await store.verify()).differences).toEqual([]);
    } finally {
      await store.close();
    }
  });
});
