import { Module } from '@nestjs/common';
import { EsService } from '@mmdb/es-compat';
import { TenantRegistry, type TenantHandle } from '../tenancy/tenant-registry';
import { QueryModule } from '../query/query.module';
import type { QueryRunner } from '../query/query.runner';
import { EsController } from './es.controller';
import { StoreEsBackend } from './es.backend';

/**
 * One ES surface per tenant store, built on first use (it reads through the tenant's plan executor).
 * The surface caches each index's documents in memory (built by a plan read): a restricted
 * database user gets its own surface, keyed by user and security-catalogue version, whose views
 * are built by reads under that user's policy, so searches, counts, aggregations, suggesters,
 * highlights and gets never see a row or value the policy hides (see apps/api/README.md).
 */
export class EsTenantEngine {
  private service: EsService | null = null;
  private readonly restricted = new Map<string, EsService>();
  static readonly MAX_RESTRICTED = 64;

  of(t: TenantHandle, runner: QueryRunner): EsService {
    const a = t.acting;
    if (a && !a.isOwner) {
      const key = `${a.name}#${a.catalog.version}`;
      let s = this.restricted.get(key);
      if (!s) {
        if (this.restricted.size >= EsTenantEngine.MAX_RESTRICTED) this.restricted.clear();
        s = new EsService(new StoreEsBackend(t, runner), t.tenant);
        this.restricted.set(key, s);
      }
      return s;
    }
    if (!this.service) this.service = new EsService(new StoreEsBackend(t, runner), t.tenant);
    return this.service;
  }
}

/** Spec §4.11: the Elasticsearch 7.x-compatible REST surface under /v1/tenants/{tenant}/es/. */
@Module({ imports: [QueryModule], controllers: [EsController] })
export class EsModule {
  constructor(tenants: TenantRegistry) {
    tenants.registerEngine('es', () => new EsTenantEngine());
  }
}
