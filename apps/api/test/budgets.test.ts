/**
 * Query budgets (issue 25 §3) over real HTTPS: per-tenant limits from DB_TENANT_QUERY_LIMITS
 * refuse a cross join past its row budget (`resource_exhausted`) and a long recursion past its
 * time budget (`query_timeout`); /health answers while a heavy query runs (the executor yields);
 * SIGTERM ends the process within a few seconds while a query runs.
 */
import { bootstrapEnv, TENANT, TestServer, TOKEN } from './server';

const T = `/v1/tenants/${TENANT}`;
const LONG = 'SELECT count(*) FROM t a, t b, t c, t d, t e';

describe('query budgets per tenant', () => {
  let srv: TestServer;
  const sql = (s: string) => srv.request('POST', `${T}/sql`, { token: TOKEN, body: { sql: s } });

  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv({
      DB_SYNC: '0',
      DB_TENANT_QUERY_LIMITS: JSON.stringify({ [TENANT]: { timeout_ms: 1500, max_rows: 5000 } }),
    })).start();
    expect((await sql('CREATE TABLE t(id INTEGER PRIMARY KEY, v INTEGER)')).status).toBe(200);
    const vals = Array.from({ length: 200 }, (_, i) => `(${i + 1}, ${i % 7})`).join(',');
    expect((await sql(`INSERT INTO t VALUES ${vals}`)).status).toBe(200);
  });
  afterAll(async () => {
    await srv.stop();
  });

  it('refuses an answer past the tenant row budget with 400 resource_exhausted, and answers within it', async () => {
    const r = await sql('SELECT a.id, b.id FROM t a, t b');
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ error: 'resource_exhausted' });
    const ok = await sql('SELECT a.id, b.id FROM t a, t b WHERE a.id < 10');
    expect(ok.status).toBe(200);
    expect(ok.json.rows).toHaveLength(9 * 200);
  });

  it('refuses a query past the tenant time budget with 400 query_timeout, serving /health meanwhile', async () => {
    const t0 = Date.now();
    const heavy = sql(LONG);
    await new Promise((r) => setTimeout(r, 300));
    const health = await srv.request('GET', '/health');
    const healthAt = Date.now();
    const r = await heavy;
    const heavyAt = Date.now();
    expect(health.status).toBe(200);
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ error: 'query_timeout' });
    // /health was answered while the query still ran (the executor yields), not after it
    expect(heavyAt - healthAt).toBeGreaterThan(500);
    expect(heavyAt - t0).toBeGreaterThanOrEqual(1400);
  });
});

describe('SIGTERM while a query runs', () => {
  it('ends the process within a few seconds', async () => {
    const srv = await new TestServer(TestServer.tempDir(), bootstrapEnv({ DB_SYNC: '0', DB_QUERY_TIMEOUT_MS: '120000' })).start();
    expect((await srv.request('POST', `${T}/sql`, { token: TOKEN, body: { sql: 'CREATE TABLE t(id INTEGER PRIMARY KEY, v INTEGER)' } })).status).toBe(200);
    const vals = Array.from({ length: 200 }, (_, i) => `(${i + 1}, ${i % 7})`).join(',');
    expect((await srv.request('POST', `${T}/sql`, { token: TOKEN, body: { sql: `INSERT INTO t VALUES ${vals}` } })).status).toBe(200);
    const heavy = srv.request('POST', `${T}/sql`, { token: TOKEN, body: { sql: LONG } }).catch(() => null);
    await new Promise((r) => setTimeout(r, 500));
    const exited = new Promise<number>((r) => srv.proc.once('exit', () => r(Date.now())));
    const t0 = Date.now();
    srv.proc.kill('SIGTERM');
    const killer = setTimeout(() => srv.proc.kill('SIGKILL'), 20_000);
    const t1 = await exited;
    clearTimeout(killer);
    await heavy;
    srv.agent.destroy();
    expect(t1 - t0).toBeLessThan(5000);
  }, 30_000);
});
