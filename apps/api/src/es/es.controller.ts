import { StoreEsBackend } from './es.backend';
import type { Readable } from 'stream';
import { All, Controller, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DbError } from '@mmdb/core';
import { serialize, type Params } from '@mmdb/es-compat';
import { TenantCtx } from '../http/decorators';
import { Accepts, RawBody } from '../http/body';
import type { TenantHandle } from '../tenancy/tenant-registry';
import type { EsTenantEngine } from './es.module';
import { QueryRunner } from '../query/query.runner';

/** ES bulk/msearch bodies may be large (Elasticsearch's default http.max_content_length). */
const NDJSON_MAX = 100 * 1024 * 1024;

async function readStream(s: Readable): Promise<string> {
  const parts: Buffer[] = [];
  let n = 0;
  for await (const chunk of s) {
    const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
    n += b.length;
    if (n > NDJSON_MAX) throw new DbError('validation_failed', `NDJSON body over ${NDJSON_MAX} bytes`);
    parts.push(b);
  }
  return Buffer.concat(parts).toString('utf8');
}

function splitUrl(url: string): { path: string; query: Params } {
  const qi = url.indexOf('?');
  const raw = qi < 0 ? url : url.slice(0, qi);
  const m = /^\/v1\/tenants\/[^/]+\/es(\/.*)?$/.exec(raw);
  const query: Params = {};
  if (qi >= 0) for (const [k, v] of new URLSearchParams(url.slice(qi + 1))) query[k] = query[k] === undefined ? v : `${query[k]},${v}`;
  return { path: m?.[1] ?? '/', query };
}

/** Thin controller: every /es request goes to the tenant's EsService (libs/es-compat). */
@Controller('v1/tenants/:tenant/es')
@Accepts('raw')
export class EsController {
  constructor(private readonly runner: QueryRunner) {}

  @All()
  root(@TenantCtx() t: TenantHandle, @Req() req: FastifyRequest, @Res() reply: FastifyReply) {
    return this.handle(t, req, reply);
  }

  @All('*')
  any(@TenantCtx() t: TenantHandle, @Req() req: FastifyRequest, @Res() reply: FastifyReply) {
    return this.handle(t, req, reply);
  }

  private async handle(t: TenantHandle, req: FastifyRequest, reply: FastifyReply) {
    const { path, query } = splitUrl(req.url);
    const ct = String(req.headers['content-type'] ?? '');
    if (req.body instanceof RawBody || (req.body !== undefined && ct && !/^application\/(json|x-ndjson|vnd\.elasticsearch\+(json|x-ndjson))/.test(ct))) {
      // as Elasticsearch: a body of another media type is refused
      return reply.status(406).header('x-elastic-product', 'Elasticsearch').header('content-type', 'application/json; charset=UTF-8')
        .send(JSON.stringify({ error: `Content-Type header [${ct}] is not supported`, status: 406 }));
    }
    const body = /^application\/(x-ndjson|vnd\.elasticsearch\+x-ndjson)/.test(ct) && req.body && typeof (req.body as Readable).pipe === 'function' ? await readStream(req.body as Readable) : req.body;
    const es = t.engine<EsTenantEngine>('es').of(t, this.runner);
    // the request's handle (its acting user) travels with the async context to the shared backend
    const r = await StoreEsBackend.request.run(t, () => es.handle({ method: req.method, path, query, body }));
    reply.status(r.status);
    for (const [k, v] of Object.entries(r.headers ?? {})) reply.header(k, v);
    if (req.method === 'HEAD' || r.body === undefined) return reply.send();
    if (typeof r.body === 'string') return reply.header('content-type', 'text/plain; charset=UTF-8').send(r.body);
    return reply.header('content-type', 'application/json; charset=UTF-8').send(serialize(r.body));
  }
}
