/**
 * Starts the BUILT server (`node dist/apps/api/main.js`) on a free port in a temp data
 * directory, and talks to it over real HTTPS (verifying its self-signed certificate).
 */
import { ChildProcess, spawn } from 'child_process';
import * as fs from 'fs';
import * as https from 'https';
import * as os from 'os';
import * as path from 'path';

export const ROOT = path.join(__dirname, '../../..');
export const MAIN = path.join(ROOT, 'dist/apps/api/main.js');

export interface Res {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: any;
}

export interface ReqOpts {
  token?: string | null;
  headers?: Record<string, string>;
  body?: unknown;
  /** Raw body (string/Buffer) sent as is. */
  raw?: string | Buffer;
  contentType?: string;
}

export class TestServer {
  proc!: ChildProcess;
  url = '';
  stdout = '';
  stderr = '';
  ca!: string;
  agent!: https.Agent;

  constructor(
    readonly dataDir: string,
    readonly env: Record<string, string>,
  ) {}

  static tempDir(): string {
    return fs.mkdtempSync(path.join(os.tmpdir(), 'mmdb-api-e2e-'));
  }

  async start(): Promise<this> {
    this.stdout = '';
    this.proc = spawn(process.execPath, [MAIN], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', DB_DATA_DIR: this.dataDir, DB_PORT: '0', DB_HOST: '127.0.0.1', DB_LOG_LEVEL: 'warn', ...this.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.proc.stderr!.on('data', (d) => (this.stderr += d));
    this.url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`server did not start: ${this.stdout}\n${this.stderr}`)), 30_000);
      this.proc.stdout!.on('data', (d) => {
        this.stdout += d;
        const m = /listening on (\S+)/.exec(this.stdout);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]);
        }
      });
      this.proc.on('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`server exited with ${code}: ${this.stdout}\n${this.stderr}`));
      });
    });
    this.proc.removeAllListeners('exit');
    if (this.url.startsWith('https:')) this.ca = fs.readFileSync(path.join(this.dataDir, 'tls/cert.pem'), 'utf8');
    this.agent = new https.Agent({ keepAlive: true, ca: this.ca, maxSockets: 64 });
    return this;
  }

  get port(): number {
    return Number(new URL(this.url).port);
  }

  async stop(): Promise<void> {
    this.agent?.destroy();
    if (!this.proc || this.proc.exitCode !== null) return;
    const exited = new Promise((r) => this.proc.once('exit', r));
    this.proc.kill('SIGTERM');
    await exited;
  }

  async kill(): Promise<void> {
    this.agent?.destroy();
    const exited = new Promise((r) => this.proc.once('exit', r));
    this.proc.kill('SIGKILL');
    await exited;
  }

  request(method: string, p: string, opts: ReqOpts = {}): Promise<Res> {
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    let body: string | Buffer | undefined;
    if (opts.raw !== undefined) {
      body = opts.raw;
      headers['content-type'] ??= opts.contentType ?? 'application/json';
    } else if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] ??= opts.contentType ?? 'application/json';
    }
    return new Promise((resolve, reject) => {
      let answered = false;
      const req = https.request(this.url + p, { method, headers, agent: this.agent, ca: this.ca }, (res) => {
        answered = true;
        const chunks: Buffer[] = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: any;
          try {
            json = text ? JSON.parse(text) : undefined;
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode!, headers: res.headers, text, json });
        });
        res.on('error', reject);
      });
      // A server may answer (413) and close before the whole body is sent: that is not an error here.
      req.on('error', (e) => {
        if (!answered) reject(e);
      });
      if (body === undefined || body.length < 1 << 20) {
        req.end(body);
        return;
      }
      // Large bodies are written piece by piece, stopping once an answer has come.
      const buf = Buffer.isBuffer(body) ? body : Buffer.from(body);
      void (async () => {
        for (let off = 0; off < buf.length && !answered && !req.destroyed; off += 1 << 16) {
          if (!req.write(buf.subarray(off, off + (1 << 16)))) await new Promise((r) => req.once('drain', r).once('close', r));
        }
        if (!answered && !req.destroyed) req.end();
      })();
    });
  }
}

export const TENANT = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
export const TOKEN = 'e2e-tenant-token-0123456789';
export const OPERATOR = 'e2e-operator-token-0123456789';

export function bootstrapEnv(extra: Record<string, string> = {}): Record<string, string> {
  return { DB_BOOTSTRAP_TENANT: TENANT, DB_BOOTSTRAP_TOKEN: TOKEN, DB_OPERATOR_TOKEN: OPERATOR, DB_SYNC: 'false', ...extra };
}

/** lib.papers: a string id and a body declared for full-text search. */
export const PAPERS_TOML = `namespace = "lib"
table = "papers"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "str"
required = true
[[columns]]
name = "body"
ty = "str"
[[fulltext]]
field = "body"
`;

export const ITEMS_TOML = `namespace = "shop"
table = "items"
primary_key = ["id"]

[[columns]]
name = "id"
ty = "i64"
required = true

[[columns]]
name = "name"
ty = "str"
required = true

[[columns]]
name = "price"
ty = "f64"

[[indexes]]
name = "by_name"
columns = ["name"]
unique = true
`;

/** A manifest for tests: `id` (a required i64 primary key) and the given columns. */
export function tableToml(id: string, columns: ReadonlyArray<readonly [name: string, ty: string]>): string {
  const [namespace, table] = id.split('.');
  const cols = [['id', 'i64'] as const, ...columns].map(([name, ty]) => `[[columns]]\nname = "${name}"\nty = "${ty}"${name === 'id' ? '\nrequired = true' : ''}\n`);
  return `namespace = "${namespace}"\ntable = "${table}"\nprimary_key = ["id"]\n${cols.join('')}`;
}
