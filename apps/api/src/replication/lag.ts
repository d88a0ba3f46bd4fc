import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { Observable } from 'rxjs';
import type { AuthedRequest } from '../http/decorators';
import { Replication } from './replication.service';

/**
 * On a follower, every tenant route answers with how far its store is behind the holder:
 * `X-DB-Replication-Lag-Frames` and `X-DB-Replication-Lag-Seconds` (apps/api/README.md).
 * Registered only when replication is configured.
 */
@Injectable()
export class LagInterceptor implements NestInterceptor {
  constructor(private readonly replication: Replication) {}

  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    const tenant = ctx.switchToHttp().getRequest<AuthedRequest>().tenantHandle?.tenant;
    if (tenant !== undefined) {
      const r = this.replication.all().find((x) => x.tenant === tenant);
      if (r?.follower.following) {
        const reply = ctx.switchToHttp().getResponse<FastifyReply>();
        reply.header('x-db-replication-lag-frames', String(r.follower.lagFrames));
        reply.header('x-db-replication-lag-seconds', r.follower.lagSeconds.toFixed(3));
      }
    }
    return next.handle();
  }
}
