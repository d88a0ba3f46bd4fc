/** POST /sql, POST /query and query cancellation (spec §4.4, §4.5) over real HTTPS against the built server. */
import { newUlid } from '@mmdb/core';
import { bootstrapEnv, OPERATOR, TENANT, TestServer, TOKEN } from './server';

const T = `/v1/tenants/${TENANT}`;

describe('query routes over real HTTPS (spec §4.4, §4.5)', () => {
  let srv: TestServer;
  const sql = (body: unknown, headers: Record<string, string> = {}, token = TOKEN) => srv.request('POST', `${T}/sql`, { token, body, headers });

  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
    const r = await sql({
      sql: `CREATE TABLE people(id INTEGER PRIMARY KEY, name TEXT NOT NULL, age INTEGER CHECK (age >= 0));
            INSERT INTO people VALUES (1,'ann',30),(2,'bob',20),(3,'cy',40);
            CREATE TABLE big(id INTEGER PRIMARY KEY);`,
    });
    expect(r.status).toBe(200);
    const vals = Array.from({ length: 300 }, (_, i) => `(${i + 1})`).join(',');
    expect((await sql({ sql: `INSERT INTO big VALUES ${vals}` })).status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await srv.stop();
  });

  it('answers the envelope kinds; rows as objects or, with format "arrays", as arrays with distinct names', async () => {
    const sel = await sql({ sql: 'SELECT id, name FROM people WHERE age > $1 ORDER BY id', params: [25] });
    expect(sel.status).toBe(200);
    expect(sel.json).toEqual({ kind: 'select', columns: [{ name: 'id', type: expect.any(String) }, { name: 'name', type: expect.any(String) }], rows: [{ id: 1, name: 'ann' }, { id: 3, name: 'cy' }] });
    const arr = await sql({ sql: 'SELECT name, name, 1 + 1 FROM people WHERE id = $1', params: [2], format: 'arrays' });
    expect(arr.json.rows).toEqual([['bob', 'bob', 2]]);
    const names = arr.json.columns.map((c: { name: string }) => c.name);
    expect(new Set(names).size).toBe(3);
    const ins = await sql({ sql: "INSERT INTO people VALUES (4,'dee',50)" });
    expect(ins.json).toMatchObject({ kind: 'insert', schema: 'main.people', rows: [{ id: 4, name: 'dee', age: 50 }] });
    const upd = await sql({ sql: 'UPDATE people SET age = age + 1 WHERE id = 4 RETURNING age' });
    expect(upd.json).toMatchObject({ kind: 'update', schema: 'main.people', count: 1 });
    // DELETE only translates (spec §4.5): the keys, nothing removed
    const del = await sql({ sql: 'DELETE FROM people WHERE id >= 3' });
    expect(del.json).toMatchObject({ kind: 'delete', schema: 'main.people', pks: [[3], [4]] });
    expect((await sql({ sql: 'SELECT count(*) AS n FROM people' })).json.rows).toEqual([{ n: 4 }]);
    const ddl = await sql({ sql: 'CREATE TABLE tmp(x INTEGER)' });
    expect(ddl.json).toMatchObject({ kind: 'ddl', schema: 'main.tmp', created: true });
  });

  it('parse errors → 400 validation_failed with line and column; unsupported constructs → 400 unsupported_sql', async () => {
    const p = await sql({ sql: 'SELECT 1\nFROM people WHERE ))' });
    expect(p.status).toBe(400);
    expect(p.json).toMatchObject({ error: 'validation_failed', line: 2 });
    expect(typeof p.json.column).toBe('number');
    const u = await sql({ sql: 'SELECT * FROM people NATURAL JOIN big' });
    expect(u.status).toBe(400);
    expect(u.json.error).toBe('unsupported_sql');
    expect(u.json.message).toMatch(/NATURAL/i);
  });

  it('CHECK constraints → check_violation naming the constraint', async () => {
    const r = await sql({ sql: "INSERT INTO people VALUES (9,'neg',-1)" });
    expect(r.status).toBe(400);
    expect(r.json.error).toBe('check_violation');
  });

  it('POST /query runs plan trees; a malformed plan names its JSON path; explain=true reports operators and passes', async () => {
    const plan = { op: 'filter', input: { op: 'scan', schema: 'main.people' }, predicate: { kind: 'binary', op: '=', left: { kind: 'col', name: 'id' }, right: { kind: 'lit', value: 2 } } };
    const r = await srv.request('POST', `${T}/query`, { token: TOKEN, body: plan });
    expect(r.status).toBe(200);
    expect(r.json).toEqual([expect.objectContaining({ id: 2, name: 'bob' })]);
    const bad = await srv.request('POST', `${T}/query`, { token: TOKEN, body: { ...plan, predicate: { kind: 'nope' } } });
    expect(bad.status).toBe(400);
    expect(bad.json.error).toBe('validation_failed');
    expect(bad.json.path).toBe('$.predicate.kind');
    const ex = await srv.request('POST', `${T}/query?explain=true`, { token: TOKEN, body: plan });
    expect(ex.json.rows).toHaveLength(1);
    expect(ex.json.explain.passes.map((x: { name: string }) => x.name)).toEqual(expect.arrayContaining(['pk_selection', 'index_selection', 'join_ordering', 'hash_join']));
    expect(JSON.stringify(ex.json.explain.tree)).toContain('"op":"get"');
    expect(ex.json.explain.tree.rows_out).toBe(1);
  });

  it('X-DB-Query-Id: generated when absent, echoed when the client sends one, refused when not a ULID', async () => {
    const gen = await sql({ sql: 'SELECT 1' });
    expect(gen.headers['x-db-query-id']).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    const id = newUlid();
    expect((await sql({ sql: 'SELECT 1' }, { 'x-db-query-id': id })).headers['x-db-query-id']).toBe(id);
    expect((await sql({ sql: 'SELECT 1' }, { 'x-db-query-id': 'nope' })).status).toBe(400);
  });

  it("cancels a running query (→ 400 query_cancelled); another tenant's token cannot", async () => {
    const other = await srv.request('POST', '/v1/tenants', { token: OPERATOR });
    expect(other.status).toBe(201);
    const id = newUlid();
    // 27 million joined rows: runs for seconds unless cancelled
    const running = sql({ sql: 'SELECT count(*) FROM big a, big b, big c' }, { 'x-db-query-id': id });
    await new Promise((r) => setTimeout(r, 400));
    const foreign = await srv.request('POST', `/v1/queries/${id}/cancel`, { token: other.json.token });
    expect(foreign.json).toEqual({ cancelled: false });
    const mine = await srv.request('POST', `/v1/queries/${id}/cancel`, { token: TOKEN });
    expect(mine.json).toEqual({ cancelled: true });
    const r = await running;
    expect(r.status).toBe(400);
    expect(r.json.error).toBe('query_cancelled');
    // finished queries: false
    expect((await srv.request('POST', `/v1/queries/${id}/cancel`, { token: TOKEN })).json).toEqual({ cancelled: false });
  }, 30_000);

  it('BEGIN…COMMIT losing to a concurrent write → 409 write_conflict, nothing of the script written', async () => {
    const script = sql({ sql: "BEGIN; UPDATE people SET name = 'script' WHERE id = 1; SELECT count(*) FROM big a, big b, big c, big d WHERE a.id < 40 AND d.id < 4; INSERT INTO people VALUES (20,'x',1); COMMIT;" });
    await new Promise((r) => setTimeout(r, 150));
    const w = await srv.request('PUT', `${T}/rows/main.people/1`, { token: TOKEN, body: { id: 1, name: 'direct', age: 31 } });
    expect(w.status).toBeLessThan(300);
    const r = await script;
    expect(r.status).toBe(409);
    expect(r.json.error).toBe('write_conflict');
    const now = await sql({ sql: 'SELECT name FROM people WHERE id = 1 OR id = 20 ORDER BY id' });
    expect(now.json.rows).toEqual([{ name: 'direct' }]);
  }, 30_000);

  it('counts plan-cache hits in db_plan_cache_hits_total', async () => {
    const q = { sql: 'SELECT name FROM people WHERE id = $1', params: [1] };
    await sql(q);
    await sql(q);
    await sql(q);
    const m = await srv.request('GET', '/metrics');
    const line = m.text.split('\n').find((l) => l.startsWith('db_plan_cache_hits_total') && l.includes('sql'));
    expect(line).toBeDefined();
    expect(Number(line!.split(' ').pop())).toBeGreaterThanOrEqual(2);
    expect(m.text).toContain('db_query_latency_ms');
  });

  it('reports the table cache in bytes per tenant, within its budget (db_table_cache_bytes)', async () => {
    await sql({ sql: 'SELECT count(*) FROM big' });
    await sql({ sql: 'SELECT count(*) FROM big' });
    const text = (await srv.request('GET', '/metrics')).text;
    const gauge = (name: string) => Number(new RegExp(`^${name}\\{tenant="[^"]+"\\} (\\S+)$`, 'm').exec(text)?.[1]);
    const bytes = gauge('db_table_cache_bytes');
    const budget = gauge('db_table_cache_budget_bytes');
    expect(bytes).toBeGreaterThan(300 * 8); // at least the 300 rows of big (people may be cached too)
    expect(budget).toBeGreaterThanOrEqual(bytes);
    expect(Number(/^db_table_cache_pool_bytes (\S+)$/m.exec(text)?.[1])).toBeGreaterThanOrEqual(bytes);
  });
});
