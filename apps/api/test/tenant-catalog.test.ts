/**
 * A tenant's catalogue lives in its own log: a store rebuilt from nothing but the tenant's log
 * frames, on a node that never saw the tenant, serves it and authenticates its tokens (and
 * not the revoked or rotated-out ones) over real HTTPS.
 */
import * as fs from 'fs';
import * as path from 'path';
import { ClassicLevel } from 'classic-level';
import { TenantStore } from '@mmdb/storage';
import { bootstrapEnv, ITEMS_TOML, OPERATOR, TENANT, TestServer, TOKEN } from './server';

const storeDir = (dataDir: string) => path.join(dataDir, 'tenants', TENANT, 'store');

describe("a tenant's tokens travel in its own log", () => {
  it('a store copied from the log alone authenticates the tenant’s tokens on another node', async () => {
    const a = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
    const tokens = `/v1/tenants/${TENANT}/tokens`;
    let x: any, y: any, z: any, z2: any, w: any, listed: any;
    try {
      x = (await a.request('POST', tokens, { token: OPERATOR, body: {} })).json;
      y = (await a.request('POST', tokens, { token: TOKEN, body: { ttl_seconds: 3600 } })).json;
      z = (await a.request('POST', tokens, { token: TOKEN, body: {} })).json;
      expect((await a.request('DELETE', `${tokens}/${y.token_id}`, { token: TOKEN })).json).toEqual({ revoked: true });
      z2 = (await a.request('POST', `${tokens}/${z.token_id}/rotate`, { token: TOKEN, body: { grace_seconds: 0 } })).json;
      expect((await a.request('POST', `/v1/tenants/${TENANT}/schemas`, { token: x.token, raw: ITEMS_TOML, contentType: 'text/plain' })).status).toBe(200);
      expect((await a.request('PUT', `/v1/tenants/${TENANT}/rows/shop.items/1`, { token: z2.token, body: { name: 'lamp' } })).status).toBeLessThan(300);
      listed = (await a.request('GET', tokens, { token: TOKEN })).json;
      expect(listed).toHaveLength(3); // the bootstrap token, x, z2
    } finally {
      await a.stop();
    }

    // Only the tenant's log frames cross over: no _system, no side files.
    const src = await TenantStore.open({ dir: storeDir(a.dataDir) });
    const frames: Buffer[] = [];
    for await (const e of src.logFrames(1)) frames.push(e.bytes);
    await src.close();
    const bDir = TestServer.tempDir();
    fs.mkdirSync(storeDir(bDir), { recursive: true });
    const copy = await TenantStore.open({ dir: storeDir(bDir) });
    await copy.applyFrames(frames);
    await copy.close();

    const b = await new TestServer(bDir, { DB_OPERATOR_TOKEN: OPERATOR, DB_SYNC: 'false' }).start();
    try {
      const ping = async (token: string) => (await b.request('GET', `/v1/tenants/${TENANT}/_ping`, { token })).status;
      expect(await ping(TOKEN)).toBe(200);
      expect(await ping(x.token)).toBe(200);
      expect(await ping(z2.token)).toBe(200);
      expect(await ping(y.token)).toBe(401); // revoked on the first node
      expect(await ping(z.token)).toBe(401); // rotated out with no grace
      expect((await b.request('GET', tokens, { token: x.token })).json).toEqual(listed);
      expect((await b.request('GET', '/v1/tenants', { token: OPERATOR })).json.map((t: any) => t.tenant)).toEqual([TENANT]);
      const row = await b.request('GET', `/v1/tenants/${TENANT}/rows/shop.items/1`, { token: x.token });
      expect(row.status).toBe(200);
      expect(row.json).toMatchObject({ name: 'lamp' });
      // token changes on the new node are frames of the tenant's log too, and _system holds no token
      w = (await b.request('POST', tokens, { token: x.token, body: {} })).json;
      expect(await ping(w.token)).toBe(200);
      expect((await b.request('DELETE', `${tokens}/${x.token_id}`, { token: w.token })).json).toEqual({ revoked: true });
      expect(await ping(x.token)).toBe(401);
    } finally {
      await b.stop();
    }
    const sys = new ClassicLevel<string, string>(path.join(bDir, '_system'), { valueEncoding: 'utf8' });
    await sys.open();
    const keys = await sys.keys().all();
    await sys.close();
    expect(keys.filter((k) => k.startsWith('token:'))).toEqual([]);
    const tokensInLog = await TenantStore.readCatalog(storeDir(bDir), 'token');
    // the live ones, and z (expired: kept a while to answer "expired"); not the revoked x and y
    expect(tokensInLog.map((t) => t.id).sort()).toEqual([listed[0].token_id, z.token_id, z2.token_id, w.token_id].sort());
    expect(JSON.stringify(tokensInLog)).not.toContain(w.token);
  });
});
