import { Logger } from '@nestjs/common';
import { DbError } from '@mmdb/core';
import { AckTracker, Follower, LeaseRecord, LeaseStore, TenantLease } from '@mmdb/replication';
import type { ReplicationConfig } from '../config';
import type { Metrics } from '../health/metrics.service';
import type { TenantHandle } from '../tenancy/tenant-registry';
import { syncContext } from './sync';
import { HttpsTransport } from './transport';

/**
 * One tenant's replication on this node: its lease (role, fencing), the acknowledgements of
 * its followers (on the holder), and the sync window of its writes.
 */
export class Replica {
  readonly lease: TenantLease;
  readonly acks: AckTracker;
  readonly follower: Follower;
  private readonly transport: HttpsTransport;
  private lastPublish = 0;
  /** Epoch of the last frame in the store's log (its position, with lastLsn). */
  lastFrameEpoch = 0;
  private readonly log = new Logger('Replication');

  constructor(
    readonly handle: TenantHandle,
    private readonly config: ReplicationConfig,
    store: LeaseStore,
    advertiseUrl: string,
    certPem: string | undefined,
    operatorToken: string,
    private readonly metrics: Metrics,
    hooks: { rebuild(holder: LeaseRecord): void; rebuilding(): boolean; leading(): Promise<void> },
  ) {
    this.acks = new AckTracker(Math.max(10 * config.leaseTtlMs, 60_000));
    this.transport = new HttpsTransport(handle.tenant, operatorToken, config.caFile);
    this.follower = new Follower({
      node: config.nodeName,
      store: handle.store,
      transport: this.transport,
      onApplied: (n) => {
        this.metrics.replicationFrames.inc({ direction: 'in' }, n);
        this.publishSoon();
      },
      observeEpoch: (e) => this.lease.observeEpoch(e),
      // The holder cannot continue this log (dropped frames, a diverged or longer log): re-image it from a snapshot.
      onResync: async (holder) => hooks.rebuild(holder),
      log: (m) => this.log.warn(`tenant ${handle.tenant}: ${m}`),
    });
    this.lease = new TenantLease({
      tenant: handle.tenant,
      node: config.nodeName,
      advertiseUrl,
      certPem,
      ttlMs: config.leaseTtlMs,
      store,
      host: {
        position: () => ({ lsn: handle.store.lastLsn, epoch: this.lastFrameEpoch }),
        becomeLeader: async (epoch) => {
          // No frame of the old holder may be applied once this node writes.
          await this.follower.pause();
          await handle.store.setEpoch(epoch);
        },
        follow: (lease) => this.follow(lease),
        // A node re-imaging its store must not take the lease with the old one.
        eligible: () => !hooks.rebuilding(),
      },
      log: (m) => this.log.log(m),
    });
    this.lease.onRole((c) => {
      if (c.role !== 'leader') this.acks.clear();
      else void hooks.leading().catch((e: unknown) => this.log.error(`tenant ${handle.tenant}: moving pending tokens into the log: ${(e as Error).message}`));
      this.observeRole();
    });
    handle.store.changes.subscribe((f) => {
      this.lastFrameEpoch = f.epoch;
      this.lease.observeEpoch(f.epoch);
    });
    handle.store.setWriteGate(() => this.lease.checkWrite());
    if (config.syncFollowers > 0) handle.afterCommit = (lsn) => this.sync(lsn);
  }

  get tenant(): string {
    return this.handle.tenant;
  }

  async start(): Promise<void> {
    for await (const f of this.handle.store.frames(Math.max(1, this.handle.store.lastLsn))) this.lastFrameEpoch = f.epoch;
    this.observeRole();
    await this.lease.start();
  }

  async stop(): Promise<void> {
    await this.follower.stop();
    await this.lease.stop();
    this.acks.clear();
    this.transport.close();
  }

  /** The node follows another holder (or, vacant, no one until the election). */
  private follow(lease: LeaseRecord | null): void {
    this.follower.follow(lease);
    this.observeRole();
  }

  /** Publishes this node's position at most every 100 ms while frames apply (elections and hand-overs read it). */
  private publishSoon(): void {
    const now = Date.now();
    if (now - this.lastPublish < 100) return;
    this.lastPublish = now;
    void this.lease.publish().catch(() => undefined);
  }

  private observeRole(): void {
    const tenant = this.tenant;
    for (const role of ['leader', 'follower', 'candidate'] as const) this.metrics.replicationRole.set({ tenant, role }, this.lease.role === role ? 1 : 0);
    this.metrics.replicationEpoch.set({ tenant }, Math.max(this.lease.epoch, this.lease.maxEpoch, this.handle.store.epoch));
  }

  /**
   * The sync window (DB_REPLICATION_SYNC_FOLLOWERS): waits until that many followers have
   * acknowledged `lsn`, up to DB_REPLICATION_SYNC_MS. Past it the write stands and the answer
   * carries `X-DB-Replication: degraded`, or, strict, is 504 gateway_timeout.
   */
  private async sync(lsn: number): Promise<void> {
    const ok = await this.acks.waitFor(lsn, this.config.syncFollowers, this.config.syncMs);
    if (ok) return;
    this.metrics.replicationDegraded.inc({ tenant: this.tenant });
    if (this.config.syncStrict) {
      throw new DbError(
        'gateway_timeout',
        `the write is committed on the holder (lsn ${lsn}) but ${this.config.syncFollowers} follower acknowledgement(s) did not arrive within ${this.config.syncMs} ms; a failover may lose it`,
        { lsn, acknowledged_by: this.acks.count(lsn) },
      );
    }
    const ctx = syncContext.getStore();
    if (ctx) ctx.degraded = true;
  }
}
