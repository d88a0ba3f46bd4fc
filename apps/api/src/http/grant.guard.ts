import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { OWNER, type Acting, type SecurityCatalog } from '../security/catalog';
import { REQUIRES, SecurityService, type Requirement } from '../security/security.service';
import type { TokenRequest } from './auth.guard';

/**
 * After auth and the rate limit: derives the acting database user from the token (its `user`,
 * else `owner`; the operator token acts as `owner`), puts it on the request (`@ActingUser()`), and
 * checks the route's `@Requires(param, ...privileges)` → 403 `forbidden` without the grant.
 */
@Injectable()
export class GrantGuard implements CanActivate {
  /** Each handler's `@Requires` (metadata does not change after start; `null`: none). */
  private readonly needs = new WeakMap<object, Requirement | null>();

  constructor(private readonly reflector: Reflector, private readonly security: SecurityService) {}

  private requirement(ctx: ExecutionContext): Requirement | null {
    const handler = ctx.getHandler();
    let need = this.needs.get(handler);
    if (need === undefined) {
      need = this.reflector.getAllAndOverride<Requirement | undefined>(REQUIRES, [handler, ctx.getClass()]) ?? null;
      this.needs.set(handler, need);
    }
    return need;
  }

  canActivate(ctx: ExecutionContext): boolean | Promise<boolean> {
    const req = ctx.switchToHttp().getRequest<TokenRequest & { params?: Record<string, string> }>();
    const t = req.tenantHandle;
    if (!t) return true;
    const need = this.requirement(ctx);
    const user = req.authToken?.user ?? OWNER;
    const check = (c: SecurityCatalog): boolean => {
      const acting = this.security.acting(c, user);
      req.acting = acting;
      // a per-request view of the handle carrying the user (query runner, surfaces)
      req.tenantHandle = Object.assign(Object.create(t) as typeof t, { acting });
      if (need) {
        const schema = req.params?.[need.param];
        if (schema !== undefined) for (const p of need.privileges) acting.require(schema, p);
      }
      return true;
    };
    const c = this.security.catalog(t);
    return c instanceof Promise ? c.then(check) : check(c);
  }
}

export type { Acting };
