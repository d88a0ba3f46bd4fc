/**
 * Where the CLI's connection comes from, strongest first: flags, environment, then a profile
 * of the profile file (TOML, `$MMDB_CONFIG` or `~/.config/mmdb/config.toml`):
 *
 *   [profiles.default]
 *   url = "https://127.0.0.1:8443"
 *   tenant = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
 *   token = "mmdb_…"
 *   ca_file = "./data/tls/cert.pem"   # or insecure = true for a local self-signed server
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { parse, stringify } from 'smol-toml';

export interface Conn {
  url: string;
  token?: string;
  tenant?: string;
  caFile?: string;
  insecure?: boolean;
}

export interface GlobalFlags {
  url?: string;
  token?: string;
  tenant?: string;
  ca?: string;
  insecure?: boolean;
  profile?: string;
}

export const DEFAULT_URL = 'https://127.0.0.1:8443';

export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  return env.MMDB_CONFIG ?? path.join(env.XDG_CONFIG_HOME ?? path.join(os.homedir(), '.config'), 'mmdb', 'config.toml');
}

type Profile = { url?: string; token?: string; tenant?: string; ca_file?: string; insecure?: boolean };

export function readProfiles(file: string): Record<string, Profile> {
  if (!fs.existsSync(file)) return {};
  const doc = parse(fs.readFileSync(file, 'utf8')) as { profiles?: Record<string, Profile> };
  return doc.profiles ?? {};
}

export function writeProfile(file: string, name: string, p: Profile): void {
  const all = readProfiles(file);
  all[name] = { ...all[name], ...Object.fromEntries(Object.entries(p).filter(([, v]) => v !== undefined)) };
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, stringify({ profiles: all }), { mode: 0o600 });
}

const truthy = (v: string | undefined) => v !== undefined && /^(1|true|yes)$/i.test(v);

export function resolveConn(flags: GlobalFlags, env: NodeJS.ProcessEnv = process.env): Conn {
  const name = flags.profile ?? env.MMDB_PROFILE ?? 'default';
  const profiles = readProfiles(configPath(env));
  const prof = profiles[name];
  if (!prof && (flags.profile || env.MMDB_PROFILE)) throw new Error(`no profile "${name}" in ${configPath(env)}`);
  const p = prof ?? {};
  return {
    url: flags.url ?? env.MMDB_URL ?? p.url ?? DEFAULT_URL,
    token: flags.token ?? env.MMDB_TOKEN ?? p.token,
    tenant: flags.tenant ?? env.MMDB_TENANT ?? p.tenant,
    caFile: flags.ca ?? env.MMDB_CA_FILE ?? p.ca_file,
    insecure: flags.insecure || truthy(env.MMDB_INSECURE) || p.insecure === true,
  };
}
