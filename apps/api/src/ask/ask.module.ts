import { Module } from '@nestjs/common';
import { ModelAdapter } from '@mmdb/nlq';
import { TenantRegistry } from '../tenancy/tenant-registry';
import { AskController } from './ask.controller';
import { NlEngine } from './nl-engine';

/**
 * Spec §4.6: POST /ask. Config: DB_NL_CACHE_SIZE (intent-cache entries per tenant, default
 * 1000), DB_NL_LEXICON_REFRESH_MS (how stale the value lexicon may be after writes, default
 * 1000), DB_NL_MODEL_URL / DB_NL_MODEL / DB_NL_MODEL_KEY (optional model, off by default).
 */
@Module({ controllers: [AskController] })
export class AskModule {
  constructor(tenants: TenantRegistry) {
    const env = process.env;
    const model = ModelAdapter.fromEnv(env);
    const cacheSize = Number(env.DB_NL_CACHE_SIZE ?? 1000);
    const lexiconRefreshMs = Number(env.DB_NL_LEXICON_REFRESH_MS ?? 1000);
    tenants.registerEngine('nlq', () => new NlEngine({ cacheSize: cacheSize > 0 ? cacheSize : 1000, lexiconRefreshMs, model }));
  }
}
