import * as crypto from 'crypto';
import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { DbError } from '@mmdb/core';
import { APP_CONFIG, AppConfig } from '../config';
import { SystemStore, Principal, TokenEntry } from '../system/system-store';
import { TenantRegistry } from '../tenancy/tenant-registry';
import { AuthedRequest, OPERATOR_ONLY, PUBLIC_ROUTE } from './decorators';

const BEARER = /^Bearer ([A-Za-z0-9._~+/=-]+)$/;
const OPERATOR: Principal = Object.freeze({ tenant: null, operator: true });

/** What the guard puts on the request besides `AuthedRequest`: the tenant token's live entry (unset for the operator). */
export interface TokenRequest extends AuthedRequest {
  authToken?: TokenEntry;
}

/** A route's @Public() / @OperatorOnly() flags, read once per handler. */
interface RouteFlags {
  readonly isPublic: boolean;
  readonly operatorOnly: boolean;
}

/**
 * Spec §5: every route except @Public() needs `Authorization: Bearer <token>`.
 * Missing, malformed, unknown or another tenant's token → 401; a valid token on an
 * @OperatorOnly() route → 403. On a `/v1/tenants/:tenant/` route it also opens the
 * tenant's store and puts the handle on the request for `@TenantCtx()`.
 * An expired token → 401 "the bearer token has expired"; a revoked one is unknown.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  private readonly operatorHash?: Buffer;
  private readonly flags = new WeakMap<object, RouteFlags>();
  /** One frozen principal per tenant (no allocation per request). */
  private readonly principals = new Map<string, Principal>();

  constructor(
    private readonly reflector: Reflector,
    private readonly system: SystemStore,
    private readonly tenants: TenantRegistry,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    if (config.operatorToken) this.operatorHash = crypto.createHash('sha256').update(config.operatorToken).digest();
  }

  private routeFlags(ctx: ExecutionContext): RouteFlags {
    const handler = ctx.getHandler();
    let f = this.flags.get(handler);
    if (!f) {
      const targets = [handler, ctx.getClass()];
      f = {
        isPublic: !!this.reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, targets),
        operatorOnly: !!this.reflector.getAllAndOverride<boolean>(OPERATOR_ONLY, targets),
      };
      this.flags.set(handler, f);
    }
    return f;
  }

  /** Synchronous when the tenant's store is already open (the common case); a promise while it opens. */
  canActivate(ctx: ExecutionContext): boolean | Promise<boolean> {
    const flags = this.routeFlags(ctx);
    if (flags.isPublic) return true;
    const req = ctx.switchToHttp().getRequest<TokenRequest & { headers: Record<string, string | undefined>; params?: Record<string, string> }>();
    const entry = this.authenticate(req.headers.authorization);
    const principal = entry === null ? OPERATOR : this.tenantPrincipal(entry.tenant);
    let tenant = req.params?.tenant;
    if (tenant !== undefined) {
      tenant = tenant.toUpperCase();
      if (principal.operator) {
        if (!this.system.hasTenant(tenant)) throw new DbError('not_found', `tenant ${tenant} does not exist`);
      } else if (principal.tenant !== tenant) {
        throw new DbError('unauthorized', 'the bearer token is not scoped to this tenant');
      }
    }
    if (flags.operatorOnly && !principal.operator) {
      throw new DbError('forbidden', 'this route needs the operator token');
    }
    req.principal = principal;
    if (entry !== null) req.authToken = entry;
    if (tenant === undefined) return true;
    const open = this.tenants.peek(tenant);
    if (open) {
      req.tenantHandle = open;
      return true;
    }
    return this.tenants.get(tenant).then((h) => {
      req.tenantHandle = h;
      return true;
    });
  }

  /** The live entry of a tenant token, or null for the operator token; else throws 401. */
  private authenticate(header: string | undefined): TokenEntry | null {
    if (!header) throw new DbError('unauthorized', 'missing Authorization: Bearer header');
    const m = BEARER.exec(header);
    if (!m) throw new DbError('unauthorized', 'malformed Authorization header: expected "Bearer <token>"');
    const token = m[1];
    const now = Date.now();
    // A token resolved before is a tenant token: it was compared with the operator token
    // (constant time, below) before it was first resolved, and the operator token is fixed.
    // The cache hit costs a map lookup and one number compared (its expiry): no hashing.
    const known = this.system.knownToken(token, now);
    if (known !== undefined) return known;
    if (this.operatorHash) {
      const h = crypto.createHash('sha256').update(token).digest();
      if (crypto.timingSafeEqual(h, this.operatorHash)) return null;
    }
    const e = this.system.resolveToken(token, now);
    if (e === 'expired') throw new DbError('unauthorized', 'the bearer token has expired');
    if (e === 'unknown') throw new DbError('unauthorized', 'unknown bearer token (never issued, or revoked)');
    return e;
  }

  private tenantPrincipal(tenant: string): Principal {
    let p = this.principals.get(tenant);
    if (!p) {
      p = Object.freeze({ tenant, operator: false });
      this.principals.set(tenant, p);
    }
    return p;
  }
}
