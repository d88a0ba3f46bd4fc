import { bootstrapEnv, ITEMS_TOML, TENANT, TestServer, TOKEN } from './server';

const T = `/v1/tenants/${TENANT}`;

describe('backpressure and disk pressure (503 service_unavailable, /ready)', () => {
  it('a full commit queue answers 503 with retry: true; the other writes land', async () => {
    const srv = await new TestServer(TestServer.tempDir(), bootstrapEnv({ DB_COMMIT_QUEUE_MAX: '1', DB_SYNC: 'true' })).start();
    try {
      await srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: ITEMS_TOML, contentType: 'text/plain' });
      const results = await Promise.all(
        Array.from({ length: 200 }, (_, i) => srv.request('POST', `${T}/rows/shop.items`, { token: TOKEN, body: { id: i, name: `r${i}` } })),
      );
      const busy = results.filter((r) => r.status === 503);
      const ok = results.filter((r) => r.status === 200);
      expect(busy.length + ok.length).toBe(200);
      expect(busy.length).toBeGreaterThan(0);
      expect(ok.length).toBeGreaterThan(0);
      for (const r of busy) expect(r.json).toMatchObject({ error: 'service_unavailable', retry: true });
      for (const r of ok) expect((await srv.request('GET', `${T}/rows/shop.items/${r.json.pk}`, { token: TOKEN })).status).toBe(200);
    } finally {
      await srv.stop();
    }
  });

  it('under the free-space floor writes get 503, reads still work, and /ready says disk_full', async () => {
    const dir = TestServer.tempDir();
    let srv = await new TestServer(dir, bootstrapEnv()).start();
    await srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: ITEMS_TOML, contentType: 'text/plain' });
    await srv.request('POST', `${T}/rows/shop.items`, { token: TOKEN, body: { id: 1, name: 'one' } });
    await srv.stop();
    // A floor far above any real disk: the disk is "full".
    srv = await new TestServer(dir, bootstrapEnv({ DB_MIN_FREE_BYTES: String(2 ** 52) })).start();
    try {
      const w = await srv.request('POST', `${T}/rows/shop.items`, { token: TOKEN, body: { id: 2, name: 'two' } });
      expect(w.status).toBe(503);
      expect(w.json).toMatchObject({ error: 'service_unavailable', retry: true });
      expect((await srv.request('GET', `${T}/rows/shop.items/1`, { token: TOKEN })).status).toBe(200);
      const bare = await srv.request('GET', '/ready');
      expect(bare.status).toBe(200);
      expect(bare.json).toMatchObject({ status: 'degraded', writable: false });
      expect(bare.json.pressure).toContain('disk_full');
      const strict = await srv.request('GET', '/ready?require=write');
      expect(strict.status).toBe(503);
      expect(strict.json).toMatchObject({ error: 'service_unavailable', retry: true });
      expect(strict.json.pressure).toContain('disk_full');
      expect((await srv.request('GET', '/ready?require=read')).status).toBe(200);
    } finally {
      await srv.stop();
    }
  });
});
