import { Body, Controller, Delete, Get, HttpCode, Param, Post } from '@nestjs/common';
import { Replication } from '../replication/replication.service';
import { SystemStore } from './system-store';
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
  list(@Param('tenant') tenant: string) {
    return this.system.listTokens(tenant);
  }

  /** `{ttl_seconds?}` → 201 `{tenant, token_id, token, created, expires_at}`. */
  @Post()
  @HttpCode(201)
  issue(@Param('tenant') tenant: string, @Body() body: unknown) {
    this.replication.checkWrite(tenant.toUpperCase());
    return this.system.issueToken(tenant, parseIssue(body).ttlSeconds);
  }

  /** `{revoked: true|false}`: idempotent; the token stops working at once. */
  @Delete(':token_id')
  async revoke(@Param('tenant') tenant: string, @Param('token_id') tokenId: string) {
    this.replication.checkWrite(tenant.toUpperCase());
    return { revoked: await this.system.revokeTokenById(tenant, tokenId) };
  }

  /** `{grace_seconds?, ttl_seconds?}` → 201 with the new token; the old one expires after the grace. */
  @Post(':token_id/rotate')
  @HttpCode(201)
  rotate(@Param('tenant') tenant: string, @Param('token_id') tokenId: string, @Body() body: unknown) {
    const p = parseRotate(body);
    this.replication.checkWrite(tenant.toUpperCase());
    return this.system.rotateToken(tenant, tokenId, p.graceSeconds, p.ttlSeconds);
  }
}
