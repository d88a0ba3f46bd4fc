/**
 * Vector entries under the table's key id (libs/storage DESIGN.md "Key ids"), on a real store:
 * a table switched onto another table's keys (a migration's cutover) answers top-k from that
 * table's entries and index at once (their metadata and index parameters), its old entries are
 * cleared in the background and its old index dropped from memory, the other table's
 * background drop keeps them, and a reopen (from the images and from the keys) answers the same.
 */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { KEYSPACE, prefixRange, TenantStore } from '@mmdb/storage';
import { CHECKPOINT_KEY } from './keys';
import { VectorParticipant } from './participant';

const table = (name: string, col: string, m: number) => `namespace = "app"
table = "${name}"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "i64"
required = true
[[columns]]
name = "${col}"
ty = "str"
[[columns]]
name = "emb"
ty = "vector"
dim = 2
[vector]
column = "emb"
dim = 2
metric = "l2"
index = "hnsw"
params = { m = ${m} }
`;
const settle = async (f: () => Promise<boolean>) => {
  const end = Date.now() + 20_000;
  while (!(await f()) && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
};

describe('vector entries follow a key switch', () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

  it.each([['checkpoint'], ['keys']])('top-k, background clear, shadow drop and reopen (%s)', async (reopen) => {
    const dir = mkdtempSync(join(tmpdir(), 'vector-keyids-'));
    dirs.push(dir);
    let vectors = new VectorParticipant();
    let store = await TenantStore.open({ dir, participants: [vectors], sync: false });
    try {
      await store.registerSchema(table('pics', 'kind', 16));
      await store.registerSchema(table('pics__mig_x', 'parity', 8));
      for (let i = 0; i < 20; i++) {
        await store.put('app.pics', { id: i, kind: i % 2 ? 'odd' : 'even', emb: [i, 1] });
        await store.put('app.pics__mig_x', { id: i, parity: i % 2 ? 'odd' : 'even', emb: [i, 1] });
      }
      expect(vectors.topk('app.pics', { vector: [3, 1], k: 1 })[0].metadata).toEqual({ id: 3, kind: 'odd' });
      await store.commit({ changes: [{ op: 'schema_put', toml: table('pics', 'parity', 8), physical: 'app.pics__mig_x' }] });
      expect(vectors.topk('app.pics', { vector: [3, 1], k: 1 })[0]).toMatchObject({ id: '3', metadata: { id: 3, parity: 'odd' } });
      expect(vectors.table('app.pics').spec.params).toEqual({ m: 8 });
      expect(vectors.tableNames()).toEqual(['app.pics']);
      const old = prefixRange(KEYSPACE.vector, ['app.pics']);
      await settle(async () => (await store.db.keys({ ...old, limit: 1 }).all()).length === 0);
      expect(await store.db.keys({ ...old, limit: 1 }).all()).toEqual([]);
      await store.commit({ changes: [{ op: 'schema_drop', schema: 'app.pics__mig_x', background: true }] });
      await store.put('app.pics', { id: 20, parity: 'even', emb: [20, 1] });
      expect(vectors.topk('app.pics', { vector: [20, 1], k: 1 })[0]).toMatchObject({ id: '20' });
      expect(vectors.tableNames()).toEqual(['app.pics']);
      expect((await store.verify()).differences).toEqual([]);
    } finally {
      await store.close();
    }
    if (reopen === 'keys') {
      const bare = await TenantStore.open({ dir, sync: false });
      await bare.db.del(CHECKPOINT_KEY);
      await bare.close();
    }
    vectors = new VectorParticipant();
    store = await TenantStore.open({ dir, participants: [vectors], sync: false });
    try {
      expect(vectors.stats.openedFrom).toBe(reopen);
      expect(vectors.topk('app.pics', { vector: [3, 1], k: 1 })[0]).toMatchObject({ id: '3', metadata: { id: 3, parity: 'odd' } });
      expect(vectors.table('app.pics').size).toBe(21);
      expect(vectors.tableNames()).toEqual(['app.pics']);
    } finally {
      await store.close();
    }
  });
});
