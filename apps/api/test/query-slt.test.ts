/**
 * sqllogictest over HTTP: select1.test of the public corpus through POST /v1/tenants/{t}/sql on the
 * built server (real HTTPS), with the runner's HTTP target. The whole corpus runs in-process in
 * tools/sqllogictest; this file checks the HTTP path gives the same answers.
 */
import { existsSync } from 'fs';
import { join } from 'path';
// eslint-disable-next-line @nx/enforce-module-boundaries -- the runner is a tool (not a lib) that this test drives over HTTP
import { formatReport, httpTarget, runSlt } from '../../../tools/sqllogictest/src';
import { bootstrapEnv, TENANT, TestServer, TOKEN } from './server';

const FILE = join(__dirname, '../../../../shared/conformance/sqllogictest/select1.test');

describe('sqllogictest select1.test over HTTPS', () => {
  let srv: TestServer;
  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
  }, 60_000);
  afterAll(async () => {
    await srv.stop();
  });

  (existsSync(FILE) ? it : it.skip)('passes every record', async () => {
    // fetch over the test server's agent (it trusts the server's self-signed certificate)
    const fetchImpl = (async (url: string, init: { method: string; headers: Record<string, string>; body: string }) => {
      const u = new URL(url);
      const r = await srv.request(init.method, u.pathname + u.search, { raw: init.body, headers: init.headers });
      return { ok: r.status < 300, status: r.status, json: async () => r.json };
    }) as unknown as typeof fetch;
    const r = await runSlt(FILE, httpTarget(srv.url, TENANT, TOKEN, fetchImpl));
    console.log(formatReport({ ...r, file: 'select1.test (HTTP)' }) + (r.failures.length ? `\n  first failure line ${r.failures[0].line}: ${r.failures[0].reason}` : ''));
    expect(r.passed).toBeGreaterThan(1000);
    expect(r.failed).toBe(0);
  }, 300_000);
});
