/**
 * A rewrite migration of a table with full-text, vector and relation sections (the shadow builds
 * their entries, the cutover switches keys: apps/api README "Migrations"), over real HTTPS: after the cutover,
 * vector metadata, postings and search answers carry the new shape, with no stale entry.
 */
import * as path from 'path';
import { FtsParticipant } from '@mmdb/fts';
import { GraphIndex } from '@mmdb/graph';
import { TenantStore } from '@mmdb/storage';
import { VectorParticipant } from '@mmdb/vector';
import { bootstrapEnv, TENANT, TestServer, TOKEN } from './server';

const T = `/v1/tenants/${TENANT}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('migration of a table with derived sections over real HTTPS', () => {
  let srv: TestServer;
  const dir = TestServer.tempDir();
  const req = (method: string, p: string, body?: unknown) => srv.request(method, `${T}${p}`, { token: TOKEN, ...(body !== undefined ? { body } : {}) });

  beforeAll(async () => {
    srv = await new TestServer(dir, bootstrapEnv()).start();
  }, 60_000);
  let stopped = false;
  afterAll(async () => {
    if (!stopped) await srv.stop();
  });

  it('renames a column: vector metadata and postings follow the new shape', async () => {
    const toml = 'namespace = "app"\ntable = "pics"\nprimary_key = ["id"]\n[[columns]]\nname = "id"\nty = "i64"\nrequired = true\n[[columns]]\nname = "kind"\nty = "str"\n[[columns]]\nname = "caption"\nty = "str"\n[[columns]]\nname = "emb"\nty = "vector"\ndim = 2\n[vector]\ncolumn = "emb"\ndim = 2\nmetric = "l2"\n[[fulltext]]\nfield = "caption"\nanalyzer = "standard"\n';
    expect((await srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: toml, contentType: 'text/plain' })).status).toBe(200);
    const rows = Array.from({ length: 20 }, (_, i) => ({ id: i, kind: i % 2 ? 'odd' : 'even', caption: `picture number ${i}`, emb: [i, 1] }));
    expect((await req('POST', '/rows/app.pics/_batch', rows)).status).toBe(200);
    const sub = await req('POST', '/migrations', { schema: 'app.pics', operations: [{ op: 'rename_column', from: 'kind', to: 'parity' }], auto_cutover: true });
    expect(sub.status).toBe(201);
    let m = sub.json;
    for (const end = Date.now() + 60_000; !['Completed', 'Failed'].includes(m.state) && Date.now() < end; ) {
      await sleep(25);
      m = (await req('GET', `/migrations/${sub.json.id}`)).json;
    }
    expect([m.state, m.reason]).toEqual(['Completed', null]);
    // One small frame: the table moved onto the shadow's keys, whose postings, vector entries and index the backfill built.
    expect(m.cutover).toMatchObject({ rows: 20, reshaped: 0, switched: true });
    const top = await req('POST', '/vector/app.pics/topk', { vector: [3, 1], k: 1 });
    expect(top.json[0]).toMatchObject({ id: '3', metadata: { id: 3, parity: 'odd', caption: 'picture number 3' } });
    const filtered = await req('POST', '/vector/app.pics/topk', { vector: [3, 1], k: 2, filter: { parity: 'even' } });
    expect(filtered.json.map((h: any) => h.id).sort()).toEqual(['2', '4']);
    const hits = (await req('GET', `/fts/app.pics/caption?q=${encodeURIComponent('number')}&limit=50`)).json;
    expect(hits).toHaveLength(20);
    // Every derived entry (index, postings, vector entries with their metadata) is what the rows imply.
    await srv.stop();
    stopped = true;
    const store = await TenantStore.open({ dir: path.join(dir, 'tenants', TENANT, 'store'), participants: [new FtsParticipant(), new VectorParticipant(), new GraphIndex()] });
    try {
      expect((await store.verify()).differences).toEqual([]);
    } finally {
      await store.close();
    }
  }, 90_000);
});
