import * as path from 'path';
import { bootstrapEnv, OPERATOR, ROOT, TENANT, TestServer, TOKEN } from './server';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('per-token rate limit (spec §8) over real HTTPS: 1 request/s sustained, burst 5', () => {
  let srv: TestServer;
  const ping = (token: string) => srv.request('GET', `/v1/tenants/${TENANT}/_ping`, { token });

  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv({ DB_RATE_LIMIT_RPS: '1', DB_RATE_LIMIT_BURST: '5' })).start();
  });
  afterAll(async () => {
    await srv.stop();
  });

  it('answers 429 rate_limited with Retry-After after the burst, does not limit another token, the operator or /health, and recovers after the wait', async () => {
    // A second token of the same tenant, issued by the operator (not limited) before the first burns its budget.
    const other = (await srv.request('POST', `/v1/tenants/${TENANT}/tokens`, { token: OPERATOR })).json.token;
    const t0 = Date.now();
    let ok = 0;
    let limited;
    for (let i = 0; i < 20 && !limited; i++) {
      const r = await ping(TOKEN);
      if (r.status === 200) ok++;
      else limited = r;
    }
    const elapsed = (Date.now() - t0) / 1000;
    // the burst, plus at most what refilled (1/s) while the requests ran
    expect(ok).toBeGreaterThanOrEqual(5);
    expect(ok).toBeLessThanOrEqual(5 + Math.ceil(elapsed));
    expect(limited).toBeDefined();
    expect(limited!.status).toBe(429);
    expect(limited!.json).toMatchObject({ error: 'rate_limited', retry: true, retry_after: 1 });
    expect(limited!.json.request_id).toBe(limited!.headers['x-db-request-id']);
    expect(limited!.headers['retry-after']).toBe('1');
    expect(limited!.json.message).toMatch(/budget/);

    // right away: the other token has its own bucket; public routes and the operator are not limited
    for (let i = 0; i < 3; i++) expect((await ping(other)).status).toBe(200);
    for (let i = 0; i < 10; i++) expect((await srv.request('GET', '/health')).status).toBe(200);
    for (let i = 0; i < 10; i++) expect((await ping(OPERATOR)).status).toBe(200);
    // a bad token is refused by auth first (401, not 429)
    expect((await ping('not-a-token-0123456789')).status).toBe(401);
    const still = await ping(TOKEN);
    expect(still.status).toBe(429);
    expect(Number(still.headers['retry-after'])).toBeGreaterThanOrEqual(1);

    // refused requests cost nothing: after waiting Retry-After, the token is served again
    await sleep(Number(still.headers['retry-after']) * 1000 + 50);
    expect((await ping(TOKEN)).status).toBe(200);
    // ... at the sustained rate: the next one right after is over budget again
    const next = await ping(TOKEN);
    expect(next.status).toBe(429);
    expect(next.headers['retry-after']).toBe('1');
  });

  it('refuses a bad budget at start, naming the variable', async () => {
    await expect(new TestServer(TestServer.tempDir(), bootstrapEnv({ DB_RATE_LIMIT_BURST: '0' })).start()).rejects.toThrow(/DB_RATE_LIMIT_BURST/);
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { loadConfig } = require(path.join(ROOT, 'dist/apps/api/config.js'));
    for (const [name, value] of [
      ['DB_RATE_LIMIT_RPS', '-1'],
      ['DB_RATE_LIMIT_RPS', '2.5'],
      ['DB_RATE_LIMIT_RPS', '99999999'],
      ['DB_RATE_LIMIT_BURST', 'lots'],
    ]) {
      expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(name));
    }
  });

  it('defaults: 20,000 requests/s and a burst of 40,000 per token; a burst of 2 × RPS when only RPS is set; 0 turns it off', () => {
    // The built configuration loader the server uses.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { loadConfig } = require(path.join(ROOT, 'dist/apps/api/config.js'));
    expect(loadConfig({})).toMatchObject({ rateLimitRps: 20_000, rateLimitBurst: 40_000 });
    expect(loadConfig({ DB_RATE_LIMIT_RPS: '100' })).toMatchObject({ rateLimitRps: 100, rateLimitBurst: 200 });
    expect(loadConfig({ DB_RATE_LIMIT_RPS: '0' })).toMatchObject({ rateLimitRps: 0 });
  });
});

describe('DB_RATE_LIMIT_RPS=0: no limit', () => {
  it('serves a burst far over any small budget', async () => {
    const srv = await new TestServer(TestServer.tempDir(), bootstrapEnv({ DB_RATE_LIMIT_RPS: '0', DB_RATE_LIMIT_BURST: '1' })).start();
    try {
      const rs = await Promise.all(Array.from({ length: 50 }, () => srv.request('GET', `/v1/tenants/${TENANT}/_ping`, { token: TOKEN })));
      expect(rs.every((r) => r.status === 200)).toBe(true);
    } finally {
      await srv.stop();
    }
  });
});
