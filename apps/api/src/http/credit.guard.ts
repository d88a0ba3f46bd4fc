import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Metrics } from '../health/metrics.service';
import { admit, charge, classify, scheduleUsageFlush } from '../security/billing';
import type { SecurityCatalog } from '../security/catalog';
import { SecurityService } from '../security/security.service';
import type { TokenRequest } from './auth.guard';

const TENANT_ROUTE = /^\/v1\/tenants\/[^/]+\/?(.*)$/i;

/**
 * After auth and the rate limit (spec §7.1 order), before grants: 402 `addon_required` for a
 * disabled add-on's route, 402 `quota_exceeded` when the tenant's credit cannot cover the
 * request's class. The request is charged when its response finishes with a status below 400.
 * The operator's requests are neither refused nor charged.
 */
@Injectable()
export class CreditGuard implements CanActivate {
  constructor(private readonly security: SecurityService, private readonly metrics: Metrics) {}

  canActivate(ctx: ExecutionContext): boolean | Promise<boolean> {
    const req = ctx.switchToHttp().getRequest<TokenRequest & { method: string; url: string }>();
    const t = req.tenantHandle;
    if (!t) return true;
    const m = TENANT_ROUTE.exec(req.url);
    if (!m) return true;
    const { cls, addon } = classify(req.method, m[1]);
    const reply = ctx.switchToHttp().getResponse<{ statusCode: number; raw: NodeJS.EventEmitter }>();
    const operator = !!req.principal?.operator;
    const go = (c: SecurityCatalog): boolean => {
      if (operator) return true;
      admit(c, cls, addon);
      // `on`, not `once`: a response finishes once, and `once` wraps and later removes the listener per request
      reply.raw.on('finish', () => {
        if (reply.statusCode < 400) {
          const cost = charge(c, cls);
          if (cost) {
            this.metrics.creditUsed(t.tenant, cls, cost);
            // under a credit limit the totals reach the tenant's log within a second (one frame per interval, not per request)
            if (c.credits !== null) scheduleUsageFlush(c, (changes) => t.commit({ changes, actor: 'system', route: 'usage' }));
          }
        }
      });
      return true;
    };
    const c = this.security.catalog(t);
    return c instanceof Promise ? c.then(go) : go(c);
  }
}
