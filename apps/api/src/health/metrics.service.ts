import { Injectable } from '@nestjs/common';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { corruptFaults } from '@mmdb/core';

/** The per-series children of the request counter and histogram, for one method/route/status. */
interface RequestSeries {
  readonly count: { inc(): void };
  readonly latency: { observe(v: number): void };
}

const LATENCY_BUCKETS = [0.5, 1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000];

/**
 * The service's Prometheus metrics (one registry per app instance). Features observe
 * through the public fields, e.g. `metrics.queryLatency.observe({ surface: 'sql' }, ms)`.
 */
@Injectable()
export class Metrics {
  readonly registry = new Registry();

  readonly httpRequests = new Counter({
    name: 'db_http_requests_total',
    help: 'HTTP requests by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });
  readonly httpLatency = new Histogram({
    name: 'db_http_request_duration_ms',
    help: 'HTTP request latency in milliseconds by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  /** Credits charged to tenants by successful requests, per request class (apps/api/src/security/billing.ts). */
  readonly creditsUsed = new Counter({
    name: 'db_credits_used_total',
    help: 'Credits charged by successful requests, by tenant and request class',
    labelNames: ['tenant', 'class'] as const,
    registers: [this.registry],
  });
  /** Query latency (plan, SQL, NL, search surfaces observe it). */
  readonly queryLatency = new Histogram({
    name: 'db_query_latency_ms',
    help: 'Query execution latency in milliseconds by surface',
    labelNames: ['surface'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  readonly replicationFrames = new Counter({
    name: 'db_replication_frames_total',
    help: 'Log frames shipped to or applied from replication peers',
    labelNames: ['direction'] as const,
    registers: [this.registry],
  });
  /** Stored keys/postings/frames that failed to decode (`corrupt_log`, libs/core corruptData). */
  private corruptReported = 0;
  readonly corruptFaults: Counter = new Counter({
    name: 'db_corrupt_faults_total',
    help: 'Stored data (keys, postings, frames) that failed to decode: corrupt_log faults',
    registers: [this.registry],
    collect: () => {
      const n = corruptFaults.count - this.corruptReported;
      if (n > 0) { this.corruptReported += n; this.corruptFaults.inc(n); }
    },
  });
  readonly replicationRole = new Gauge({
    name: 'db_replication_role',
    help: "1 for this node's replication role of a tenant (leader, follower, candidate), else 0",
    labelNames: ['tenant', 'role'] as const,
    registers: [this.registry],
  });
  readonly replicationEpoch = new Gauge({
    name: 'db_replication_epoch',
    help: 'Highest fencing epoch this node has seen for a tenant (its own while it leads)',
    labelNames: ['tenant'] as const,
    registers: [this.registry],
  });
  readonly replicationLagFrames = new Gauge({
    name: 'db_replication_lag_frames',
    help: 'Frames a follower is behind its holder (on a holder: per follower, from its acknowledgements)',
    labelNames: ['tenant', 'follower'] as const,
    registers: [this.registry],
  });
  readonly replicationLagSeconds = new Gauge({
    name: 'db_replication_lag_seconds',
    help: 'Seconds since a follower last heard from its holder while behind (0 when caught up)',
    labelNames: ['tenant', 'follower'] as const,
    registers: [this.registry],
  });
  readonly replicationDegraded = new Counter({
    name: 'db_replication_degraded_writes_total',
    help: 'Writes answered past the sync window without the required follower acknowledgements',
    labelNames: ['tenant'] as const,
    registers: [this.registry],
  });
  readonly planCacheHits = new Counter({
    name: 'db_plan_cache_hits_total',
    help: 'Plan cache hits (normalized SQL, plan shapes, NL intents)',
    labelNames: ['surface'] as const,
    registers: [this.registry],
  });
  /** Changes per commit request and requests per group, as seen from the HTTP side. */
  readonly commitGroupSize = new Histogram({
    name: 'db_commit_group_size',
    help: 'Commit requests per durable group (one sync batch)',
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
    registers: [this.registry],
  });
  readonly commitChanges = new Histogram({
    name: 'db_commit_changes',
    help: 'Row changes per commit request',
    buckets: [1, 10, 100, 1000, 10000],
    registers: [this.registry],
  });
  readonly commitQueueDepth = new Gauge({
    name: 'db_commit_queue_depth',
    help: 'Writes in flight per tenant store, sampled at scrape',
    labelNames: ['tenant'] as const,
    registers: [this.registry],
  });
  readonly migrationRows = new Counter({
    name: 'db_migration_rows_total',
    help: 'Rows copied by migration backfills',
    labelNames: ['tenant'] as const,
    registers: [this.registry],
  });
  readonly migrationState = new Gauge({
    name: 'db_migration_state',
    help: 'Migrations per state (Pending, Backfilling, Paused, ReadyToCutover, Completed, Aborted, Failed)',
    labelNames: ['tenant', 'state'] as const,
    registers: [this.registry],
  });
  readonly openStores = new Gauge({ name: 'db_open_tenant_stores', help: 'Tenant stores open on this node', registers: [this.registry] });
  readonly logSegments = new Gauge({
    name: 'db_log_segments',
    help: 'Log segments a tenant store holds, sampled at scrape (retention drops those every checkpoint is past)',
    labelNames: ['tenant'] as const,
    registers: [this.registry],
  });
  readonly framesSinceCheckpoint = new Gauge({
    name: 'db_log_frames_since_checkpoint',
    help: 'Frames committed since a tenant store last checkpointed, sampled at scrape (what a restart would replay)',
    labelNames: ['tenant'] as const,
    registers: [this.registry],
  });
  readonly feedCursors = new Gauge({
    name: 'db_feed_cursors',
    help: 'Open change-feed cursors per tenant store and reader kind (follower, watch), sampled at scrape',
    labelNames: ['tenant', 'kind'] as const,
    registers: [this.registry],
  });
  /** The SQL table cache (libs/sql exec/table-cache.ts): estimated bytes held per tenant store, and its budget. */
  readonly tableCacheBytes = new Gauge({
    name: 'db_table_cache_bytes',
    help: "Estimated bytes of decoded rows a tenant store's SQL table cache holds, sampled at scrape",
    labelNames: ['tenant'] as const,
    registers: [this.registry],
  });
  readonly tableCacheBudgetBytes = new Gauge({
    name: 'db_table_cache_budget_bytes',
    help: "The byte budget of a tenant store's SQL table cache (its own cap or the process pool's, the lower), sampled at scrape",
    labelNames: ['tenant'] as const,
    registers: [this.registry],
  });
  readonly tableCachePoolBytes = new Gauge({
    name: 'db_table_cache_pool_bytes',
    help: 'Estimated bytes every SQL table cache of the process holds together (DB_TABLE_CACHE_BYTES bounds it), sampled at scrape',
    registers: [this.registry],
  });
  readonly oldestHeldLsn = new Gauge({
    name: 'db_log_oldest_held_lsn',
    help: 'The oldest LSN log retention keeps for a checkpoint, a follower or a feed reader, per tenant store, sampled at scrape',
    labelNames: ['tenant'] as const,
    registers: [this.registry],
  });
  readonly framesRetained = new Gauge({
    name: 'db_log_frames_retained',
    help: 'Log frames kept because of each kind of holder (follower, watch, checkpoint), per tenant store, sampled at scrape',
    labelNames: ['tenant', 'holder'] as const,
    registers: [this.registry],
  });

  /** Watch streams (spec §4.7): open subscribers, what they buffer, what they were sent. */
  readonly watchSubscribers = new Gauge({
    name: 'db_watch_subscribers',
    help: 'Open watch streams per tenant',
    labelNames: ['tenant'] as const,
    registers: [this.registry],
  });
  /** Set by the watch service: fills the buffered gauges at scrape. */
  watchSampler: (() => void) | null = null;
  readonly watchBufferedEvents = new Gauge({
    name: 'db_watch_buffered_events',
    help: 'Committed frames published after each watch subscriber\'s position and not yet taken by it, summed (held once in the feed\'s shared buffer; past its bound a subscriber reads the log), sampled at scrape',
    labelNames: ['tenant'] as const,
    registers: [this.registry],
    collect: () => this.watchSampler?.(),
  });
  readonly watchBufferedBytes = new Gauge({
    name: 'db_watch_buffered_bytes',
    help: 'Event bytes written to watch streams and not yet taken by the socket, sampled at scrape',
    labelNames: ['tenant'] as const,
    registers: [this.registry],
  });
  readonly watchEvents = new Counter({
    name: 'db_watch_events_sent_total',
    help: 'Events sent on watch streams by event name (snapshot, change, reset, position)',
    labelNames: ['event'] as const,
    registers: [this.registry],
    collect: () => this.flushWatchEvents(),
  });
  readonly watchResets = new Counter({
    name: 'db_watch_resets_total',
    help: 'Watch stream resets (resnapshots) by reason: retention, lag, epoch, ahead, schema, aggregate',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly watchRowChanges = new Counter({
    name: 'db_watch_row_changes_total',
    help: 'Row changes of watched tables examined by watch subscribers (the matching input)',
    registers: [this.registry],
  });
  /** Set by the watch service: the fan-out's main-thread time and turns so far (watch/turns.ts). */
  watchFanout: (() => { readonly ms: number; readonly turns: number; readonly grouped: number }) | null = null;
  private fanoutSeen = { ms: 0, turns: 0, grouped: 0 };
  readonly watchFanoutSeconds = new Counter({
    name: 'db_watch_fanout_seconds_total',
    help: "Main-thread time spent in the watch fan-out's turns (taking frames, matching, serializing, writing sockets), the event loop's time the streams cost",
    registers: [this.registry],
    collect: () => this.collectFanout(),
  });
  readonly watchFanoutTurns = new Counter({
    name: 'db_watch_fanout_turns_total',
    help: "Turns of the watch fan-out (about one per stream and burst): db_watch_fanout_seconds_total over it is the cost of one",
    registers: [this.registry],
    collect: () => this.collectFanout(),
  });
  readonly watchFanoutGrouped = new Counter({
    name: 'db_watch_fanout_grouped_total',
    help: "Bursts the watch fan-out delivered to parked streams in their group's turn (one turn for all the streams a window closed for, those of one query together; no promise per stream): the rest took a turn of their own",
    registers: [this.registry],
    collect: () => this.collectFanout(),
  });
  /** Set by the watch service: the longest turn of the fan-out since the last read (watch/turns.ts). */
  watchLongestTurn: (() => number) | null = null;
  readonly watchFanoutLongestTurn = new Gauge({
    name: 'db_watch_fanout_longest_turn_seconds',
    help: "The longest turn of the watch fan-out since the previous scrape (a stream's burst, or a slice of a group's delivery): every request waits behind one as long",
    registers: [this.registry],
    collect: () => {
      const ms = this.watchLongestTurn?.();
      if (ms !== undefined) this.watchFanoutLongestTurn.set(ms / 1000);
    },
  });
  readonly watchCatchUps = new Counter({
    name: 'db_watch_catchups_total',
    help: "Reads of a watch stream's feed behind its buffer (the feed's shared buffer or the log: outside the fan-out's turn; a stream that fell behind, or starting from the log)",
    registers: [this.registry],
  });
  private collectFanout(): void {
    const now = this.watchFanout?.();
    if (!now) return;
    const seen = this.fanoutSeen;
    if (now.ms > seen.ms) this.watchFanoutSeconds.inc((now.ms - seen.ms) / 1000);
    if (now.turns > seen.turns) this.watchFanoutTurns.inc(now.turns - seen.turns);
    if (now.grouped > seen.grouped) this.watchFanoutGrouped.inc(now.grouped - seen.grouped);
    this.fanoutSeen = { ms: now.ms, turns: now.turns, grouped: now.grouped };
  }
  /** The change feed's one buffer of published frames per tenant store (libs/storage feed.ts), sampled at scrape. */
  readonly feedMemoryFrames = new Gauge({
    name: 'db_feed_memory_frames',
    help: "Published frames a tenant store's change feed keeps in memory, one buffer shared by all its readers (bounded whatever the readers do), sampled at scrape",
    labelNames: ['tenant'] as const,
    registers: [this.registry],
  });
  readonly feedMemoryBytes = new Gauge({
    name: 'db_feed_memory_bytes',
    help: "Stored bytes of the frames in a tenant store's change-feed buffer, sampled at scrape",
    labelNames: ['tenant'] as const,
    registers: [this.registry],
  });
  readonly watchEvaluations = new Counter({
    name: 'db_watch_match_evaluations_total',
    help: 'Row images run through a subscription\'s operators to match changes (before and after per changed row): the matching work, proportional to changed rows',
    registers: [this.registry],
  });

  /** Series children by "method route status" (bounded: methods, route patterns and statuses are finite). */
  private readonly requestSeries = new Map<string, RequestSeries>();

  /**
   * Counts one answered HTTP request (the onResponse hook). The label children are looked up
   * once per series and kept, instead of prom-client hashing a label object twice per request.
   */
  observeRequest(method: string, route: string, status: number, ms: number): void {
    const key = `${method} ${route} ${status}`;
    let s = this.requestSeries.get(key);
    if (!s) {
      const labels = { method, route, status: String(status) };
      s = { count: this.httpRequests.labels(labels), latency: this.httpLatency.labels(labels) };
      this.requestSeries.set(key, s);
    }
    s.count.inc();
    s.latency.observe(ms);
  }

  /** Credit counter children by tenant and class, looked up once each (a write charges on every request). */
  private readonly creditSeries = new Map<string, { inc(n: number): void }>();
  creditUsed(tenant: string, cls: string, cost: number): void {
    const key = `${tenant}\u0000${cls}`;
    let c = this.creditSeries.get(key);
    if (!c) this.creditSeries.set(key, (c = this.creditsUsed.labels({ tenant, class: cls })));
    c.inc(cost);
  }

  /**
   * Events sent, tallied per event name and added to the counter at scrape: one per stream and
   * burst (thousands a second with hundreds of streams), where a prom-client `inc` each was a
   * quarter of the fan-out's own main-thread time outside the socket writes.
   */
  private readonly watchEventTally = new Map<string, { n: number }>();
  watchEventSent(event: string): void {
    const t = this.watchEventTally.get(event);
    if (t) t.n++;
    else this.watchEventTally.set(event, { n: 1 });
  }
  private flushWatchEvents(): void {
    for (const [event, t] of this.watchEventTally) {
      if (t.n) this.watchEvents.inc({ event }, t.n);
      t.n = 0;
    }
  }

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'db_process_' });
    // Series exist (at zero) from the start, so dashboards and alerts see them.
    for (const surface of ['plan', 'sql', 'nl', 'es', 'vector', 'fts', 'graph']) this.queryLatency.zero({ surface });
    for (const surface of ['plan', 'sql', 'nl']) this.planCacheHits.inc({ surface }, 0);
    for (const direction of ['in', 'out']) this.replicationFrames.inc({ direction }, 0);
    for (const event of ['snapshot', 'change', 'reset', 'position']) this.watchEvents.inc({ event }, 0);
  }
}
