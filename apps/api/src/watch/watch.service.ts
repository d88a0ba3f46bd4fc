import { BeforeApplicationShutdown, Inject, Injectable, Logger } from '@nestjs/common';
import { DbError, newUlid, stringifyJson } from '@mmdb/core';
import { WatchQuery, type SqlEngine, type WatchPolicy, type WatchSource } from '@mmdb/sql';
import type { WatchRequestSource } from './watch.params';
import { APP_CONFIG, AppConfig } from '../config';
import { Metrics } from '../health/metrics.service';
import type { TenantHandle } from '../tenancy/tenant-registry';
import type { NlEngine } from '../ask/nl-engine';
import { QueryRunner } from '../query/query.runner';
import { SecurityService } from '../security/security.service';
import { policyValues, readableManifests } from '../security/ask-lexicon';
import { WatchSession, type SseOut, type StartAt, type Subscriber } from './watch-session';
import { fanoutSpent, takeLongestTurn } from './turns';

/** A compiled subscription, and (for a user other than the owner) what follows its policy. */
export interface Compiled {
  readonly query: WatchQuery;
  readonly subscriber?: Subscriber;
}

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
    private readonly runner: QueryRunner,
    private readonly security: SecurityService,
  ) {
    metrics.watchSampler = () => this.sample();
    metrics.watchFanout = fanoutSpent;
    metrics.watchLongestTurn = takeLongestTurn;
  }

  /**
   * Compiles a subscription against the tenant's schemas (a bad query answers its 400 here,
   * before any stream). A question is first compiled to a plan by the English compiler. The
   * acting user's policy is the one its queries run under (QueryRunner.options: grants,
   * row-level security, masks), so its events and snapshots hold what its queries would answer;
   * a user without read on the followed table: 403 `forbidden`.
   */
  async compile(t: TenantHandle, source: WatchRequestSource): Promise<Compiled> {
    const engine = this.runner.engine(t);
    const under = (h: TenantHandle): WatchPolicy | undefined => {
      const o = this.runner.options(h, engine, 'watch');
      return o.policy ? { policy: o.policy, key: o.policyKey ?? '' } : undefined;
    };
    const query = WatchQuery.compile(engine, 'nl' in source ? await this.question(t, engine, source.nl) : source, under(t));
    const a = t.acting;
    if (!a || a.isOwner) return { query };
    const schema = query.schema;
    a.require(schema, 'read');
    const subscriber: Subscriber = {
      // what the user's events depend on, from the live catalogue (a user or policy change moves it)
      fingerprint: () => {
        const c = a.catalog;
        const r = c.user(a.name);
        return stringifyJson([r ? [r.grants[schema] ?? null, r.grants['*'] ?? null, r.attributes] : null, c.policiesFor(schema, a.name)]);
      },
      compile: async () => {
        const fresh = this.security.acting(a.catalog, a.name);
        fresh.require(schema, 'read');
        return query.recompile(under(Object.assign(Object.create(t) as TenantHandle, { acting: fresh })));
      },
    };
    return { query, subscriber };
  }

  /**
   * English → plan, through the tenant's English compiler and its intent cache, chosen as POST /ask
   * chooses it: a user other than the owner asks its own (lexicon and cache of what it may see).
   */
  private async question(t: TenantHandle, engine: SqlEngine, nl: string): Promise<WatchSource> {
    const e = t.engine<NlEngine>('nlq');
    if (!e.compiler) throw new DbError('service_unavailable', 'the English compiler is not attached yet');
    e.freshen();
    const a = t.acting;
    const o = this.runner.options(t, engine, 'watch');
    const compiler = !a || a.isOwner || !o.policyKey ? e.compiler : e.compilerFor(o.policyKey, () => readableManifests(a, t.store.tables()), policyValues(engine, o));
    const c = await compiler.ask(nl);
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
  open(t: TenantHandle, { query, subscriber }: Compiled, out: SseOut, authorized?: () => boolean): WatchSession {
    let set = this.sessions.get(t.tenant);
    if (!set) this.sessions.set(t.tenant, (set = new Set()));
    const tenant = { tenant: t.tenant };
    const c = this.config;
    const opts = { authorized, subscriber, coalesceMs: c.watchCoalesceMs, heartbeatMs: c.watchHeartbeatMs, retryMs: c.watchRetryMs, bufferFrames: c.watchBufferFrames, maxLagFrames: c.watchMaxLagFrames };
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
