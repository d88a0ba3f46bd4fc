/**
 * A migration survives SIGKILL: during the backfill with foreground writes going on (it
 * resumes at the cursor logged in its last batch frame: no row lost, none copied twice, with
 * backfill frames written without their own fsync (deferred sync); every
 * acked write kept its dual write, before and after the restart), during the cutover (the cutover is one
 * frame: after the restart the table is wholly old or wholly new) and during the cleanup (the
 * shadow table goes after the restart). Then `verify` finds every derived key in place.
 */
import * as path from 'path';
import { KEYSPACE, prefixRange, TenantStore } from '@mmdb/storage';
import { killMidBackfill, killMidCutover, migrationClient, type Restarts } from './migration-client';
import { bootstrapEnv, ITEMS_TOML, TENANT, TestServer, TOKEN } from './server';

const T = `/v1/tenants/${TENANT}`;
const ROWS = 3000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('migrations survive SIGKILL', () => {
  it('resumes the backfill at its cursor, finishes or redoes the cutover, completes the cleanup; verify is clean', async () => {
    const dir = TestServer.tempDir();
    // Synced commits: backfill frames are then written without their own fsync (deferred sync,
    // libs/storage DESIGN.md), so the SIGKILL mid-backfill lands among frames not yet synced.
    const env = bootstrapEnv({ DB_SYNC: 'true' });
    let srv = await new TestServer(dir, env).start();
    const c = migrationClient(() => srv);
    const { req, until } = c;
    try {
      expect((await srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: ITEMS_TOML, contentType: 'text/plain' })).status).toBe(200);
      for (let i = 0; i < ROWS; i += 500) {
        const rows = Array.from({ length: 500 }, (_, k) => ({ id: i + k, name: `n${i + k}`, price: i + k }));
        expect((await req('POST', '/rows/shop.items/_batch', rows)).status).toBe(200);
      }
      const sub = await req('POST', '/migrations', { schema: 'shop.items', operations: [{ op: 'rename_column', from: 'price', to: 'cost' }], throttle: { max_rows_per_s: 1500, batch_size: 50 } });
      expect(sub.status).toBe(201);
      const id = sub.json.id;

      // Foreground writes during the backfill, across the crash: each acked one is dual-written in its frame.
      const acked = new Set<number>();
      const write = async (k: number) => {
        const r = await req('PUT', `/rows/shop.items/${k}`, { id: k, name: `u${k}`, price: k }).catch(() => undefined);
        if (r?.status === 200) acked.add(k);
      };
      const writes = (from: number) => (async () => {
        for (let k = from; k < ROWS; k += 20) await write(k);
      })();

      // 1. SIGKILL mid-backfill (the writes after the restart are dual-written too).
      const server: Restarts = { kill: () => srv.kill(), restart: async () => void (srv = await new TestServer(dir, env).start()) };
      await killMidBackfill(c, server, id, ROWS, writes, [0, 10]);
      // The shadow is the store's own: no user surface lists or names it (its rows are counted by the cutover below).
      expect((await req('GET', '/schemas')).json.filter((s: string) => s.includes('__mig_'))).toEqual([]);

      // 2. SIGKILL while the cutover is under way: wholly before or wholly after its frame.
      const cut = await killMidCutover(c, server, id, async (after) => {
        const row = (await req('GET', '/rows/shop.items/7')).json;
        expect(row).toEqual(after.state === 'Completed' ? { id: 7, name: 'n7', cost: 7 } : { id: 7, name: 'n7', price: 7 });
      });
      // Every row's new shape was current in the shadow: the dual writes held across the crash.
      expect(cut.cutover).toMatchObject({ rows: ROWS, reshaped: 0, switched: true });
      expect(acked.size).toBeGreaterThan(10);
      for (const k of acked) expect((await req('GET', `/rows/shop.items/${k}`)).json).toEqual({ id: k, name: `u${k}`, cost: k });
      // 3. SIGKILL as the cleanup runs.
      await srv.kill();
      srv = await new TestServer(dir, env).start();
      const clean = await until(id, (m) => m.cleaned === true);
      expect(clean.state).toBe('Completed');
      expect((await req('GET', '/schemas')).json.filter((s: string) => s.includes('__mig_'))).toEqual([]);
      for (const k of [1, 1499, ROWS - 1]) expect((await req('GET', `/rows/shop.items/${k}`)).json).toEqual({ id: k, name: acked.has(k) ? `u${k}` : `n${k}`, cost: k });
      const sum = await req('POST', '/sql', { sql: 'SELECT count(*) AS n, sum(cost) AS s FROM "shop.items"', format: 'arrays' });
      expect(JSON.stringify(sum.json)).toContain(String((ROWS * (ROWS - 1)) / 2));
      const audit = (await req('GET', `/migrations/_audit?migration=${id}`)).json.entries.map((e: any) => e.action);
      expect(audit).toEqual(['submit', 'start', 'ready', 'cutover']);
    } finally {
      await srv.stop();
    }
    const store = await TenantStore.open({ dir: path.join(dir, 'tenants', TENANT, 'store'), sync: false });
    try {
      const report = await store.verify();
      expect(report.differences).toEqual([]);
      expect(report.rows).toBe(ROWS);
      // The cleanup dropped the shadow table (its keys are now the table's).
      expect(store.manifests().filter((m) => m.table.includes('__mig_'))).toEqual([]);
      // The cutover switched the table onto its new shape's keys; the old ones are cleared in the background (resumed at open).
      expect(store.manifest('shop.items')!.physical).toMatch(/^shop\.items__mig_/);
      const old = prefixRange(KEYSPACE.row, ['shop.items']);
      const end = Date.now() + 30_000;
      while ((await store.db.keys({ ...old, limit: 1 }).all()).length && Date.now() < end) await sleep(20);
      expect(await store.db.keys({ ...old, limit: 1 }).all()).toEqual([]);
    } finally {
      await store.close();
    }
  }, 240_000);
});
