/**
 * A throwaway single-member etcd on loopback (a free port, a temp data dir), for tests,
 * benchmarks and local clusters. Needs the `etcd` binary (Debian: `etcd-server`).
 *
 * @example
 *   const etcd = await LocalEtcd.start();
 *   // DB_ETCD_ENDPOINTS=etcd.endpoint
 *   await etcd.stop();
 */
import { ChildProcess, spawn } from 'child_process';
import * as fs from 'fs';
import * as http from 'http';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';

/** A free TCP port on 127.0.0.1 (bound then released). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

function healthy(endpoint: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.get(`${endpoint}/health`, { timeout: 500 }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve(res.statusCode === 200 && /"health":\s*"true"/.test(body)));
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
  });
}

export class LocalEtcd {
  private constructor(
    readonly proc: ChildProcess,
    readonly endpoint: string,
    readonly dataDir: string,
    private readonly ownDir: boolean,
  ) {}

  /**
   * Starts etcd and waits until it serves. Heartbeat 10 ms and election timeout 100 ms keep a
   * single member's leader election (and the smallest lease TTL it grants) short.
   */
  static async start(opts: { binary?: string; dataDir?: string; timeoutMs?: number; clientPort?: number } = {}): Promise<LocalEtcd> {
    const bin = opts.binary ?? process.env.ETCD_BIN ?? 'etcd';
    const dir = opts.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'mmdb-etcd-'));
    const [client, peer] = [opts.clientPort ?? (await freePort()), await freePort()];
    const endpoint = `http://127.0.0.1:${client}`;
    const peerUrl = `http://127.0.0.1:${peer}`;
    const proc = spawn(
      bin,
      [
        '--name', 'local',
        '--data-dir', dir,
        '--listen-client-urls', endpoint,
        '--advertise-client-urls', endpoint,
        '--listen-peer-urls', peerUrl,
        '--initial-advertise-peer-urls', peerUrl,
        '--initial-cluster', `local=${peerUrl}`,
        '--heartbeat-interval', '10',
        '--election-timeout', '100',
        '--log-level', 'error',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    proc.stderr!.on('data', (d) => (stderr = (stderr + d).slice(-4000)));
    const etcd = new LocalEtcd(proc, endpoint, dir, !opts.dataDir);
    const deadline = Date.now() + (opts.timeoutMs ?? 20_000);
    let exited: number | null = null;
    proc.once('exit', (code) => (exited = code ?? -1));
    proc.once('error', (e) => (stderr += String(e)));
    while (!(await healthy(endpoint))) {
      if (exited !== null || Date.now() > deadline) {
        await etcd.stop();
        throw new Error(`etcd did not start (${bin}${exited !== null ? `, exit ${exited}` : ''}): ${stderr}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    return etcd;
  }

  /** Stops etcd (SIGTERM, then SIGKILL after 5 s) and removes a data dir it made. */
  async stop(): Promise<void> {
    if (this.proc.exitCode === null && this.proc.signalCode === null) {
      const exited = new Promise((r) => this.proc.once('exit', r));
      this.proc.kill('SIGTERM');
      const t = setTimeout(() => this.proc.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
    }
    if (this.ownDir) fs.rmSync(this.dataDir, { recursive: true, force: true });
  }
}
