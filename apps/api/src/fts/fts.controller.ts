import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DbError } from '@mmdb/core';
import { DEFAULT_LIMIT, FtsParticipant } from '@mmdb/fts';
import { ftsSearchRoute } from '@mmdb/sql';
import { TenantCtx } from '../http/decorators';
import { Requires } from '../security/security.service';
import { QueryRunner } from '../query/query.runner';
import type { TenantHandle } from '../tenancy/tenant-registry';
import { APP_CONFIG, type AppConfig } from '../config';
import { commitIdempotent } from '../rows/idempotency';

/** Spec §4.9: BM25 search over a table's full-text field, and standalone documents. */
@Controller('v1/tenants/:tenant/fts/:table/:field')
export class FtsController {
  constructor(
    private readonly runner: QueryRunner,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /** Answered by an `fts_search` plan on the tenant's executor. */
  @Get()
  @Requires('table', 'read')
  search(@TenantCtx() t: TenantHandle, @Param('table') table: string, @Param('field') field: string, @Query() q: Record<string, unknown>) {
    let limit = DEFAULT_LIMIT;
    if (q.limit !== undefined) {
      if (typeof q.limit !== 'string' || !/^\d+$/.test(q.limit)) throw new DbError('validation_failed', 'limit must be a positive integer', { field: 'limit' });
      limit = Number(q.limit);
    }
    if (q.q !== undefined && typeof q.q !== 'string') throw new DbError('validation_failed', 'q must be given once', { field: 'q' });
    const pick = <T extends string>(name: string, allowed: readonly T[]): T | undefined => {
      const v = q[name];
      if (v === undefined) return undefined;
      if (typeof v !== 'string' || !(allowed as readonly string[]).includes(v))
        throw new DbError('validation_failed', `${name} must be one of ${allowed.map((a) => `"${a}"`).join(', ')}`, { field: name });
      return v as T;
    };
    // omitted → the documented defaults (rm3, bm25tp, auto); all three "none" → plain BM25
    const feedback = pick('feedback', ['none', 'rm3'] as const);
    const proximity = pick('proximity', ['none', 'bm25tp'] as const);
    const queryStopwords = pick('query_stopwords', ['none', 'auto'] as const);
    const text = (q.q as string | undefined) ?? '';
    return this.runner.run(t, 'fts', (engine, opts) => ftsSearchRoute(engine, table, field, text, limit, { feedback, proximity, queryStopwords }, opts));
  }

  @Post()
  @Requires('table', 'insert', 'update')
  @HttpCode(200)
  async put(@TenantCtx() t: TenantHandle, @Param('table') table: string, @Param('field') field: string, @Body() body: unknown, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply) {
    const b = body as Record<string, unknown> | null;
    if (!b || typeof b !== 'object' || Array.isArray(b)) throw new DbError('validation_failed', 'body must be an object {doc_id, text}');
    if (typeof b.doc_id !== 'string' || b.doc_id === '') throw new DbError('validation_failed', 'doc_id is required and must be a non-empty string', { field: 'doc_id' });
    if (typeof b.text !== 'string') throw new DbError('validation_failed', 'text is required and must be a string', { field: 'text' });
    return commitIdempotent(t, req, reply, this.config.idempotencyTtlMs, [FtsParticipant.putDoc(table, field, b.doc_id, b.text)], (results, lsn) => {
      const res = results[0] as { result?: unknown } | undefined;
      return { status: 200, body: { ...(res?.result as object), lsn } as never };
    });
  }
}
