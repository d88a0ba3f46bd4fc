import { Module } from '@nestjs/common';
import { EsService } from '@mmdb/es-compat';
import { TenantRegistry, type TenantHandle } from '../tenancy/tenant-registry';
import { EsController } from './es.controller';
import { StoreEsBackend } from './es.backend';

/** One ES surface per tenant store, built on first use (it reads through the tenant's SQL plan executor). */
export class EsTenantEngine {
  private service: EsService | null = null;
  of(t: TenantHandle): EsService {
    if (!this.service) this.service = new EsService(new StoreEsBackend(t), t.tenant);
    return this.service;
  }
}

/** Spec §4.11: the Elasticsearch 7.x-compatible REST surface under /v1/tenants/{tenant}/es/. */
@Module({ controllers: [EsController] })
export class EsModule {
  constructor(tenants: TenantRegistry) {
    tenants.registerEngine('es', () => new EsTenantEngine());
  }
}
