import { execFileSync, spawnSync } from 'child_process';
import * as crypto from 'crypto';
import * as path from 'path';
import { ClassicLevel } from 'classic-level';
import { bootstrapEnv, OPERATOR, ROOT, TENANT, TestServer, TOKEN } from './server';

const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('token issuance, listing, revocation, rotation and expiry over real HTTPS', () => {
  let srv: TestServer;
  const base = `/v1/tenants/${TENANT}/tokens`;
  const ping = (token: string, tenant = TENANT) => srv.request('GET', `/v1/tenants/${tenant}/_ping`, { token });

  beforeAll(async () => {
    srv = await new TestServer(TestServer.tempDir(), bootstrapEnv()).start();
  });
  afterAll(async () => {
    await srv.stop();
  });

  it('lists a tenant’s tokens (id, created, expiry; never the secret) to its own token and the operator', async () => {
    const mine = await srv.request('GET', base, { token: TOKEN });
    expect(mine.status).toBe(200);
    expect(mine.json).toHaveLength(1);
    expect(Object.keys(mine.json[0]).sort()).toEqual(['created', 'expires_at', 'token_id']);
    expect(mine.json[0].token_id).toMatch(ULID);
    expect(mine.json[0].expires_at).toBeNull();
    expect(Math.abs(mine.json[0].created - Date.now())).toBeLessThan(120_000);
    expect(mine.text).not.toContain(TOKEN);
    const op = await srv.request('GET', base, { token: OPERATOR });
    expect(op.status).toBe(200);
    expect(op.json).toEqual(mine.json);
    // the tenant id is case-insensitive, like on every tenant route
    expect((await srv.request('GET', `/v1/tenants/${TENANT.toLowerCase()}/tokens`, { token: TOKEN })).json).toEqual(mine.json);
    const none = await srv.request('GET', '/v1/tenants/01BX5ZZKBKACTAV9WEVGEMMVRZ/tokens', { token: OPERATOR });
    expect(none.status).toBe(404);
    expect(none.json.error).toBe('not_found');
  });

  it('issues tokens with and without a ttl (201, the secret shown once) that work at once', async () => {
    for (const opts of [{}, { body: {} }, { body: { ttl_seconds: null } }]) {
      const r = await srv.request('POST', base, { token: TOKEN, ...opts });
      expect(r.status).toBe(201);
      expect(Object.keys(r.json).sort()).toEqual(['created', 'expires_at', 'tenant', 'token', 'token_id']);
      expect(r.json).toMatchObject({ tenant: TENANT, expires_at: null });
      expect(r.json.token).toMatch(/^mmdb_[A-Za-z0-9_-]{43}$/);
      expect((await ping(r.json.token)).status).toBe(200);
    }
    const t = await srv.request('POST', base, { token: OPERATOR, body: { ttl_seconds: 3600 } });
    expect(t.status).toBe(201);
    expect(t.json.expires_at - t.json.created).toBe(3_600_000);
    const list = (await srv.request('GET', base, { token: TOKEN })).json;
    expect(list.find((x: any) => x.token_id === t.json.token_id)).toEqual({ token_id: t.json.token_id, created: t.json.created, expires_at: t.json.expires_at });
    expect(JSON.stringify(list)).not.toContain(t.json.token);
  });

  it('revokes by id: the token (even one cached by the auth path) stops at once; DELETE is idempotent', async () => {
    const t = (await srv.request('POST', base, { token: TOKEN })).json;
    for (let i = 0; i < 3; i++) expect((await ping(t.token)).status).toBe(200);
    const r = await srv.request('DELETE', `${base}/${t.token_id}`, { token: TOKEN });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ revoked: true });
    const after = await ping(t.token);
    expect(after.status).toBe(401);
    expect(after.json).toMatchObject({ error: 'unauthorized', retry: false });
    expect(after.json.message).toMatch(/unknown/);
    expect((await srv.request('DELETE', `${base}/${t.token_id}`, { token: TOKEN })).json).toEqual({ revoked: false });
    expect((await srv.request('DELETE', `${base}/01BX5ZZKBKACTAV9WEVGEMMVRZ`, { token: OPERATOR })).json).toEqual({ revoked: false });
    expect((await srv.request('DELETE', `${base}/not-an-id`, { token: TOKEN })).json).toEqual({ revoked: false });
    expect((await srv.request('GET', base, { token: TOKEN })).json.map((x: any) => x.token_id)).not.toContain(t.token_id);
    // a token may revoke itself
    const self = (await srv.request('POST', base, { token: TOKEN })).json;
    expect((await srv.request('DELETE', `${base}/${self.token_id}`, { token: self.token })).json).toEqual({ revoked: true });
    expect((await ping(self.token)).status).toBe(401);
  });

  it('honours expiry and the rotation grace: a ttl of 1 s, a grace of 1 s, a grace of 0, the default grace', async () => {
    const short = (await srv.request('POST', base, { token: TOKEN, body: { ttl_seconds: 1 } })).json;
    expect(short.expires_at - short.created).toBe(1000);
    expect((await ping(short.token)).status).toBe(200); // cached by the auth path from here on

    const old = (await srv.request('POST', base, { token: TOKEN })).json;
    expect((await ping(old.token)).status).toBe(200);
    const rot = await srv.request('POST', `${base}/${old.token_id}/rotate`, { token: old.token, body: { grace_seconds: 1 } });
    expect(rot.status).toBe(201);
    expect(rot.json).toMatchObject({ tenant: TENANT, expires_at: null });
    expect(rot.json.token_id).not.toBe(old.token_id);
    expect(rot.json.token).not.toBe(old.token);
    expect((await ping(rot.json.token)).status).toBe(200);
    expect((await ping(old.token)).status).toBe(200); // within the grace
    const listed = (await srv.request('GET', base, { token: TOKEN })).json.find((x: any) => x.token_id === old.token_id);
    expect(listed.expires_at).toBeGreaterThan(Date.now());
    expect(listed.expires_at).toBeLessThanOrEqual(Date.now() + 1000);

    // grace 0: the old token stops at once
    const now0 = (await srv.request('POST', base, { token: TOKEN })).json;
    expect((await ping(now0.token)).status).toBe(200);
    const rot0 = await srv.request('POST', `${base}/${now0.token_id}/rotate`, { token: TOKEN, body: { grace_seconds: 0 } });
    expect(rot0.status).toBe(201);
    const gone = await ping(now0.token);
    expect(gone.status).toBe(401);
    expect(gone.json.message).toMatch(/expired/);
    expect((await ping(rot0.json.token)).status).toBe(200);
    // a rotated-away token can no longer be rotated
    const again = await srv.request('POST', `${base}/${now0.token_id}/rotate`, { token: TOKEN });
    expect(again.status).toBe(404);
    expect(again.json.error).toBe('not_found');

    // no body: the default grace (300 s); the new token inherits the old one's lifetime
    const ttl = (await srv.request('POST', base, { token: TOKEN, body: { ttl_seconds: 600 } })).json;
    const rd = await srv.request('POST', `${base}/${ttl.token_id}/rotate`, { token: TOKEN });
    expect(rd.status).toBe(201);
    expect(rd.json.expires_at - rd.json.created).toBe(600_000);
    const oldNow = (await srv.request('GET', base, { token: TOKEN })).json.find((x: any) => x.token_id === ttl.token_id);
    expect(oldNow.expires_at - rd.json.created).toBeGreaterThanOrEqual(299_000);
    expect(oldNow.expires_at - rd.json.created).toBeLessThanOrEqual(300_000);
    // an explicit ttl for the new token wins; null: no expiry
    const rn = await srv.request('POST', `${base}/${rd.json.token_id}/rotate`, { token: TOKEN, body: { ttl_seconds: null, grace_seconds: 0 } });
    expect(rn.json.expires_at).toBeNull();

    await sleep(1300);
    for (const t of [short.token, old.token]) {
      const r = await ping(t);
      expect(r.status).toBe(401);
      expect(r.json).toMatchObject({ error: 'unauthorized', retry: false });
      expect(r.json.message).toMatch(/expired/);
    }
    expect((await ping(rot.json.token)).status).toBe(200);
    const ids = (await srv.request('GET', base, { token: TOKEN })).json.map((x: any) => x.token_id);
    expect(ids).not.toContain(short.token_id);
    expect(ids).not.toContain(old.token_id);
    expect(ids).toContain(rot.json.token_id);
    // an expired token cannot be rotated; DELETE removes its record and says it was not live
    expect((await srv.request('POST', `${base}/${short.token_id}/rotate`, { token: TOKEN })).status).toBe(404);
    expect((await srv.request('DELETE', `${base}/${short.token_id}`, { token: TOKEN })).json).toEqual({ revoked: false });
    expect((await ping(short.token)).json.message).toMatch(/unknown/);
  });

  it('another tenant’s token gets 401 on these routes, and its token ids are not reachable', async () => {
    const other = (await srv.request('POST', '/v1/tenants', { token: OPERATOR })).json;
    expect(other.token_id).toMatch(ULID);
    const ob = `/v1/tenants/${other.tenant}/tokens`;
    for (const [m, p, token] of [
      ['GET', base, other.token],
      ['POST', base, other.token],
      ['GET', ob, TOKEN],
      ['POST', `${ob}/${other.token_id}/rotate`, TOKEN],
      ['DELETE', `${ob}/${other.token_id}`, TOKEN],
    ]) {
      const r = await srv.request(m, p, { token });
      expect(r.status).toBe(401);
      expect(r.json.error).toBe('unauthorized');
    }
    // through its own tenant's route, a token id of another tenant is unknown
    expect((await srv.request('DELETE', `${base}/${other.token_id}`, { token: TOKEN })).json).toEqual({ revoked: false });
    expect((await srv.request('POST', `${base}/${other.token_id}/rotate`, { token: TOKEN })).status).toBe(404);
    expect((await ping(other.token, other.tenant)).status).toBe(200);
    expect((await srv.request('GET', ob, { token: other.token })).json.map((x: any) => x.token_id)).toEqual([other.token_id]);
  });

  it('refuses bad bodies with 400 validation_failed naming the field', async () => {
    const t = (await srv.request('POST', base, { token: TOKEN })).json;
    const rotate = `${base}/${t.token_id}/rotate`;
    const cases: Array<[string, unknown, string]> = [
      [base, { ttl: 5 }, 'ttl'],
      [base, { ttl_seconds: -1 }, 'ttl_seconds'],
      [base, { ttl_seconds: 0 }, 'ttl_seconds'],
      [base, { ttl_seconds: 1.5 }, 'ttl_seconds'],
      [base, { ttl_seconds: '60' }, 'ttl_seconds'],
      [base, { ttl_seconds: 1e12 }, 'ttl_seconds'],
      [rotate, { grace_seconds: -1 }, 'grace_seconds'],
      [rotate, { grace_seconds: 0.5 }, 'grace_seconds'],
      [rotate, { grace_seconds: 10_000_000 }, 'grace_seconds'],
      [rotate, { grace_seconds: 5, extra: true }, 'extra'],
      [rotate, { ttl_seconds: -5 }, 'ttl_seconds'],
    ];
    for (const [p, body, field] of cases) {
      const r = await srv.request('POST', p, { token: TOKEN, body });
      expect({ p, body, status: r.status }).toEqual({ p, body, status: 400 });
      expect(r.json).toMatchObject({ error: 'validation_failed', field, retry: false });
      expect(r.json.message).toContain(field);
    }
    for (const body of [[1], 'x', 5]) {
      const r = await srv.request('POST', base, { token: TOKEN, body });
      expect(r.status).toBe(400);
      expect(r.json.error).toBe('validation_failed');
    }
    // nothing was issued or rotated by the refused requests
    expect((await ping(t.token)).status).toBe(200);
    const unknown = await srv.request('POST', `${base}/01BX5ZZKBKACTAV9WEVGEMMVRZ/rotate`, { token: TOKEN, body: { grace_seconds: 1 } });
    expect(unknown.status).toBe(404);
    expect(unknown.json.error).toBe('not_found');
  });
});

const CLI = path.join(ROOT, 'tools/provision/provision.js');

function cli(args: string[], env: Record<string, string>): any {
  return JSON.parse(execFileSync(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, encoding: 'utf8' }));
}

function cliFails(args: string[], env: Record<string, string>): string {
  const r = spawnSync(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, encoding: 'utf8' });
  expect(r.status).not.toBe(0);
  return r.stderr;
}

describe('the provisioning command’s token subcommands', () => {
  it('gives token records written before token ids an id on open, kept across opens', async () => {
    const dir = TestServer.tempDir();
    cli(['create-tenant', '--tenant', TENANT], { DB_DATA_DIR: dir });
    // A record in the old shape (no id, no expiry), as an earlier version wrote it.
    const legacy = 'legacy-token-0123456789abcdef';
    const db = new ClassicLevel<string, string>(path.join(dir, '_system'), { valueEncoding: 'utf8' });
    await db.open();
    const hash = crypto.createHash('sha256').update(legacy).digest('hex');
    await db.put('token:' + hash, JSON.stringify({ tenant: TENANT, created: 1_600_000_000_000 }));
    await db.close();
    const first = cli(['list-tokens', TENANT], { DB_DATA_DIR: dir });
    expect(first).toHaveLength(2);
    const rec = first.find((x: any) => x.created === 1_600_000_000_000);
    expect(rec.token_id).toMatch(ULID);
    expect(rec.expires_at).toBeNull();
    expect(cli(['list-tokens', TENANT], { DB_DATA_DIR: dir })).toEqual(first);
    const srv = await new TestServer(dir, { DB_OPERATOR_TOKEN: OPERATOR, DB_SYNC: 'false' }).start();
    try {
      expect((await srv.request('GET', `/v1/tenants/${TENANT}/_ping`, { token: legacy })).status).toBe(200);
      expect((await srv.request('GET', `/v1/tenants/${TENANT}/tokens`, { token: legacy })).json).toEqual(first);
    } finally {
      await srv.stop();
    }
  });

  it('issue-token --ttl, list-tokens, rotate-token --grace, revoke-token: directly and with --url', async () => {
    const dir = TestServer.tempDir();
    const env = { DB_DATA_DIR: dir };
    const a = cli(['create-tenant', '--tenant', TENANT], env);
    expect(a).toMatchObject({ tenant: TENANT, expires_at: null });
    const b = cli(['issue-token', TENANT, '--ttl', '3600'], env);
    expect(b.expires_at - b.created).toBe(3_600_000);
    expect(cli(['list-tokens', TENANT], env).map((x: any) => x.token_id)).toEqual([a.token_id, b.token_id]);
    const c = cli(['rotate-token', TENANT, b.token_id, '--grace', '0'], env);
    expect(c.expires_at - c.created).toBe(3_600_000); // inherits b's lifetime
    expect(cli(['list-tokens', TENANT], env).map((x: any) => x.token_id)).toEqual([a.token_id, c.token_id]);
    expect(cli(['revoke-token', TENANT, c.token_id], env)).toEqual({ revoked: true });
    expect(cli(['revoke-token', TENANT, c.token_id], env)).toEqual({ revoked: false });
    expect(cliFails(['issue-token', TENANT, '--ttl', '-5'], env)).toMatch(/--ttl/);
    expect(cliFails(['issue-token', TENANT, '--ttl', '0'], env)).toMatch(/ttl_seconds/);
    expect(cliFails(['rotate-token', TENANT, a.token_id, '--grace', '99999999'], env)).toMatch(/grace_seconds/);
    expect(cliFails(['rotate-token', TENANT, '01BX5ZZKBKACTAV9WEVGEMMVRZ'], env)).toMatch(/not a live token/);
    expect(cliFails(['list-tokens', '01BX5ZZKBKACTAV9WEVGEMMVRZ'], env)).toMatch(/does not exist/);

    const srv = await new TestServer(dir, { DB_OPERATOR_TOKEN: OPERATOR, DB_SYNC: 'false' }).start();
    try {
      expect((await srv.request('GET', `/v1/tenants/${TENANT}/_ping`, { token: a.token })).status).toBe(200);
      expect((await srv.request('GET', `/v1/tenants/${TENANT}/_ping`, { token: b.token })).status).toBe(401);
      const ca = path.join(dir, 'tls/cert.pem');
      const op = { DB_OPERATOR_TOKEN: OPERATOR, DB_TLS_CA: ca };
      const d = cli(['--url', srv.url, 'issue-token', TENANT, '--ttl', '120'], op);
      expect(d.expires_at - d.created).toBe(120_000);
      expect((await srv.request('GET', `/v1/tenants/${TENANT}/_ping`, { token: d.token })).status).toBe(200);
      expect(cli(['--url', srv.url, 'list-tokens', TENANT], op).map((x: any) => x.token_id)).toEqual([a.token_id, d.token_id]);
      // with a tenant token instead of the operator's
      const tenantEnv = { DB_TOKEN: a.token, DB_TLS_CA: ca };
      const e = cli(['--url', srv.url, 'rotate-token', TENANT, d.token_id, '--grace', '0', '--ttl', '60'], tenantEnv);
      expect(e.expires_at - e.created).toBe(60_000);
      expect((await srv.request('GET', `/v1/tenants/${TENANT}/_ping`, { token: d.token })).status).toBe(401);
      expect((await srv.request('GET', `/v1/tenants/${TENANT}/_ping`, { token: e.token })).status).toBe(200);
      expect(cli(['--url', srv.url, 'revoke-token', TENANT, e.token_id], tenantEnv)).toEqual({ revoked: true });
      expect((await srv.request('GET', `/v1/tenants/${TENANT}/_ping`, { token: e.token })).status).toBe(401);
      expect(cliFails(['--url', srv.url, 'rotate-token', TENANT, '01BX5ZZKBKACTAV9WEVGEMMVRZ'], op)).toMatch(/404/);
      expect(cliFails(['--url', srv.url, 'issue-token', TENANT, '--ttl', 'soon'], op)).toMatch(/--ttl/);
    } finally {
      await srv.stop();
    }
  });
});
