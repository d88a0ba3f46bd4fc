/** Starts the BUILT server (dist/apps/api/main.js) on 127.0.0.1 in a temp dir; one keep-alive TLS 1.3 connection. */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as https from 'node:https';
import * as os from 'node:os';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '../../..');
export const TENANT = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
const TOKEN = 'vector-bench-token-0123456789';

export interface Server {
  proc: ChildProcess;
  dir: string;
  post(p: string, body: unknown): Promise<any>;
  stop(): Promise<void>;
}

export async function startServer(): Promise<Server> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mmdb-vector-bench-'));
  const proc = spawn(process.execPath, [path.join(ROOT, 'dist/apps/api/main.js')], {
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
    proc.stdout!.on('data', (d) => {
      out += d;
      const m = /listening on (\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    proc.on('exit', (code) => reject(new Error(`server exited with ${code}: ${err}`)));
  });
  const ca = fs.readFileSync(path.join(dir, 'tls', 'cert.pem'), 'utf8');
  const agent = new https.Agent({ keepAlive: true, maxSockets: 16, ca });
  const once = (p: string, body: unknown) =>
    new Promise<any>((resolve, reject) => {
      const data = Buffer.from(JSON.stringify(body));
      const req = https.request(
        `${url}/v1/tenants/${TENANT}${p}`,
        { method: 'POST', agent, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', 'content-length': data.length } },
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
      req.end(data);
    });
  // a keep-alive socket the server has just closed fails with EPIPE/ECONNRESET: retry (puts are upserts)
  const post = async (p: string, body: unknown): Promise<any> => {
    for (let attempt = 0; ; attempt++) {
      try {
        return await once(p, body);
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
    stop: async () => {
      agent.destroy();
      proc.kill('SIGTERM');
      await new Promise((r) => proc.once('exit', r));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
