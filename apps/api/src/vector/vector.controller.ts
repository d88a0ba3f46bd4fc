import { Body, Controller, HttpCode, Param, Post } from '@nestjs/common';
import { VectorParticipant } from '@mmdb/vector';
import { TenantCtx } from '../http/decorators';
import type { TenantHandle } from '../tenancy/tenant-registry';

/** Spec §4.8: standalone vector puts and top-k (over standalone tables and manifest vector columns). */
@Controller('v1/tenants/:tenant/vector/:table')
export class VectorController {
  @Post('put')
  @HttpCode(200)
  async put(@TenantCtx() t: TenantHandle, @Param('table') table: string, @Body() body: unknown) {
    const r = await t.commit({ changes: [VectorParticipant.put(table, body)] });
    const res = r.results[0] as { result?: unknown } | undefined;
    return { ...(res?.result as object), lsn: r.lsn };
  }

  @Post('topk')
  @HttpCode(200)
  topk(@TenantCtx() t: TenantHandle, @Param('table') table: string, @Body() body: unknown) {
    return t.engine<VectorParticipant>('vector').topk(table, body as never);
  }
}
