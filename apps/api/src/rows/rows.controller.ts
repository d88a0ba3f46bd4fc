import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Put, Query, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Readable } from 'stream';
import { Accepts } from '../http/body';
import { TenantCtx } from '../http/decorators';
import type { TenantHandle } from '../tenancy/tenant-registry';
import { parseIfMatch } from './if-match';
import { lastRawSegment, parsePkSegment } from './pk';
import { Answer, RowsService } from './rows.service';

function send(reply: FastifyReply, a: Answer): unknown {
  reply.status(a.status);
  for (const [k, v] of Object.entries(a.headers)) reply.header(k, v);
  if (a.replayed) reply.header('x-db-idempotent-replay', 'true');
  if (a.json !== undefined) {
    reply.header('content-type', 'application/json; charset=utf-8');
    return a.json;
  }
  return a.body;
}

/** Spec §4.3: rows of a registered schema. */
@Controller('v1/tenants/:tenant/rows/:schema')
export class RowsController {
  constructor(private readonly rows: RowsService) {}

  @Post()
  @HttpCode(200)
  async upsert(
    @TenantCtx() t: TenantHandle,
    @Param('schema') schema: string,
    @Query('expect') expect: string | undefined,
    @Body() body: unknown,
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    return send(reply, await this.rows.upsert(t, req, schema, body, expect));
  }

  @Post('_batch')
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
      return send(reply, await this.rows.ndjson(t, req, schema, req.body as Readable, chunk, expect));
    }
    return send(reply, await this.rows.batch(t, req, schema, req.body, expect));
  }

  @Get(':pk')
  async get(@TenantCtx() t: TenantHandle, @Param('schema') schema: string, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply) {
    const pk = parsePkSegment(lastRawSegment(req.url), this.rows.manifest(t, schema));
    return send(reply, await this.rows.get(t, schema, pk));
  }

  @Put(':pk')
  async put(
    @TenantCtx() t: TenantHandle,
    @Param('schema') schema: string,
    @Body() body: unknown,
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const { pk, pre } = this.target(t, schema, req);
    return send(reply, await this.rows.put(t, req, schema, pk, body, pre));
  }

  /** Our extension: a JSON merge patch (RFC 7396) of the row; If-Match and Idempotency-Key as on PUT. */
  @Patch(':pk')
  @Accepts('json')
  async patch(@TenantCtx() t: TenantHandle, @Param('schema') schema: string, @Body() body: unknown, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply) {
    const { pk, pre } = this.target(t, schema, req);
    return send(reply, await this.rows.patch(t, req, schema, pk, body, pre));
  }

  /** The row a keyed route names (`{pk}`, typed by the manifest) and its If-Match precondition. */
  private target(t: TenantHandle, schema: string, req: FastifyRequest) {
    return { pk: parsePkSegment(lastRawSegment(req.url), this.rows.manifest(t, schema)), pre: parseIfMatch(req.headers['if-match']) };
  }

  @Delete(':pk')
  async delete(@TenantCtx() t: TenantHandle, @Param('schema') schema: string, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply) {
    const { pk, pre } = this.target(t, schema, req);
    return send(reply, await this.rows.delete(t, req, schema, pk, pre));
  }
}
