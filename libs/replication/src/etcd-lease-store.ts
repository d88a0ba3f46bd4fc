/**
 * `LeaseStore` over etcd (the `etcd3` client): one key per tenant, attached to an etcd lease
 * with the TTL, created only if absent (a transaction on its create revision). The key's
 * create revision is the fencing epoch: etcd revisions only grow, so every new holder has a
 * higher epoch than every earlier one. Keys (under `prefix`, default `mmdb/`):
 *
 *   tenants/<tenant>/lease          {holder, advertise_url, ttl_ms, acquired_at, handing_over_to}
 *   tenants/<tenant>/nodes/<node>   NodePosition, attached to the node's own session lease
 */
import type { Etcd3, IOptions, Lease, Watcher } from 'etcd3';
import type { AcquireResult, LeaseClaim, LeaseGrant, LeaseRecord, LeaseStore, NodePosition } from './lease-store';

interface StoredLease {
  holder: string;
  advertise_url: string;
  ttl_ms: number;
  acquired_at: number;
  handing_over_to?: string | null;
  cert_pem?: string;
}

/** etcd grants whole seconds: the etcd TTL is the lease TTL rounded up, so etcd never expires it before the holder stops writing. */
export function etcdTtlSeconds(ttlMs: number): number {
  return Math.max(1, Math.ceil(ttlMs / 1000));
}

export class EtcdLeaseStore implements LeaseStore {
  readonly client: Etcd3;
  private session: Lease | null = null;
  private sessionTtl = 5;
  private closed = false;

  constructor(
    endpoints: readonly string[],
    private readonly prefix = 'mmdb/',
    options: Omit<IOptions, 'hosts'> = {},
  ) {
    // etcd3 (and its gRPC stack, ~0.2-0.5 s of module loading) only when a lease store is made:
    // a single-node server never loads it (issue 25 §2: restart time)
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { Etcd3: Client } = require('etcd3') as typeof import('etcd3');
    this.client = new Client({ hosts: [...endpoints], dialTimeout: 2000, ...options });
  }

  private leaseKey(tenant: string): string {
    return `${this.prefix}tenants/${tenant}/lease`;
  }

  private nodesPrefix(tenant: string): string {
    return `${this.prefix}tenants/${tenant}/nodes/`;
  }

  async acquire(tenant: string, claim: LeaseClaim): Promise<AcquireResult> {
    const key = this.leaseKey(tenant);
    const ttl = etcdTtlSeconds(claim.ttl_ms);
    const granted = await this.client.leaseClient.leaseGrant({ TTL: ttl });
    const value: StoredLease = {
      holder: claim.holder,
      advertise_url: claim.advertise_url,
      ttl_ms: claim.ttl_ms,
      acquired_at: Date.now(),
      handing_over_to: null,
      ...(claim.cert_pem ? { cert_pem: claim.cert_pem } : {}),
    };
    const res = await this.client
      .if(key, 'Create', '==', 0)
      .then(this.client.put(key).value(JSON.stringify(value)).lease(granted.ID))
      .commit();
    if (!res.succeeded) {
      await this.client.leaseClient.leaseRevoke({ ID: granted.ID }).catch(() => undefined);
      return { grant: null, lease: await this.read(tenant) };
    }
    const epoch = Number(res.header.revision);
    const grant: LeaseGrant = { tenant, epoch, id: granted.ID, ttlMs: claim.ttl_ms };
    return { grant, lease: { tenant, ...value, epoch, expires_at: Date.now() + ttl * 1000 } };
  }

  async renew(grant: LeaseGrant, deadline: number): Promise<boolean> {
    const stream = await this.client.leaseClient.leaseKeepAlive();
    let timer: NodeJS.Timeout | undefined;
    try {
      const res = await new Promise<{ TTL: string }>((resolve, reject) => {
        timer = setTimeout(() => reject(new Error('etcd did not answer the keepalive in time')), Math.max(1, deadline - Date.now()));
        stream.on('data', resolve);
        stream.on('error', reject);
        stream.write({ ID: grant.id });
      });
      if (Number(res.TTL) <= 0) return false;
    } finally {
      clearTimeout(timer);
      stream.end();
    }
    // The key may have been deleted (a step-down elsewhere, an operator) while the etcd lease lives on.
    const kv = await this.client.get(this.leaseKey(grant.tenant)).exec();
    return kv.kvs.length === 1 && Number(kv.kvs[0].create_revision) === grant.epoch;
  }

  async release(grant: LeaseGrant): Promise<void> {
    const key = this.leaseKey(grant.tenant);
    await this.client.if(key, 'Create', '==', String(grant.epoch)).then(this.client.delete().key(key)).commit();
    await this.client.leaseClient.leaseRevoke({ ID: grant.id }).catch(() => undefined);
  }

  async read(tenant: string): Promise<LeaseRecord | null> {
    const res = await this.client.get(this.leaseKey(tenant)).exec();
    if (!res.kvs.length) return null;
    const kv = res.kvs[0];
    const v = JSON.parse(kv.value.toString('utf8')) as StoredLease;
    let expiresAt: number | null = null;
    if (kv.lease && kv.lease !== '0') {
      const t = await this.client.leaseClient.leaseTimeToLive({ ID: kv.lease }).catch(() => null);
      if (t && Number(t.TTL) >= 0) expiresAt = Date.now() + Number(t.TTL) * 1000;
    }
    return {
      tenant,
      holder: v.holder,
      epoch: Number(kv.create_revision),
      advertise_url: v.advertise_url,
      ttl_ms: v.ttl_ms,
      acquired_at: v.acquired_at,
      expires_at: expiresAt,
      handing_over_to: v.handing_over_to ?? null,
      ...(v.cert_pem ? { cert_pem: v.cert_pem } : {}),
    };
  }

  async watch(tenant: string, onChange: () => void): Promise<() => Promise<void>> {
    const w: Watcher = await this.client.watch().key(this.leaseKey(tenant)).create();
    w.on('put', () => onChange());
    w.on('delete', () => onChange());
    // After a reconnect the watcher resumes from its revision; a change missed meanwhile is re-read by the caller's poll.
    w.on('connected', () => onChange());
    w.on('error', () => undefined);
    return async () => {
      await w.cancel().catch(() => undefined);
    };
  }

  async markHandover(grant: LeaseGrant, target: string | null): Promise<boolean> {
    const hkey = `${this.prefix}tenants/${grant.tenant}/handover`;
    if (target === null) await this.client.delete().key(hkey);
    else {
      const l = await this.client.leaseClient.leaseGrant({ TTL: etcdTtlSeconds(2 * grant.ttlMs) });
      await this.client.put(hkey).value(target).lease(l.ID);
    }
    const key = this.leaseKey(grant.tenant);
    const cur = await this.client.get(key).exec();
    if (!cur.kvs.length || Number(cur.kvs[0].create_revision) !== grant.epoch) return false;
    const v = JSON.parse(cur.kvs[0].value.toString('utf8')) as StoredLease;
    const res = await this.client
      .if(key, 'Mod', '==', cur.kvs[0].mod_revision)
      .then(this.client.put(key).value(JSON.stringify({ ...v, handing_over_to: target })).lease(grant.id))
      .commit();
    return res.succeeded;
  }

  async handover(tenant: string): Promise<string | null> {
    return this.client.get(`${this.prefix}tenants/${tenant}/handover`).string();
  }

  /** The node's session lease (positions live only while the node keeps it alive). */
  private nodeSession(ttlMs: number): Lease {
    if (this.session && !this.session.revoked()) return this.session;
    this.sessionTtl = etcdTtlSeconds(ttlMs);
    const s = this.client.lease(this.sessionTtl);
    s.on('lost', () => {
      if (this.session === s) this.session = null;
    });
    this.session = s;
    return s;
  }

  async publishPosition(tenant: string, position: NodePosition): Promise<void> {
    if (this.closed) return;
    await this.nodeSession(this.sessionTtl * 1000)
      .put(this.nodesPrefix(tenant) + position.node)
      .value(JSON.stringify(position));
  }

  /** Sets the TTL of the session lease that node positions live under (before the first publish). */
  sessionTtlMs(ms: number): void {
    this.sessionTtl = etcdTtlSeconds(ms);
  }

  async positions(tenant: string): Promise<NodePosition[]> {
    const all = await this.client.getAll().prefix(this.nodesPrefix(tenant)).strings();
    return Object.values(all).map((s) => JSON.parse(s) as NodePosition);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.session?.revoke().catch(() => undefined);
    this.client.close();
  }
}
