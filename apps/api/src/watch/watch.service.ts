import { BeforeApplicationShutdown, Inject, Injectable, Logger } from '@nestjs/common';
import { DbError, newUlid } from '@mmdb/core';
import { WatchQuery, type SqlEngine, type WatchSource } from '@mmdb/sql';
import type { WatchRequestSource } from './watch.params';
import { APP_CONFIG, AppConfig } from '../config';
import { Metrics } from '../health/metrics.service';
import type { TenantHandle } from '../tenancy/tenant-registry';
import type { SqlTenantEngine } from '../query/query.module';
import type { NlEngine } from '../ask/nl-engine';
import { WatchSession, type SseOut, type StartAt } from './watch-session';

/**
 * The open watch streams of this node: the per-tenant cap (`DB_WATCH_MAX`, 429 past it), the
 * subscriber and buffer gauges, and the end of every stream at shutdown.
 */
@Injectable()
export class WatchService implements BeforeApplicationShutdown {
  private readonly log = new Logger('Watch');
  private readonly sessions = new Map<string, Set<WatchSession>>();

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly metrics: Metrics,
  ) {
    metrics.watchSampler = () => this.sample();
  }

  /**
   * Compiles a subscription against the tenant's schemas (a bad query answers its 400 here,
   * before any stream). A question is first compiled to a plan by the English compiler.
   */
  async compile(t: TenantHandle, source: WatchRequestSource): Promise<WatchQuery> {
    const engine: SqlEngine | null = t.engine<SqlTenantEngine>('sql').engine;
    if (!engine) throw new DbError('service_unavailable', 'SQL engine not attached yet');
    return WatchQuery.compile(engine, 'nl' in source ? await this.question(t, source.nl) : source);
  }

  /** English → plan, through the tenant's English compiler and its intent cache (as POST /ask). */
  private async question(t: TenantHandle, nl: string): Promise<WatchSource> {
    const e = t.engine<NlEngine>('nlq');
    if (!e.compiler) throw new DbError('service_unavailable', 'the English compiler is not attached yet');
    e.freshen();
    const c = await e.compiler.ask(nl);
    if (c.cache === 'hit') this.metrics.planCacheHits.inc({ surface: 'nl' });
    return { plan: c.plan, params: c.params };
  }

  /** Refuses a subscriber past the tenant's cap (429 rate_limited, Retry-After). */
  admit(tenant: string): void {
    const n = this.sessions.get(tenant)?.size ?? 0;
    if (n >= this.config.watchMax) {
      throw new DbError('rate_limited', `tenant has ${n} open watch streams, the most DB_WATCH_MAX allows: close one first`, {
        retry_after: Math.max(1, Math.ceil(this.config.watchRetryMs / 1000)),
        limit: this.config.watchMax,
      });
    }
  }

  /** A new stream's session, counted against the tenant's cap until it closes. `admit` must have passed in the same tick. */
  open(t: TenantHandle, query: WatchQuery, out: SseOut, authorized?: () => boolean): WatchSession {
    let set = this.sessions.get(t.tenant);
    if (!set) this.sessions.set(t.tenant, (set = new Set()));
    const tenant = { tenant: t.tenant };
    const c = this.config;
    const opts = { authorized, coalesceMs: c.watchCoalesceMs, heartbeatMs: c.watchHeartbeatMs, retryMs: c.watchRetryMs, bufferFrames: c.watchBufferFrames, maxLagFrames: c.watchMaxLagFrames };
    const s: WatchSession = new WatchSession(newUlid(), t.store, query, out, opts, this.metrics, () => {
      set!.delete(s);
      this.metrics.watchSubscribers.set(tenant, set!.size);
    });
    set.add(s);
    this.metrics.watchSubscribers.set(tenant, set.size);
    return s;
  }

  /** Runs a session to its end (an unexpected failure is logged; the client got an `error` event). */
  async run(s: WatchSession, tenant: string, start: StartAt): Promise<void> {
    try {
      await s.run(start);
    } catch (e) {
      this.log.error(`watch stream ${s.id} of ${tenant}: ${(e as Error)?.stack ?? String(e)}`);
    }
  }

  /** Open streams of a tenant. */
  count(tenant: string): number {
    return this.sessions.get(tenant)?.size ?? 0;
  }

  private sample(): void {
    for (const [tenant, set] of this.sessions) {
      let frames = 0;
      let bytes = 0;
      for (const s of set) {
        frames += s.bufferedFrames;
        bytes += s.pendingBytes;
      }
      this.metrics.watchBufferedEvents.set({ tenant }, frames);
      this.metrics.watchBufferedBytes.set({ tenant }, bytes);
    }
  }

  /** Streams end before the HTTP server closes (it would otherwise wait for them). */
  beforeApplicationShutdown(): void {
    for (const set of this.sessions.values()) for (const s of [...set]) s.close();
  }
}
