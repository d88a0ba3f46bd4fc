import { Body, Controller, Headers, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { DbError, isUlid, newUlid } from '@mmdb/core';
import { validatePlan } from '@mmdb/plan';
import { formatResult } from '@mmdb/sql';
import { Caller, TenantCtx } from '../http/decorators';
import type { TenantHandle } from '../tenancy/tenant-registry';
import type { Principal } from '../system/system-store';
import { QueryRegistry } from './query.registry';
import { QueryRunner } from './query.runner';
import { gateSql } from '../security/sql-gate';
import { runSecuritySql, securityStatements } from '../security/sql-security';

/** The query id of a request: its X-DB-Query-Id header (a ULID), else a new one. */
export function queryId(h: string | undefined): string {
  if (h === undefined) return newUlid();
  if (!isUlid(h)) throw new DbError('validation_failed', 'X-DB-Query-Id must be a ULID', { header: 'X-DB-Query-Id' });
  return h.toUpperCase();
}

@Controller()
export class QueryController {
  constructor(private readonly registry: QueryRegistry, private readonly runner: QueryRunner) {}

  @Post('v1/tenants/:tenant/sql')
  @HttpCode(200)
  async sql(@TenantCtx() t: TenantHandle, @Body() body: unknown, @Headers('x-db-query-id') qid: string | undefined, @Query('explain') explain: string | undefined, @Res({ passthrough: true }) reply: FastifyReply) {
    if (!body || typeof body !== 'object' || typeof (body as { sql?: unknown }).sql !== 'string') {
      throw new DbError('validation_failed', 'body must be {sql: string, params?: array, format?: "objects"|"arrays"}', { field: 'sql' });
    }
    const b = body as { sql: string; params?: unknown; format?: unknown };
    if (b.params !== undefined && !Array.isArray(b.params)) throw new DbError('validation_failed', 'params must be an array', { field: 'params' });
    if (b.format !== undefined && b.format !== 'objects' && b.format !== 'arrays') throw new DbError('validation_failed', 'format must be "objects" or "arrays"', { field: 'format' });
    const id = queryId(qid);
    reply.header('x-db-query-id', id);
    // CREATE ROLE / GRANT / REVOKE / CREATE POLICY: the security catalogue (owner only), not the engine
    const sec = t.acting ? securityStatements(b.sql) : null;
    const results = sec ? await runSecuritySql(t, t.acting!, b.sql, sec) : await this.runner.run(t, 'sql', (engine, o) =>
      gateSql(t.acting, engine, b.sql) ?? engine.run(b.sql, { ...o, params: b.params as unknown[] | undefined, explain: explain === 'true', deleteMode: 'translate' }), id);
    const last = [...results].reverse().find((r) => r.kind !== 'transaction') ?? results[results.length - 1];
    if (!last) throw new DbError('validation_failed', 'no statement to run');
    return formatResult(last, (b.format as 'objects' | 'arrays') ?? 'objects');
  }

  @Post('v1/tenants/:tenant/query')
  @HttpCode(200)
  async query(@TenantCtx() t: TenantHandle, @Body() body: unknown, @Headers('x-db-query-id') qid: string | undefined, @Query('explain') explain: string | undefined, @Res({ passthrough: true }) reply: FastifyReply) {
    const plan = validatePlan(body);
    const id = queryId(qid);
    reply.header('x-db-query-id', id);
    const r = await this.runner.run(t, 'plan', (engine, o) => engine.runPlan(plan, { ...o, explain: explain === 'true' }), id);
    const env = formatResult(r) as { rows: unknown[]; explain?: unknown };
    return explain === 'true' ? { rows: env.rows, explain: r.explain } : env.rows;
  }

  @Post('v1/queries/:id/cancel')
  @HttpCode(200)
  cancel(@Param('id') id: string, @Caller() who: Principal) {
    return { cancelled: this.registry.cancel(id.toUpperCase(), who.operator ? undefined : who.tenant ?? '') };
  }
}
