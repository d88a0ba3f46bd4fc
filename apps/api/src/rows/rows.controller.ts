import { Body, Controller, Delete, Get, HttpCode, OnModuleInit, Param, Patch, Post, Query, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Readable } from 'stream';
import { Accepts } from '../http/body';
import { DirectRoutes } from '../http/direct-route';
import { TenantCtx, tenantOf, type AuthedRequest } from '../http/decorators';
import { Requires } from '../security/security.service';
import { DbError, type JsonValue } from '@mmdb/core';
import { checkRows, hasMasks, maskedRow, rowChecker, rowVisible } from '../security/row-gate';
import type { TenantHandle } from '../tenancy/tenant-registry';
import { parseIfMatch } from './if-match';
import { lastRawSegment, parsePkSegment } from './pk';
import { Answer, RowsService } from './rows.service';

function send(reply: FastifyReply, a: Answer): unknown {
  reply.status(a.status);
  for (const k in a.headers) reply.header(k, a.headers[k]);
  if (a.replayed) reply.header('x-db-idempotent-replay', 'true');
  if (a.json !== undefined) {
    reply.header('content-type', 'application/json; charset=utf-8');
    return a.json;
  }
  return a.body;
}

/** Spec §4.3: rows of a registered schema. */
@Controller('v1/tenants/:tenant/rows/:schema')
export class RowsController implements OnModuleInit {
  constructor(
    private readonly rows: RowsService,
    private readonly direct: DirectRoutes,
  ) {}

  /** The durable row PUT is a direct route (http/direct-route.ts): the same guards and error filter, without Nest's router. */
  onModuleInit(): void {
    this.direct.add('PUT', '/v1/tenants/:tenant/rows/:schema/:pk', this, 'put');
  }

  @Post()
  @HttpCode(200)
  @Requires('schema', 'insert', 'update')
  async upsert(
    @TenantCtx() t: TenantHandle,
    @Param('schema') schema: string,
    @Query('expect') expect: string | undefined,
    @Body() body: unknown,
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    await checkRows(t, t.acting, schema, [body as Record<string, unknown>]);
    return send(reply, await this.rows.upsert(t, req, schema, body, expect));
  }

  @Post('_batch')
  @Requires('schema', 'insert', 'update')
  @HttpCode(200)
  @Accepts('json', 'ndjson')
  async batch(
    @TenantCtx() t: TenantHandle,
    @Param('schema') schema: string,
    @Query('expect') expect: string | undefined,
    @Query('chunk') chunk: string | undefined,
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const ct = String(req.headers['content-type'] ?? '');
    if (ct.startsWith('application/x-ndjson')) {
      // a user under a WITH CHECK policy: each chunk's rows are checked before it commits
      return send(reply, await this.rows.ndjson(t, req, schema, req.body as Readable, chunk, expect, rowChecker(t, t.acting, schema)));
    }
    if (Array.isArray(req.body)) await checkRows(t, t.acting, schema, req.body as Record<string, unknown>[]);
    return send(reply, await this.rows.batch(t, req, schema, req.body, expect));
  }

  @Get(':pk')
  @Requires('schema', 'read')
  async get(@TenantCtx() t: TenantHandle, @Param('schema') schema: string, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply) {
    const pk = parsePkSegment(lastRawSegment(req.url), this.rows.manifest(t, schema));
    // a row the user's policy hides answers exactly as an absent one
    const absent = () => new DbError('row_not_found', `no row ${JSON.stringify(pk.length === 1 ? pk[0] : pk)} in ${schema}`, { schema });
    if (hasMasks(t.acting, schema)) {
      // the masked row, read through the executor (no ETag: the stored version is the owner's)
      const row = await maskedRow(t, t.acting!, schema, pk as JsonValue[]);
      if (!row) throw absent();
      return row;
    }
    if (!(await rowVisible(t, t.acting, schema, pk))) throw absent();
    return send(reply, await this.rows.get(t, schema, pk));
  }

  /**
   * PUT rows/{schema}/{pk}, the durable write of the HTTP benchmark: a direct route (routed in
   * `onModuleInit`; its guards read `@Requires` off this method). The tenant handle, schema and
   * body are read off the request as @TenantCtx, @Param and @Body would.
   */
  @Requires('schema', 'insert', 'update')
  put(req: FastifyRequest & AuthedRequest, reply: FastifyReply): Promise<unknown> {
    const t = tenantOf(req);
    const schema = (req.params as { schema: string }).schema;
    const body: unknown = req.body;
    // the owner (no row policy applies): neither gate is awaited, one async step less each
    const owner = !t.acting || t.acting.isOwner;
    if (owner) {
      const { pk, pre } = this.target(t, schema, req);
      return this.rows.put(t, req, schema, pk, body, pre).then((a) => send(reply, a));
    }
    return this.gated(t, schema, req).then(async ({ pk, pre }) => {
      await checkRows(t, t.acting, schema, [body as Record<string, unknown>]);
      return send(reply, await this.rows.put(t, req, schema, pk, body, pre));
    });
  }

  /** Our extension: a JSON merge patch (RFC 7396) of the row; If-Match and Idempotency-Key as on PUT. */
  @Patch(':pk')
  @Requires('schema', 'update')
  @Accepts('json')
  async patch(@TenantCtx() t: TenantHandle, @Param('schema') schema: string, @Body() body: unknown, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply) {
    const { pk, pre } = await this.gated(t, schema, req);
    // a user under a WITH CHECK policy: the merged row is checked before it commits
    return send(reply, await this.rows.patch(t, req, schema, pk, body, pre, rowChecker(t, t.acting, schema)));
  }

  /** `target`, refused with 403 when the row exists but the user's policy hides it (a write may not touch it). */
  private async gated(t: TenantHandle, schema: string, req: FastifyRequest) {
    const tg = this.target(t, schema, req);
    if (t.acting && !t.acting.isOwner && !(await rowVisible(t, t.acting, schema, tg.pk as JsonValue[])) && (await t.store.getRowJson(schema, tg.pk))) {
      throw new DbError('forbidden', `the row-level security policy of ${schema} does not let user ${t.acting.name} write this row`, { schema });
    }
    return tg;
  }

  /** The row a keyed route names (`{pk}`, typed by the manifest) and its If-Match precondition. */
  private target(t: TenantHandle, schema: string, req: FastifyRequest) {
    return { pk: parsePkSegment(lastRawSegment(req.url), this.rows.manifest(t, schema)), pre: parseIfMatch(req.headers['if-match']) };
  }

  @Delete(':pk')
  @Requires('schema', 'delete')
  async delete(@TenantCtx() t: TenantHandle, @Param('schema') schema: string, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply) {
    const { pk, pre } = await this.gated(t, schema, req);
    return send(reply, await this.rows.delete(t, req, schema, pk, pre));
  }
}
