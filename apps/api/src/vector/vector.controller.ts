import { Body, Controller, HttpCode, Inject, Param, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { VectorParticipant } from '@mmdb/vector';
import { vectorTopkRoute } from '@mmdb/sql';
import { TenantCtx } from '../http/decorators';
import { Requires } from '../security/security.service';
import { QueryRunner } from '../query/query.runner';
import type { TenantHandle } from '../tenancy/tenant-registry';
import { APP_CONFIG, type AppConfig } from '../config';
import { commitIdempotent } from '../rows/idempotency';

/** Spec §4.8: standalone vector puts and top-k (over standalone tables and manifest vector columns). */
@Controller('v1/tenants/:tenant/vector/:table')
export class VectorController {
  constructor(
    private readonly runner: QueryRunner,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Post('put')
  @Requires('table', 'insert', 'update')
  @HttpCode(200)
  async put(@TenantCtx() t: TenantHandle, @Param('table') table: string, @Body() body: unknown, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply) {
    return commitIdempotent(t, req, reply, this.config.idempotencyTtlMs, [VectorParticipant.put(table, body)], (results, lsn) => {
      const res = results[0] as { result?: unknown } | undefined;
      return { status: 200, body: { ...(res?.result as object), lsn } as never };
    });
  }

  /** Answered by a `vector_topk` plan on the tenant's executor. */
  @Post('topk')
  @Requires('table', 'read')
  @HttpCode(200)
  topk(@TenantCtx() t: TenantHandle, @Param('table') table: string, @Body() body: unknown) {
    return this.runner.run(t, 'vector', (engine, opts) => vectorTopkRoute(engine, table, body, opts));
  }
}
