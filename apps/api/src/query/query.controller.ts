import { Body, Controller, Headers, HttpCode, Inject, Param, Post, Query, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DbError, isUlid, newUlid } from '@mmdb/core';
import { validatePlan } from '@mmdb/plan';
import { formatResult, type SqlIdempotency } from '@mmdb/sql';
import type { JsonValue } from '@mmdb/core';
import { Caller, TenantCtx } from '../http/decorators';
import type { TenantHandle } from '../tenancy/tenant-registry';
import type { Principal } from '../system/system-store';
import { QueryRegistry } from './query.registry';
import { QueryRunner } from './query.runner';
import { gateSql } from '../security/sql-gate';
import { runSecuritySql, securityStatements } from '../security/sql-security';
import { APP_CONFIG, type AppConfig } from '../config';
import { idempotencyFor, priorAnswer, replay } from '../rows/idempotency';

/** The query id of a request: its X-DB-Query-Id header (a ULID), else a new one. */
export function queryId(h: string | undefined): string {
  if (h === undefined) return newUlid();
  if (!isUlid(h)) throw new DbError('validation_failed', 'X-DB-Query-Id must be a ULID', { header: 'X-DB-Query-Id' });
  return h.toUpperCase();
}

@Controller()
export class QueryController {
  constructor(
    private readonly registry: QueryRegistry,
    private readonly runner: QueryRunner,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /**
   * The request's Idempotency-Key for the SQL engine (spec 5.6, the rows routes' mechanism):
   * its record is committed in the frame of the script's writes, answering what this route
   * answers. `replayed` is set at once when the key already holds this request's answer.
   */
  private async idempotency(t: TenantHandle, req: FastifyRequest, format: 'objects' | 'arrays'): Promise<SqlIdempotency | undefined> {
    const record = idempotencyFor(req, this.config.idempotencyTtlMs, () => ({ status: 200, body: null }));
    if (!record) return undefined;
    const prior = await priorAnswer(t.store, record);
    const answer = (results: readonly RawResultLike[]) => ({ status: 200, body: formatResult(lastResult(results), format) as JsonValue });
    return { key: record.key, fingerprint: record.fingerprint, expiresAt: record.expiresAt, answer, ...(prior ? { replayed: prior } : {}) };
  }

  @Post('v1/tenants/:tenant/sql')
  @HttpCode(200)
  async sql(@TenantCtx() t: TenantHandle, @Body() body: unknown, @Headers('x-db-query-id') qid: string | undefined, @Query('explain') explain: string | undefined, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply) {
    if (!body || typeof body !== 'object' || typeof (body as { sql?: unknown }).sql !== 'string') {
      throw new DbError('validation_failed', 'body must be {sql: string, params?: array, format?: "objects"|"arrays"}', { field: 'sql' });
    }
    const b = body as { sql: string; params?: unknown; format?: unknown };
    if (b.params !== undefined && !Array.isArray(b.params)) throw new DbError('validation_failed', 'params must be an array', { field: 'params' });
    if (b.format !== undefined && b.format !== 'objects' && b.format !== 'arrays') throw new DbError('validation_failed', 'format must be "objects" or "arrays"', { field: 'format' });
    const id = queryId(qid);
    reply.header('x-db-query-id', id);
    const format = (b.format as 'objects' | 'arrays') ?? 'objects';
    // CREATE ROLE / GRANT / REVOKE / CREATE POLICY: the security catalogue (owner only), not the engine
    const sec = t.acting ? securityStatements(b.sql) : null;
    if (sec) return formatResult(lastResult(await runSecuritySql(t, t.acting!, b.sql, sec)), format);
    const idempotency = await this.idempotency(t, req, format);
    if (idempotency?.replayed) return replay(reply, idempotency.replayed);
    const results = await this.runner.run(t, 'sql', (engine, o) =>
      gateSql(t.acting, engine, b.sql) ?? engine.run(b.sql, { ...o, params: b.params as unknown[] | undefined, explain: explain === 'true', deleteMode: 'translate', ...(idempotency ? { idempotency } : {}) }), id);
    if (idempotency?.replayed) return replay(reply, idempotency.replayed);
    return formatResult(lastResult(results), format);
  }

  @Post('v1/tenants/:tenant/query')
  @HttpCode(200)
  async query(@TenantCtx() t: TenantHandle, @Body() body: unknown, @Headers('x-db-query-id') qid: string | undefined, @Query('explain') explain: string | undefined, @Res({ passthrough: true }) reply: FastifyReply) {
    const plan = validatePlan(body);
    const id = queryId(qid);
    reply.header('x-db-query-id', id);
    const r = await this.runner.run(t, 'plan', (engine, o) => engine.runPlan(plan, { ...o, explain: explain === 'true' }), id);
    const env = formatResult(withoutHidden(r)) as { rows: unknown[]; explain?: unknown };
    return explain === 'true' ? { rows: env.rows, explain: r.explain } : env.rows;
  }

  @Post('v1/queries/:id/cancel')
  @HttpCode(200)
  cancel(@Param('id') id: string, @Caller() who: Principal) {
    return { cancelled: this.registry.cancel(id.toUpperCase(), who.operator ? undefined : who.tenant ?? '') };
  }
}

type RawResultLike = Parameters<typeof formatResult>[0];

/** What /sql answers: the last statement's result that is not BEGIN/COMMIT/ROLLBACK (else the last). */
function lastResult(results: readonly RawResultLike[]): RawResultLike {
  const last = [...results].reverse().find((r) => r.kind !== 'transaction') ?? results[results.length - 1];
  if (!last) throw new DbError('validation_failed', 'no statement to run');
  return last;
}

/**
 * A plan answer without the executor's hidden columns (`#version:<alias>`, which a table leaf
 * carries for the operators above it): a `get` or `scan` plan answers the row's columns, as
 * row GET and SQL do.
 */
function withoutHidden<R extends { names: string[]; rows: unknown[][]; kinds?: unknown[] }>(r: R): R {
  const keep = r.names.map((n, i) => (n.startsWith('#') ? -1 : i)).filter((i) => i >= 0);
  if (keep.length === r.names.length) return r;
  return { ...r, names: keep.map((i) => r.names[i]), rows: r.rows.map((row) => keep.map((i) => row[i])), ...(r.kinds ? { kinds: keep.map((i) => r.kinds![i]) } : {}) };
}
