/**
 * Start-up: the server listens at once and opens every tenant store in the background;
 * `/ready?require=read` answers 503 (`service_unavailable`, `pressure: loading`) until every
 * tenant's derived state is loaded, then 200. The bare `/ready` and `/health` answer 200 all along.
 */
import * as path from 'node:path';
import { ClassicLevel } from 'classic-level';
import { TenantStore, keyOf } from '@mmdb/storage';
import { FtsParticipant } from '@mmdb/fts';
import { bootstrapEnv, PAPERS_TOML, TENANT, TestServer, TOKEN } from './server';

jest.setTimeout(180_000);

const DOCS = 80_000;

describe('/ready?require=read while tenant stores load', () => {
  it('is 503 until the full-text index is loaded, then 200; reads then answer', async () => {
    const dir = TestServer.tempDir();
    let srv = await new TestServer(dir, bootstrapEnv()).start();
    expect((await srv.request('POST', `/v1/tenants/${TENANT}/schemas`, { token: TOKEN, raw: PAPERS_TOML, contentType: 'text/plain' })).status).toBe(200);
    await srv.stop();
    // Many documents written straight into the tenant's store, and no full-text checkpoint (a
    // store from before checkpoints): its open rebuilds the index from every entry.
    const storeDir = path.join(dir, 'tenants', TENANT, 'store');
    const store = await TenantStore.open({ dir: storeDir, participants: [new FtsParticipant()], sync: false, checkpointFrames: 0, checkpointMs: 0 });
    for (let i = 0; i < DOCS; i += 10_000) {
      const changes = [];
      for (let j = i; j < i + 10_000; j++) changes.push({ op: 'put' as const, schema: 'lib.papers', row: { id: `p${j}`, body: `shock wave ${j % 13} flow w${j % 101} v${j % 997} u${j}` } });
      await store.commit({ changes });
    }
    await store.close();
    const db = new ClassicLevel<Buffer, Buffer>(storeDir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
    await db.open();
    await db.del(keyOf('F', [null, 'checkpoint']));
    await db.close();

    srv = await new TestServer(dir, bootstrapEnv()).start();
    try {
      const first = await srv.request('GET', '/ready?require=read');
      expect(first.status).toBe(503);
      expect(first.json).toMatchObject({ error: 'service_unavailable', retry: true, readable: false, pressure: 'loading', loading_stores: 1 });
      const bare = await srv.request('GET', '/ready');
      expect(bare.status).toBe(200);
      expect((await srv.request('GET', '/health')).json).toEqual({ status: 'ok' });
      let ready = first;
      for (let i = 0; i < 600 && ready.status !== 200; i++) {
        await new Promise((r) => setTimeout(r, 100));
        ready = await srv.request('GET', '/ready?require=read');
      }
      expect(ready.status).toBe(200);
      expect(ready.json).toMatchObject({ readable: true, loading_stores: 0, open_stores: 1 });
      const hits = await srv.request('GET', `/v1/tenants/${TENANT}/fts/lib.papers/body?q=u1234&limit=3`, { token: TOKEN });
      expect(hits.status).toBe(200);
      expect(hits.json[0].doc_id).toBe('p1234');
    } finally {
      await srv.stop();
    }
  });
});
