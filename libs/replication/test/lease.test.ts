/**
 * The lease against a real etcd on loopback: acquire, renew, loss, fencing, step-down and
 * hand-over, with short TTLs.
 */
import { EtcdLeaseStore, LeaseHost, LocalEtcd, TenantLease } from '../src';

jest.setTimeout(30_000);

// etcd grants whole seconds: 1.5 s is a 2 s etcd lease, and leaves the holder 1.5 s between renewals on a loaded host
const TTL = 1500;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, fn: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

class Node implements LeaseHost {
  lsn = 0;
  epoch = 0;
  stampedEpochs: number[] = [];
  following: string | null = null;
  readonly store: EtcdLeaseStore;
  readonly lease: TenantLease;

  constructor(endpoint: string, tenant: string, readonly name: string) {
    this.store = new EtcdLeaseStore([endpoint], 'test/');
    this.store.sessionTtlMs(TTL);
    this.lease = new TenantLease({ tenant, node: name, advertiseUrl: `https://${name}.invalid`, ttlMs: TTL, store: this.store, host: this });
  }

  position() {
    return { lsn: this.lsn, epoch: this.epoch };
  }

  async becomeLeader(epoch: number) {
    this.stampedEpochs.push(epoch);
  }

  follow(lease: { holder: string } | null) {
    this.following = lease?.holder ?? null;
  }

  async close() {
    await this.lease.stop();
    await this.store.close();
  }
}

describe('TenantLease over etcd', () => {
  let etcd: LocalEtcd;
  let nodes: Node[] = [];
  let n = 0;
  const tenant = () => `T${n}`;

  beforeAll(async () => {
    etcd = await LocalEtcd.start();
  });
  afterAll(async () => {
    await etcd.stop();
  });
  beforeEach(() => {
    n++;
    nodes = [];
  });
  afterEach(async () => {
    for (const x of nodes) await x.close().catch(() => undefined);
  });

  const node = (name: string) => {
    const x = new Node(etcd.endpoint, tenant(), name);
    nodes.push(x);
    return x;
  };
  /** Starts the nodes' leases in order, each waiting for its role. */
  const start = async (...steps: Array<[Node, 'leader' | 'follower']>) => {
    for (const [x, role] of steps) {
      await x.lease.start();
      await until(`${x.name} is ${role}`, () => x.lease.role === role);
    }
  };

  it('one node takes the lease, stamps its epoch, renews past several TTLs; the other follows', async () => {
    const a = node('a');
    const b = node('b');
    await start([a, 'leader'], [b, 'follower']);
    expect(b.following).toBe('a');
    expect(a.stampedEpochs).toEqual([a.lease.epoch]);
    expect(a.lease.epoch).toBeGreaterThan(0);
    await sleep(3 * TTL);
    expect(a.lease.canWrite()).toBe(true);
    expect(() => b.lease.checkWrite()).toThrow(expect.objectContaining({ code: 'service_unavailable', details: expect.objectContaining({ holder: 'a', holder_url: 'https://a.invalid' }) }));
    const before = Date.now();
    const lease = await a.store.read(tenant());
    expect(lease).toMatchObject({ tenant: tenant(), holder: 'a', epoch: a.lease.epoch, advertise_url: 'https://a.invalid', ttl_ms: TTL });
    // etcd reports the time to live in whole seconds (rounded down)
    expect(lease!.expires_at).toBeGreaterThanOrEqual(before);
    expect(lease!.expires_at).toBeLessThanOrEqual(Date.now() + 1000);
  });

  it('a holder that cannot renew stops writing within its TTL; the lease expires and the other node takes it with a higher epoch', async () => {
    const a = node('a');
    const b = node('b');
    await start([a, 'leader']);
    await b.lease.start();
    const first = a.lease.epoch;
    // Cut a off from etcd: every renewal now fails (as with a partition or a paused process).
    const realRenew = a.store.renew.bind(a.store);
    a.store.renew = async () => {
      throw new Error('partitioned');
    };
    // Every renewal a holds was sent before the cut, so a TTL later it may no longer write
    // (whenever this line runs: the check reads the clock, not a timer).
    await sleep(TTL + 5);
    expect(a.lease.canWrite()).toBe(false);
    await until('b leads', () => b.lease.role === 'leader', 10_000);
    expect(b.lease.epoch).toBeGreaterThan(first);
    expect(a.lease.canWrite()).toBe(false);
    // Back in touch: a learns its lease is gone and follows b.
    a.store.renew = realRenew;
    await until('a follows b', () => a.lease.role === 'follower' && a.following === 'b');
  });

  it('a higher epoch seen in a frame fences the holder at once', async () => {
    const a = node('a');
    await start([a, 'leader']);
    a.lease.observeEpoch(a.lease.epoch + 1000);
    expect(a.lease.canWrite()).toBe(false);
  });

  it('step-down hands the lease to the other node; a non-holder gets 409 conflict', async () => {
    const a = node('a');
    const b = node('b');
    await start([a, 'leader'], [b, 'follower']);
    await expect(b.lease.stepDown()).rejects.toMatchObject({ code: 'conflict' });
    const before = a.lease.epoch;
    await a.lease.stepDown();
    expect(a.lease.canWrite()).toBe(false);
    await until('b leads', () => b.lease.role === 'leader');
    expect(b.lease.epoch).toBeGreaterThan(before);
    await until('a follows', () => a.lease.role === 'follower');
  });

  it('hand-over waits for the target to catch up, then the target (not a third node) takes the lease', async () => {
    const a = node('a');
    const b = node('b');
    const c = node('c');
    a.lsn = 10;
    await start([a, 'leader']);
    b.lsn = 10;
    c.lsn = 10;
    await b.lease.start();
    await c.lease.start();
    await until('followers', () => b.lease.role === 'follower' && c.lease.role === 'follower');
    await expect(a.lease.handOver('nobody')).rejects.toMatchObject({ code: 'validation_failed' });
    const r = await a.lease.handOver('c');
    expect(r).toEqual({ from: 'a', to: 'c', lsn: 10 });
    await until('c leads', () => c.lease.role === 'leader');
    await sleep(TTL);
    expect(b.lease.role).toBe('follower');
  });

  it('hand-over to a node that does not catch up is refused with 409 and the holder keeps writing', async () => {
    const a = node('a');
    const b = node('b');
    a.lsn = 50;
    await start([a, 'leader'], [b, 'follower']);
    const p = a.lease.handOver('b', 300);
    await sleep(50);
    expect(a.lease.canWrite()).toBe(false); // no writes while handing over
    await expect(a.lease.handOver('b')).rejects.toMatchObject({ code: 'conflict' });
    await expect(p).rejects.toMatchObject({ code: 'conflict' });
    expect(a.lease.canWrite()).toBe(true);
  });

  it('on a vacancy the most up-to-date node wins the election', async () => {
    const a = node('a');
    const b = node('b');
    const c = node('c');
    await start([a, 'leader']);
    b.lsn = 5;
    c.lsn = 9;
    await b.lease.start();
    await c.lease.start();
    await until('followers', () => b.lease.role === 'follower' && c.lease.role === 'follower');
    await b.lease.publish();
    await c.lease.publish();
    await a.close();
    await until('someone leads', () => b.lease.role === 'leader' || c.lease.role === 'leader');
    expect(c.lease.role).toBe('leader');
  });
});
