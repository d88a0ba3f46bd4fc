/**
 * @mmdb/client against the real built server over HTTPS (trusting its self-signed certificate
 * by CA file): every route the server has today, through the typed calls. Every answer the
 * client reads is then validated (ajv, JSON Schema 2020-12) against the schema the server's
 * own GET /v1/openapi.json gives for that path, method and status.
 */
import * as path from 'path';
import Ajv2020 from 'ajv/dist/2020';
import { Mmdb, MmdbError, plan, expr } from '@mmdb/client';
import { manifest } from './manifests';
import { bootstrapEnv, ITEMS_TOML, OPERATOR, PAPERS_TOML, TENANT, TestServer, TOKEN } from './server';

const CITIES = manifest('geo.cities', ['name'], { name: 'str' });
const ROADS = manifest('geo.roads', ['a', 'b'], { a: 'str', b: 'str', km: 'f64' }, '[[relations]]\nname = "road"\nsource = "geo.cities"\nsource_columns = ["a"]\ntarget = "geo.cities"\ncolumns = ["b"]\nweight = "km"\n');

interface Seen {
  method: string;
  path: string;
  status: number;
  body: unknown;
}

describe('@mmdb/client against the real server over HTTPS', () => {
  let srv: TestServer;
  let db: Mmdb;
  let op: Mmdb;
  const seen: Seen[] = [];
  const sent: Array<{ method: string; path: string; query: Record<string, unknown>; headers: Record<string, string>; body: unknown }> = [];
  const track = (c: Mmdb) => c.on('response', (r) => seen.push({ method: r.method, path: r.path, status: r.status, body: r.body })).on('request', (r) => sent.push(r));

  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
    const caFile = path.join(srv.dataDir, 'tls/cert.pem');
    db = new Mmdb({ url: srv.url, token: TOKEN, tenant: TENANT, caFile });
    op = new Mmdb({ url: srv.url, token: OPERATOR, caFile });
    [db, op].forEach(track);
  }, 60_000);
  afterAll(async () => {
    await db?.close();
    await op?.close();
    await srv?.stop();
  });

  it('health, ready, metrics, ping', async () => {
    expect(await db.health()).toEqual({ status: 'ok' });
    expect((await db.ready('write')).status).toBe('ok');
    expect(await db.metrics()).toContain('db_query_latency_ms');
    expect(await db.ping()).toEqual({ ok: true, tenant: TENANT });
  });

  it('TLS: without the CA the certificate is refused; insecure accepts it', async () => {
    const plain = new Mmdb({ url: srv.url, token: TOKEN, tenant: TENANT, maxRetries: 0 });
    await expect(plain.ping()).rejects.toMatchObject({ code: 'network_error', status: 0 });
    const insecure = new Mmdb({ url: srv.url, token: TOKEN, tenant: TENANT, insecure: true });
    expect((await insecure.ping()).ok).toBe(true);
    await insecure.close();
    const pem = new Mmdb({ url: srv.url, token: TOKEN, tenant: TENANT, ca: srv.ca });
    expect((await pem.ping()).ok).toBe(true);
    await pem.close();
    await plain.close();
  });

  it('schemas: put, list, get, delete', async () => {
    expect(await db.schemas.put(ITEMS_TOML)).toMatchObject({ id: 'shop.items', tenant: TENANT });
    await db.schemas.put(PAPERS_TOML, { idempotencyKey: '01ARZ3NDEKTSV4RRFFQ69G5FB0' });
    // the same key and body replay the stored answer
    expect(await db.schemas.put(PAPERS_TOML, { idempotencyKey: '01ARZ3NDEKTSV4RRFFQ69G5FB0' })).toMatchObject({ id: 'lib.papers' });
    expect((await db.schemas.list()).sort()).toEqual(['lib.papers', 'shop.items']);
    expect(await db.schemas.get('shop.items')).toBe(ITEMS_TOML);
    await db.schemas.put(CITIES);
    await db.schemas.put(ROADS);
    await db.schemas.put(manifest('tmp.gone', ['id'], { id: 'i64' }));
    await db.schemas.delete('tmp.gone');
    await expect(db.schemas.delete('tmp.gone')).rejects.toMatchObject({ code: 'schema_not_found', status: 404 });
    const e = await db.schemas.put('namespace = 1').catch((x) => x);
    expect(e).toBeInstanceOf(MmdbError);
    expect(e).toMatchObject({ code: 'validation_failed', status: 400 });
    expect(e.requestId).toMatch(/^[0-9A-Z]{26}$/);
  });

  it('rows: insert, get, put with If-Match, conflicts with details, delete', async () => {
    const w = await db.rows.insert('shop.items', { id: 1, name: 'pen', price: 1.5 });
    expect(w).toMatchObject({ schema: 'shop.items', pk: '1', version: 1, created: true });
    expect(await db.rows.get('shop.items', 1)).toEqual({ id: 1, name: 'pen', price: 1.5 });
    expect(await db.rows.getVersioned('shop.items', 1)).toEqual({ row: { id: 1, name: 'pen', price: 1.5 }, version: 1 });
    expect(await db.rows.getVersioned('shop.items', 99)).toBeNull();
    expect((await db.rows.put('shop.items', 1, { name: 'pen', price: 2 }, { ifMatch: 1 })).version).toBe(2);
    await expect(db.rows.put('shop.items', 1, { name: 'pen' }, { ifMatch: 1 })).rejects.toMatchObject({ code: 'write_conflict', status: 409, details: { current_version: 2 } });
    await expect(db.rows.put('shop.items', 50, { name: 'x' }, { ifMatch: '*' })).rejects.toMatchObject({ code: 'precondition_failed', status: 412 });
    await expect(db.rows.insert('shop.items', { id: 1, name: 'dup' }, { expect: 'insert' })).rejects.toMatchObject({ code: 'conflict' });
    await expect(db.rows.insert('shop.items', { id: 'x', name: 'y' })).rejects.toMatchObject({ code: 'type_mismatch', status: 400 });
    await expect(db.rows.get('shop.items', 404)).rejects.toMatchObject({ code: 'row_not_found', status: 404 });
    // a merge patch: named columns change, the others stay
    expect((await db.rows.patch('shop.items', 1, { price: 2.5 }, { ifMatch: 2 })).version).toBe(3);
    expect(await db.rows.getVersioned('shop.items', 1)).toEqual({ row: { id: 1, name: 'pen', price: 2.5 }, version: 3 });
    await expect(db.rows.patch('shop.items', 77, { price: 1 })).rejects.toMatchObject({ code: 'row_not_found' });
    // a retried conditional PUT or DELETE (same Idempotency-Key) replays its first answer
    const k1 = '0b9a4e2c-52b4-4f0e-9a53-5a3a7b2f0c11';
    const p1 = await db.rows.put('shop.items', 1, { name: 'pen', price: 3 }, { ifMatch: 3, idempotencyKey: k1 });
    expect(await db.rows.put('shop.items', 1, { name: 'pen', price: 3 }, { ifMatch: 3, idempotencyKey: k1 })).toEqual(p1);
    const k2 = '0b9a4e2c-52b4-4f0e-9a53-5a3a7b2f0c12';
    expect(await db.rows.delete('shop.items', 1, { idempotencyKey: k2 })).toEqual({ deleted: true });
    expect(await db.rows.delete('shop.items', 1, { idempotencyKey: k2 })).toEqual({ deleted: true });
    expect(await db.rows.delete('shop.items', 1)).toEqual({ deleted: false });
  });

  it('rows: a JSON batch, and an NDJSON stream from an async iterable', async () => {
    const b = await db.rows.batch('shop.items', [{ id: 10, name: 'a' }, { id: 11, name: 'b' }]);
    expect(b).toMatchObject({ schema: 'shop.items', count: 2 });
    async function* gen() {
      for (let i = 100; i < 350; i++) yield { id: i, name: `n${i}`, price: i / 10 };
    }
    expect(await db.rows.stream('shop.items', gen(), { chunk: 100 })).toEqual({ schema: 'shop.items', committed: 250, chunks: 3 });
    expect(await db.rows.get('shop.items', 349)).toEqual({ id: 349, name: 'n349', price: 34.9 });
  });

  it('sql with params and typed rows; query with plan builders; explain; cancel', async () => {
    const r = await db.sql<{ name: string; price: number }>('SELECT name, price FROM shop.items WHERE id >= $1 ORDER BY id LIMIT 2', [100]);
    expect(r.kind).toBe('select');
    expect(r.rows).toEqual([{ name: 'n100', price: 10 }, { name: 'n101', price: 10.1 }]);
    const rows = await db.query<{ name: string }>(plan.scan('shop.items').filter(expr.gte('id', 347)).sort('id', 'desc').project(['name']).limit(2));
    expect(rows).toEqual([{ name: 'n349' }, { name: 'n348' }]);
    const n = await db.query(plan.scan('shop.items').count('n'));
    expect(n).toEqual([{ n: 252 }]);
    const ex = await db.explain(plan.scan('shop.items').limit(1));
    expect(ex.rows).toHaveLength(1);
    expect(ex.explain).toHaveProperty('tree');
    expect(await db.cancel('01ARZ3NDEKTSV4RRFFQ69G5FAV')).toEqual({ cancelled: false });
    await expect(db.sql('SELEC 1')).rejects.toMatchObject({ code: 'validation_failed' });
  });

  it('vector put and topk', async () => {
    await db.vector.put('emb', { id: 'a', embedding: [1, 0, 0], metadata: { c: 'x' } });
    await db.vector.put('emb', { id: 'b', embedding: [0, 1, 0], metadata: { c: 'y' } });
    const m = await db.vector.topk('emb', { vector: [0.9, 0.1, 0], k: 1 });
    expect(m.map((x) => x.id)).toEqual(['a']);
    expect((await db.vector.topk('emb', { vector: [1, 0, 0], filter: { c: 'y' } })).map((x) => x.id)).toEqual(['b']);
    await expect(db.vector.put('emb', { id: 'c', embedding: [1, 0] })).rejects.toMatchObject({ code: 'dim_mismatch' });
  });

  it('full-text put and search', async () => {
    await db.rows.insert('lib.papers', { id: 'p1', body: 'supersonic flow over a wedge' });
    expect((await db.fts.search('lib.papers', 'body', 'wedge')).map((h) => h.doc_id)).toEqual(['p1']);
    expect(await db.fts.put('notes', 'text', { doc_id: 'n1', text: 'heat transfer' })).toMatchObject({ doc_id: 'n1' });
    expect((await db.fts.search('notes', 'text', 'heat', { limit: 5 }))[0].doc_id).toBe('n1');
  });

  it('graph: neighbors, bfs, reverse, path, dijkstra', async () => {
    await db.rows.batch('geo.cities', ['A', 'B', 'C'].map((name) => ({ name })));
    await db.rows.batch('geo.roads', [
      { a: 'A', b: 'B', km: 1 },
      { a: 'B', b: 'C', km: 2 },
      { a: 'A', b: 'C', km: 5 },
    ]);
    expect((await db.graph.neighbors('geo.roads', { node: 'A', rel: 'road' })).sort()).toEqual(['B', 'C']);
    expect((await db.graph.bfs('geo.roads', { src: 'A', rel: 'road', depth: 2 }))[0]).toEqual({ node: 'A', depth: 0 });
    expect(await db.graph.path('geo.roads', { rel: 'road', src: 'A', dst: 'C' })).toMatchObject({ reachable: true });
    expect(await db.graph.dijkstra('geo.roads', { rel: 'road', src: 'A', dst: 'C' })).toEqual({ path: ['A', 'B', 'C'], total_weight: 3 });
    expect((await db.graph.dijkstra('geo.roads', { rel: 'road', src: 'A', dst: 'C', weights: { 'A|C': 0.5 } })).total_weight).toBe(0.5);
    await expect(db.graph.reverse('geo.roads', { rel: 'road', pk: 'C' })).rejects.toMatchObject({ code: 'validation_failed' }); // a self-relation
  });

  it('tokens and tenants (operator)', async () => {
    const t = await db.tokens.issue({ ttl_seconds: 3600 });
    expect(t.token).toMatch(/^mmdb_/);
    expect((await db.tokens.list()).map((x) => x.token_id)).toContain(t.token_id);
    const r = await db.tokens.rotate(t.token_id, { grace_seconds: 0 });
    expect(r.token_id).not.toBe(t.token_id);
    expect(await db.tokens.revoke(r.token_id)).toEqual({ revoked: true });
    const tenants = await op.tenants.list();
    expect(tenants.map((x) => x.tenant)).toContain(TENANT);
    const made = await op.tenants.create();
    const other = new Mmdb({ url: srv.url, token: made.token, tenant: made.tenant, caFile: path.join(srv.dataDir, 'tls/cert.pem') });
    track(other);
    expect(await other.schemas.list()).toEqual([]);
    await expect(other.forTenant(TENANT).schemas.list()).rejects.toMatchObject({ code: 'unauthorized', status: 401 });
    await expect(db.schemas.deleteAll()).rejects.toMatchObject({ code: 'forbidden', status: 403 });
    await other.close();
  });

  it('ask and watch: an English question, and an SSE change stream through the async iterator', async () => {
    const asked = await db.ask<{ name: string }>('items with price under 1', { show_plan: true });
    expect(asked).toMatchObject({ rows: [], cache: 'miss', plan: { op: expect.any(String) } });
    const ctl = new AbortController();
    const it = db.watch<{ changes: Array<{ key: unknown[]; op: string }> }>('items with price under 1', { signal: ctl.signal })[Symbol.asyncIterator]();
    const first = it.next();
    // the stream is open once the server registered it: write until the change arrives
    let got: IteratorResult<{ id: string | undefined; event: string; data: { changes: Array<{ key: unknown[]; op: string }> } }> | undefined;
    for (let i = 0; !got && i < 100; i++) {
      await db.rows.insert('shop.items', { id: 5000 + i, name: `cheap${i}`, price: 0.5 });
      got = await Promise.race([first, new Promise<undefined>((r) => setTimeout(() => r(undefined), 100))]);
    }
    // skip the position events: the first change names the cheap row
    while (got && got.value.event !== 'change') got = await it.next();
    expect(got!.value.data.changes[0]).toMatchObject({ op: 'insert' });
    expect(got!.value.id).toMatch(/^\d+:\d+$/);
    await it.return!();
    seen.push({ method: 'GET', path: `/v1/tenants/${TENANT}/watch`, status: 200, body: undefined });
    const again = await db.ask<{ name: string }>('items with price under 1');
    expect(again.cache).toBe('hit');
    expect(again.rows.map((r) => r.name)).toContain('cheap0');
  });

  it('migrations: submit by operations and by manifest, pause, resume, cutover, abort, list, audit', async () => {
    await db.schemas.put(manifest('shop.mig', ['id'], { id: 'i64', n: 'i64' }));
    await db.rows.batch('shop.mig', Array.from({ length: 60 }, (_, i) => ({ id: i, n: i })));
    const m = await db.migrations.submit({ schema: 'shop.mig', operations: [{ op: 'add_column', name: 'note', ty: 'str', default: 'none' }, { op: 'rename_column', from: 'n', to: 'm' }], throttle: { max_rows_per_s: 200, batch_size: 10 } });
    expect(m).toMatchObject({ schema: 'shop.mig', state: 'Pending', plan: 'rewrite', auto_cutover: false, throttle: { max_rows_per_s: 200, batch_size: 10 } });
    expect((await db.migrations.pause(m.id)).state).toBe('Paused');
    await expect(db.migrations.cutover(m.id)).rejects.toMatchObject({ code: 'conflict', status: 409 });
    expect((await db.migrations.resume(m.id)).state).toBe('Backfilling');
    let cur = await db.migrations.get(m.id);
    for (let i = 0; cur.state !== 'ReadyToCutover' && i < 300; i++) {
      await new Promise((r) => setTimeout(r, 50));
      cur = await db.migrations.get(m.id);
    }
    expect(cur).toMatchObject({ state: 'ReadyToCutover', progress: { done: 60, total: 60 } });
    expect(await db.migrations.cutover(m.id)).toMatchObject({ id: m.id, state: 'Completed' });
    expect(await db.rows.get('shop.mig', 7)).toEqual({ id: 7, m: 7, note: 'none' });
    // by a whole target manifest, then aborted
    const target = manifest('shop.mig', ['id'], { id: 'i64', m: 'i64' }); // drops note: a rewrite
    const m2 = await db.migrations.submit({ schema: 'shop.mig', manifest: target, throttle: { max_rows_per_s: 1, batch_size: 1 } });
    expect(m2).toMatchObject({ plan: 'rewrite', state: 'Pending' });
    await expect(db.migrations.submit({ schema: 'shop.mig', manifest: target })).rejects.toMatchObject({ code: 'conflict', details: { migration: m2.id } });
    expect(await db.migrations.abort(m2.id)).toMatchObject({ id: m2.id, state: 'Aborted' });
    await expect(db.migrations.submit({ schema: 'no.such', manifest: target })).rejects.toMatchObject({ code: 'schema_not_found', status: 404 });
    await expect(db.migrations.submit({ schema: 'shop.mig' } as never)).rejects.toMatchObject({ code: 'validation_failed', status: 400 });
    await expect(db.migrations.get('01ARZ3NDEKTSV4RRFFQ69G5FAV')).rejects.toMatchObject({ code: 'not_found', status: 404 });
    const page = await db.migrations.list({ limit: 1 });
    expect(page).toMatchObject({ migrations: [{ id: m2.id }], next: m2.id });
    expect((await db.migrations.all()).map((x) => x.id)).toEqual([m2.id, m.id]);
    const audit = await db.migrations.audit({ migration: m.id });
    expect(audit.entries.map((e) => e.action)).toEqual(expect.arrayContaining(['submit', 'pause', 'resume', 'ready', 'cutover']));
    expect(audit.entries[0]).toMatchObject({ migration: m.id, action: 'submit', from: null, to: 'Pending' });
    expect((await db.migrations.audit()).entries.length).toBeGreaterThan(audit.entries.length);
  }, 60_000);

  it('users, policies, usage, credits and add-ons', async () => {
    const u = await db.security.putUser('reader', { grants: { 'shop.items': ['read'] }, attributes: { team: 'a' } });
    expect(u).toMatchObject({ name: 'reader', grants: { 'shop.items': ['read'] }, attributes: { team: 'a' }, manage_tokens: false });
    expect((await db.security.users()).map((x) => x.name)).toContain('reader');
    const tok = await db.security.issueToken('reader', { ttl_seconds: 600 });
    expect(tok).toMatchObject({ user: 'reader', tenant: TENANT });
    const p = await db.security.putPolicy('cheap', { schema: 'shop.items', users: ['reader'], using: 'price < 1' });
    expect(p).toEqual({ id: 'cheap', schema: 'shop.items', users: ['reader'], using: 'price < 1' });
    expect(await db.security.policies()).toEqual([p]);
    const reader = new Mmdb({ url: srv.url, token: tok.token, tenant: TENANT, caFile: path.join(srv.dataDir, 'tls/cert.pem') });
    track(reader);
    expect((await reader.sql<{ n: number }>('SELECT count(*) AS n FROM shop.items WHERE price >= 1')).rows).toEqual([{ n: 0 }]);
    await expect(reader.rows.insert('shop.items', { id: 9999, name: 'no' })).rejects.toMatchObject({ code: 'forbidden', status: 403 });
    await expect(reader.security.policies()).rejects.toMatchObject({ code: 'forbidden' });
    await reader.close();
    expect(await db.security.deletePolicy('cheap')).toEqual({ deleted: true });
    expect(await db.security.deleteUser('reader')).toEqual({ deleted: true });
    expect(await db.security.deleteUser('reader')).toEqual({ deleted: false });
    const tenantOp = op.forTenant(TENANT);
    expect(await tenantOp.security.setCredits({ credits: 1_000_000, reset: true })).toMatchObject({ credits: 1_000_000, used: 0 });
    expect(await tenantOp.security.setAddon('es', { enabled: true })).toMatchObject({ es: true, vector: true, ask: true });
    await expect(db.security.setCredits({ credits: null })).rejects.toMatchObject({ code: 'forbidden' });
    await db.schemas.list();
    const usage = await db.security.usage();
    expect(usage).toMatchObject({ credits: 1_000_000, addons: { es: true } });
    expect(usage.used).toBeGreaterThan(0);
    expect(await tenantOp.security.setCredits({ credits: null })).toMatchObject({ credits: null, remaining: null });
  });

  it('the ES 7.x surface through request(), and the replication routes of a standalone node', async () => {
    const es = (method: 'GET' | 'PUT' | 'POST' | 'DELETE' | 'HEAD', p: string, json?: unknown) => db.request({ method, path: `/v1/tenants/${TENANT}/es/${p}`, body: json === undefined ? undefined : { json }, retry: 'never' });
    expect((await es('GET', '')).body).toMatchObject({ version: { number: '7.14.2' } });
    await es('PUT', 'docs', { mappings: { properties: { title: { type: 'text' } } } });
    await es('POST', 'docs/_doc/1?refresh=true', { title: 'supersonic wedge' });
    expect((await es('HEAD', 'docs')).status).toBe(200);
    expect(((await es('POST', 'docs/_search', { query: { match: { title: 'wedge' } } })).body as { hits: { total: { value: number } } }).hits.total.value).toBe(1);
    expect((await es('DELETE', 'docs')).body).toMatchObject({ acknowledged: true });
    // one node, no etcd: no lease, role standalone; the log and snapshot streams still serve
    const rep = op.forTenant(TENANT).replication;
    expect(await db.replication.lease()).toBeNull();
    expect(await rep.status()).toMatchObject({ role: 'standalone' });
    const sum = await rep.checksum();
    expect(sum).toMatchObject({ tenant: TENANT, sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
    const frames = await rep.frames({ since_segment: 0 });
    expect(frames[0]).toMatchObject({ type: 'start' });
    expect(frames.at(-1)).toMatchObject({ type: 'end' });
    expect(frames.filter((f) => f.type === 'frame').length).toBeGreaterThan(10);
    const snap = await rep.snapshot();
    expect([snap[0].type, snap.at(-1)!.type]).toEqual(['start', 'end']);
    expect(await rep.forgetFollower('n9')).toEqual({ follower: 'n9', removed: false });
    const acked = await rep.ack({ follower: 'n9', lsn: 1, epoch: 0 }).catch((e: MmdbError) => e);
    expect(acked instanceof MmdbError ? acked.status : 200).toBeLessThan(500);
    // without etcd there is no lease to give up or hand over
    expect(await rep.stepDown().catch((e: MmdbError) => [e.status, e.code])).toEqual([400, 'validation_failed']);
    const handed = await rep.handOver('n2').catch((e: MmdbError) => e);
    expect(handed).toBeInstanceOf(MmdbError);
    expect([400, 409]).toContain((handed as MmdbError).status);
    await expect(db.replication.status()).rejects.toMatchObject({ code: 'forbidden', status: 403 });
    // the tenant's sync settings are kept in its log here too (they apply once it replicates)
    const none = { sync_followers: null, sync_ms: null, strict: null };
    expect(await rep.settings()).toMatchObject({ tenant: TENANT, stored: none, effective: { sync_followers: 0, sync_ms: 1000, strict: false }, replicated: false });
    expect((await rep.putSettings({ strict: true })).effective).toEqual({ sync_followers: 0, sync_ms: 1000, strict: true });
    expect((await rep.putSettings({ strict: null })).stored).toEqual(none);
  });

  it('every answer read above validates against the served OpenAPI document', async () => {
    expect((await srv.request('GET', '/v1/openapi.json')).status).toBe(401); // authenticated like every /v1/ route
    const doc = await db.openapi();
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe('1.0.0');
    if (doc['x-mmdb-undocumented'].length) {
      throw new Error(`routes the server registers but libs/client/src/contract/routes.ts does not describe: ${doc['x-mmdb-undocumented'].join(', ')}`);
    }
    // the ES 7.x surface is one pass-through prefix, for each of its methods
    expect(Object.keys(doc.paths['/v1/tenants/{tenant}/es/{path}'] ?? {})).toEqual(['get', 'head', 'put', 'post', 'delete']);
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    ajv.addSchema(doc, 'doc');
    // the ES prefix's {path} spans slashes; every other parameter is one segment
    const templates = Object.keys(doc.paths).map((p) => ({ p, re: new RegExp('^' + p.replace('/es/{path}', '/es/.*').replace(/\{[^}]+\}/g, '[^/]+') + '$') }));
    const esc = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');
    let checked = 0;
    const statuses = new Set<number>();
    const covered = new Set<string>();
    for (const s of seen) {
      const tpl = templates.filter((x) => x.re.test(s.path)).sort((a, b) => b.p.split('{').length - a.p.split('{').length).pop();
      expect(tpl).toBeDefined();
      const opn = doc.paths[tpl!.p][s.method.toLowerCase()];
      expect(opn).toBeDefined();
      const res = opn.responses[String(s.status)];
      if (!res) throw new Error(`${s.method} ${tpl!.p} answered ${s.status}, which the document does not list`);
      covered.add(`${s.method} ${tpl!.p}`);
      const type = Object.keys(res.content ?? {})[0];
      // streams (SSE, NDJSON) are parsed by the client: their lines are checked by the tests above
      if (!type || type !== 'application/json') continue;
      const validate = ajv.compile({ $ref: `doc#/paths/${esc(tpl!.p)}/${s.method.toLowerCase()}/responses/${s.status}/content/${esc(type)}/schema` });
      if (!validate(s.body)) throw new Error(`${s.method} ${s.path} ${s.status}: ${ajv.errorsText(validate.errors)} in ${JSON.stringify(s.body).slice(0, 300)}`);
      checked++;
      statuses.add(s.status);
    }
    expect(checked).toBeGreaterThan(50);
    // and every request the client sent: its query parameters are the operation's, its JSON body validates against the operation's body schema
    let bodies = 0;
    for (const r of sent) {
      const tpl = templates.filter((x) => x.re.test(r.path)).sort((a, b) => b.p.split('{').length - a.p.split('{').length).pop()!;
      const opn = doc.paths[tpl.p][r.method.toLowerCase()];
      if (opn['x-mmdb-passthrough']) continue;
      const names = (opn.parameters ?? []).filter((x: { in: string }) => x.in === 'query').map((x: { name: string }) => x.name);
      expect([`${r.method} ${tpl.p}`, Object.keys(r.query).filter((k) => !names.includes(k))]).toEqual([`${r.method} ${tpl.p}`, []]);
      if (r.headers['idempotency-key']) expect([`${r.method} ${tpl.p}`, (opn.parameters ?? []).some((x: { name: string }) => x.name === 'Idempotency-Key')]).toEqual([`${r.method} ${tpl.p}`, true]);
      const type = r.headers['content-type'];
      if (type !== 'application/json' || r.body === undefined) continue;
      expect(opn.requestBody?.content?.[type]).toBeDefined();
      const validate = ajv.compile({ $ref: `doc#/paths/${esc(tpl.p)}/${r.method.toLowerCase()}/requestBody/content/${esc(type)}/schema` });
      if (!validate(r.body)) throw new Error(`${r.method} ${r.path} sent a body the document refuses: ${ajv.errorsText(validate.errors)} in ${JSON.stringify(r.body).slice(0, 300)}`);
      bodies++;
    }
    expect(bodies).toBeGreaterThan(20);
    // every route of the registry was called above (the ES prefix with each of its methods)
    const uncalled = Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops as object).filter((m) => m !== 'parameters').map((m) => `${m.toUpperCase()} ${p}`)).filter((k) => !covered.has(k));
    expect(uncalled).toEqual([]);
    expect([...statuses].sort()).toEqual(expect.arrayContaining([200, 201, 400, 401, 403, 404, 409, 412]));
  });
});
