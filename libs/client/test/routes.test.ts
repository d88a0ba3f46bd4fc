/**
 * The client covers the route registry: every route (but the ES pass-through) is reached by a
 * typed call with the registry's method and path, mutating ones with an Idempotency-Key.
 * The bodies and query strings are checked here against a local server; the answers are
 * checked against the real server in apps/api/test/client.test.ts.
 */
import { Mmdb, ROUTES, plan } from '../src';
import { FaultServer } from './fault-server';

const TENANT = '01ARZ3NDEKTSV4RRFFQ69G5FAV';

test('every registry route is called by the client with its method and path', async () => {
  const srv = await new FaultServer().start();
  const db = new Mmdb({ url: srv.url, token: 'tok', tenant: TENANT });
  const watchCall = async () => {
    for await (const _ of db.watch('new rows')) break;
  };
  const calls: Array<() => Promise<unknown>> = [
    () => db.health(),
    () => db.ready('write'),
    () => db.metrics(),
    () => db.openapi(),
    () => db.tenants.list(),
    () => db.tenants.create(),
    () => db.ping(),
    () => db.tokens.list(),
    () => db.tokens.issue({ ttl_seconds: 60 }),
    () => db.tokens.revoke('T1'),
    () => db.tokens.rotate('T1', { grace_seconds: 0 }),
    () => db.schemas.list(),
    () => db.schemas.put('namespace = "a"'),
    () => db.schemas.deleteAll(),
    () => db.schemas.get('a.b'),
    () => db.schemas.delete('a.b'),
    () => db.rows.insert('a.b', { id: 1 }, { expect: 'insert' }),
    () => db.rows.batch('a.b', [{ id: 1 }]),
    () => db.rows.get('a.b', ['x,y', 2]),
    () => db.rows.put('a.b', 1, { id: 1 }),
    () => db.rows.delete('a.b', 1),
    () => db.rows.patch('a.b', 1, { n: null }),
    () => db.query(plan.scan('a.b')),
    () => db.sql('SELECT 1'),
    () => db.cancel('Q1'),
    () => db.ask('how many', { show_plan: true, direction: 'reverse' }),
    watchCall,
    () => db.vector.put('v', { id: 'a', embedding: [1] }),
    () => db.vector.topk('v', { vector: [1], k: 3 }),
    () => db.fts.search('t', 'f', 'q'),
    () => db.fts.put('t', 'f', { doc_id: 'd', text: 'x' }),
    () => db.graph.neighbors('g.e', { node: 'a', rel: 'r' }),
    () => db.graph.bfs('g.e', { src: 'a', rel: 'r' }),
    () => db.graph.reverse('g.e', { rel: 'r', pk: 'a' }),
    () => db.graph.path('g.e', { rel: 'r', src: 'a', dst: 'b' }),
    () => db.graph.dijkstra('g.e', { rel: 'r', src: 'a', dst: 'b' }),
    () => db.security.users(),
    () => db.security.putUser('u', { grants: {} }),
    () => db.security.deleteUser('u'),
    () => db.security.issueToken('u'),
    () => db.security.policies(),
    () => db.security.putPolicy('p', { schema: 'a.b' }),
    () => db.security.deletePolicy('p'),
    () => db.security.usage(),
    () => db.security.setCredits({ credits: 1 }),
    () => db.security.setAddon('es', { enabled: true }),
    () => db.migrations.list(),
    () => db.migrations.submit({ schema: 'a.b', manifest: 'x', auto_cutover: true }),
    () => db.migrations.get('M1'),
    () => db.migrations.cutover('M1'),
    () => db.migrations.abort('M1'),
    () => db.migrations.pause('M1'),
    () => db.migrations.resume('M1'),
    () => db.migrations.audit(),
    () => db.replication.lease(),
    () => db.replication.frames({ since_segment: 0, epoch: 1 }),
    () => db.replication.status(),
    () => db.replication.checksum(),
    () => db.replication.snapshot(),
    () => db.replication.forgetFollower('n3'),
    () => db.replication.ack({ follower: 'n2', lsn: 5, epoch: 1 }),
    () => db.replication.stepDown(),
    () => db.replication.handOver('n2'),
    () => db.replication.settings(),
    () => db.replication.putSettings({ strict: true, sync_followers: null }),
  ];
  srv.script(...calls.map((c) => (c === watchCall ? { sse: ['id: 1\ndata: {}\n\n'] } : { status: 200, body: {} })));
  for (const c of calls) await c();
  const norm = (p: string) => p.split('?')[0];
  const hit = (r: (typeof ROUTES)[number]) => {
    const re = new RegExp('^' + r.path.replace(/\{[^}]+\}/g, '[^/]+') + '$');
    return srv.seen.find((s) => s.method === r.method && re.test(norm(s.url)));
  };
  for (const r of ROUTES.filter((x) => !x.passthrough)) {
    const s = hit(r);
    expect([r.id, !!s]).toEqual([r.id, true]);
    // a key on every route whose server honours one (keyed POSTs, PUT and DELETE: a retried
    // conditional PUT or a DELETE then replays its first answer instead of 409 / deleted:false)
    const honoured = (r.params ?? []).some((x) => x.name === 'Idempotency-Key');
    expect([r.id, typeof s!.headers['idempotency-key']]).toEqual([r.id, honoured ? 'string' : 'undefined']);
  }
  // the bodies and query strings the server's routes take
  const ask = srv.seen.find((s) => s.url.endsWith('/ask'))!;
  expect(JSON.parse(ask.body)).toEqual({ nl: 'how many', show_plan: true, direction: 'reverse' });
  expect(srv.seen.find((s) => s.url.includes('/rows/a.b/x%2Cy,2'))).toBeDefined();
  expect(srv.seen.find((s) => s.url === `/v1/replication/frames?tenant=${TENANT}&since_segment=0&epoch=1`)).toBeDefined();
  expect(JSON.parse(srv.seen.find((s) => s.url.endsWith('/migrations') && s.method === 'POST')!.body)).toEqual({ schema: 'a.b', manifest: 'x', auto_cutover: true });
  expect(JSON.parse(srv.seen.find((s) => s.url.startsWith('/v1/replication/settings') && s.method === 'PUT')!.body)).toEqual({ strict: true, sync_followers: null });
  await db.close();
  await srv.stop();
});

test('a base URL with a path prefix (behind a proxy) keeps it, and query values are encoded', async () => {
  const srv = await new FaultServer().start();
  const db = new Mmdb({ url: `${srv.url}/db/`, token: 'tok', tenant: TENANT });
  srv.script({ status: 200, body: [] });
  await db.fts.search('t', 'f', 'a&b c/d');
  expect(srv.seen[0].url).toBe(`/db/v1/tenants/${TENANT}/fts/t/f?q=a%26b%20c%2Fd`);
  expect(srv.seen[0].headers.authorization).toBe('Bearer tok');
  await db.close();
  await srv.stop();
});
