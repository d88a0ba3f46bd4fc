import { Body, Controller, Get, HttpCode, Param, Post, Query, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DbError, type JsonValue } from '@mmdb/core';
import { publicView, type Migrations, type SubmitInput } from '@mmdb/migrations';
import type { IdempotencyRecord } from '@mmdb/storage';
import { TenantCtx } from '../http/decorators';
import type { TokenRequest } from '../http/auth.guard';
import type { TenantHandle } from '../tenancy/tenant-registry';
import { idempotencyFor, replay } from '../rows/idempotency';
import { APP_CONFIG, AppConfig } from '../config';
import { Inject } from '@nestjs/common';
import type { MigrationsEngine } from './migrations.module';

function intParam(v: string | undefined, name: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new DbError('validation_failed', `${name} must be a positive integer`, { key: name });
  return n;
}

/** The acting principal for the audit: the token's id, or `operator`. */
export function actorOf(req: FastifyRequest): string {
  const r = req as unknown as TokenRequest;
  if (r.principal?.operator) return 'operator';
  return r.authToken?.id ?? 'unknown';
}

/** Spec §4.12 and the routes we add (apps/api/README.md "Migrations"). */
@Controller('v1/tenants/:tenant/migrations')
export class MigrationsController {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  private m(t: TenantHandle): Migrations {
    const m = t.engine<MigrationsEngine>('migrations').migrations;
    if (!m) throw new DbError('service_unavailable', 'migrations are not ready yet');
    return m;
  }

  /** The Idempotency-Key record for this request, or the stored answer when it is a replay. */
  private async idem(t: TenantHandle, req: FastifyRequest): Promise<{ record?: IdempotencyRecord; stored?: { status: number; body: JsonValue } }> {
    const record = idempotencyFor(req, this.config.idempotencyTtlMs, () => ({ status: 200, body: null }));
    if (!record) return {};
    const prior = await t.store.idempotencyRecord(record.key);
    if (prior && prior.expiresAt > Date.now()) {
      if (prior.fingerprint !== record.fingerprint) throw new DbError('conflict', 'Idempotency-Key was used with another request');
      return { stored: prior.response };
    }
    return { record };
  }

  @Post()
  @HttpCode(201)
  async submit(@TenantCtx() t: TenantHandle, @Body() body: SubmitInput, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply) {
    const i = await this.idem(t, req);
    if (i.stored) return replay(reply, i.stored);
    return publicView(await this.m(t).submit(body, actorOf(req), i.record));
  }

  @Get()
  list(@TenantCtx() t: TenantHandle, @Query('limit') limit?: string, @Query('after') after?: string) {
    const page = this.m(t).list({ limit: intParam(limit, 'limit'), after });
    return { migrations: page.items.map(publicView), next: page.next };
  }

  @Get('_audit')
  async audit(@TenantCtx() t: TenantHandle, @Query('migration') migration?: string, @Query('limit') limit?: string, @Query('after') after?: string) {
    const page = await this.m(t).audit({ migration, limit: intParam(limit, 'limit'), after });
    return { entries: page.items, next: page.next };
  }

  @Get(':id')
  get(@TenantCtx() t: TenantHandle, @Param('id') id: string) {
    return publicView(this.m(t).get(id));
  }

  @Post(':id/cutover')
  @HttpCode(200)
  cutover(@TenantCtx() t: TenantHandle, @Param('id') id: string, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply) {
    return this.act(t, id, 'cutover', req, reply);
  }

  @Post(':id/abort')
  @HttpCode(200)
  abort(@TenantCtx() t: TenantHandle, @Param('id') id: string, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply) {
    return this.act(t, id, 'abort', req, reply);
  }

  @Post(':id/pause')
  @HttpCode(200)
  pause(@TenantCtx() t: TenantHandle, @Param('id') id: string, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply) {
    return this.act(t, id, 'pause', req, reply);
  }

  @Post(':id/resume')
  @HttpCode(200)
  resume(@TenantCtx() t: TenantHandle, @Param('id') id: string, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply) {
    return this.act(t, id, 'resume', req, reply);
  }

  /** One route per action (each documented in the contract); the same idempotency and state rules. */
  private async act(t: TenantHandle, id: string, action: 'cutover' | 'abort' | 'pause' | 'resume', req: FastifyRequest, reply: FastifyReply) {
    const m = this.m(t);
    m.get(id);
    const i = await this.idem(t, req);
    if (i.stored) return replay(reply, i.stored);
    return publicView(await m.request(id, action, { actor: actorOf(req), idempotency: i.record }));
  }
}
