/**
 * Edges under the declaring table's key id (libs/storage DESIGN.md "Key ids"), on a real store:
 * a table switched onto another table's keys (a migration's cutover, whose shadow declares the
 * same relation pointing at itself) traverses that table's edges at once, its old edges are
 * cleared in the background, the other table's background drop keeps them, and a reopen
 * answers the same.
 */
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { KEYSPACE, prefixRange, TenantStore } from '@mmdb/storage';
import { GraphIndex } from './graph-index';

const table = (name: string) => `namespace = "lib"
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
const settle = async (f: () => Promise<boolean>) => {
  const end = Date.now() + 20_000;
  while (!(await f()) && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
};

describe('edges follow a key switch', () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

  it('traversal, background clear, shadow drop and reopen', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'graph-keyids-'));
    dirs.push(dir);
    let graph = new GraphIndex();
    let store = await TenantStore.open({ dir, participants: [graph], sync: false });
    try {
      await store.registerSchema(table('papers'));
      await store.registerSchema(table('papers__mig_x'));
      for (let i = 0; i < 5; i++) {
        await store.put('lib.papers', { id: i, cites: [(i + 1) % 5] });
        await store.put('lib.papers__mig_x', { id: i, cites: [(i + 2) % 5] });
      }
      expect(await graph.neighbors('lib.papers', 'cites', '0')).toEqual(['1']);
      // The target manifest names the table itself; the edges are the other table's.
      await store.commit({ changes: [{ op: 'schema_put', toml: table('papers'), physical: 'lib.papers__mig_x' }] });
      expect(await graph.neighbors('lib.papers', 'cites', '0')).toEqual(['2']);
      const old = prefixRange(KEYSPACE.edge, ['lib.papers']);
      await settle(async () => (await store.db.keys({ ...old, limit: 1 }).all()).length === 0);
      expect(await store.db.keys({ ...old, limit: 1 }).all()).toEqual([]);
      await store.commit({ changes: [{ op: 'schema_drop', schema: 'lib.papers__mig_x', background: true }] });
      await store.put('lib.papers', { id: 0, cites: [3] });
      expect(await graph.neighbors('lib.papers', 'cites', '0')).toEqual(['3']);
      expect(await graph.bfs('lib.papers', 'cites', '1', 2)).toHaveLength(3);
      expect((await store.verify()).differences).toEqual([]);
    } finally {
      await store.close();
    }
    graph = new GraphIndex();
    store = await TenantStore.open({ dir, participants: [graph], sync: false });
    try {
      expect(await graph.neighbors('lib.papers', 'cites', '0')).toEqual(['3']);
      expect(await graph.neighbors('lib.papers', 'cites', '4')).toEqual(['1']);
    } finally {
      await store.close();
    }
  });
});
