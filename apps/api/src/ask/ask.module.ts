import { Inject, Module } from '@nestjs/common';
import { ModelAdapter } from '@mmdb/nlq';
import { APP_CONFIG, type AppConfig } from '../config';
import { QueryModule } from '../query/query.module';
import { TenantRegistry } from '../tenancy/tenant-registry';
import { AskController } from './ask.controller';
import { NlEngine } from './nl-engine';

/**
 * Spec §4.6: POST /ask. One NlEngine per tenant store (compiler, intent cache kept in the
 * store). Config: DB_NL_CACHE_SIZE, DB_NL_LEXICON_REFRESH_MS and the optional model
 * (DB_NL_MODEL_URL, DB_NL_MODEL, DB_NL_MODEL_KEY, DB_NL_MODEL_TIMEOUT_MS), see apps/api/README.md.
 */
@Module({ imports: [QueryModule], controllers: [AskController] })
export class AskModule {
  constructor(tenants: TenantRegistry, @Inject(APP_CONFIG) config: AppConfig) {
    const model = config.nlModel ? new ModelAdapter(config.nlModel) : undefined;
    tenants.registerEngine('nlq', () => new NlEngine({ cacheSize: config.nlCacheSize, lexiconRefreshMs: config.nlLexiconRefreshMs, model }));
  }
}
