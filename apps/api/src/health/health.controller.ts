import { Controller, Get, Header, Query, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { DbError } from '@mmdb/core';
import { TableCache, tableCachePool } from '@mmdb/sql';
import { Public, TenantCtx } from '../http/decorators';
import { TenantRegistry, TenantHandle } from '../tenancy/tenant-registry';
import { Replication } from '../replication/replication.service';
import { Metrics } from './metrics.service';

/** Spec §4.1: public liveness, readiness and metrics; plus the authenticated no-op route. */
@Controller()
export class HealthController {
  constructor(
    private readonly tenants: TenantRegistry,
    private readonly metrics: Metrics,
    private readonly replication: Replication,
  ) {}

  @Public()
  @Get('health')
  async health(): Promise<{ status: string }> {
    const down = await this.tenants.unmounted();
    if (down.length) throw new DbError('service_unavailable', `the log is not mounted: ${down.join(', ')}`, { status: 'down', stores: down });
    return { status: 'ok' };
  }

  @Public()
  @Get('ready')
  async ready(@Query('require') require?: string, @Query('tenant') tenant?: string) {
    if (require !== undefined && require !== 'write' && require !== 'read') {
      throw new DbError('validation_failed', 'query "require" must be "write" or "read"');
    }
    this.tenants.pressure.refresh();
    // the stores open now: a probe does not wait for those still loading (they count in `loading`)
    const handles = this.tenants.openNow();
    const pressure = new Set<string>();
    if (this.tenants.pressure.diskFull) pressure.add('disk_full');
    let queueDepth = 0;
    let readable = true;
    for (const h of handles) {
      const health = await h.store.health();
      queueDepth += health.queueDepth;
      if (health.pressure) pressure.add(health.pressure);
      if (health.pressure === 'closed') readable = false;
    }
    let writable = pressure.size === 0;
    let replication: unknown;
    if (this.replication.enabled) {
      // With a lease, only the holder takes writes: /ready?require=write is 200 on it alone.
      const only = tenant !== undefined || this.replication.all().length <= 1 ? this.replication.resolveTenant(tenant) : null;
      const replicas = this.replication.all().filter((r) => only === null || r.tenant === only);
      if (!replicas.length) writable = false;
      for (const r of replicas) if (!r.lease.canWrite()) writable = false;
      // A node past its staleness bound refuses the tenant's routes (Replica.checkFresh): not ready for reads either.
      const stale = replicas.filter((r) => r.staleMs() > (this.replication.config?.maxStaleMs ?? Infinity));
      if (stale.length) {
        readable = false;
        pressure.add('stale');
      }
      replication = replicas.map((r) => ({ tenant: r.tenant, role: r.lease.role, epoch: Math.max(r.lease.epoch, r.lease.maxEpoch), holder: r.lease.lease?.holder ?? null, stale: stale.includes(r) }));
      if (!writable && pressure.size === 0) pressure.add('not_lease_holder');
    }
    // derived state (full-text images, vector images, graph) still loading: reads would wait for it
    // (writes too, but `writable` keeps its meaning: storage pressure and the lease)
    const loading = this.tenants.loading();
    if (loading.length) {
      pressure.add('loading');
      readable = false;
    }
    const body = {
      status: writable ? 'ok' : 'degraded',
      pressure: pressure.size ? [...pressure].join(',') : null,
      writable,
      readable,
      open_stores: handles.length,
      loading_stores: loading.length,
      queue_depth: queueDepth,
      free_bytes: this.tenants.pressure.free,
      ...(replication ? { node: this.replication.nodeName, replication } : {}),
    };
    if ((require === 'write' && !writable) || (require === 'read' && !readable)) {
      throw new DbError('service_unavailable', `not ready for ${require}s: ${body.pressure}`, body);
    }
    return body;
  }

  @Public()
  @Get('metrics')
  @Header('content-type', 'text/plain; version=0.0.4; charset=utf-8')
  async scrape(@Res({ passthrough: true }) _reply: FastifyReply): Promise<string> {
    const handles = this.tenants.openNow(); // a scrape does not wait for a store still loading
    this.metrics.openStores.set(handles.length);
    const m = this.metrics;
    for (const g of [m.commitQueueDepth, m.logSegments, m.framesSinceCheckpoint, m.feedCursors, m.oldestHeldLsn, m.framesRetained, m.feedMemoryFrames, m.feedMemoryBytes, m.tableCacheBytes, m.tableCacheBudgetBytes]) g.reset();
    m.tableCachePoolBytes.set(tableCachePool.bytes);
    for (const h of handles) {
      const tenant = { tenant: h.tenant };
      this.metrics.commitQueueDepth.set(tenant, (await h.store.health()).queueDepth);
      this.metrics.logSegments.set(tenant, h.store.segments.list().length);
      this.metrics.framesSinceCheckpoint.set(tenant, h.store.lastLsn - h.store.maintenance.lastCheckpointLsn);
      const feed = h.store.feedStats();
      for (const [kind, n] of Object.entries(feed.cursors)) m.feedCursors.set({ tenant: h.tenant, kind }, n);
      m.oldestHeldLsn.set(tenant, feed.oldestHeldLsn);
      for (const [holder, n] of Object.entries(feed.retainedFrames)) m.framesRetained.set({ tenant: h.tenant, holder }, n);
      m.feedMemoryFrames.set(tenant, feed.memory.frames);
      m.feedMemoryBytes.set(tenant, feed.memory.bytes);
      const cache = TableCache.peek(h.store)?.stats();
      if (cache) {
        m.tableCacheBytes.set(tenant, cache.bytes);
        m.tableCacheBudgetBytes.set(tenant, cache.budgetBytes);
      }
    }
    this.metrics.replicationLagFrames.reset();
    this.metrics.replicationLagSeconds.reset();
    for (const r of this.replication.all()) {
      // a follower reports its own lag; the holder reports each follower's from its acknowledgements
      if (r.follower.following) {
        this.metrics.replicationLagFrames.set({ tenant: r.tenant, follower: this.replication.nodeName ?? '' }, r.follower.lagFrames);
        this.metrics.replicationLagSeconds.set({ tenant: r.tenant, follower: this.replication.nodeName ?? '' }, r.follower.lagSeconds);
      }
      for (const a of r.acks.list()) this.metrics.replicationLagFrames.set({ tenant: r.tenant, follower: a.follower }, Math.max(0, r.handle.store.lastLsn - a.lsn));
    }
    return this.metrics.registry.metrics();
  }

  /** A route that does nothing past auth: the ceiling of this stack, for the benchmark. */
  @Get('v1/tenants/:tenant/_ping')
  ping(@TenantCtx() t: TenantHandle): { ok: true; tenant: string } {
    return { ok: true, tenant: t.tenant };
  }
}
