import type { CanActivate, Type } from '@nestjs/common';
import type { AppConfig } from '../config';
import { ReplicationGuard } from '../replication/replication.guard';
import { AuthGuard } from './auth.guard';
import { BodyTypeGuard } from './body';
import { CreditGuard } from './credit.guard';
import { GrantGuard } from './grant.guard';
import { RateLimitGuard } from './rate-limit.guard';

/**
 * The app's global guards, in the order they run (spec §7.1: auth, the rate limit, credit,
 * grants, the body's type; replication's last, only when it is configured). The one list:
 * app.module.ts registers each as a provider and an APP_GUARD of that instance, and a direct
 * route (direct-route.ts) runs the same instances in the same order.
 */
export function globalGuards(config: AppConfig): Type<CanActivate>[] {
  return [AuthGuard, RateLimitGuard, CreditGuard, GrantGuard, BodyTypeGuard, ...(config.replication ? [ReplicationGuard] : [])];
}
