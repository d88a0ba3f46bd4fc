import { Body, Controller, Delete, Get, HttpCode, Param, Post } from '@nestjs/common';
import { DbError } from '@mmdb/core';
import { ActingUser } from '../http/decorators';
import type { Acting } from '../security/catalog';
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
  ) {}

  /** `[{token_id, created, expires_at}]`: the tokens that still work, oldest first. */
  @Get()
  list(@Param('tenant') tenant: string, @ActingUser() a: Acting) {
    mayManage(a, this.system);
    return this.system.listTokens(tenant);
  }

  /** `{ttl_seconds?}` → 201 `{tenant, token_id, token, created, expires_at}`. */
  @Post()
  @HttpCode(201)
  issue(@Param('tenant') tenant: string, @Body() body: unknown, @ActingUser() a: Acting) {
    if (!a.isOwner) throw new DbError('forbidden', `user ${a.name} may not issue owner tokens (POST /users/{name}/tokens issues a token for a user)`);
    this.replication.checkWrite(tenant.toUpperCase());
    return this.system.issueToken(tenant, parseIssue(body).ttlSeconds);
  }

  /** `{revoked: true|false}`: idempotent; the token stops working at once. */
  @Delete(':token_id')
  async revoke(@Param('tenant') tenant: string, @Param('token_id') tokenId: string, @ActingUser() a: Acting) {
    mayManage(a, this.system, tokenId);
    this.replication.checkWrite(tenant.toUpperCase());
    return { revoked: await this.system.revokeTokenById(tenant, tokenId) };
  }

  /** `{grace_seconds?, ttl_seconds?}` → 201 with the new token; the old one expires after the grace. */
  @Post(':token_id/rotate')
  @HttpCode(201)
  rotate(@Param('tenant') tenant: string, @Param('token_id') tokenId: string, @Body() body: unknown, @ActingUser() a: Acting) {
    mayManage(a, this.system, tokenId);
    const p = parseRotate(body);
    this.replication.checkWrite(tenant.toUpperCase());
    return this.system.rotateToken(tenant, tokenId, p.graceSeconds, p.ttlSeconds);
  }
}
