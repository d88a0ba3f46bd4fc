import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DbError } from '@mmdb/core';
import { ActingUser, TenantCtx } from '../http/decorators';
import { OWNER, type Acting } from '../security/catalog';
import { APP_CONFIG, type AppConfig } from '../config';
import type { TenantHandle } from '../tenancy/tenant-registry';
import { replayToken, tokenIdempotency } from './token-replay';
import { Replication } from '../replication/replication.service';
import { SystemStore } from './system-store';

/** Token routes need a user that manages tokens; a token it touches must act as a user no broader than itself. */
function mayManage(a: Acting, system: SystemStore, tokenId?: string): void {
  if (!a.manageTokens) throw new DbError('forbidden', `user ${a.name} may not manage tokens`);
  if (tokenId === undefined) return;
  const user = system.tokenUser(tokenId);
  if (user !== undefined && !a.covers(user === 'owner' ? null : a.catalog.user(user) ?? { grants: {}, attributes: {}, manage_tokens: false, created: 0 })) {
    throw new DbError('forbidden', `user ${a.name} may not manage a token of user ${user}`);
  }
}
import { parseIssue, parseRotate } from './token-params';

/**
 * A tenant's tokens (our design for spec §5.8). Reachable by the operator token or by any
 * live token of the tenant (spec §5.2: one token gives full access to its tenant); the auth
 * guard checks the `:tenant` parameter. The secret is shown only when a token is issued.
 */
@Controller('v1/tenants/:tenant/tokens')
export class TokensController {
  constructor(
    private readonly system: SystemStore,
    private readonly replication: Replication,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /** `[{token_id, created, expires_at}]`: the tokens that still work, oldest first. */
  @Get()
  list(@Param('tenant') tenant: string, @ActingUser() a: Acting) {
    mayManage(a, this.system);
    return this.system.listTokens(tenant);
  }

  /**
   * `{ttl_seconds?}` → 201 `{tenant, token_id, token, created, expires_at}`. Issue, rotate and
   * revoke honour Idempotency-Key (token-replay.ts): a replay answers the recorded answer.
   */
  @Post()
  @HttpCode(201)
  async issue(@Param('tenant') tenant: string, @Body() body: unknown, @ActingUser() a: Acting, @TenantCtx() t: TenantHandle, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply) {
    if (!a.isOwner) throw new DbError('forbidden', `user ${a.name} may not issue owner tokens (POST /users/{name}/tokens issues a token for a user)`);
    const ttl = parseIssue(body).ttlSeconds;
    this.replication.checkWrite(tenant.toUpperCase());
    const idem = await tokenIdempotency(t.store, req, this.config.idempotencyTtlMs, 201);
    if (idem?.replayed) return replayToken(reply, idem, req);
    const r = await this.system.issueToken(tenant, ttl, OWNER, idem);
    return idem?.replayed ? replayToken(reply, idem, req) : r;
  }

  /** `{revoked: true|false}`: idempotent; the token stops working at once. */
  @Delete(':token_id')
  async revoke(@Param('tenant') tenant: string, @Param('token_id') tokenId: string, @ActingUser() a: Acting, @TenantCtx() t: TenantHandle, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply) {
    mayManage(a, this.system, tokenId);
    this.replication.checkWrite(tenant.toUpperCase());
    const idem = await tokenIdempotency(t.store, req, this.config.idempotencyTtlMs, 200);
    if (idem?.replayed) return replayToken(reply, idem, req);
    const revoked = await this.system.revokeTokenById(tenant, tokenId, Date.now(), idem);
    return idem?.replayed ? replayToken(reply, idem, req) : { revoked };
  }

  /** `{grace_seconds?, ttl_seconds?}` → 201 with the new token; the old one expires after the grace. */
  @Post(':token_id/rotate')
  @HttpCode(201)
  async rotate(@Param('tenant') tenant: string, @Param('token_id') tokenId: string, @Body() body: unknown, @ActingUser() a: Acting, @TenantCtx() t: TenantHandle, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply) {
    mayManage(a, this.system, tokenId);
    const p = parseRotate(body);
    this.replication.checkWrite(tenant.toUpperCase());
    const idem = await tokenIdempotency(t.store, req, this.config.idempotencyTtlMs, 201);
    if (idem?.replayed) return replayToken(reply, idem, req);
    const r = await this.system.rotateToken(tenant, tokenId, p.graceSeconds, p.ttlSeconds, idem);
    return idem?.replayed ? replayToken(reply, idem, req) : r;
  }
}
