import { performance } from 'perf_hooks';
import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { DbError } from '@mmdb/core';
import { APP_CONFIG, AppConfig } from '../config';
import type { TokenRequest } from './auth.guard';

/**
 * Spec §8: a request budget per key (tenant token). Over budget → 429 `rate_limited` with
 * `retry: true`, `retry_after` (whole seconds, ≥ 1) in the body and `Retry-After` (set by
 * the ErrorFilter from `retry_after`).
 *
 * A token bucket of `DB_RATE_LIMIT_BURST` requests refilled at `DB_RATE_LIMIT_RPS`, kept
 * in GCRA form: one number per token (its theoretical arrival time, `TokenEntry.rateTat`,
 * in `performance.now()` ms, whose small magnitude keeps sub-µs precision), updated with a
 * few float operations per request: O(1), no timer, no map, no allocation. The state
 * lives on the token's in-memory entry, so it goes when the token does.
 *
 * Runs after AuthGuard (registered after it in app.module.ts): public routes and the
 * operator token carry no `authToken` and are not limited.
 */
@Injectable()
export class RateLimitGuard implements CanActivate {
  /** ms between requests at the sustained rate; 0: no limit. */
  private readonly interval: number;
  /** burst × interval: how far ahead of now a token's arrival time may run. */
  private readonly window: number;
  private readonly budget: string;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.interval = config.rateLimitRps > 0 ? 1000 / config.rateLimitRps : 0;
    this.window = config.rateLimitBurst * this.interval;
    this.budget = `${config.rateLimitRps} requests/s, burst ${config.rateLimitBurst}`;
  }

  canActivate(ctx: ExecutionContext): boolean {
    if (this.interval === 0) return true;
    const e = ctx.switchToHttp().getRequest<TokenRequest>().authToken;
    if (e === undefined) return true;
    const now = performance.now();
    const tat = (e.rateTat > now ? e.rateTat : now) + this.interval;
    if (tat - now <= this.window) {
      e.rateTat = tat;
      return true;
    }
    const retryAfter = Math.max(1, Math.ceil((tat - now - this.window) / 1000));
    throw new DbError('rate_limited', `this token is over its request budget (${this.budget}); retry after ${retryAfter} s`, { retry_after: retryAfter });
  }
}
