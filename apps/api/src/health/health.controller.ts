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
  health(): { status: string } {
    return { status: 'ok' };
  }

  @Public()
  @Get('ready')
  async ready(@Query('require') require?: string) {
    if (require !== undefined && require !== 'write' && require !== 'read') {
      throw new DbError('validation_failed', 'query "require" must be "write" or "read"');
    }
    const pressure = this.tenants.pressure.reasons();
    const handles = await this.tenants.openHandles();
    const body = {
      status: pressure.length ? 'degraded' : 'ok',
      pressure,
      writable: this.tenants.pressure.writeBlocker() === null,
      readable: true,
      open_stores: handles.length,
      free_bytes: Number.isFinite(this.tenants.pressure.free) ? this.tenants.pressure.free : null,
    };
    if (require === 'write' && pressure.length) {
      throw new DbError('service_unavailable', `not ready for writes: ${pressure.join(', ')}`, body);
    }
    return body;
  }

  @Public()
  @Get('metrics')
  @Header('content-type', 'text/plain; version=0.0.4; charset=utf-8')
  async scrape(@Res({ passthrough: true }) _reply: FastifyReply): Promise<string> {
    const handles = await this.tenants.openHandles();
    this.metrics.openStores.set(handles.length);
    this.metrics.commitQueueDepth.reset();
    for (const h of handles) this.metrics.commitQueueDepth.set({ tenant: h.tenant }, h.pending);
    return this.metrics.registry.metrics();
  }

  /** A route that does nothing past auth: the ceiling of this stack, for the benchmark. */
  @Get('v1/tenants/:tenant/_ping')
  ping(@TenantCtx() t: TenantHandle): { ok: true; tenant: string } {
    return { ok: true, tenant: t.tenant };
  }
}
