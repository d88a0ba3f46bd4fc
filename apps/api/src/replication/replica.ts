import { Logger } from '@nestjs/common';
import { DbError } from '@mmdb/core';
import { AckTracker, LeaseRecord, LeaseStore, TenantLease } from '@mmdb/replication';
import type { ReplicationConfig } from '../config';
import type { Metrics } from '../health/metrics.service';
import type { TenantHandle } from '../tenancy/tenant-registry';
import { syncContext } from './sync';

/**
 * One tenant's replication on this node: its lease (role, fencing), the acknowledgements of
 * its followers (on the holder), and the sync window of its writes.
 */
export class Replica {
  readonly lease: TenantLease;
  readonly acks: AckTracker;
  /** Epoch of the last frame in the store's log (its position, with lastLsn). */
  lastFrameEpoch = 0;
  private readonly log = new Logger('Replication');

  constructor(
    readonly handle: TenantHandle,
    private readonly config: ReplicationConfig,
    store: LeaseStore,
    advertiseUrl: string,
    private readonly metrics: Metrics,
  ) {
    this.acks = new AckTracker(Math.max(10 * config.leaseTtlMs, 60_000));
    this.lease = new TenantLease({
      tenant: handle.tenant,
      node: config.nodeName,
      advertiseUrl,
      ttlMs: config.leaseTtlMs,
      store,
      host: {
        position: () => ({ lsn: handle.store.lastLsn, epoch: this.lastFrameEpoch }),
        becomeLeader: (epoch) => handle.store.setEpoch(epoch),
        follow: (lease) => this.follow(lease),
      },
      log: (m) => this.log.log(m),
    });
    this.lease.onRole((c) => {
      if (c.role !== 'leader') this.acks.clear();
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
    await this.lease.stop();
    this.acks.clear();
  }

  /** The node follows another holder (or none). Followers' tailing builds on this. */
  private follow(_lease: LeaseRecord | null): void {
    this.observeRole();
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
