/**
 * The provisioning command: creates tenants and issues, lists, revokes and rotates tokens.
 *
 *   node dist/apps/api/provision.js create-tenant [--tenant <ULID>]
 *   node dist/apps/api/provision.js list
 *   node dist/apps/api/provision.js issue-token <tenant> [--ttl <seconds>]
 *   node dist/apps/api/provision.js list-tokens <tenant>
 *   node dist/apps/api/provision.js revoke-token <tenant> <token_id>
 *   node dist/apps/api/provision.js rotate-token <tenant> <token_id> [--grace <seconds>] [--ttl <seconds>]
 *
 * With the server stopped it opens `<DB_DATA_DIR>/_system` directly. With the server running
 * (the store is locked), pass `--url https://host:port` and DB_OPERATOR_TOKEN (or, for the
 * token subcommands, DB_TOKEN: a token of that tenant): it calls the HTTP routes. Tokens are
 * printed once; only their hashes are stored. Bad options are refused before anything is done,
 * with the same checks as the HTTP routes.
 */
import { readFileSync } from 'fs';
import * as https from 'https';
import * as http from 'http';
import * as path from 'path';
import { SystemStore } from './system/system-store';
import { parseIssue, parseRotate } from './system/token-params';

const USAGE = `usage: provision.js [--url <https://host:port>] <command>
  create-tenant [--tenant <ULID>]       a tenant and its first token (--tenant: direct mode only)
  list                                  the tenants
  issue-token <tenant> [--ttl <s>]      one more token (expiring after <s> seconds)
  list-tokens <tenant>                  [{token_id, created, expires_at}] of the live tokens
  revoke-token <tenant> <token_id>      {revoked: true|false}; the token stops working at once
  rotate-token <tenant> <token_id> [--grace <s>] [--ttl <s>]
                                        a new token; the old one works <s> more seconds (default 300)
`;

function usage(): never {
  process.stderr.write(USAGE);
  process.exit(2);
}

async function viaHttp(url: string, method: string, p: string, body?: unknown): Promise<any> {
  const token = process.env.DB_OPERATOR_TOKEN || process.env.DB_TOKEN;
  if (!token) throw new Error('--url needs DB_OPERATOR_TOKEN (or DB_TOKEN, a token of the tenant) in the environment');
  const mod = url.startsWith('https:') ? https : http;
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (payload !== undefined) headers['content-type'] = 'application/json';
  return new Promise((resolve, reject) => {
    // The server's certificate may be self-signed: pass DB_TLS_CA=<cert.pem> to verify it.
    const ca = process.env.DB_TLS_CA ? readFileSync(process.env.DB_TLS_CA) : undefined;
    const req = mod.request(url + p, { method, headers, ...(url.startsWith('https:') ? { ca, rejectUnauthorized: !!ca } : {}) }, (res) => {
      let s = '';
      res.on('data', (d) => (s += d));
      res.on('end', () => (res.statusCode! < 300 ? resolve(JSON.parse(s)) : reject(new Error(`${res.statusCode} ${s}`))));
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/** `--name <value>` options taken out of args. */
function takeOptions(args: string[], names: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of names) {
    const i = args.indexOf('--' + name);
    if (i < 0) continue;
    if (i + 1 >= args.length) throw new Error(`--${name} needs a value`);
    out[name] = args[i + 1];
    args.splice(i, 2);
  }
  return out;
}

/** A whole number of seconds from the command line (the range is checked by parseIssue/parseRotate). */
function secondsOpt(name: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v)) throw new Error(`--${name} must be a whole number of seconds, got "${v}"`);
  return Number(v);
}

export async function main(argv: string[]): Promise<void> {
  const args = [...argv];
  const opts = takeOptions(args, ['url', 'tenant', 'ttl', 'grace']);
  const url = opts.url;
  const [cmd, a1, a2] = args;
  if (!cmd) usage();
  const ttl = secondsOpt('ttl', opts.ttl);
  const grace = secondsOpt('grace', opts.grace);
  // The same checks as the HTTP routes, before anything is done.
  const issueBody = ttl === undefined ? {} : { ttl_seconds: ttl };
  const rotateBody = { ...(grace === undefined ? {} : { grace_seconds: grace }), ...(ttl === undefined ? {} : { ttl_seconds: ttl }) };
  const issue = parseIssue(issueBody);
  const rotate = parseRotate(rotateBody);
  const needs = (n: number) => {
    if ((n >= 1 && !a1) || (n >= 2 && !a2)) usage();
  };
  let out: unknown;
  if (url) {
    const tokens = (t: string) => `/v1/tenants/${encodeURIComponent(t)}/tokens`;
    if (cmd === 'create-tenant') {
      if (opts.tenant) throw new Error('--tenant is only for direct mode (server stopped)');
      out = await viaHttp(url, 'POST', '/v1/tenants');
    } else if (cmd === 'list') out = await viaHttp(url, 'GET', '/v1/tenants');
    else if (cmd === 'issue-token') {
      needs(1);
      out = await viaHttp(url, 'POST', tokens(a1), issueBody);
    } else if (cmd === 'list-tokens') {
      needs(1);
      out = await viaHttp(url, 'GET', tokens(a1));
    } else if (cmd === 'revoke-token') {
      needs(2);
      out = await viaHttp(url, 'DELETE', `${tokens(a1)}/${encodeURIComponent(a2)}`);
    } else if (cmd === 'rotate-token') {
      needs(2);
      out = await viaHttp(url, 'POST', `${tokens(a1)}/${encodeURIComponent(a2)}/rotate`, rotateBody);
    } else usage();
  } else {
    const dataDir = path.resolve(process.env.DB_DATA_DIR || './data');
    let sys: SystemStore;
    try {
      sys = await SystemStore.open(dataDir);
    } catch (e) {
      throw new Error(`cannot open ${dataDir}/_system (${(e as Error).message}); if the server is running, use --url with DB_OPERATOR_TOKEN`);
    }
    try {
      if (cmd === 'create-tenant') out = await sys.createTenant(opts.tenant);
      else if (cmd === 'list') out = sys.listTenants();
      else if (cmd === 'issue-token') {
        needs(1);
        out = await sys.issueToken(a1, issue.ttlSeconds);
      } else if (cmd === 'list-tokens') {
        needs(1);
        out = sys.listTokens(a1);
      } else if (cmd === 'revoke-token') {
        needs(2);
        out = { revoked: await sys.revokeTokenById(a1, a2) };
      } else if (cmd === 'rotate-token') {
        needs(2);
        out = await sys.rotateToken(a1, a2, rotate.graceSeconds, rotate.ttlSeconds);
      } else usage();
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
