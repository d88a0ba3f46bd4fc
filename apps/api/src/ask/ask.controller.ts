import { Body, Controller, HttpCode, Post, Query } from '@nestjs/common';
import { DbError } from '@mmdb/core';
import { bindParams } from '@mmdb/nlq';
import { formatResult } from '@mmdb/sql';
import { TenantCtx } from '../http/decorators';
import type { TenantHandle } from '../tenancy/tenant-registry';
import { Metrics } from '../health/metrics.service';
import type { SqlTenantEngine } from '../query/query.module';
import type { NlEngine } from './nl-engine';

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
  constructor(private readonly metrics: Metrics) {}

  @Post('v1/tenants/:tenant/ask')
  @HttpCode(200)
  async ask(@TenantCtx() t: TenantHandle, @Body() body: unknown, @Query('explain') explain: string | undefined) {
    const b = check(body);
    const nl = t.engine<NlEngine>('nlq');
    const engine = t.engine<SqlTenantEngine>('sql').engine;
    if (!nl.compiler || !engine) throw new DbError('service_unavailable', 'the English compiler is not attached yet');
    const t0 = performance.now();
    nl.freshen();
    try {
      const c = await nl.compiler.ask(b.nl, { schemas: b.schemas, direction: b.direction });
      if (c.cache === 'hit') this.metrics.planCacheHits.inc({ surface: 'nl' });
      const r = await engine.runPlan(c.plan, { params: c.params, explain: explain === 'true' });
      const env = formatResult(r) as { rows: unknown[] };
      return {
        rows: env.rows,
        cache: c.cache,
        ...(b.show_plan ? { plan: bindParams(c.plan, c.params) } : {}),
        ...(explain === 'true' ? { explain: r.explain } : {}),
        ...(c.interpretation ? { interpretation: c.interpretation } : {}),
      };
    } finally {
      this.metrics.queryLatency.observe({ surface: 'nl' }, performance.now() - t0);
    }
  }
}
