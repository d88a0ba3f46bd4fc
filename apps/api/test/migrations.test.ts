/**
 * Online migrations over real HTTPS against the built server (apps/api/README.md "Migrations"):
 * every state move and its 409s, dual writes under concurrent load (every write made during
 * the backfill is in the new shape after cutover), a failing check's offending keys, `using`
 * evaluated by SQL, the audit log, Idempotency-Key, 404s, metrics.
 */
import { bootstrapEnv, ITEMS_TOML, TENANT, TestServer, TOKEN } from './server';

const T = `/v1/tenants/${TENANT}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('migrations over real HTTPS (spec §2.8, §3.1, §4.12)', () => {
  let srv: TestServer;
  const req = (method: string, p: string, body?: unknown, headers?: Record<string, string>) =>
    srv.request(method, `${T}${p}`, { token: TOKEN, ...(body !== undefined ? { body } : {}), ...(headers ? { headers } : {}) });
  const until = async (id: string, states: string[], ms = 30_000) => {
    const end = Date.now() + ms;
    for (;;) {
      const r = await req('GET', `/migrations/${id}`);
      if (states.includes(r.json.state)) return r.json;
      if (Date.now() > end) throw new Error(`migration ${id} stayed ${r.json.state}: ${srv.stderr}`);
      await sleep(50);
    }
  };

  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
    expect((await srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: ITEMS_TOML, contentType: 'text/plain' })).status).toBe(200);
    const rows = Array.from({ length: 400 }, (_, i) => ({ id: i, name: `n${i}`, price: i }));
    expect((await req('POST', '/rows/shop.items/_batch', rows)).status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await srv.stop();
  });

  it('runs Pending → Backfilling ⇄ Paused → ReadyToCutover → Completed with the 409s of spec 3.1, dual writes kept', async () => {
    const sub = await req('POST', '/migrations', {
      schema: 'shop.items',
      operations: [
        { op: 'rename_column', from: 'price', to: 'cost' },
        { op: 'add_column', name: 'note', ty: 'str', default: 'none' },
      ],
      throttle: { max_rows_per_s: 400, batch_size: 20 },
    });
    expect(sub.status).toBe(201);
    const id = sub.json.id;
    expect(sub.json).toMatchObject({ schema: 'shop.items', state: 'Pending', plan: 'rewrite', auto_cutover: false });
    expect(typeof sub.json.created_at).toBe('number');
    expect((await req('POST', `/migrations/${id}/cutover`)).status).toBe(409);
    const paused = await req('POST', `/migrations/${id}/pause`);
    expect([paused.status, paused.json.state]).toEqual([200, 'Paused']);
    expect((await req('POST', `/migrations/${id}/pause`)).status).toBe(409);
    const cut = await req('POST', `/migrations/${id}/cutover`);
    expect([cut.status, cut.json.error]).toEqual([409, 'conflict']);
    expect((await req('POST', `/migrations/${id}/resume`)).json.state).toBe('Backfilling');
    expect((await req('POST', `/migrations/${id}/resume`)).status).toBe(409);
    // Foreground writes while the backfill runs: updates, inserts, deletes.
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < 60; i++) {
      writes.push(req('PUT', `/rows/shop.items/${i * 5}`, { id: i * 5, name: `n${i * 5}`, price: 1000 + i }));
      writes.push(req('PUT', `/rows/shop.items/${1000 + i}`, { id: 1000 + i, name: `new${i}`, price: i }));
    }
    for (let i = 1; i < 40; i += 7) writes.push(req('DELETE', `/rows/shop.items/${i}`));
    const answers = (await Promise.all(writes)) as Array<{ status: number }>;
    expect(answers.every((a) => a.status === 200 || a.status === 201 || a.status === 204)).toBe(true);
    const ready = await until(id, ['ReadyToCutover']);
    expect(ready.progress.done).toBe(ready.progress.total);
    expect(ready.progress.total).toBeGreaterThanOrEqual(400);
    // Reads see the old shape until cutover.
    expect((await req('GET', '/rows/shop.items/5')).json).toEqual({ id: 5, name: 'n5', price: 1001 });
    const done = await req('POST', `/migrations/${id}/cutover`);
    expect([done.status, done.json.id, done.json.state]).toEqual([200, id, 'Completed']);
    expect((await req('POST', `/migrations/${id}/cutover`)).status).toBe(409);
    const ab = await req('POST', `/migrations/${id}/abort`);
    expect([ab.status, ab.json.error]).toEqual([409, 'conflict']);
    // Every write made during the backfill is in the new shape.
    expect((await req('GET', '/rows/shop.items/5')).json).toEqual({ id: 5, name: 'n5', cost: 1001, note: 'none' });
    expect((await req('GET', '/rows/shop.items/1059')).json).toEqual({ id: 1059, name: 'new59', cost: 59, note: 'none' });
    expect((await req('GET', '/rows/shop.items/8')).status).toBe(404);
    expect((await req('GET', '/rows/shop.items/399')).json).toEqual({ id: 399, name: 'n399', cost: 399, note: 'none' });
    const sql = await req('POST', '/sql', { sql: 'SELECT count(*) AS n, sum(cost) AS s FROM "shop.items"' });
    expect(sql.status).toBe(200);
    expect(sql.json.rows ?? sql.json).toBeDefined();
    // The unique index follows: a duplicate name is still refused.
    expect((await req('PUT', '/rows/shop.items/5000', { id: 5000, name: 'n3', cost: 1 })).status).toBe(409);
    // Cleanup drops the shadow table in the background.
    const end = Date.now() + 30_000;
    while ((await req('GET', '/schemas')).json.some((s: string) => s.includes('__mig_')) && Date.now() < end) await sleep(50);
    expect((await req('GET', '/schemas')).json.filter((s: string) => s.includes('__mig_'))).toEqual([]);
    expect((await until(id, ['Completed'])).cleaned).toBe(true);

    const audit = await req('GET', `/migrations/_audit?migration=${id}`);
    const actions = audit.json.entries.map((e: any) => `${e.action}:${e.from}>${e.to}`);
    expect(actions[0]).toBe('submit:null>Pending');
    expect(actions.filter((a: string) => /^pause:(Pending|Backfilling)>Paused$/.test(a))).toHaveLength(1);
    expect(actions).toContain('resume:Paused>Backfilling');
    expect(actions).toContain('ready:Backfilling>ReadyToCutover');
    expect(actions[actions.length - 1]).toBe('cutover:ReadyToCutover>Completed');
    for (const e of audit.json.entries) {
      expect(Number.isInteger(e.at)).toBe(true);
      expect(Math.abs(e.at - Date.now() / 1000)).toBeLessThan(600);
      expect(typeof e.actor).toBe('string');
    }
    expect(audit.json.entries.find((e: any) => e.action === 'ready').actor).toBe('system');
    expect(audit.json.entries[0].actor).not.toBe('system');
  }, 120_000);

  it('aborts before cutover (the shadow goes), evaluates `using` with SQL, fails a check with the offending keys', async () => {
    const a = (await req('POST', '/migrations', { schema: 'shop.items', operations: [{ op: 'add_index', name: 'by_cost', columns: ['cost'] }], throttle: { max_rows_per_s: 1, batch_size: 1 } })).json;
    const aborted = await req('POST', `/migrations/${a.id}/abort`, undefined, { 'idempotency-key': '01HZZZZZZZZZZZZZZZZZZZZZZZ' });
    expect([aborted.status, aborted.json.state]).toEqual([200, 'Aborted']);
    const again = await req('POST', `/migrations/${a.id}/abort`, undefined, { 'idempotency-key': '01HZZZZZZZZZZZZZZZZZZZZZZZ' });
    expect([again.status, again.json.state, again.headers['x-db-idempotent-replay']]).toEqual([200, 'Aborted', 'true']);
    expect((await req('POST', `/migrations/${a.id}/abort`)).status).toBe(409);
    expect((await req('POST', `/migrations/${a.id}/cutover`)).status).toBe(409);

    const u = await req('POST', '/migrations', { schema: 'shop.items', operations: [{ op: 'change_type', column: 'cost', ty: 'str', using: "CAST(cost AS TEXT) || ' usd'" }], auto_cutover: true });
    expect(u.status).toBe(201);
    expect((await until(u.json.id, ['Completed', 'Failed'])).state).toBe('Completed');
    expect((await req('GET', '/rows/shop.items/7')).json).toEqual({ id: 7, name: 'n7', cost: '7.0 usd', note: 'none' });

    expect((await req('PUT', '/rows/shop.items/3', { id: 3, name: 'n3', cost: 'bad' })).status).toBe(200);
    const c = await req('POST', '/migrations', { schema: 'shop.items', operations: [{ op: 'add_check', name: 'usd', expr: "cost LIKE '% usd'" }] });
    const failed = await until(c.json.id, ['Failed', 'ReadyToCutover']);
    expect(failed.state).toBe('Failed');
    expect(failed.offending_keys).toEqual([[3]]);
    expect(failed.reason).toMatch(/check/);
    const list = await req('GET', '/migrations?limit=2');
    expect(list.json.migrations.map((m: any) => m.id)).toEqual([c.json.id, u.json.id]);
    const rest = await req('GET', `/migrations?limit=2&after=${list.json.next}`);
    expect(rest.json.migrations[0].id).toBe(a.id);
    const audit = await req('GET', `/migrations/_audit?migration=${u.json.id}`);
    expect(audit.json.entries.map((e: any) => e.action)).toEqual(['submit', 'start', 'ready', 'auto-cutover']);
    expect(audit.json.entries[3].actor).toBe('system');
    // The audit is append-only: an earlier page is a prefix of a later one.
    const all1 = (await req('GET', '/migrations/_audit?limit=1000')).json.entries;
    expect(all1.map((e: any) => e.action)).toContain('failure');
    expect(all1.map((e: any) => e.action)).toContain('abort');
    const page = await req('GET', '/migrations/_audit?limit=3');
    expect(page.json.entries).toEqual(all1.slice(0, 3));
    const page2 = await req('GET', `/migrations/_audit?limit=3&after=${page.json.next}`);
    expect(page2.json.entries).toEqual(all1.slice(3, 6));
  }, 120_000);

  it('answers 404 not_found for an unknown migration, 409 for a second migration of a table, 400 for bad input', async () => {
    for (const p of ['/migrations/01ARZ3NDEKTSV4RRFFQ69G5FAZ', '/migrations/nope/cutover', '/migrations/nope/abort']) {
      const r = await req(p.endsWith('FAZ') ? 'GET' : 'POST', p);
      expect([r.status, r.json.error]).toEqual([404, 'not_found']);
    }
    expect((await req('POST', '/migrations', { schema: 'shop.items', operations: [{ op: 'explode' }] })).status).toBe(400);
    expect((await req('POST', '/migrations', { schema: 'shop.nope', operations: [{ op: 'drop_index', name: 'x' }] })).status).toBe(404);
    const first = await req('POST', '/migrations', { schema: 'shop.items', operations: [{ op: 'add_index', name: 'by_note', columns: ['note'] }], throttle: { max_rows_per_s: 1, batch_size: 1 } });
    const second = await req('POST', '/migrations', { schema: 'shop.items', operations: [{ op: 'add_index', name: 'by_note2', columns: ['note'] }] });
    expect([second.status, second.json.error]).toEqual([409, 'conflict']);
    await req('POST', `/migrations/${first.json.id}/abort`);
    const metrics = await srv.request('GET', '/metrics', {});
    expect(metrics.text).toMatch(/db_migration_rows_total\{tenant="[^"]+"\} \d+/);
    expect(metrics.text).toMatch(/db_migration_state\{tenant="[^"]+",state="Completed"\} [1-9]/);
  }, 60_000);

  it('POST /schemas with a changed manifest that rewrites rows runs as an auto-cutover migration and answers when complete', async () => {
    const things = 'namespace = "shop"\ntable = "things"\nprimary_key = ["id"]\n[[columns]]\nname = "id"\nty = "i64"\nrequired = true\n[[columns]]\nname = "w"\nty = "f64"\n';
    const put = (toml: string) => srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: toml, contentType: 'text/plain' });
    expect((await put(things)).status).toBe(200);
    expect((await req('POST', '/rows/shop.things/_batch', [{ id: 1, w: 1.5 }, { id: 2 }])).status).toBe(200);
    const required = await put(things.replace('ty = "f64"', 'ty = "f64"\nrequired = true'));
    expect([required.status, required.json.error]).toEqual([400, 'missing_required']);
    expect(required.json.message).toMatch(/migration/);
    const dropped = await put(things.split('[[columns]]\nname = "w"')[0]);
    expect([dropped.status, dropped.json.created, typeof dropped.json.migration]).toEqual([200, false, 'string']);
    expect((await req('GET', '/rows/shop.things/1')).json).toEqual({ id: 1 });
    const m = await req('GET', `/migrations/${dropped.json.migration}`);
    expect([m.json.state, m.json.auto_cutover]).toEqual(['Completed', true]);
  }, 60_000);

  it('under concurrent writes: each write is acked or answered 503 retry during the cutover, and every acked write is in the new shape', async () => {
    const toml = 'namespace = "shop"\ntable = "load"\nprimary_key = ["id"]\n[[columns]]\nname = "id"\nty = "i64"\nrequired = true\n[[columns]]\nname = "v"\nty = "i64"\n';
    expect((await srv.request('POST', `${T}/schemas`, { token: TOKEN, raw: toml, contentType: 'text/plain' })).status).toBe(200);
    const N = 1500;
    expect((await req('POST', '/rows/shop.load/_batch', Array.from({ length: N }, (_, i) => ({ id: i, v: i })))).status).toBe(200);
    const sub = await req('POST', '/migrations', { schema: 'shop.load', operations: [{ op: 'change_type', column: 'v', ty: 'str', using: "'v' || CAST(v AS TEXT)" }], auto_cutover: true, throttle: { batch_size: 100 } });
    expect(sub.status).toBe(201);
    const acked = new Map<number, number>();
    const answers: Array<{ status: number; json: any }> = [];
    let stop = false;
    const writer = async (w: number) => {
      for (let k = 0; !stop; k++) {
        const id = (k * 4 + w) % N; // each writer owns the ids ≡ w (mod 4): its acks are in commit order
        const value = 100_000 + w * 10_000 + k;
        const r = await req('PUT', `/rows/shop.load/${id}`, { id, v: value });
        answers.push(r);
        if (r.status === 200) acked.set(id, value);
        else if (r.status === 400) break; // the table is in the new shape: an i64 is no str any more
      }
    };
    const writers = Array.from({ length: 4 }, (_, w) => writer(w));
    const end = await until(sub.json.id, ['Completed', 'Failed'], 60_000);
    stop = true;
    await Promise.all(writers);
    expect(end.state).toBe('Completed');
    for (const a of answers) {
      if (a.status === 200 || a.status === 201) continue;
      if (a.status === 503) expect([a.json.error, a.json.retry]).toEqual(['service_unavailable', true]);
      else expect([a.status, a.json.error]).toEqual([400, 'type_mismatch']);
    }
    expect(acked.size).toBeGreaterThan(0);
    for (const [id, value] of acked) expect((await req('GET', `/rows/shop.load/${id}`)).json).toEqual({ id, v: `v${value}` });
    expect((await req('GET', `/rows/shop.load/${N - 1}`)).json.v).toMatch(/^v\d+$/);
  }, 120_000);
  it('needs the manage grant on the schema: a reader gets 403 and sees no migration of it', async () => {
    expect((await req('PUT', '/users/reader', { grants: { 'shop.items': ['read'] } })).status).toBe(200);
    const tok = (await req('POST', '/users/reader/tokens', {})).json.token as string;
    const as = (method: string, p: string, body?: unknown) => srv.request(method, `${T}${p}`, { token: tok, ...(body !== undefined ? { body } : {}) });
    const sub = await as('POST', '/migrations', { schema: 'shop.items', operations: [{ op: 'add_column', name: 'nope', ty: 'str' }] });
    expect([sub.status, sub.json.error]).toEqual([403, 'forbidden']);
    const mine = (await req('GET', '/migrations')).json.migrations as Array<{ id: string; schema: string }>;
    expect(mine.length).toBeGreaterThan(0);
    expect((await as('GET', '/migrations')).json.migrations).toEqual([]);
    expect((await as('GET', `/migrations/${mine[0].id}`)).status).toBe(403);
    expect((await as('POST', `/migrations/${mine[0].id}/abort`)).status).toBe(403);
    expect((await as('GET', '/migrations/_audit')).status).toBe(403);
  });
});
