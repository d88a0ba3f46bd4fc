import { Body, Controller, HttpCode, Param, Post } from '@nestjs/common';
import { VectorParticipant } from '@mmdb/vector';
import { vectorTopkRoute } from '@mmdb/sql';
import { TenantCtx } from '../http/decorators';
import { Requires } from '../security/security.service';
import { QueryRunner } from '../query/query.runner';
import type { TenantHandle } from '../tenancy/tenant-registry';

/** Spec §4.8: standalone vector puts and top-k (over standalone tables and manifest vector columns). */
@Controller('v1/tenants/:tenant/vector/:table')
export class VectorController {
  constructor(private readonly runner: QueryRunner) {}

  @Post('put')
  @Requires('table', 'insert', 'update')
  @HttpCode(200)
  async put(@TenantCtx() t: TenantHandle, @Param('table') table: string, @Body() body: unknown) {
    const r = await t.commit({ changes: [VectorParticipant.put(table, body)] });
    const res = r.results[0] as { result?: unknown } | undefined;
    return { ...(res?.result as object), lsn: r.lsn };
  }

  /** Answered by a `vector_topk` plan on the tenant's executor. */
  @Post('topk')
  @Requires('table', 'read')
  @HttpCode(200)
  topk(@TenantCtx() t: TenantHandle, @Param('table') table: string, @Body() body: unknown) {
    return this.runner.run(t, 'vector', (engine, opts) => vectorTopkRoute(engine, table, body, opts));
  }
}
