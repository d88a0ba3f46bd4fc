/**
 * Appends read nothing (DESIGN.md "Appends read nothing", row-tops.ts): a put whose row key
 * sorts above every row its table may hold skips the read of its current version. These check
 * that the bound never claims a row absent that exists: rows from before a reopen, rows written
 * by the group in flight, and rows that frames from elsewhere (applyFrames) added after the bound
 * was read.
 */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { KV_TOML as T } from '../test/kv-schema';
import { TenantStore } from './store';

const frames = async (s: TenantStore, from: number): Promise<Buffer[]> => {
  const out: Buffer[] = [];
  for await (const e of s.logFrames(from)) out.push(e.bytes);
  return out;
};

interface Internals {
  db: { getMany(keys: Buffer[]): Promise<unknown[]>; get(key: Buffer): Promise<unknown> };
}

/** A table keyed by a hidden rowid the store assigns (as libs/sql makes for a table without a primary key). */
const HIDDEN = `namespace = "t"
table = "log"
primary_key = ["_rowid"]
hidden_rowid = true
[[columns]]
name = "_rowid"
ty = "i64"
required = true
[[columns]]
name = "msg"
ty = "str"
`;

describe('appends read nothing (row-key bounds)', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'row-tops-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('reads no row for a batch of keys above the table and still finds rows below it, after a reopen too', async () => {
    let s = await TenantStore.open({ dir });
    await s.registerSchema(T);
    await s.commit({ changes: [1, 2, 3].map((k) => ({ op: 'put', schema: 't.kv', row: { k, v: 'a' } })) });
    await s.close();
    s = await TenantStore.open({ dir });
    const db = (s as unknown as Internals).db;
    const getMany = db.getMany.bind(db);
    const read: number[] = [];
    db.getMany = (keys) => {
      read.push(keys.length);
      return getMany(keys);
    };
    // Above every row: created, nothing read ahead.
    const up = await s.commit({ changes: [10, 11, 12].map((k) => ({ op: 'put', schema: 't.kv', row: { k, v: 'b' } })) });
    expect(up.results.map((r) => (r as { created: boolean }).created)).toEqual([true, true, true]);
    expect(read).toEqual([]);
    // Below the top: rows written before the reopen are found (updates and an insert refused).
    const mixed = await s.commit({ changes: [2, 3, 13].map((k) => ({ op: 'put', schema: 't.kv', row: { k, v: 'c' } })) });
    expect(mixed.results.map((r) => (r as { version: number }).version)).toEqual([2, 2, 1]);
    await expect(s.commit({ changes: [{ op: 'put', schema: 't.kv', row: { k: 11, v: 'd' }, precondition: { kind: 'insert' } }] })).rejects.toMatchObject({ code: 'conflict' });
    await expect(s.commit({ changes: [{ op: 'put', schema: 't.kv', row: { k: 1, v: 'd' }, precondition: { kind: 'insert' } }] })).rejects.toMatchObject({ code: 'conflict' });
    await s.close();
  });

  it('reads nothing for rows under hidden rowids the store assigns, one request at a time too', async () => {
    const s = await TenantStore.open({ dir });
    await s.registerSchema(HIDDEN);
    await s.commit({ changes: [{ op: 'put', schema: 't.log', row: { msg: 'first' } }] });
    const db = (s as unknown as Internals).db;
    const get = db.get.bind(db);
    const getMany = db.getMany.bind(db);
    let reads = 0;
    db.get = (k) => (reads++, get(k));
    db.getMany = (k) => (reads++, getMany(k));
    for (let i = 0; i < 5; i++) await s.commit({ changes: [{ op: 'put', schema: 't.log', row: { msg: `m${i}` } }, { op: 'put', schema: 't.log', row: { msg: `n${i}` } }] });
    expect(reads).toBe(0);
    // An explicit rowid below the top is an existing row: read, and updated.
    const r = await s.commit({ changes: [{ op: 'put', schema: 't.log', row: { _rowid: 1, msg: 'again' } }] });
    expect(r.results[0]).toMatchObject({ version: 2, created: false });
    await s.close();
  });

  it('sees the rows of groups in flight and of the same group', async () => {
    const s = await TenantStore.open({ dir });
    await s.registerSchema(T);
    const all = await Promise.all(Array.from({ length: 40 }, (_, i) => s.put('t.kv', { k: 100 + (i % 10), v: `x${i}` })));
    const versions = new Map<number, number[]>();
    all.forEach((r, i) => versions.set(100 + (i % 10), [...(versions.get(100 + (i % 10)) ?? []), (r.results[0] as { version: number }).version]));
    for (const v of versions.values()) expect(v).toEqual([1, 2, 3, 4]);
    await s.close();
  });

  it('rereads the bound once frames from elsewhere added rows above it', async () => {
    const a = await TenantStore.open({ dir: join(dir, 'a') });
    const b = await TenantStore.open({ dir: join(dir, 'b') });
    await a.registerSchema(T);
    await a.put('t.kv', { k: 1, v: 'a' });
    await b.applyFrames(await frames(a, 1));
    // b writes a row above a's (as a new holder would); a, which read its bound at k = 1, follows it.
    await b.put('t.kv', { k: 5, v: 'b' });
    await a.applyFrames(await frames(b, a.lastLsn + 1));
    await expect(a.commit({ changes: [{ op: 'put', schema: 't.kv', row: { k: 5, v: 'a' }, precondition: { kind: 'insert' } }] })).rejects.toMatchObject({ code: 'conflict' });
    const r = await a.put('t.kv', { k: 5, v: 'again' });
    expect((r.results[0] as { version: number }).version).toBe(2);
    await a.close();
    await b.close();
  });
});
