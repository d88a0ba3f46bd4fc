import * as crypto from 'crypto';
import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { DbError } from '@mmdb/core';
import { APP_CONFIG, AppConfig } from '../config';
import { SystemStore, Principal } from '../system/system-store';
import { TenantRegistry } from '../tenancy/tenant-registry';
import { AuthedRequest, OPERATOR_ONLY, PUBLIC_ROUTE } from './decorators';

const BEARER = /^Bearer ([A-Za-z0-9._~+/=-]+)$/;

/**
 * Spec §5: every route except @Public() needs `Authorization: Bearer <token>`.
 * Missing, malformed, unknown or another tenant's token → 401; a valid token on an
 * @OperatorOnly() route → 403. On a `/v1/tenants/:tenant/` route it also opens the
 * tenant's store and puts the handle on the request for `@TenantCtx()`.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  private readonly operatorHash?: Buffer;

  constructor(
    private readonly reflector: Reflector,
    private readonly system: SystemStore,
    private readonly tenants: TenantRegistry,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    if (config.operatorToken) this.operatorHash = crypto.createHash('sha256').update(config.operatorToken).digest();
  }

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    const targets = [ctx.getHandler(), ctx.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, targets)) return true;
    const req = ctx.switchToHttp().getRequest<AuthedRequest & { headers: Record<string, string | undefined>; params?: Record<string, string> }>();
    const principal = this.authenticate(req.headers.authorization);
    let tenant = req.params?.tenant;
    if (tenant !== undefined) {
      tenant = tenant.toUpperCase();
      if (principal.operator) {
        if (!this.system.hasTenant(tenant)) throw new DbError('not_found', `tenant ${tenant} does not exist`);
      } else if (principal.tenant !== tenant) {
        throw new DbError('unauthorized', 'the bearer token is not scoped to this tenant');
      }
    }
    if (this.reflector.getAllAndOverride<boolean>(OPERATOR_ONLY, targets) && !principal.operator) {
      throw new DbError('forbidden', 'this route needs the operator token');
    }
    req.principal = principal;
    if (tenant !== undefined) req.tenantHandle = await this.tenants.get(tenant);
    return true;
  }

  private authenticate(header: string | undefined): Principal {
    if (!header) throw new DbError('unauthorized', 'missing Authorization: Bearer header');
    const m = BEARER.exec(header);
    if (!m) throw new DbError('unauthorized', 'malformed Authorization header: expected "Bearer <token>"');
    const token = m[1];
    if (this.operatorHash) {
      const h = crypto.createHash('sha256').update(token).digest();
      if (crypto.timingSafeEqual(h, this.operatorHash)) return { tenant: null, operator: true };
    }
    const tenant = this.system.tenantOfToken(token);
    if (!tenant) throw new DbError('unauthorized', 'unknown bearer token');
    return { tenant, operator: false };
  }
}
