/**
 * Postings under the table's key id (libs/storage DESIGN.md "Key ids"), on a real store: a
 * table switched onto another table's keys (a migration's cutover) searches that table's
 * postings at once, its old postings are cleared in the background and dropped from memory,
 * the other table's background drop keeps them, and a reopen (from the checkpoint and from the
 * keys) answers the same. A user's drop and re-registration of a table starts it empty.
 */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { KEYSPACE, prefixRange, TenantStore } from '@mmdb/storage';
import { CHECKPOINT_KEY } from './checkpoint';
import { FtsParticipant } from './participant';

const table = (name: string, analyzer: string) => `namespace = "app"
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
const settle = async (f: () => Promise<boolean>) => {
  const end = Date.now() + 20_000;
  while (!(await f()) && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
};

describe('fts entries follow a key switch', () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

  it.each([['checkpoint'], ['keys']])('search, background clear, shadow drop and reopen (%s)', async (reopen) => {
    const dir = mkdtempSync(join(tmpdir(), 'fts-keyids-'));
    dirs.push(dir);
    let fts = new FtsParticipant();
    let store = await TenantStore.open({ dir, participants: [fts], sync: false });
    const ids = async (q: string) => (await fts.search('app.docs', 'body', q, 20, { feedback: 'none', proximity: 'none' })).map((h) => h.doc_id).sort();
    try {
      await store.registerSchema(table('docs', 'standard'));
      await store.registerSchema(table('docs__mig_x', 'english'));
      for (const [id, body] of [[1, 'the runners were running'], [2, 'a quiet walk']] as const) {
        await store.put('app.docs', { id, body });
        await store.put('app.docs__mig_x', { id, body });
      }
      expect(await ids('run')).toEqual([]);
      // The switch: one frame; the table now searches the other table's (stemmed) postings.
      await store.commit({ changes: [{ op: 'schema_put', toml: table('docs', 'english'), physical: 'app.docs__mig_x' }] });
      expect(await ids('run')).toEqual(['1']);
      expect(fts.fieldStats('app.docs', 'body').docs).toBe(2);
      const old = prefixRange(KEYSPACE.fts, ['app.docs']);
      await settle(async () => (await store.db.keys({ ...old, limit: 1 }).all()).length === 0);
      expect(await store.db.keys({ ...old, limit: 1 }).all()).toEqual([]);
      // The other table goes (a migration's cleanup): the keys and memory its table uses stay.
      await store.commit({ changes: [{ op: 'schema_drop', schema: 'app.docs__mig_x', background: true }] });
      await store.put('app.docs', { id: 3, body: 'running late' });
      expect(await ids('run')).toEqual(['1', '3']);
      expect((await store.verify()).differences).toEqual([]);
    } finally {
      await store.close();
    }
    if (reopen === 'keys') {
      // Without the checkpoint record the fields are rebuilt from the F keys.
      const bare = await TenantStore.open({ dir, sync: false });
      await bare.db.del(CHECKPOINT_KEY);
      await bare.close();
    }
    fts = new FtsParticipant();
    store = await TenantStore.open({ dir, participants: [fts], sync: false });
    try {
      expect(fts.stats.openedFrom).toBe(reopen);
      expect(await ids('run')).toEqual(['1', '3']);
      expect(fts.fieldStats('app.docs', 'body').docs).toBe(3);
      // A user's drop and re-registration of the same id starts empty.
      await store.dropSchema('app.docs');
      await store.registerSchema(table('docs', 'english'));
      await store.put('app.docs', { id: 9, body: 'runs' });
      expect(await ids('run')).toEqual(['9']);
    } finally {
      await store.close();
    }
  });
});
