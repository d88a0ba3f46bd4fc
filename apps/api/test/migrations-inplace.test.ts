/**
 * Full-text fields built in place (plan `in_place`: no shadow, no row copied), over real HTTPS
 * with a SIGKILL mid-backfill: an added field's postings are written by the backfill frames and
 * by every foreground write (across the crash), the cutover registers the field and search
 * answers from it at once; a dropped field's postings, and an aborted build's, are cleared after;
 * `verify` (with the full-text participant) is clean. A relation is built in place the same way
 * (its edges), traversed at once after the cutover, and cleared when dropped.
 */
import * as path from 'path';
import { FtsParticipant } from '@mmdb/fts';
import { GraphIndex } from '@mmdb/graph';
import { KEYSPACE, prefixRange, TenantStore } from '@mmdb/storage';
import { killMidBackfill, restartable } from './migration-client';
import { TENANT, TOKEN } from './server';

const T = `/v1/tenants/${TENANT}`;
const ROWS = 1200;
const TOML = `namespace = "lib"
table = "docs"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "i64"
required = true
[[columns]]
name = "title"
ty = "str"
[[columns]]
name = "body"
ty = "str"
[[fulltext]]
field = "title"
analyzer = "english"
`;
const doc = (i: number) => ({ id: i, title: `paper ${i} on boundary layers`, body: `body ${i} about ${i % 2 ? 'alpha' : 'beta'} waves` });

describe('full-text fields built in place', () => {
  it('adds a field across a SIGKILL, drops one, aborts one; search follows, verify is clean', async () => {
    const { dir, server, c } = await restartable();
    const { req, until } = c;
    const search = async (field: string, q: string) => {
      const r = await req('GET', `/fts/lib.docs/${field}?q=${encodeURIComponent(q)}&limit=1000&feedback=none`);
      return { status: r.status, ids: r.status === 200 ? new Set((r.json as Array<{ doc_id: string }>).map((h) => Number(h.doc_id))) : new Set<number>() };
    };
    try {
      expect((await server.current().request('POST', `${T}/schemas`, { token: TOKEN, raw: TOML, contentType: 'text/plain' })).status).toBe(200);
      for (let i = 0; i < ROWS; i += 400) expect((await req('POST', '/rows/lib.docs/_batch', Array.from({ length: 400 }, (_, k) => doc(i + k)))).status).toBe(200);
      const sub = await req('POST', '/migrations', { schema: 'lib.docs', operations: [{ op: 'add_fulltext', def: { field: 'body', analyzer: 'standard' } }], throttle: { max_rows_per_s: 800, batch_size: 40 } });
      expect([sub.status, sub.json.plan]).toEqual([201, 'in_place']);
      const id = sub.json.id;
      // Foreground writes change bodies during the backfill, across the crash.
      const tried = new Set<number>();
      const writes = (from: number) => (async () => {
        for (let k = from; k < ROWS; k += 25) {
          tried.add(k);
          await req('PUT', `/rows/lib.docs/${k}`, { ...doc(k), body: `rewritten ${k} about shocks` }).catch(() => undefined);
        }
      })();
      await killMidBackfill(c, server, id, ROWS, writes, [0, 10]);
      expect((await search('body', 'waves')).status).not.toBe(200); // not a field until cutover
      const cut = await req('POST', `/migrations/${id}/cutover`);
      expect([cut.status, cut.json.state, cut.json.cutover.rows]).toEqual([200, 'Completed', 0]);
      const shocks = await search('body', 'shocks');
      const odd = await search('body', 'alpha');
      const even = await search('body', 'beta');
      const waves = { ids: new Set([...odd.ids, ...even.ids]) };
      expect([shocks.status, odd.status, even.status]).toEqual([200, 200, 200]);
      const ok = (k: number) => (shocks.ids.has(k) ? 1 : 0) + (waves.ids.has(k) ? 1 : 0);
      // Every row is found by exactly one of its possible bodies; a rewritten one only if it was written.
      for (let k = 0; k < ROWS; k++) expect([k, ok(k)]).toEqual([k, 1]);
      for (const k of shocks.ids) expect(tried.has(k)).toBe(true);
      await until(id, (m) => m.cleaned === true);

      // Dropping the title field: its postings are cleared after the cutover.
      const drop = await req('POST', '/migrations', { schema: 'lib.docs', operations: [{ op: 'drop_fulltext', name: 'title' }], auto_cutover: true });
      expect(drop.json.plan).toBe('in_place');
      await until(drop.json.id, (m) => m.state === 'Completed' && m.cleaned === true);
      // Building a field, then aborting: what was built is cleared.
      const ab = await req('POST', '/migrations', { schema: 'lib.docs', operations: [{ op: 'add_fulltext', def: { field: 'title', analyzer: 'simple' } }], throttle: { max_rows_per_s: 200, batch_size: 10 } });
      await until(ab.json.id, (m) => m.progress.done > 0);
      expect((await req('POST', `/migrations/${ab.json.id}/abort`)).json.state).toBe('Aborted');
      await until(ab.json.id, (m) => m.cleaned === true);
      expect((await search('title', 'paper')).status).not.toBe(200);
      expect((await search('body', 'alpha')).ids).toEqual(odd.ids);
    } finally {
      await server.stop();
    }
    const store = await TenantStore.open({ dir: path.join(dir, 'tenants', TENANT, 'store'), sync: false, participants: [new FtsParticipant()] });
    try {
      const report = await store.verify();
      expect(report.differences).toEqual([]);
      expect(report.rows).toBe(ROWS);
      expect(store.manifest('lib.docs')!.fulltext.map((f) => f.field)).toEqual(['body']);
      expect(await store.db.keys({ ...prefixRange(KEYSPACE.fts, ['lib.docs', 'title']), limit: 1 }).all()).toEqual([]);
      expect(store.manifests().map((m) => m.id)).toEqual(['lib.docs']);
    } finally {
      await store.close();
    }
  }, 240_000);

  it('adds a relation under concurrent writes and drops it; traversal follows, verify is clean', async () => {
    const { dir, server, c } = await restartable();
    const { req, until } = c;
    const srv = server.current();
    const N = 600;
    const toml = 'namespace = "lib"\ntable = "nodes"\nprimary_key = ["id"]\n[[columns]]\nname = "id"\nty = "i64"\nrequired = true\n[[columns]]\nname = "next"\nty = "i64"\n';
    const neighbors = async (k: number) => {
      const r = await req('GET', `/graph/lib.nodes/neighbors?rel=links&node=${k}`);
      return r.status === 200 ? JSON.stringify(r.json) : `status ${r.status}`;
    };
    try {
      expect((await srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: toml, contentType: 'text/plain' })).status).toBe(200);
      expect((await req('POST', '/rows/lib.nodes/_batch', Array.from({ length: N }, (_, i) => ({ id: i, next: (i + 1) % N })))).status).toBe(200);
      const rel = { name: 'links', target: 'lib.nodes', columns: ['next'] };
      const sub = await req('POST', '/migrations', { schema: 'lib.nodes', operations: [{ op: 'add_relation', def: rel }], throttle: { max_rows_per_s: 600, batch_size: 20 } });
      expect([sub.status, sub.json.plan]).toEqual([201, 'in_place']);
      // Writers re-point some nodes while the edges are built.
      for (let k = 0; k < N; k += 15) expect((await req('PUT', `/rows/lib.nodes/${k}`, { id: k, next: (k + 300) % N })).status).toBe(200);
      await until(sub.json.id, (m) => m.state === 'ReadyToCutover');
      expect(await neighbors(1)).toMatch(/^status 4/); // not a relation until cutover
      const cut = await req('POST', `/migrations/${sub.json.id}/cutover`);
      expect([cut.json.state, cut.json.cutover.rows]).toEqual(['Completed', 0]);
      expect(await neighbors(15)).toContain('"315"');
      expect(await neighbors(15)).not.toContain('"16"');
      expect(await neighbors(16)).toContain('"17"');
      // A relation whose key does not fit its target is refused at submit (nothing is registered before the cutover).
      const bad = await req('POST', '/migrations', { schema: 'lib.nodes', operations: [{ op: 'add_relation', def: { ...rel, name: 'pairs', columns: ['next', 'id'] } }] });
      expect([bad.status, bad.json.error]).toEqual([400, 'validation_failed']);
      await until(sub.json.id, (m) => m.cleaned === true);
      const drop = await req('POST', '/migrations', { schema: 'lib.nodes', operations: [{ op: 'drop_relation', name: 'links' }], auto_cutover: true });
      expect(drop.json.plan).toBe('in_place');
      await until(drop.json.id, (m) => m.state === 'Completed' && m.cleaned === true);
      expect(await neighbors(16)).toMatch(/^status 4/);
    } finally {
      await srv.stop();
    }
    const store = await TenantStore.open({ dir: path.join(dir, 'tenants', TENANT, 'store'), sync: false, participants: [new GraphIndex()] });
    try {
      expect((await store.verify()).differences).toEqual([]);
      expect(await store.db.keys({ ...prefixRange(KEYSPACE.edge, ['lib.nodes']), limit: 1 }).all()).toEqual([]);
    } finally {
      await store.close();
    }
  }, 120_000);
});
