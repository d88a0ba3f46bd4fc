import * as fs from 'fs';
import * as path from 'path';
import * as tls from 'tls';
import { bootstrapEnv, OPERATOR, TENANT, TestServer, TOKEN } from './server';

function handshake(port: number, opts: tls.ConnectionOptions): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false, ...opts }, () => {
      const proto = s.getProtocol() ?? '';
      s.end();
      resolve(proto);
    });
    s.on('error', reject);
  });
}

describe('TLS, auth (spec §5), errors and public routes over real HTTPS', () => {
  let srv: TestServer;
  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
  });
  afterAll(async () => {
    await srv.stop();
  });

  it('speaks TLS 1.3 with a self-signed certificate for localhost made under the data dir', async () => {
    expect(srv.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(await handshake(srv.port, { ca: srv.ca, rejectUnauthorized: true, servername: 'localhost' })).toBe('TLSv1.3');
    expect(fs.existsSync(path.join(srv.dataDir, 'tls/key.pem'))).toBe(true);
  });

  it('refuses a TLS 1.2 handshake', async () => {
    await expect(handshake(srv.port, { maxVersion: 'TLSv1.2' })).rejects.toThrow(/protocol|version|alert/i);
  });

  it('answers the public routes without a token', async () => {
    const h = await srv.request('GET', '/health');
    expect(h.status).toBe(200);
    expect(h.json).toEqual({ status: 'ok' });
    const r = await srv.request('GET', '/ready');
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ status: 'ok', pressure: null, writable: true });
    expect((await srv.request('GET', '/ready?require=write')).status).toBe(200);
    expect((await srv.request('GET', '/ready?require=read')).status).toBe(200);
    const bad = await srv.request('GET', '/ready?require=bogus');
    expect(bad.status).toBe(400);
    expect(bad.json.error).toBe('validation_failed');
  });

  it('serves Prometheus metrics with the named series', async () => {
    await srv.request('GET', `/v1/tenants/${TENANT}/_ping`, { token: TOKEN });
    const m = await srv.request('GET', '/metrics');
    expect(m.status).toBe(200);
    expect(m.headers['content-type']).toMatch(/^text\/plain/);
    for (const name of ['db_query_latency_ms_bucket', 'db_replication_frames_total', 'db_plan_cache_hits_total', 'db_commit_group_size', 'db_http_requests_total']) {
      expect(m.text).toContain(name);
    }
    expect(m.text).toMatch(/db_http_requests_total\{method="GET",route="\/v1\/tenants\/:tenant\/_ping",status="200"\} \d+/);
    expect(m.text).toMatch(/db_http_request_duration_ms_bucket\{le="[^"]+",method="GET",route="\/v1\/tenants\/:tenant\/_ping",status="200"\}/);
  });

  it('401 for a missing, malformed, unknown, or another tenant’s token', async () => {
    const p = `/v1/tenants/${TENANT}/schemas`;
    const cases: Array<Record<string, string>> = [
      {},
      { authorization: `Basic ${TOKEN}` },
      { authorization: 'Bearer' },
      { authorization: `Bearer ${TOKEN} extra` },
      { authorization: 'Bearer unknown-token-0123456789' },
    ];
    for (const headers of cases) {
      const r = await srv.request('GET', p, { headers });
      expect(r.status).toBe(401);
      expect(r.json).toMatchObject({ error: 'unauthorized', retry: false });
      expect(typeof r.json.message).toBe('string');
      expect(r.json.request_id).toBe(r.headers['x-db-request-id']);
    }
    // A second tenant, provisioned by the operator: its token does not reach the first tenant.
    const created = await srv.request('POST', '/v1/tenants', { token: OPERATOR });
    expect(created.status).toBe(201);
    expect(created.json.tenant).toMatch(/^[0-9A-Z]{26}$/);
    const other = await srv.request('GET', p, { token: created.json.token });
    expect(other.status).toBe(401);
    expect(other.json.error).toBe('unauthorized');
    const own = await srv.request('GET', `/v1/tenants/${created.json.tenant}/schemas`, { token: created.json.token });
    expect(own.status).toBe(200);
    expect(own.json).toEqual([]);
    // and the first tenant's token does not reach the second
    expect((await srv.request('GET', `/v1/tenants/${created.json.tenant}/schemas`, { token: TOKEN })).status).toBe(401);
  });

  it('403 for a valid tenant token on an operator-only route; the operator passes', async () => {
    const r = await srv.request('DELETE', `/v1/tenants/${TENANT}/schemas`, { token: TOKEN });
    expect(r.status).toBe(403);
    expect(r.json).toMatchObject({ error: 'forbidden', retry: false });
    expect((await srv.request('GET', '/v1/tenants', { token: TOKEN })).status).toBe(403);
    const op = await srv.request('DELETE', `/v1/tenants/${TENANT}/schemas`, { token: OPERATOR });
    expect(op.status).toBe(200);
    expect(op.json).toEqual({ deleted: 0, ids: [] });
  });

  it('unknown routes are 404 not_found in the error shape, with a request id', async () => {
    for (const [m, p] of [
      ['GET', '/nope'],
      ['POST', `/v1/tenants/${TENANT}/nothing-here`],
    ]) {
      const r = await srv.request(m, p, { token: TOKEN });
      expect(r.status).toBe(404);
      expect(r.json).toMatchObject({ error: 'not_found', retry: false });
      expect(r.headers['x-db-request-id']).toMatch(/^[0-9A-Z]{26}$/);
      expect(r.json.request_id).toBe(r.headers['x-db-request-id']);
    }
  });

  it('keeps only hashes of tokens on disk', async () => {
    const created = await srv.request('POST', `/v1/tenants/${TENANT}/tokens`, { token: OPERATOR });
    expect(created.status).toBe(201);
    expect((await srv.request('GET', `/v1/tenants/${TENANT}/schemas`, { token: created.json.token })).status).toBe(200);
    const dir = path.join(srv.dataDir, '_system');
    // classic-level may still hold recent writes in its log file: search every file.
    const all = fs.readdirSync(dir).map((f) => fs.readFileSync(path.join(dir, f)).toString('latin1')).join('');
    expect(all).toContain(TENANT);
    expect(all).not.toContain(TOKEN);
    expect(all).not.toContain(created.json.token);
  });
});

describe('start-up provisioning', () => {
  it('prints a first tenant and token once on an empty data dir, and keeps them across restarts', async () => {
    const dir = TestServer.tempDir();
    const a = await new TestServer(dir, { DB_SYNC: 'false' }).start();
    const m = /tenant: ([0-9A-Z]{26})\s+token:\s+(\S+)/.exec(a.stdout);
    expect(m).not.toBeNull();
    const [, tenant, token] = m!;
    expect((await a.request('GET', `/v1/tenants/${tenant}/schemas`, { token })).status).toBe(200);
    await a.stop();
    const b = await new TestServer(dir, { DB_SYNC: 'false' }).start();
    try {
      expect(b.stdout).not.toContain('token:');
      expect((await b.request('GET', `/v1/tenants/${tenant}/schemas`, { token })).status).toBe(200);
    } finally {
      await b.stop();
    }
  });

  it('the bootstrap tenant is ensured idempotently, and a bad configuration stops the start', async () => {
    const dir = TestServer.tempDir();
    for (let i = 0; i < 2; i++) {
      const s = await new TestServer(dir, bootstrapEnv()).start();
      try {
        expect(s.stdout).not.toContain('token:');
        expect((await s.request('GET', `/v1/tenants/${TENANT}/schemas`, { token: TOKEN })).status).toBe(200);
      } finally {
        await s.stop();
      }
    }
    await expect(new TestServer(TestServer.tempDir(), { DB_PORT: 'abc' }).start()).rejects.toThrow(/DB_PORT/);
    await expect(new TestServer(TestServer.tempDir(), { DB_BOOTSTRAP_TENANT: 'not-a-ulid', DB_BOOTSTRAP_TOKEN: TOKEN }).start()).rejects.toThrow(/ULID/);
  });

  it('serves plain HTTP only when DB_INSECURE_HTTP is set', async () => {
    const s = await new TestServer(TestServer.tempDir(), bootstrapEnv({ DB_INSECURE_HTTP: '1' })).start();
    try {
      expect(s.url).toMatch(/^http:\/\//);
      const http = await import('http');
      const status = await new Promise<number>((resolve, reject) =>
        http.get(s.url + '/health', (res) => {
          res.resume();
          resolve(res.statusCode!);
        }).on('error', reject),
      );
      expect(status).toBe(200);
    } finally {
      await s.stop();
    }
  });
});
