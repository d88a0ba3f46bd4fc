/**
 * A cluster on loopback for the replication tests: a real etcd (LocalEtcd) and built servers
 * sharing the bootstrap tenant and operator token, each with its own data dir and name.
 */
import { LocalEtcd } from '@mmdb/replication';
import { bootstrapEnv, OPERATOR, Res, TestServer } from './server';

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function until<T>(what: string, fn: () => Promise<T | false | undefined | null> | T | false | undefined | null, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

export class Cluster {
  readonly nodes = new Map<string, TestServer>();
  etcd!: LocalEtcd;

  constructor(private readonly extra: Record<string, string> = {}) {}

  async start(): Promise<this> {
    this.etcd = await LocalEtcd.start();
    return this;
  }

  env(name: string, extra: Record<string, string> = {}): Record<string, string> {
    return bootstrapEnv({ DB_ETCD_ENDPOINTS: this.etcd.endpoint, DB_NODE_NAME: name, DB_LEASE_TTL_MS: '2000', ...this.extra, ...extra });
  }

  async node(name: string, extra: Record<string, string> = {}): Promise<TestServer> {
    const s = await new TestServer(TestServer.tempDir(), this.env(name, extra)).start();
    this.nodes.set(name, s);
    return s;
  }

  /**
   * Registers beforeAll/afterAll for a test file: etcd and a first node `name` holding the
   * lease; `get()` gives the node once started.
   */
  static holder(extra: Record<string, string>, name = 'node-a', nodeEnv: Record<string, string> = {}): { c: Cluster; get: () => TestServer } {
    const c = new Cluster(extra);
    let a!: TestServer;
    beforeAll(async () => {
      await c.start();
      a = await c.node(name, nodeEnv);
      await c.writer();
    });
    afterAll(async () => {
      await c.stop();
    });
    return { c, get: () => a };
  }

  /** The node whose /ready?require=write answers 200 (waits for one). */
  async writer(ms = 15_000): Promise<[string, TestServer]> {
    return until('a writable node', async () => {
      for (const [name, s] of this.nodes) {
        if (s.proc.exitCode !== null || s.proc.signalCode !== null) continue;
        // a paused node does not answer: give each probe a second
        const r = await Promise.race([s.request('GET', '/ready?require=write').catch(() => null), sleep(1000).then(() => null)]);
        if (r?.status === 200) return [name, s] as [string, TestServer];
      }
      return null;
    }, ms);
  }

  op(s: TestServer, method: string, p: string, body?: unknown): Promise<Res> {
    return s.request(method, p, { token: OPERATOR, ...(body !== undefined ? { body } : {}) });
  }

  async stop(): Promise<void> {
    for (const s of this.nodes.values()) {
      if (s.proc.signalCode !== null || s.proc.exitCode !== null) continue; // already gone
      s.proc.kill('SIGCONT');
      await s.stop().catch(() => undefined);
    }
    await this.etcd?.stop();
  }
}
