import { Controller, Get, Headers, Query, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { TokenRequest } from '../http/auth.guard';
import { TenantCtx } from '../http/decorators';
import type { TenantHandle } from '../tenancy/tenant-registry';
import { checkAccept, parseWatchParams } from './watch.params';
import { WatchService } from './watch.service';
import { sseOut } from './sse-out';

/**
 * Spec §4.7: GET /watch, an SSE change stream of a query's result. Everything that can be
 * wrong with the request (token, Accept, query, cap) is answered as the ordinary JSON error
 * before the stream opens; then the reply is taken over and stays open until the client
 * closes it. Events: apps/api/README.md ("Watch streams").
 */
@Controller()
export class WatchController {
  constructor(private readonly watch: WatchService) {}

  @Get('v1/tenants/:tenant/watch')
  async open(
    @TenantCtx() t: TenantHandle,
    @Query() q: Record<string, unknown>,
    @Headers('accept') accept: string | undefined,
    @Headers('last-event-id') lastEventId: string | undefined,
    @Req() req: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    checkAccept(accept);
    const params = parseWatchParams(q, lastEventId, (lsn) => t.store.epochOf(lsn));
    // under the acting user's policy (its row-level security and masks filter every event)
    const compiled = await this.watch.compile(t, params.source);
    this.watch.admit(t.tenant);
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      'x-db-request-id': String(req.id),
    });
    raw.socket?.setNoDelay(true);
    const out = sseOut(raw);
    // a tenant token that expires or is revoked ends the stream (checked per burst and heartbeat)
    const token = (req as TokenRequest).authToken;
    const session = this.watch.open(t, compiled, out, token ? () => !token.revoked && token.expires > Date.now() : undefined);
    raw.on('close', () => session.close());
    // the handler returns now and the stream goes on (the reply is hijacked; `run` settles, never
    // rejects: it logs a fault): awaiting it held the handler's whole async chain (Nest's route
    // pipeline, fastify's handler) suspended per open stream, ~1.5 KiB of heap each
    void this.watch.run(session, t.tenant, params);
  }
}
