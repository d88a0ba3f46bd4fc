/**
 * The index participant on updates: an entry whose values did not change is neither written
 * nor encoded; one whose values changed moves (old deleted, new written); a json column is
 * compared by its key. Checked on the frames a real store writes and by verify.
 */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import type { CommittedFrame } from './api';
import { KEYSPACE } from './keys';
import { TenantStore } from './store';

const T = `namespace = "t"
table = "items"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "i64"
[[columns]]
name = "cat"
ty = "str"
[[columns]]
name = "doc"
ty = "json"
[[columns]]
name = "qty"
ty = "i64"
[[indexes]]
name = "by_cat"
columns = ["cat"]
[[indexes]]
name = "by_doc"
columns = ["doc"]
[[indexes]]
name = "by_qty"
columns = ["qty"]
unique = true
`;

describe('index entries on update', () => {
  let dir: string;
  let store: TenantStore;
  let frames: CommittedFrame[];
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'idx-'));
    store = await TenantStore.open({ dir });
    await store.registerSchema(T);
    frames = [];
    store.changes.subscribe((f) => frames.push(f));
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const indexWrites = (f: CommittedFrame) => f.writes.filter((w) => w.key[0] === KEYSPACE.index.charCodeAt(0));
  const catOf = async (cat: string) => {
    const snap = store.snapshot();
    const ids: unknown[] = [];
    for await (const b of snap.scanIndex('t.items', 'by_cat', { gte: [cat], lte: [cat] })) ids.push(...b.map((r) => r.pk[0]));
    await snap.release();
    return ids;
  };

  it('writes no entry of an index whose columns kept their values, and moves the others', async () => {
    await store.put('t.items', { id: 1, cat: 'a', doc: { k: [1, 2] }, qty: 5 });
    frames = [];
    // qty (unique) and cat unchanged, doc equal in value (a new object): only by_doc's key is compared
    await store.put('t.items', { id: 1, cat: 'a', doc: { k: [1, 2] }, qty: 5 });
    expect(indexWrites(frames[0])).toEqual([]);
    await store.put('t.items', { id: 1, cat: 'b', doc: { k: [1, 2] }, qty: 6 });
    const w = indexWrites(frames[1]);
    expect(w.filter((x) => x.value === null)).toHaveLength(2); // by_cat 'a', by_qty 5
    expect(w.filter((x) => x.value !== null)).toHaveLength(2); // by_cat 'b', by_qty 6
    expect(await catOf('a')).toEqual([]);
    expect(await catOf('b')).toEqual([1]);
    await store.put('t.items', { id: 1, cat: 'b', doc: { k: [3] }, qty: 6 });
    expect(indexWrites(frames[2])).toHaveLength(2); // by_doc moved
    // the unique index still refuses another row's value, and accepts the row's own
    await expect(store.put('t.items', { id: 2, cat: 'b', qty: 6 })).rejects.toMatchObject({ code: 'conflict' });
    await store.put('t.items', { id: 1, cat: 'c', doc: { k: [3] }, qty: 6 });
    expect((await store.verify()).ok).toBe(true);
  });
});
