/**
 * The provisioning command: creates tenants and issues tokens.
 *
 *   node dist/apps/api/provision.js create-tenant [--tenant <ULID>]
 *   node dist/apps/api/provision.js issue-token <tenant>
 *   node dist/apps/api/provision.js list
 *
 * With the server stopped it opens `<DB_DATA_DIR>/_system` directly. With the server running
 * (the store is locked), pass `--url https://host:port` and DB_OPERATOR_TOKEN: it calls the
 * operator routes. Tokens are printed once; only their hashes are stored.
 */
import { readFileSync } from 'fs';
import * as https from 'https';
import * as http from 'http';
import * as path from 'path';
import { SystemStore } from './system/system-store';

function usage(): never {
  process.stderr.write('usage: provision.js [--url <https://host:port>] create-tenant [--tenant <ULID>] | issue-token <tenant> | list\n');
  process.exit(2);
}

async function viaHttp(url: string, method: string, p: string): Promise<any> {
  const token = process.env.DB_OPERATOR_TOKEN;
  if (!token) throw new Error('--url needs DB_OPERATOR_TOKEN in the environment');
  const mod = url.startsWith('https:') ? https : http;
  return new Promise((resolve, reject) => {
    // The server's certificate may be self-signed: pass DB_TLS_CA=<cert.pem> to verify it.
    const ca = process.env.DB_TLS_CA ? readFileSync(process.env.DB_TLS_CA) : undefined;
    const req = mod.request(url + p, { method, headers: { authorization: `Bearer ${token}` }, ...(url.startsWith('https:') ? { ca, rejectUnauthorized: !!ca } : {}) }, (res) => {
      let s = '';
      res.on('data', (d) => (s += d));
      res.on('end', () => (res.statusCode! < 300 ? resolve(JSON.parse(s)) : reject(new Error(`${res.statusCode} ${s}`))));
    });
    req.on('error', reject);
    req.end();
  });
}

export async function main(argv: string[]): Promise<void> {
  const args = [...argv];
  let url: string | undefined;
  const u = args.indexOf('--url');
  if (u >= 0) {
    url = args[u + 1];
    args.splice(u, 2);
  }
  const t = args.indexOf('--tenant');
  let tenant: string | undefined;
  if (t >= 0) {
    tenant = args[t + 1];
    args.splice(t, 2);
  }
  const [cmd, arg] = args;
  if (!cmd) usage();
  let out: unknown;
  if (url) {
    if (cmd === 'create-tenant') {
      if (tenant) throw new Error('--tenant is only for direct mode (server stopped)');
      out = await viaHttp(url, 'POST', '/v1/tenants');
    } else if (cmd === 'issue-token' && arg) out = await viaHttp(url, 'POST', `/v1/tenants/${arg}/tokens`);
    else if (cmd === 'list') out = await viaHttp(url, 'GET', '/v1/tenants');
    else usage();
  } else {
    const dataDir = path.resolve(process.env.DB_DATA_DIR || './data');
    let sys: SystemStore;
    try {
      sys = await SystemStore.open(dataDir);
    } catch (e) {
      throw new Error(`cannot open ${dataDir}/_system (${(e as Error).message}); if the server is running, use --url with DB_OPERATOR_TOKEN`);
    }
    try {
      if (cmd === 'create-tenant') out = await sys.createTenant(tenant);
      else if (cmd === 'issue-token' && arg) out = { tenant: arg.toUpperCase(), token: await sys.issueToken(arg) };
      else if (cmd === 'list') out = sys.listTenants();
      else usage();
    } finally {
      await sys.close();
    }
  }
  process.stdout.write(JSON.stringify(out, null, 2) + '\n');
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((e) => {
    process.stderr.write(`provision: ${(e as Error).message}\n`);
    process.exit(1);
  });
}
