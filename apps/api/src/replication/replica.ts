import { performance } from 'perf_hooks';
import { Logger } from '@nestjs/common';
import { DbError } from '@mmdb/core';
import { AckTracker, Follower, LeaseRecord, LeaseStore, NO_SYNC_SETTINGS, SYNC_SETTINGS_ID, TenantLease, effectiveSync, storedSyncSettings, type StoredSyncSettings, type SyncSettings } from '@mmdb/replication';
import type { ReplicationConfig } from '../config';
import type { Metrics } from '../health/metrics.service';
import type { TenantHandle } from '../tenancy/tenant-registry';
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
  private publishTimer: NodeJS.Timeout | undefined;
  /** Each follower's position as last recorded for retention, and the one due (acknowledge). */
  private readonly registered = new Map<string, Registration>();
  /** The tenant's own sync settings (its catalogue, kept current from its frames). */
  stored: StoredSyncSettings = NO_SYNC_SETTINGS;
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
      for (const c of f.changes) if (c.op === 'catalog' && c.kind === 'replication' && c.id === SYNC_SETTINGS_ID) this.stored = storedSyncSettings(c.record);
    });
    handle.store.setWriteGate(() => this.lease.checkWrite());
    handle.afterCommit = (lsn) => this.sync(lsn);
  }

  /** The sync settings in force for this tenant: its stored ones over the node's defaults. */
  get settings(): SyncSettings {
    return effectiveSync({ sync_followers: this.config.syncFollowers, sync_ms: this.config.syncMs, strict: this.config.syncStrict }, this.stored);
  }

  /**
   * How stale this node's copy may be, in ms: 0 while it holds a writable lease; otherwise
   * the time since it last heard from a holder (any line of the frames stream, heartbeats
   * every second) or last held the lease itself, whichever is later. Infinity when it has
   * done neither since it started.
   */
  staleMs(): number {
    if (this.lease.canWrite()) return 0;
    const last = Math.max(this.follower.lastHeard || -Infinity, this.lease.leaseHeldUntil);
    return performance.now() - last;
  }

  /**
   * Throws 503 service_unavailable (retry: true) when this node's copy is staler than
   * DB_REPLICATION_MAX_STALE_MS: a follower cut off from the holder stops answering (and stops
   * honouring tokens revoked on the holder since) instead of serving an ever older state.
   */
  checkFresh(): void {
    const stale = this.staleMs();
    if (stale <= this.config.maxStaleMs) return;
    const l = this.lease.lease;
    const since = Number.isFinite(stale) ? `for ${Math.round(stale)} ms` : 'since it started';
    throw new DbError('service_unavailable', `this node (${this.config.nodeName}) has not heard from the holder of tenant ${this.tenant} ${since}, past its staleness bound of ${this.config.maxStaleMs} ms; retry against the holder`, {
      // A stale node never holds the lease (the holder's staleness is 0): it is fenced too.
      fenced: true,
      stale: true,
      stale_ms: Number.isFinite(stale) ? Math.round(stale) : null,
      max_stale_ms: this.config.maxStaleMs,
      role: this.lease.role,
      holder: l && l.holder !== this.config.nodeName ? l.holder : null,
      holder_url: l && l.holder !== this.config.nodeName ? l.advertise_url : null,
    });
  }

  get tenant(): string {
    return this.handle.tenant;
  }

  async start(): Promise<void> {
    const rec = (await this.handle.store.catalogEntries('replication')).find((e) => e.id === SYNC_SETTINGS_ID);
    if (rec) this.stored = storedSyncSettings(rec.record);
    for await (const f of this.handle.store.frames(Math.max(1, this.handle.store.lastLsn))) this.lastFrameEpoch = f.epoch;
    this.observeRole();
    await this.lease.start();
  }

  async stop(): Promise<void> {
    clearTimeout(this.publishTimer);
    this.registered.clear();
    await this.follower.stop();
    await this.lease.stop();
    this.acks.clear();
    this.transport.close();
  }

  /**
   * A follower's acknowledgement: counted at once (the writes waiting on it go), and recorded
   * for log retention (`registerFollower`, a durable write) off the acknowledgement's path,
   * one record in flight per follower, and only when the follower entered another log segment
   * since its last record: retention drops whole segments, so a record inside the same segment
   * would change nothing (and the follower's open stream holds retention meanwhile).
   */
  acknowledge(follower: string, lsn: number, epoch: number) {
    const a = this.acks.ack(follower, lsn, epoch);
    let r = this.registered.get(follower);
    if (!r) this.registered.set(follower, (r = { lsn: -1, want: a.lsn, busy: false }));
    r.want = a.lsn;
    if (!r.busy) r.running = this.register(follower, r);
    return a;
  }

  private async register(follower: string, r: Registration): Promise<void> {
    const size = this.handle.store.segments.framesPerSegment;
    const segment = (lsn: number) => Math.floor(Math.max(0, lsn - 1) / size);
    r.busy = true;
    try {
      while (this.registered.get(follower) === r && (r.lsn < 0 || segment(r.want) !== segment(r.lsn))) {
        const lsn = r.want;
        await this.handle.store.registerFollower(follower, lsn);
        r.lsn = lsn;
      }
    } catch (e) {
      this.log.warn(`tenant ${this.tenant}: recording follower ${follower}: ${(e as Error).message}`);
    } finally {
      r.busy = false;
    }
  }

  /**
   * Forgets a follower's acknowledgement and stops recording it for retention: `removed` when it
   * had one; `settled` once a retention record still being written for it has landed, so the
   * caller's removal of the record comes after it (else a late record could hold the log forever).
   */
  forget(follower: string): { removed: boolean; settled: Promise<void> } {
    const r = this.registered.get(follower);
    this.registered.delete(follower);
    return { removed: this.acks.forget(follower), settled: r?.running ?? Promise.resolve() };
  }

  /** The node follows another holder (or, vacant, no one until the election). */
  private follow(lease: LeaseRecord | null): void {
    this.follower.follow(lease);
    this.observeRole();
  }

  /**
   * Publishes this node's position at most every 100 ms while frames apply, and once more
   * after the last of them (elections and hand-overs read it: a position left behind in etcd
   * could let a less up-to-date follower win).
   */
  private publishSoon(): void {
    const now = Date.now();
    const wait = this.lastPublish + 100 - now;
    if (wait > 0) {
      this.publishTimer ??= setTimeout(() => {
        this.publishTimer = undefined;
        this.publishSoon();
      }, wait);
      return;
    }
    this.lastPublish = now;
    void this.lease.publish().catch(() => undefined);
  }

  private observeRole(): void {
    const tenant = this.tenant;
    for (const role of ['leader', 'follower', 'candidate'] as const) this.metrics.replicationRole.set({ tenant, role }, this.lease.role === role ? 1 : 0);
    this.metrics.replicationEpoch.set({ tenant }, Math.max(this.lease.epoch, this.lease.maxEpoch, this.handle.store.epoch));
  }

  /**
   * The sync window (the tenant's settings, else DB_REPLICATION_SYNC_FOLLOWERS): waits until
   * that many followers have acknowledged `lsn`, up to its sync_ms. Past it the write stands and the answer
   * carries `X-DB-Replication: degraded`, or, strict, is 504 gateway_timeout.
   */
  private async sync(lsn: number): Promise<'degraded' | void> {
    const s = this.settings;
    if (s.sync_followers <= 0) return;
    const ok = await this.acks.waitFor(lsn, s.sync_followers, s.sync_ms);
    if (ok) return;
    this.metrics.replicationDegraded.inc({ tenant: this.tenant });
    if (s.strict) {
      throw new DbError(
        'gateway_timeout',
        `the write is committed on the holder (lsn ${lsn}) but ${s.sync_followers} follower acknowledgement(s) did not arrive within ${s.sync_ms} ms; a failover may lose it`,
        { lsn, acknowledged_by: this.acks.count(lsn) },
      );
    }
    return 'degraded';
  }
}

/** A follower's retention record: the LSN recorded, the one wanted, and the write in flight. */
interface Registration {
  lsn: number;
  want: number;
  busy: boolean;
  running?: Promise<void>;
}
