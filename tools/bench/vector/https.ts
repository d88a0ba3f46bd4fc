/** Starts the BUILT server (dist/apps/api/main.js) on 127.0.0.1 in a temp dir; one keep-alive TLS 1.3 connection. */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as https from 'node:https';
import * as tls from 'node:tls';
import * as os from 'node:os';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '../../..');
export const TENANT = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
const TOKEN = 'vector-bench-token-0123456789';

export interface Server {
  proc: ChildProcess;
  dir: string;
  post(p: string, body: unknown): Promise<any>;
  get(p: string): Promise<any>;
  /**
   * A minimal HTTP/1.1 client on one keep-alive TLS 1.3 socket, for the timed loops: the request
   * is one write, the reply is read by its content-length. node:https costs ~0.2 ms of client CPU
   * per request on this machine, as much as the server's whole no-op route; see README.md.
   */
  lean(): Promise<LeanClient>;
  /**
   * Waits until the server process (its JS thread and its store's background threads, e.g.
   * LevelDB compactions after a bulk load) uses under 3% of a core over a second, at most
   * `maxMs`; returns the ms waited. Timed loops start from a quiet server.
   */
  settle(maxMs?: number): Promise<number>;
  /** Everything the server printed on stdout so far (`--trace-gc` lines, for one). */
  stdout(): string;
  stop(): Promise<void>;
}

/** Collections in `--trace-gc` output (a slice of the server's stdout). */
export function gcStats(text: string): { scavenges: number; marks: number; totalMs: number; maxMs: number } {
  let scavenges = 0;
  let marks = 0;
  let totalMs = 0;
  let maxMs = 0;
  for (const line of text.split('\n')) {
    const m = /(Scavenge|Mark-Compact|Mark-sweep|Minor Mark-Sweep)[^,]*, ([\d.]+) \/ ([\d.]+) ms/.exec(line);
    if (!m) continue;
    if (m[1] === 'Scavenge' || m[1] === 'Minor Mark-Sweep') scavenges++;
    else marks++;
    const ms = Number(m[2]);
    totalMs += ms;
    maxMs = Math.max(maxMs, ms);
  }
  return { scavenges, marks, totalMs, maxMs };
}

export interface LeanClient {
  post(p: string, body: unknown): Promise<any>;
  get(p: string): Promise<any>;
  close(): void;
}

const CRLF2 = Buffer.from('\r\n\r\n');

/** One request at a time on one TLS socket; replies must carry content-length (fastify's do). */
function leanClient(url: string, ca: string, auth: string): Promise<LeanClient> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const sock = tls.connect({ host: u.hostname, port: Number(u.port), ca, minVersion: 'TLSv1.3' }, () => {
      sock.setNoDelay(true);
      resolve({ post: (p, b) => send('POST', p, JSON.stringify(b)), get: (p) => send('GET', p, null), close: () => sock.destroy() });
    });
    sock.once('error', reject);
    let buf: Buffer = Buffer.alloc(0);
    let pending: { resolve(v: unknown): void; reject(e: Error): void; path: string } | null = null;
    sock.on('data', (d: Buffer) => {
      buf = buf.length ? Buffer.concat([buf, d]) : d;
      const end = buf.indexOf(CRLF2);
      if (end < 0 || !pending) return;
      const head = buf.toString('latin1', 0, end);
      const m = /\r\ncontent-length: *(\d+)/i.exec(head);
      if (!m) return pending.reject(new Error(`no content-length in reply: ${head}`));
      const len = Number(m[1]);
      if (buf.length < end + 4 + len) return;
      const text = buf.toString('utf8', end + 4, end + 4 + len);
      buf = buf.subarray(end + 4 + len);
      const p = pending;
      pending = null;
      const status = Number(head.slice(9, 12));
      if (status !== 200) p.reject(new Error(`${p.path}: ${status} ${text.slice(0, 300)}`));
      else p.resolve(JSON.parse(text));
    });
    sock.on('close', () => pending?.reject(new Error('connection closed')));
    const host = `${u.hostname}:${u.port}`;
    function send(method: string, p: string, body: string | null): Promise<any> {
      return new Promise((res, rej) => {
        pending = { resolve: res, reject: rej, path: p };
        const path = `/v1/tenants/${TENANT}${p}`;
        if (body === null) sock.write(`${method} ${path} HTTP/1.1\r\nhost: ${host}\r\nauthorization: ${auth}\r\n\r\n`);
        else
          sock.write(
            `${method} ${path} HTTP/1.1\r\nhost: ${host}\r\nauthorization: ${auth}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
          );
      });
    }
  });
}

export interface ServerOptions {
  /** Node flags for the server process (e.g. `--cpu-prof`, `--trace-gc`). */
  nodeArgs?: string[];
  /** Use (and keep) this data directory instead of a fresh temp dir removed at stop. */
  dataDir?: string;
}

/** A bare node:https server in its own process (`bare-server.js`), with the server's certificate. */
export interface BareServer {
  pid: number;
  lean(): Promise<LeanClient>;
  stop(): Promise<void>;
}

export async function startBareServer(tlsDir: string): Promise<BareServer> {
  const proc = spawn(process.execPath, [path.join(__dirname, 'bare-server.js'), tlsDir], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    proc.stdout!.on('data', (d) => {
      out += d;
      const m = /listening on (\S+)/.exec(out);
      if (m) resolve(m[1]);
    });
    proc.once('exit', (code) => reject(new Error(`bare server exited with ${code}`)));
  });
  const ca = fs.readFileSync(path.join(tlsDir, 'cert.pem'), 'utf8');
  return {
    pid: proc.pid!,
    lean: () => leanClient(url, ca, 'none'),
    stop: async () => {
      proc.kill('SIGTERM');
      await new Promise((r) => proc.once('exit', r));
    },
  };
}

/**
 * Share of the machine's CPU time the hypervisor gave to others while our vCPUs wanted it
 * ("steal", /proc/stat), between `hostSteal()` and the call of what it returns, in %.
 */
export function hostSteal(): () => number {
  const read = () => {
    const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1, 9).map(Number);
    return { steal: f[7], total: f.reduce((a, b) => a + b, 0) };
  };
  const a = read();
  return () => {
    const b = read();
    return b.total > a.total ? (100 * (b.steal - a.steal)) / (b.total - a.total) : 0;
  };
}

export async function startServer(o: ServerOptions = {}): Promise<Server> {
  const dir = o.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'mmdb-vector-bench-'));
  fs.mkdirSync(dir, { recursive: true });
  const proc = spawn(process.execPath, [...(o.nodeArgs ?? []), path.join(ROOT, 'dist/apps/api/main.js')], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      DB_DATA_DIR: dir,
      DB_PORT: '0',
      DB_HOST: '127.0.0.1',
      DB_LOG_LEVEL: 'warn',
      DB_BOOTSTRAP_TENANT: TENANT,
      DB_BOOTSTRAP_TOKEN: TOKEN,
      DB_OPERATOR_TOKEN: 'vector-bench-operator-0123456789',
      DB_SYNC: 'false', // bulk load speed; queries are what is measured
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stderr!.on('data', (d) => (err += d));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start: ${out}\n${err}`)), 60_000);
    let listening = false;
    proc.stdout!.on('data', (d) => {
      out += d;
      if (listening) return;
      const m = /listening on (\S+)/.exec(out);
      if (m) {
        listening = true;
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    proc.on('exit', (code) => reject(new Error(`server exited with ${code}: ${err}`)));
  });
  const ca = fs.readFileSync(path.join(dir, 'tls', 'cert.pem'), 'utf8');
  const agent = new https.Agent({ keepAlive: true, maxSockets: 16, ca });
  const auth = `Bearer ${TOKEN}`;
  const once = (p: string, body: unknown, method = 'POST') =>
    new Promise<any>((resolve, reject) => {
      const data = method === 'GET' ? null : Buffer.from(JSON.stringify(body));
      const headers: Record<string, string | number> = data ? { authorization: auth, 'content-type': 'application/json', 'content-length': data.length } : { authorization: auth };
      const req = https.request(
        `${url}/v1/tenants/${TENANT}${p}`,
        { method, agent, headers },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            if (res.statusCode !== 200) reject(new Error(`${p}: ${res.statusCode} ${text.slice(0, 300)}`));
            else resolve(JSON.parse(text));
          });
        },
      );
      req.on('error', reject);
      if (data) req.end(data);
      else req.end();
    });
  // a keep-alive socket the server has just closed fails with EPIPE/ECONNRESET: retry (puts are upserts)
  const post = async (p: string, body: unknown, method = 'POST'): Promise<any> => {
    for (let attempt = 0; ; attempt++) {
      try {
        return await once(p, body, method);
      } catch (e) {
        const code = (e as { code?: string }).code;
        if (attempt >= 3 || (code !== 'EPIPE' && code !== 'ECONNRESET')) throw new Error(`${(e as Error).message}\nserver stderr: ${err.slice(-2000)}`);
      }
    }
  };
  return {
    proc,
    dir,
    post,
    get: (p: string) => post(p, undefined, 'GET'),
    lean: () => leanClient(url, ca, auth),
    settle: async (maxMs = 120_000) => {
      const cpu = () => {
        const f = fs.readFileSync(`/proc/${proc.pid}/stat`, 'utf8');
        const parts = f.slice(f.lastIndexOf(')') + 2).split(' ');
        return (Number(parts[11]) + Number(parts[12])) * 10; // utime + stime, ms (100 Hz ticks)
      };
      const t0 = Date.now();
      for (;;) {
        const c0 = cpu();
        await new Promise((r) => setTimeout(r, 1000));
        if (cpu() - c0 <= 30 || Date.now() - t0 > maxMs) return Date.now() - t0;
      }
    },
    stdout: () => out,
    stop: async () => {
      agent.destroy();
      proc.kill('SIGTERM');
      await new Promise((r) => proc.once('exit', r));
      if (!o.dataDir) fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
