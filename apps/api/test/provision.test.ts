import { execFileSync } from 'child_process';
import * as path from 'path';
import { OPERATOR, ROOT, TestServer } from './server';

const CLI = path.join(ROOT, 'tools/provision/provision.js');

function cli(args: string[], env: Record<string, string>): any {
  return JSON.parse(execFileSync(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, encoding: 'utf8' }));
}

describe('the provisioning command', () => {
  it('creates tenants and tokens directly (server stopped) and through the operator routes (server running)', async () => {
    const dir = TestServer.tempDir();
    const a = cli(['create-tenant', '--tenant', '01ARZ3NDEKTSV4RRFFQ69G5FAV'], { DB_DATA_DIR: dir });
    expect(a.tenant).toBe('01ARZ3NDEKTSV4RRFFQ69G5FAV');
    const b = cli(['issue-token', a.tenant], { DB_DATA_DIR: dir });
    expect(b.token).not.toBe(a.token);
    expect(cli(['list'], { DB_DATA_DIR: dir }).map((t: any) => t.tenant)).toEqual([a.tenant]);

    const srv = await new TestServer(dir, { DB_OPERATOR_TOKEN: OPERATOR, DB_SYNC: 'false' }).start();
    try {
      expect(srv.stdout).not.toContain('token:'); // a tenant exists: nothing provisioned at start
      for (const token of [a.token, b.token]) expect((await srv.request('GET', `/v1/tenants/${a.tenant}/schemas`, { token })).status).toBe(200);
      const env = { DB_OPERATOR_TOKEN: OPERATOR, DB_TLS_CA: path.join(dir, 'tls/cert.pem') };
      const c = cli(['--url', srv.url, 'create-tenant'], env);
      expect(c.tenant).toMatch(/^[0-9A-Z]{26}$/);
      expect((await srv.request('GET', `/v1/tenants/${c.tenant}/schemas`, { token: c.token })).status).toBe(200);
      expect(cli(['--url', srv.url, 'list'], env)).toHaveLength(2);
      expect(() => execFileSync(process.execPath, [CLI, 'list'], { env: { PATH: process.env.PATH ?? '', DB_DATA_DIR: dir }, stdio: 'pipe' })).toThrow(/--url/);
    } finally {
      await srv.stop();
    }
  });
});
