import { Controller, Get, Header, Query, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { DbError } from '@mmdb/core';
import { Public, TenantCtx } from '../http/decorators';
import { TenantRegistry, TenantHandle } from '../tenancy/tenant-registry';
import { Metrics } from './metrics.service';

/** Spec §4.1: public liveness, readiness and metrics; plus the authenticated no-op route. */
@Controller()
export class HealthController {
  constructor(
    private readonly tenants: TenantRegistry,
    private readonly metrics: Metrics,
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
  async ready(@Query('require') require?: string) {
    if (require !== undefined && require !== 'write' && require !== 'read') {
      throw new DbError('validation_failed', 'query "require" must be "write" or "read"');
    }
    this.tenants.pressure.refresh();
    const handles = await this.tenants.openHandles();
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
    const writable = pressure.size === 0;
    const body = {
      status: writable ? 'ok' : 'degraded',
      pressure: pressure.size ? [...pressure].join(',') : null,
      writable,
      readable,
      open_stores: handles.length,
      queue_depth: queueDepth,
      free_bytes: this.tenants.pressure.free,
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
    const handles = await this.tenants.openHandles();
    this.metrics.openStores.set(handles.length);
    const m = this.metrics;
    for (const g of [m.commitQueueDepth, m.logSegments, m.framesSinceCheckpoint, m.feedCursors, m.oldestHeldLsn, m.framesRetained]) g.reset();
    for (const h of handles) {
      const tenant = { tenant: h.tenant };
      this.metrics.commitQueueDepth.set(tenant, (await h.store.health()).queueDepth);
      this.metrics.logSegments.set(tenant, h.store.segments.list().length);
      this.metrics.framesSinceCheckpoint.set(tenant, h.store.lastLsn - h.store.maintenance.lastCheckpointLsn);
      const feed = h.store.feedStats();
      for (const [kind, n] of Object.entries(feed.cursors)) m.feedCursors.set({ tenant: h.tenant, kind }, n);
      m.oldestHeldLsn.set(tenant, feed.oldestHeldLsn);
      for (const [holder, n] of Object.entries(feed.retainedFrames)) m.framesRetained.set({ tenant: h.tenant, holder }, n);
    }
    return this.metrics.registry.metrics();
  }

  /** A route that does nothing past auth: the ceiling of this stack, for the benchmark. */
  @Get('v1/tenants/:tenant/_ping')
  ping(@TenantCtx() t: TenantHandle): { ok: true; tenant: string } {
    return { ok: true, tenant: t.tenant };
  }
}
