/**
 * A migration of a table with a full-text field, a vector column and a relation survives
 * SIGKILL (apps/api README "Migrations"): its shadow builds the postings, vector entries and
 * edges during the backfill (dual-written with every foreground write, across the crash), the
 * cutover is one key-switch frame (after a crash mid-cutover the table is wholly old or wholly
 * new), and the cleanup finishes after a crash. Then search, top-k and traversal answer from
 * the new shape, `verify` finds every derived key in place, and the table's old keys (rows,
 * postings, vector entries, edges) are cleared in the background.
 */
import * as path from 'path';
import { FtsParticipant } from '@mmdb/fts';
import { GraphIndex } from '@mmdb/graph';
import { KEYSPACE, prefixRange, TenantStore } from '@mmdb/storage';
import { VectorParticipant } from '@mmdb/vector';
import { killMidBackfill, killMidCutover, migrationClient, type Restarts } from './migration-client';
import { bootstrapEnv, TENANT, TestServer, TOKEN } from './server';

const T = `/v1/tenants/${TENANT}`;
const ROWS = 1500;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const TOML = `namespace = "lib"
table = "papers"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "i64"
required = true
[[columns]]
name = "title"
ty = "str"
[[columns]]
name = "n"
ty = "i64"
[[columns]]
name = "cites"
ty = "json"
[[columns]]
name = "emb"
ty = "vector"
dim = 2
[vector]
column = "emb"
dim = 2
metric = "l2"
[[fulltext]]
field = "title"
analyzer = "english"
[[relations]]
name = "cites"
target = "lib.papers"
columns = ["cites"]
`;
const paper = (i: number) => ({ id: i, title: `paper ${i} on boundary layers`, n: i, cites: i > 0 ? [i - 1] : [], emb: [i, 1] });
const updated = (i: number) => ({ id: i, title: `revised paper ${i} on shock waves`, n: i, cites: [(i + 7) % ROWS], emb: [i, 2] });

describe('a migration of a table with full-text, vector and relation sections survives SIGKILL', () => {
  it('resumes the backfill, finishes or redoes the key-switch cutover, completes the cleanup; search, top-k, traversal and verify agree', async () => {
    const dir = TestServer.tempDir();
    const env = bootstrapEnv();
    let srv = await new TestServer(dir, env).start();
    const c = migrationClient(() => srv);
    const { req, until } = c;
    try {
      expect((await srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: TOML, contentType: 'text/plain' })).status).toBe(200);
      for (let i = 0; i < ROWS; i += 500) expect((await req('POST', '/rows/lib.papers/_batch', Array.from({ length: 500 }, (_, k) => paper(i + k)))).status).toBe(200);
      const sub = await req('POST', '/migrations', { schema: 'lib.papers', operations: [{ op: 'rename_column', from: 'n', to: 'rank' }], throttle: { max_rows_per_s: 1000, batch_size: 50 } });
      expect(sub.status).toBe(201);
      const id = sub.json.id;

      // Foreground writes during the backfill, across the crash: new text, vector and edge, dual-written in their frames.
      const acked = new Set<number>();
      const tried = new Set<number>(); // a write cut off by the SIGKILL may have committed, unacknowledged
      const writes = (from: number) => (async () => {
        for (let k = from; k < ROWS; k += 25) {
          tried.add(k);
          const r = await req('PUT', `/rows/lib.papers/${k}`, updated(k)).catch(() => undefined);
          if (r?.status === 200) acked.add(k);
        }
      })();

      // 1. SIGKILL mid-backfill; 2. SIGKILL while the cutover is under way.
      const server: Restarts = { kill: () => srv.kill(), restart: async () => void (srv = await new TestServer(dir, env).start()) };
      await killMidBackfill(c, server, id, ROWS, writes, [0, 12]);
      const cut = await killMidCutover(c, server, id);
      // One key-switch frame: the shadow held every row's new shape and its derived entries.
      expect(cut.cutover).toMatchObject({ rows: ROWS, reshaped: 0, switched: true });
      expect(acked.size).toBeGreaterThan(10);

      // 3. SIGKILL as the cleanup runs.
      await srv.kill();
      srv = await new TestServer(dir, env).start();
      const clean = await until(id, (m) => m.cleaned === true);
      expect(clean.state).toBe('Completed');
      expect((await req('GET', '/schemas')).json.filter((s: string) => s.includes('__mig_'))).toEqual([]);

      // The new shape everywhere: rows, postings, vector metadata, edges (the foreground writes included).
      const k = [...acked][3];
      const { n: _n, ...rest } = updated(k);
      expect((await req('GET', `/rows/lib.papers/${k}`)).json).toEqual({ ...rest, rank: k });
      const hits = (await req('GET', `/fts/lib.papers/title?q=${encodeURIComponent('revised shock')}&limit=1000&feedback=none`)).json as Array<{ doc_id: string }>;
      const found = new Set(hits.map((h) => Number(h.doc_id)));
      for (const a of acked) expect(found.has(a)).toBe(true);
      for (const f of found) expect(tried.has(f)).toBe(true);
      const top = await req('POST', '/vector/lib.papers/topk', { vector: [k, 2], k: 1 });
      expect(top.json[0]).toMatchObject({ id: String(k), metadata: { rank: k, title: `revised paper ${k} on shock waves` } });
      const untouched = [...Array(ROWS).keys()].find((i) => i > 0 && !tried.has(i))!;
      const nb = await req('GET', `/graph/lib.papers/neighbors?rel=cites&node=${k}`);
      expect(JSON.stringify(nb.json)).toContain(`"${(k + 7) % ROWS}"`);
      const nb0 = await req('GET', `/graph/lib.papers/neighbors?rel=cites&node=${untouched}`);
      expect(JSON.stringify(nb0.json)).toContain(`"${untouched - 1}"`);
    } finally {
      await srv.stop();
    }
    const store = await TenantStore.open({ dir: path.join(dir, 'tenants', TENANT, 'store'), sync: false, participants: [new FtsParticipant(), new VectorParticipant(), new GraphIndex()] });
    try {
      const report = await store.verify();
      expect(report.differences).toEqual([]);
      expect(report.rows).toBe(ROWS);
      expect(store.manifests().filter((m) => m.table.includes('__mig_'))).toEqual([]);
      expect(store.manifest('lib.papers')!.physical).toMatch(/^lib\.papers__mig_/);
      // The table's old keys (rows, postings, vector entries, edges) are cleared in the background (resumed at open).
      const spaces = [KEYSPACE.row, KEYSPACE.fts, KEYSPACE.vector, KEYSPACE.edge].map((s) => prefixRange(s, ['lib.papers']));
      const left = async () => (await Promise.all(spaces.map(async (r) => (await store.db.keys({ ...r, limit: 1 }).all()).length))).reduce((a, b) => a + b, 0);
      const end = Date.now() + 30_000;
      while ((await left()) > 0 && Date.now() < end) await sleep(20);
      expect(await left()).toBe(0);
    } finally {
      await store.close();
    }
  }, 240_000);
});
