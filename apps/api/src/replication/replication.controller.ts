import { Readable } from 'stream';
import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { DbError } from '@mmdb/core';
import { NO_SYNC_SETTINGS, SYNC_SETTINGS_ID, effectiveSync, mergeSyncSettings, openFrames, parseSyncSettings, snapshotLines, storeChecksum, storedSyncSettings, type LeaseRecord, type StoredSyncSettings } from '@mmdb/replication';
import type { JsonValue } from '@mmdb/core';
import { Caller, OperatorOnly } from '../http/decorators';
import { Accepts } from '../http/body';
import type { Principal } from '../system/system-store';
import { Metrics } from '../health/metrics.service';
import { TenantRegistry } from '../tenancy/tenant-registry';
import { ackLines, parseAck, parseFramesQuery, parseHandOver } from './replication.params';
import { Replication } from './replication.service';

/**
 * Spec §4.13 (operational routes; apps/api/README.md "Replication"). The lease may be read
 * with the operator token or a token of the tenant; everything else needs the operator token.
 * `tenant` (query) selects the tenant when the node serves several.
 */
/** The lease as the API shows it: without the holder's certificate (followers read that from etcd). */
function shown(lease: LeaseRecord | null): Omit<LeaseRecord, 'cert_pem'> | null {
  if (!lease) return null;
  const { cert_pem: _cert, ...rest } = lease;
  return rest;
}

@Controller('v1/replication')
export class ReplicationController {
  constructor(
    private readonly replication: Replication,
    private readonly tenants: TenantRegistry,
    private readonly metrics: Metrics,
  ) {}

  /** The tenant's lease `{tenant, holder, epoch, advertise_url, ttl_ms, acquired_at, expires_at, handing_over_to}`, or null when vacant (always null without etcd). */
  @Get('lease')
  async lease(@Caller() caller: Principal, @Query('tenant') tenant?: string) {
    const t = this.replication.resolveTenant(tenant, caller);
    if (!this.replication.leases) return null;
    return shown(await this.replication.leases.read(t));
  }

  /** This node's view: role, epoch, position, the lease and (on the holder) the followers' acknowledgements. */
  @OperatorOnly()
  @Get('status')
  async status(@Caller() caller: Principal, @Query('tenant') tenant?: string) {
    const t = this.replication.resolveTenant(tenant, caller);
    const h = await this.tenants.get(t);
    const base = { tenant: t, node: this.replication.nodeName, last_lsn: h.store.lastLsn, store_epoch: h.store.epoch };
    if (!this.replication.enabled) return { ...base, role: 'standalone', epoch: h.store.epoch, lease: null, followers: [] };
    const r = this.replication.replica(t);
    return {
      ...base,
      role: r.lease.role,
      epoch: Math.max(r.lease.epoch, r.lease.maxEpoch),
      writable: r.lease.canWrite(),
      lease: shown(await this.replication.leases!.read(t)),
      following: r.follower.following,
      lag_frames: r.follower.following ? r.follower.lagFrames : 0,
      lag_seconds: r.follower.following ? r.follower.lagSeconds : 0,
      follower_error: r.follower.lastError,
      // ms since this node last heard from a holder (0 while it holds the lease; null: never since it started)
      stale_ms: Number.isFinite(r.staleMs()) ? Math.round(r.staleMs()) : null,
      bootstrapped: this.replication.bootstraps.get(t) ?? null,
      followers: r.acks.list().map((a) => ({ ...a, lag_frames: Math.max(0, h.store.lastLsn - a.lsn) })),
    };
  }

  /**
   * What this node's copy of the tenant holds, to compare nodes: `{lsn, keys, sha256}` over the
   * row, index, full-text, vector and edge keys of one stable snapshot, and `verify` (every
   * derived entry rebuilt from the rows and compared).
   */
  @OperatorOnly()
  @Get('checksum')
  async checksum(@Caller() caller: Principal, @Query('tenant') tenant?: string) {
    const t = this.replication.resolveTenant(tenant, caller);
    const h = await this.tenants.get(t);
    const sum = await storeChecksum(h.store);
    const v = await h.store.verify();
    return { tenant: t, ...sum, verify: { ok: v.ok, rows: v.rows, derived_keys: v.derivedKeys, differences: v.differences.slice(0, 10) } };
  }

  /**
   * The log from `since_segment` on, as NDJSON lines of hex-encoded frames (`follow=true`
   * keeps it open). 410 `resync_required` when the follower must bootstrap (frames dropped,
   * its log diverged or ran ahead); 409 `stale_epoch` when it has seen a newer epoch than this node.
   */
  @OperatorOnly()
  @Get('frames')
  async frames(@Caller() caller: Principal, @Query() query: Record<string, string | undefined>, @Res({ passthrough: true }) reply: FastifyReply) {
    const t = this.replication.resolveTenant(query.tenant, caller);
    const q = parseFramesQuery(query);
    const h = await this.tenants.get(t);
    const replica = this.replication.enabled ? this.replication.replica(t) : null;
    const lines = await openFrames(
      {
        tenant: t,
        holder: this.replication.nodeName ?? 'standalone',
        store: h.store,
        observeEpoch: replica ? (e) => replica.lease.recheck(e) : undefined,
      },
      q,
    );
    if (q.follower && q.afterLsn !== undefined) replica?.acks.ack(q.follower, q.afterLsn, q.epoch ?? 0);
    reply.header('content-type', 'application/x-ndjson; charset=utf-8');
    reply.header('cache-control', 'no-store');
    const shipped = this.metrics.replicationFrames.labels({ direction: 'out' });
    return Readable.from(
      (async function* () {
        for await (const batch of lines) {
          let text = '';
          let frames = 0;
          for (const line of batch) {
            if (line.type === 'frame') frames++;
            text += JSON.stringify(line) + '\n';
          }
          if (frames) shipped.inc(frames);
          yield text;
        }
      })(),
    );
  }

  /**
   * A consistent snapshot of the tenant's store for a follower's bootstrap: NDJSON lines
   * `{type:"start", lsn, epoch}`, `{type:"keys", kv:[[key hex, value hex], …]}`, `{type:"end", lsn, keys}`.
   */
  @OperatorOnly()
  @Get('snapshot')
  async snapshot(@Caller() caller: Principal, @Query('tenant') tenant: string | undefined, @Res({ passthrough: true }) reply: FastifyReply) {
    const t = this.replication.resolveTenant(tenant, caller);
    const h = await this.tenants.get(t);
    const lines = snapshotLines(t, h.store);
    reply.header('content-type', 'application/x-ndjson; charset=utf-8');
    reply.header('cache-control', 'no-store');
    return Readable.from(
      (async function* () {
        for await (const line of lines) yield JSON.stringify(line) + '\n';
      })(),
    );
  }

  /**
   * A follower reports `{follower, lsn, epoch}`: it has applied (durably) every frame up to
   * `lsn`. As `application/x-ndjson` the body is a stream of such lines, each counted as it
   * arrives, kept open by the follower for as long as it tails (one request instead of one
   * per acknowledgement); the answer `{acknowledged, last}` comes when the follower ends it.
   */
  @OperatorOnly()
  @Post('ack')
  @HttpCode(200)
  @Accepts('json', 'ndjson')
  async ack(@Caller() caller: Principal, @Query('tenant') tenant: string | undefined, @Body() body: unknown) {
    const t = this.replication.resolveTenant(tenant, caller);
    const r = this.requireReplica(t);
    const one = (a: { follower: string; lsn: number; epoch: number }) => {
      r.lease.recheck(a.epoch);
      return r.acknowledge(a.follower, a.lsn, a.epoch);
    };
    if (!(body instanceof Readable)) return one(parseAck(body));
    let acknowledged = 0;
    let last: unknown = null;
    for await (const line of ackLines(body)) {
      last = one(parseAck(line));
      acknowledged++;
    }
    return { acknowledged, last };
  }

  /**
   * Forgets a follower (a node taken out of the cluster): the log stops keeping frames for it
   * and its acknowledgements stop counting. It may come back later (it bootstraps if needed).
   */
  @OperatorOnly()
  @Delete('followers/:node')
  async forget(@Caller() caller: Principal, @Param('node') node: string, @Query('tenant') tenant?: string) {
    const t = this.replication.resolveTenant(tenant, caller);
    const h = await this.tenants.get(t);
    // First the acknowledgement (and any retention record still due for it), then the record.
    const forgotten = this.replication.enabled ? this.replication.replica(t).forget(node) : { removed: false, settled: Promise.resolve() };
    await forgotten.settled;
    await h.store.removeFollower(node);
    const removed = forgotten.removed;
    return { follower: node, removed };
  }

  /** The holder gives its lease up (another node is elected). 409 conflict when this node does not hold it. */
  @OperatorOnly()
  @Post('step-down')
  @HttpCode(200)
  async stepDown(@Caller() caller: Principal, @Query('tenant') tenant?: string) {
    const t = this.replication.resolveTenant(tenant, caller);
    const lease = await this.requireReplica(t).lease.stepDown();
    return { stepped_down: true, lease };
  }

  /** `{node}`: the holder hands its lease to that node once it has caught up. 409 conflict when busy. */
  @OperatorOnly()
  @Post('hand-over')
  @HttpCode(200)
  async handOver(@Caller() caller: Principal, @Query('tenant') tenant: string | undefined, @Body() body: unknown) {
    const t = this.replication.resolveTenant(tenant, caller);
    const { node } = parseHandOver(body);
    return this.requireReplica(t).lease.handOver(node);
  }

  /**
   * The tenant's sync settings: `stored` (in its log; null = the node's default), `node_defaults`
   * (this node's DB_REPLICATION_SYNC_* variables) and `effective` (what its writes get here).
   */
  @OperatorOnly()
  @Get('settings')
  async settings(@Caller() caller: Principal, @Query('tenant') tenant?: string) {
    const t = this.replication.resolveTenant(tenant, caller);
    const h = await this.tenants.get(t);
    const rec = (await h.store.catalogEntries('replication')).find((e) => e.id === SYNC_SETTINGS_ID);
    return this.settingsView(t, rec ? storedSyncSettings(rec.record) : NO_SYNC_SETTINGS);
  }

  /**
   * Sets the tenant's sync settings `{sync_followers?, sync_ms?, strict?}` (null: back to the
   * node's default; absent: unchanged). Written in the tenant's log like a row, so followers and
   * any later holder keep them; only the holder takes it (503 elsewhere). The change itself does
   * not wait for follower acknowledgements.
   */
  @OperatorOnly()
  @Put('settings')
  async putSettings(@Caller() caller: Principal, @Query('tenant') tenant: string | undefined, @Body() body: unknown) {
    const t = this.replication.resolveTenant(tenant, caller);
    const change = parseSyncSettings(body);
    const h = await this.tenants.get(t);
    const rec = (await h.store.catalogEntries('replication')).find((e) => e.id === SYNC_SETTINGS_ID);
    const next = mergeSyncSettings(rec ? storedSyncSettings(rec.record) : NO_SYNC_SETTINGS, change);
    // Not held by the sync window it may be changing: a tenant whose followers are down can still be made non-strict.
    await h.write((store) => store.commit({ changes: [{ op: 'catalog', kind: 'replication', id: SYNC_SETTINGS_ID, record: next as unknown as JsonValue }], actor: 'operator', route: 'replication_settings' }));
    return this.settingsView(t, next);
  }

  private settingsView(tenant: string, stored: StoredSyncSettings) {
    const r = this.replication.config;
    const node_defaults = { sync_followers: r?.syncFollowers ?? 0, sync_ms: r?.syncMs ?? 1000, strict: r?.syncStrict ?? false };
    return { tenant, stored, node_defaults, effective: effectiveSync(node_defaults, stored), replicated: this.replication.enabled };
  }

  private requireReplica(t: string) {
    if (!this.replication.enabled) throw new DbError('validation_failed', 'replication is not configured on this node (DB_ETCD_ENDPOINTS is unset)');
    return this.replication.replica(t);
  }
}
