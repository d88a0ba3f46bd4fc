import * as fs from 'fs';
import * as path from 'path';
import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { DbError } from '@mmdb/core';
import { EtcdLeaseStore, imageBatches, type LeaseRecord, type LeaseStore } from '@mmdb/replication';
import { APP_CONFIG, AppConfig } from '../config';
import { Metrics } from '../health/metrics.service';
import type { Principal } from '../system/system-store';
import { SystemStore } from '../system/system-store';
import { TenantHandle, TenantRegistry } from '../tenancy/tenant-registry';
import { writeStoreImage } from '../tenancy/store-port';
import { Replica } from './replica';
import { HttpsTransport } from './transport';

/**
 * The composition root of replication (apps/api/README.md "Replication"): with
 * DB_ETCD_ENDPOINTS it fills the `LeaseStore` port with etcd and gives every tenant store this
 * node opens a `Replica` (lease, fencing, acknowledgements). Without it, nothing changes: a
 * single node writes with no lease.
 */
@Injectable()
export class Replication implements OnApplicationShutdown {
  private readonly log = new Logger('Replication');
  readonly leases: LeaseStore | null;
  private readonly replicas = new Map<string, Replica>();
  private advertiseUrl: string | null = null;
  private certPem: string | undefined;
  private pending: TenantHandle[] = [];
  private readonly rebuilding = new Set<string>();
  /** Bootstraps done since start, per tenant (status). */
  readonly bootstraps = new Map<string, { at: number; lsn: number; keys: number }>();

  constructor(
    @Inject(APP_CONFIG) private readonly appConfig: AppConfig,
    private readonly tenants: TenantRegistry,
    private readonly system: SystemStore,
    private readonly metrics: Metrics,
  ) {
    const r = appConfig.replication;
    if (!r) {
      this.leases = null;
      return;
    }
    const store = new EtcdLeaseStore(r.etcdEndpoints);
    store.sessionTtlMs(r.leaseTtlMs);
    this.leases = store;
    tenants.addHooks({
      // Nothing may commit to a replicated store until its lease is decided.
      created: (_tenant, s) => s.setWriteGate(() => {
        throw new DbError('service_unavailable', 'replication is starting: this node does not hold the write lease yet', { fenced: true, role: 'candidate' });
      }),
      opened: (h) => this.opened(h),
      closing: (h) => this.replicas.get(h.tenant)?.stop(),
    });
  }

  get enabled(): boolean {
    return this.leases !== null;
  }

  /** This node's replication configuration (undefined without DB_ETCD_ENDPOINTS). */
  get config(): AppConfig['replication'] {
    return this.appConfig.replication;
  }

  get nodeName(): string | null {
    return this.appConfig.replication?.nodeName ?? null;
  }

  /** Once the server listens (its URL is the default advertise URL): opens every tenant and starts its lease. */
  async start(listeningUrl: string, certPem?: string): Promise<void> {
    if (!this.appConfig.replication) return;
    this.advertiseUrl = this.appConfig.replication.advertiseUrl ?? listeningUrl;
    this.certPem = certPem;
    const waiting = this.pending;
    this.pending = [];
    for (const h of waiting) await this.attach(h);
    for (const t of this.system.listTenants()) await this.tenants.get(t.tenant);
  }

  private async opened(h: TenantHandle): Promise<void> {
    if (this.advertiseUrl === null) {
      // The lease starts once the node listens (its fence stays closed meanwhile).
      this.pending.push(h);
      return;
    }
    await this.attach(h);
  }

  private async attach(h: TenantHandle): Promise<void> {
    const r = new Replica(h, this.appConfig.replication!, this.leases!, this.advertiseUrl!, this.certPem, this.appConfig.operatorToken!, this.metrics, {
      rebuild: (holder) => this.rebuild(h.tenant, holder),
      rebuilding: () => this.rebuilding.has(h.tenant),
      // Token records this node kept pending while it could not write go into the log now.
      leading: () => this.tenants.migrateLegacy(h.tenant, h.store),
    });
    this.replicas.set(h.tenant, r);
    await r.start();
  }

  /**
   * Bootstraps the tenant's store from a snapshot streamed by `holder` (a new follower the
   * holder's log no longer covers, or an old holder whose log diverged): the image is written
   * beside the store, then the store is swapped for it and reopened, and the new replica tails
   * from the snapshot's LSN. Frames the old store had past the holder's history are gone with it.
   */
  rebuild(tenant: string, holder: LeaseRecord): void {
    if (this.rebuilding.has(tenant)) return;
    this.rebuilding.add(tenant);
    const transport = new HttpsTransport(tenant, this.appConfig.operatorToken!, this.appConfig.replication!.caFile);
    const image = path.join(this.tenants.tenantDir(tenant), 'store.bootstrap');
    void (async () => {
      fs.rmSync(image, { recursive: true, force: true });
      let lsn = 0;
      const { keys } = await writeStoreImage(
        image,
        imageBatches(transport.snapshot(holder), (s) => (lsn = s.lsn)),
      );
      const fresh = await this.tenants.replaceStore(tenant, async (storeDir) => {
        fs.rmSync(storeDir, { recursive: true, force: true });
        fs.renameSync(image, storeDir);
      });
      // The node's index takes the image's tokens: those issued on the holder before this node saw
      // them as frames join it, and those revoked there meanwhile leave it.
      this.system.replaceTokens(tenant, await fresh.store.catalogEntries('token'));
      this.bootstraps.set(tenant, { at: Date.now(), lsn, keys });
      this.log.log(`tenant ${tenant}: bootstrapped from ${holder.holder} at lsn ${lsn} (${keys} keys)`);
    })()
      .catch((e: unknown) => {
        this.log.error(`tenant ${tenant}: bootstrap from ${holder.holder} failed: ${(e as Error).message}`);
        fs.rmSync(image, { recursive: true, force: true });
      })
      .finally(() => {
        this.rebuilding.delete(tenant);
        transport.close();
      });
  }

  /** The tenant's replica; 503 while its store is not open here yet. */
  replica(tenant: string): Replica {
    const r = this.replicas.get(tenant);
    if (!r) throw new DbError('service_unavailable', `tenant ${tenant} is not being replicated on this node yet`);
    return r;
  }

  /** Throws the fencing 503 unless this node may write `tenant` (always allowed without etcd). */
  checkWrite(tenant: string): void {
    if (!this.enabled) return;
    this.replica(tenant).lease.checkWrite();
  }

  /** The tenant's replica on this node, if it is open here. */
  replicaOf(tenant: string): Replica | undefined {
    return this.replicas.get(tenant);
  }

  /** Replicas of the tenants open on this node. */
  all(): Replica[] {
    return [...this.replicas.values()];
  }

  /**
   * The tenant a `/v1/replication/*` or `/ready` call is about: the `tenant` query parameter,
   * else the caller's own tenant (a tenant token), else the only tenant this node serves.
   */
  resolveTenant(query: string | undefined, principal?: Principal): string {
    if (query !== undefined && query !== '') {
      const t = query.toUpperCase();
      if (principal && !principal.operator && principal.tenant !== t) throw new DbError('forbidden', 'this token cannot reach another tenant');
      if (!this.system.hasTenant(t)) throw new DbError('not_found', `tenant ${t} does not exist`);
      return t;
    }
    if (principal && !principal.operator && principal.tenant) return principal.tenant;
    const all = this.system.listTenants();
    if (all.length === 1) return all[0].tenant;
    throw new DbError('validation_failed', `this node serves ${all.length} tenants: name one with the "tenant" query parameter`);
  }

  async onApplicationShutdown(): Promise<void> {
    for (const r of this.replicas.values()) await r.stop().catch(() => undefined);
    this.replicas.clear();
    await this.leases?.close().catch((e: unknown) => this.log.error(`closing etcd: ${(e as Error).message}`));
  }
}
