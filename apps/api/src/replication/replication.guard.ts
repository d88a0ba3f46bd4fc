import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { AuthedRequest } from '../http/decorators';
import { Replication } from './replication.service';

/**
 * Replication's part of every tenant route (apps/api/README.md "Replication"), run after the
 * grant guard and registered only when replication is configured:
 * - a node that has not heard from a holder for longer than DB_REPLICATION_MAX_STALE_MS
 *   answers 503 (Replica.checkFresh) instead of serving an ever older copy;
 * - a follower's answers carry its lag: `X-DB-Replication-Lag-Frames`, `-Lag-Seconds`;
 * - a write whose commit missed the tenant's sync window answers 2xx with
 *   `X-DB-Replication: degraded` (spec §7.2): the request's own view of the tenant handle gets
 *   an `onDegraded` hook, which `TenantHandle.commit` calls.
 * A guard and a per-request handle rather than interceptors and an async context: those cost
 * every request of a replicated node a measurable share of its CPU (tools/bench/failover).
 */
@Injectable()
export class ReplicationGuard implements CanActivate {
  constructor(private readonly replication: Replication) {}

  canActivate(ctx: ExecutionContext): boolean {
    const req = ctx.switchToHttp().getRequest<AuthedRequest & { method: string }>();
    const h = req.tenantHandle;
    if (!h) return true;
    const r = this.replication.replicaOf(h.tenant);
    if (!r) return true;
    r.checkFresh();
    const reply = ctx.switchToHttp().getResponse<FastifyReply>();
    if (r.follower.following) {
      reply.header('x-db-replication-lag-frames', String(r.follower.lagFrames));
      reply.header('x-db-replication-lag-seconds', r.follower.lagSeconds.toFixed(3));
    }
    if (req.method !== 'GET' && req.method !== 'HEAD' && r.settings.sync_followers > 0) {
      req.tenantHandle = Object.assign(Object.create(h) as typeof h, {
        onDegraded: () => {
          if (!reply.sent) reply.header('x-db-replication', 'degraded');
        },
      });
    }
    return true;
  }
}
