/**
 * Entries under a table's key id (libs/storage DESIGN.md "Key ids"), on a real store with the
 * real participants: a table switched onto another table's keys (a migration's cutover, whose
 * shadow built them) answers search, top-k and traversal from that table's postings, vector
 * entries (their metadata and index parameters) and edges at once; its old entries are
 * cleared in the background and dropped from memory; the other table's background drop (the
 * migration's cleanup) keeps them; a reopen, from the participants' images and from the keys,
 * answers the same; a user's drop and re-registration of a table starts it empty.
 */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { FtsParticipant } from '@mmdb/fts';
import { GraphIndex } from '@mmdb/graph';
import { KEYSPACE, keyOf, prefixRange, TenantStore, type CommitParticipant } from '@mmdb/storage';
import { VectorParticipant } from '@mmdb/vector';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const newDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'keyids-'));
  dirs.push(d);
  return d;
};

/** Waits (bounded) until the background clear has removed every key of `id` in `space`. */
async function cleared(store: TenantStore, space: string, id: string): Promise<boolean> {
  const range = prefixRange(space, [id]);
  const end = Date.now() + 20_000;
  while ((await store.db.keys({ ...range, limit: 1 }).all()).length > 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
  return (await store.db.keys({ ...range, limit: 1 }).all()).length === 0;
}

/**
 * Runs `first` on a new store with the participant `make()`, closes it (the participant writes
 * its checkpoint), and for the `keys` variant deletes that checkpoint's record
 * (`<space> ‖ (null, "checkpoint")`) so the next open rebuilds from the keys; then runs `second`
 * on the store opened again with a new participant.
 */
async function twoLives<P extends CommitParticipant>(make: () => P, space: string, reopen: string, first: (s: TenantStore, p: P) => Promise<void>, second: (s: TenantStore, p: P) => Promise<void>): Promise<void> {
  const dir = newDir();
  for (const run of [first, second]) {
    if (run === second && reopen === 'keys') {
      const bare = await TenantStore.open({ dir, sync: false });
      await bare.db.del(keyOf(space, [null, 'checkpoint']));
      await bare.close();
    }
    const p = make();
    const store = await TenantStore.open({ dir, participants: [p], sync: false });
    try {
      await run(store, p);
    } finally {
      await store.close();
    }
  }
}

const ftsTable = (name: string, analyzer: string) => `namespace = "app"
table = "${name}"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "i64"
required = true
[[columns]]
name = "body"
ty = "str"
[[fulltext]]
field = "body"
analyzer = "${analyzer}"
`;
const vectorTable = (name: string, col: string, m: number) => `namespace = "app"
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
const graphTable = (name: string) => `namespace = "lib"
table = "${name}"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "i64"
required = true
[[columns]]
name = "cites"
ty = "json"
[[relations]]
name = "cites"
target = "lib.${name}"
columns = ["cites"]
`;

describe('fts entries follow a key switch', () => {
  const ids = async (fts: FtsParticipant, q: string) => (await fts.search('app.docs', 'body', q, 20, { feedback: 'none', proximity: 'none' })).map((h) => h.doc_id).sort();
  it.each([['checkpoint'], ['keys']])('search, background clear, shadow drop and reopen (%s)', (reopen) =>
    twoLives(() => new FtsParticipant(), KEYSPACE.fts, reopen, async (store, fts) => {
      await store.registerSchema(ftsTable('docs', 'standard'));
      await store.registerSchema(ftsTable('docs__mig_x', 'english'));
      for (const [id, body] of [[1, 'the runners were running'], [2, 'a quiet walk']] as const) {
        await store.put('app.docs', { id, body });
        await store.put('app.docs__mig_x', { id, body });
      }
      expect(await ids(fts, 'run')).toEqual([]);
      // The switch: one frame; the table now searches the other table's (stemmed) postings.
      await store.commit({ changes: [{ op: 'schema_put', toml: ftsTable('docs', 'english'), physical: 'app.docs__mig_x' }] });
      expect(await ids(fts, 'run')).toEqual(['1']);
      expect(fts.fieldStats('app.docs', 'body').docs).toBe(2);
      expect(await cleared(store, KEYSPACE.fts, 'app.docs')).toBe(true);
      // The other table goes (a migration's cleanup): the keys and memory its table uses stay.
      await store.commit({ changes: [{ op: 'schema_drop', schema: 'app.docs__mig_x', background: true }] });
      await store.put('app.docs', { id: 3, body: 'running late' });
      expect(await ids(fts, 'run')).toEqual(['1', '3']);
      expect((await store.verify()).differences).toEqual([]);
    }, async (store, fts) => {
      expect(fts.stats.openedFrom).toBe(reopen);
      expect(await ids(fts, 'run')).toEqual(['1', '3']);
      expect(fts.fieldStats('app.docs', 'body').docs).toBe(3);
      // A user's drop and re-registration of the same id starts empty.
      await store.dropSchema('app.docs');
      await store.registerSchema(ftsTable('docs', 'english'));
      await store.put('app.docs', { id: 9, body: 'runs' });
      expect(await ids(fts, 'run')).toEqual(['9']);
    }));
});

describe('vector entries follow a key switch', () => {
  it.each([['checkpoint'], ['keys']])('top-k, background clear, shadow drop and reopen (%s)', (reopen) =>
    twoLives(() => new VectorParticipant(), KEYSPACE.vector, reopen, async (store, vectors) => {
      await store.registerSchema(vectorTable('pics', 'kind', 16));
      await store.registerSchema(vectorTable('pics__mig_x', 'parity', 8));
      for (let i = 0; i < 20; i++) {
        await store.put('app.pics', { id: i, kind: i % 2 ? 'odd' : 'even', emb: [i, 1] });
        await store.put('app.pics__mig_x', { id: i, parity: i % 2 ? 'odd' : 'even', emb: [i, 1] });
      }
      expect(vectors.topk('app.pics', { vector: [3, 1], k: 1 })[0].metadata).toEqual({ id: 3, kind: 'odd' });
      // The switch: the other table's entries (their metadata) and index (its parameters) at once.
      await store.commit({ changes: [{ op: 'schema_put', toml: vectorTable('pics', 'parity', 8), physical: 'app.pics__mig_x' }] });
      expect(vectors.topk('app.pics', { vector: [3, 1], k: 1 })[0]).toMatchObject({ id: '3', metadata: { id: 3, parity: 'odd' } });
      expect(vectors.table('app.pics').spec.params).toEqual({ m: 8 });
      expect(vectors.tableNames()).toEqual(['app.pics']);
      expect(await cleared(store, KEYSPACE.vector, 'app.pics')).toBe(true);
      await store.commit({ changes: [{ op: 'schema_drop', schema: 'app.pics__mig_x', background: true }] });
      await store.put('app.pics', { id: 20, parity: 'even', emb: [20, 1] });
      expect(vectors.topk('app.pics', { vector: [20, 1], k: 1 })[0]).toMatchObject({ id: '20' });
      expect(vectors.tableNames()).toEqual(['app.pics']);
      expect((await store.verify()).differences).toEqual([]);
    }, async (_store, vectors) => {
      expect(vectors.stats.openedFrom).toBe(reopen);
      expect(vectors.topk('app.pics', { vector: [3, 1], k: 1 })[0]).toMatchObject({ id: '3', metadata: { id: 3, parity: 'odd' } });
      expect(vectors.table('app.pics').size).toBe(21);
      expect(vectors.tableNames()).toEqual(['app.pics']);
    }));
});

describe('edges follow a key switch', () => {
  it('traversal, background clear, shadow drop and reopen', () =>
    twoLives(() => new GraphIndex(), KEYSPACE.edge, 'checkpoint', async (store, graph) => {
      await store.registerSchema(graphTable('papers'));
      await store.registerSchema(graphTable('papers__mig_x'));
      for (let i = 0; i < 5; i++) {
        await store.put('lib.papers', { id: i, cites: [(i + 1) % 5] });
        await store.put('lib.papers__mig_x', { id: i, cites: [(i + 2) % 5] });
      }
      expect(await graph.neighbors('lib.papers', 'cites', '0')).toEqual(['1']);
      // The target manifest names the table itself; the edges are the other table's.
      await store.commit({ changes: [{ op: 'schema_put', toml: graphTable('papers'), physical: 'lib.papers__mig_x' }] });
      expect(await graph.neighbors('lib.papers', 'cites', '0')).toEqual(['2']);
      expect(await cleared(store, KEYSPACE.edge, 'lib.papers')).toBe(true);
      await store.commit({ changes: [{ op: 'schema_drop', schema: 'lib.papers__mig_x', background: true }] });
      await store.put('lib.papers', { id: 0, cites: [3] });
      expect(await graph.neighbors('lib.papers', 'cites', '0')).toEqual(['3']);
      expect(await graph.bfs('lib.papers', 'cites', '1', 2)).toHaveLength(3);
      expect((await store.verify()).differences).toEqual([]);
    }, async (_store, graph) => {
      expect(await graph.neighbors('lib.papers', 'cites', '0')).toEqual(['3']);
      expect(await graph.neighbors('lib.papers', 'cites', '4')).toEqual(['1']);
    }));
});
