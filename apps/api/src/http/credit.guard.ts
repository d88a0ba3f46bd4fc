import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Metrics } from '../health/metrics.service';
import { admit, charge, classify, scheduleUsageFlush, type RequestClass } from '../security/billing';
import type { SecurityCatalog } from '../security/catalog';
import { SecurityService } from '../security/security.service';
import type { TenantHandle } from '../tenancy/tenant-registry';
import type { TokenRequest } from './auth.guard';

const TENANT_ROUTE = /^\/v1\/tenants\/[^/]+\/?(.*)$/i;

/** What the guard leaves on a request it admitted, for `settle`. */
interface CreditRequest extends TokenRequest {
  creditCatalog?: SecurityCatalog;
  creditClass?: RequestClass;
  creditTenant?: TenantHandle;
}

/**
 * After auth and the rate limit (spec §7.1 order), before grants: 402 `addon_required` for a
 * disabled add-on's route, 402 `quota_exceeded` when the tenant's credit cannot cover the
 * request's class. The request is charged when its response finishes with a status below 400
 * (`settle`, from server.ts's `onResponse` hook). The operator's requests are neither refused
 * nor charged.
 */
@Injectable()
export class CreditGuard implements CanActivate {
  constructor(private readonly security: SecurityService, private readonly metrics: Metrics) {}

  canActivate(ctx: ExecutionContext): boolean | Promise<boolean> {
    const req = ctx.switchToHttp().getRequest<CreditRequest & { method: string; url: string }>();
    const t = req.tenantHandle;
    if (!t) return true;
    const m = TENANT_ROUTE.exec(req.url);
    if (!m) return true;
    const { cls, addon } = classify(req.method, m[1]);
    const operator = !!req.principal?.operator;
    const go = (c: SecurityCatalog): boolean => {
      if (operator) return true;
      admit(c, cls, addon);
      req.creditCatalog = c;
      req.creditClass = cls;
      req.creditTenant = t;
      return true;
    };
    const c = this.security.catalog(t);
    return c instanceof Promise ? c.then(go) : go(c);
  }

  /**
   * Charges a request the guard admitted, once its response has finished with a status below
   * 400. Called by the `onResponse` hook every request runs (fastify runs it on the response's
   * `finish`, or on its `error`: a response that did not finish is not charged). A hook rather
   * than a `finish` listener per request: that was a closure, a second listener on the response
   * and an array copy in each `emit('finish')`.
   */
  settle(req: object, reply: { statusCode: number; raw: { writableFinished: boolean } }): void {
    const r = req as CreditRequest;
    const c = r.creditCatalog;
    if (c === undefined || reply.statusCode >= 400 || !reply.raw.writableFinished) return;
    const cls = r.creditClass!;
    const t = r.creditTenant!;
    const cost = charge(c, cls);
    if (cost) {
      this.metrics.creditUsed(t.tenant, cls, cost);
      // under a credit limit the totals reach the tenant's log within a second (one frame per interval, not per request)
      if (c.credits !== null) scheduleUsageFlush(c, (changes) => t.commit({ changes, actor: 'system', route: 'usage' }));
    }
  }
}
