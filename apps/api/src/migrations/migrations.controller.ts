import type { Acting } from '../security/catalog';
import { Body, Controller, Get, HttpCode, Param, Post, Query, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DbError, type JsonValue } from '@mmdb/core';
import { publicView, type Migrations, type SubmitInput } from '@mmdb/migrations';
import type { IdempotencyRecord } from '@mmdb/storage';
import { ActingUser, TenantCtx } from '../http/decorators';
import type { TokenRequest } from '../http/auth.guard';
import type { TenantHandle } from '../tenancy/tenant-registry';
import { idempotencyFor, priorAnswer, replay } from '../rows/idempotency';
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
    const stored = await priorAnswer(t.store, record);
    return stored ? { stored: stored as { status: number; body: JsonValue } } : { record };
  }

  @Post()
  @HttpCode(201)
  async submit(@TenantCtx() t: TenantHandle, @ActingUser() acting: Acting, @Body() body: SubmitInput, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply) {
    // the schema is in the body, so the grant is checked here rather than by @Requires
    if (!acting.isOwner) acting.require(String((body as { schema?: unknown } | undefined)?.schema ?? ''), 'manage');
    const i = await this.idem(t, req);
    if (i.stored) return replay(reply, i.stored);
    return publicView(await this.m(t).submit(body, actorOf(req), i.record));
  }

  @Get()
  list(@TenantCtx() t: TenantHandle, @ActingUser() acting: Acting, @Query('limit') limit?: string, @Query('after') after?: string) {
    const page = this.m(t).list({ limit: intParam(limit, 'limit'), after });
    // a restricted user sees the migrations of the schemas it may manage
    return { migrations: page.items.filter((m) => acting.can(m.schema, 'manage')).map(publicView), next: page.next };
  }

  @Get('_audit')
  async audit(@TenantCtx() t: TenantHandle, @ActingUser() acting: Acting, @Query('migration') migration?: string, @Query('limit') limit?: string, @Query('after') after?: string) {
    // the whole audit is the owner's; a restricted user reads one migration's, on a schema it manages
    if (!acting.isOwner) {
      if (!migration) throw new DbError('forbidden', `user ${acting.name} may read the audit of one migration only (?migration=)`);
      acting.require(this.m(t).get(migration).schema, 'manage');
    }
    const page = await this.m(t).audit({ migration, limit: intParam(limit, 'limit'), after });
    return { entries: page.items, next: page.next };
  }

  @Get(':id')
  get(@TenantCtx() t: TenantHandle, @ActingUser() acting: Acting, @Param('id') id: string) {
    const m = this.m(t).get(id);
    acting.require(m.schema, 'manage');
    return publicView(m);
  }

  @Post(':id/cutover')
  @HttpCode(200)
  cutover(@TenantCtx() t: TenantHandle, @ActingUser() acting: Acting, @Param('id') id: string, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply) {
    return this.act(t, acting, id, 'cutover', req, reply);
  }

  @Post(':id/abort')
  @HttpCode(200)
  abort(@TenantCtx() t: TenantHandle, @ActingUser() acting: Acting, @Param('id') id: string, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply) {
    return this.act(t, acting, id, 'abort', req, reply);
  }

  @Post(':id/pause')
  @HttpCode(200)
  pause(@TenantCtx() t: TenantHandle, @ActingUser() acting: Acting, @Param('id') id: string, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply) {
    return this.act(t, acting, id, 'pause', req, reply);
  }

  @Post(':id/resume')
  @HttpCode(200)
  resume(@TenantCtx() t: TenantHandle, @ActingUser() acting: Acting, @Param('id') id: string, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply) {
    return this.act(t, acting, id, 'resume', req, reply);
  }

  /** One route per action (each documented in the contract); the same idempotency and state rules. */
  private async act(t: TenantHandle, acting: Acting, id: string, action: 'cutover' | 'abort' | 'pause' | 'resume', req: FastifyRequest, reply: FastifyReply) {
    const m = this.m(t);
    acting.require(m.get(id).schema, 'manage');
    const i = await this.idem(t, req);
    if (i.stored) return replay(reply, i.stored);
    return publicView(await m.request(id, action, { actor: actorOf(req), idempotency: i.record }));
  }
}
