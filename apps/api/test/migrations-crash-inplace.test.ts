/**
 * An index built in place (plan `in_place`: no shadow, no row copied) survives SIGKILL during its
 * backfill with foreground writes going on: after the restart the dual writes of the index
 * entries resume before any write, the backfill resumes at its cursor, the cutover registers
 * the index, and `verify` finds every index entry in place (none missing, none left over).
 */
import * as path from 'path';
import { KEYSPACE, prefixRange, TenantStore } from '@mmdb/storage';
import { killMidBackfill, restartable } from './migration-client';
import { ITEMS_TOML, TENANT, TOKEN } from './server';

const T = `/v1/tenants/${TENANT}`;
const ROWS = 3000;

describe('an in-place index build survives SIGKILL', () => {
  it('resumes the backfill at its cursor, cuts over, clears the dropped index; verify is clean', async () => {
    const { dir, server, c } = await restartable();
    const { req, until } = c;
    try {
      expect((await server.current().request('POST', `${T}/schemas`, { token: TOKEN, raw: ITEMS_TOML, contentType: 'text/plain' })).status).toBe(200);
      for (let i = 0; i < ROWS; i += 500) {
        const rows = Array.from({ length: 500 }, (_, k) => ({ id: i + k, name: `n${i + k}`, price: (i + k) % 100 }));
        expect((await req('POST', '/rows/shop.items/_batch', rows)).status).toBe(200);
      }
      const sub = await req('POST', '/migrations', {
        schema: 'shop.items',
        operations: [{ op: 'add_index', name: 'by_price', columns: ['price'] }, { op: 'drop_index', name: 'by_name' }],
        throttle: { max_rows_per_s: 1500, batch_size: 50 },
      });
      expect([sub.status, sub.json.plan]).toEqual([201, 'in_place']);
      const id = sub.json.id;
      // Foreground writes move rows between prices, across the crash.
      const writes = (from: number) => (async () => {
        for (let k = from; k < ROWS; k += 20) await req('PUT', `/rows/shop.items/${k}`, { id: k, name: `u${k}`, price: 1000 + k }).catch(() => undefined);
      })();
      await killMidBackfill(c, server, id, ROWS, writes, [0, 10]);
      const cut = await req('POST', `/migrations/${id}/cutover`);
      expect([cut.status, cut.json.state, cut.json.cutover.rows]).toEqual([200, 'Completed', 0]);
      await until(id, (m) => m.cleaned === true);
      const q = await req('POST', '/sql', { sql: 'SELECT count(*) AS n FROM "shop.items" WHERE price = 1010', format: 'arrays' });
      expect(JSON.stringify(q.json)).toContain('[1]');
    } finally {
      await server.stop();
    }
    const store = await TenantStore.open({ dir: path.join(dir, 'tenants', TENANT, 'store'), sync: false });
    try {
      const report = await store.verify();
      expect(report.differences).toEqual([]);
      expect(report.rows).toBe(ROWS);
      expect(store.manifest('shop.items')!.indexes.map((i) => i.name)).toEqual(['by_price']);
      expect((await store.db.keys(prefixRange(KEYSPACE.index, ['shop.items', 'by_price'])).all()).length).toBe(ROWS);
      expect(await store.db.keys({ ...prefixRange(KEYSPACE.index, ['shop.items', 'by_name']), limit: 1 }).all()).toEqual([]);
      expect(store.manifests().map((m) => m.id)).toEqual(['shop.items']);
    } finally {
      await store.close();
    }
  }, 240_000);
});
