import { Body, Controller, Headers, HttpCode, Post, Query, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { DbError } from '@mmdb/core';
import { bindParams } from '@mmdb/nlq';
import { formatResult } from '@mmdb/sql';
import { TenantCtx } from '../http/decorators';
import type { TenantHandle } from '../tenancy/tenant-registry';
import { Metrics } from '../health/metrics.service';
import { queryId } from '../query/query.controller';
import { QueryRunner } from '../query/query.runner';
import type { NlEngine } from './nl-engine';
import { policyValues, readableManifests } from '../security/ask-lexicon';

/** The longest question accepted (a question, not a document). */
const NL_MAX = 4096;

interface AskBody { nl: string; schemas?: string[]; show_plan?: boolean; direction?: 'forward' | 'reverse' }

function check(body: unknown): AskBody {
  const b = body as Record<string, unknown> | null;
  if (!b || typeof b !== 'object' || Array.isArray(b)) throw new DbError('validation_failed', 'body must be {nl, schemas?, show_plan?, direction?}');
  if (typeof b.nl !== 'string' || !b.nl.trim()) throw new DbError('validation_failed', 'nl is required and must be a non-empty string', { field: 'nl' });
  if (b.nl.length > NL_MAX) throw new DbError('validation_failed', `nl is longer than ${NL_MAX} characters`, { field: 'nl' });
  if (b.schemas !== undefined && (!Array.isArray(b.schemas) || b.schemas.some((s) => typeof s !== 'string'))) throw new DbError('validation_failed', 'schemas must be an array of strings', { field: 'schemas' });
  if (b.show_plan !== undefined && typeof b.show_plan !== 'boolean') throw new DbError('validation_failed', 'show_plan must be a boolean', { field: 'show_plan' });
  if (b.direction !== undefined && b.direction !== 'forward' && b.direction !== 'reverse') throw new DbError('validation_failed', 'direction must be "forward" or "reverse"', { field: 'direction' });
  const extra = Object.keys(b).filter((k) => !['nl', 'schemas', 'show_plan', 'direction'].includes(k));
  if (extra.length) throw new DbError('validation_failed', `unknown field "${extra[0]}"`, { field: extra[0] });
  return b as unknown as AskBody;
}

/** Spec §4.6: English → cached plan → the one plan executor. */
@Controller()
export class AskController {
  constructor(private readonly metrics: Metrics, private readonly runner: QueryRunner) {}

  @Post('v1/tenants/:tenant/ask')
  @HttpCode(200)
  async ask(@TenantCtx() t: TenantHandle, @Body() body: unknown, @Headers('x-db-query-id') qid: string | undefined, @Query('explain') explain: string | undefined, @Res({ passthrough: true }) reply: FastifyReply) {
    const b = check(body);
    const id = queryId(qid);
    reply.header('x-db-query-id', id);
    const nl = t.engine<NlEngine>('nlq');
    if (!nl.compiler) throw new DbError('service_unavailable', 'the English compiler is not attached yet');
    nl.freshen();
    // compiled (or taken from the intent cache), then run like every surface: the one executor, cancellable by id, measured as "nl"
    // the runner's options carry the acting user's policy (grants, row-level security, masks):
    // the compiled plan (cached policy-free in the intent cache) gets it at the executor
    const r = await this.runner.run(t, 'nl', async (engine, o) => {
      // a user other than the owner asks its own compiler: lexicon, suggestions and intent cache of what it may see
      const a = t.acting;
      const compiler = !a || a.isOwner || !o.policyKey ? nl.compiler! : nl.compilerFor(o.policyKey, () => readableManifests(a, t.store.tables()), policyValues(engine, o));
      const c = await compiler.ask(b.nl, { schemas: b.schemas, direction: b.direction });
      if (c.cache === 'hit') this.metrics.planCacheHits.inc({ surface: 'nl' });
      return { c, out: await engine.runPlan(c.plan, { ...o, params: c.params, queryId: id, explain: explain === 'true' }) };
    }, id);
    const env = formatResult(r.out) as { rows: unknown[] };
    return {
      rows: env.rows,
      cache: r.c.cache,
      ...(b.show_plan ? { plan: bindParams(r.c.plan, r.c.params) } : {}),
      ...(explain === 'true' ? { explain: r.out.explain } : {}),
      ...(r.c.interpretation ? { interpretation: r.c.interpretation } : {}),
    };
  }
}
