import { Module } from '@nestjs/common';
import { EsService } from '@mmdb/es-compat';
import { TenantRegistry, type TenantHandle } from '../tenancy/tenant-registry';
import { QueryModule } from '../query/query.module';
import type { QueryRunner } from '../query/query.runner';
import { EsController } from './es.controller';
import { StoreEsBackend } from './es.backend';

/** One ES surface per tenant store, built on first use (it reads through the tenant's plan executor). */
export class EsTenantEngine {
  private service: EsService | null = null;
  of(t: TenantHandle, runner: QueryRunner): EsService {
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
