import { AsyncLocalStorage } from 'async_hooks';
import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { Observable, map } from 'rxjs';

/** Per request: set when one of its commits missed the replication sync window. */
export interface SyncState {
  degraded: boolean;
}

export const syncContext = new AsyncLocalStorage<SyncState>();

/**
 * Spec §7.2: a write whose follower acknowledgements did not arrive within the sync window
 * still answers 2xx, with `X-DB-Replication: degraded`. Registered only when
 * DB_REPLICATION_SYNC_FOLLOWERS > 0; the commit path (Replica.sync) marks the request.
 */
@Injectable()
export class SyncInterceptor implements NestInterceptor {
  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    const method = ctx.switchToHttp().getRequest<{ method: string }>().method;
    if (method === 'GET' || method === 'HEAD') return next.handle();
    const reply = ctx.switchToHttp().getResponse<FastifyReply>();
    const state: SyncState = { degraded: false };
    return new Observable<unknown>((sub) =>
      syncContext.run(state, () =>
        next
          .handle()
          .pipe(
            map((body) => {
              if (state.degraded && !reply.sent) reply.header('x-db-replication', 'degraded');
              return body;
            }),
          )
          .subscribe(sub),
      ),
    );
  }
}
