import { Module } from '@nestjs/common';
import { FtsParticipant } from '@mmdb/fts';
import { TenantRegistry } from '../tenancy/tenant-registry';
import { QueryModule } from '../query/query.module';
import { FtsController } from './fts.controller';

/** Full-text search (spec §4.9): one FtsParticipant per tenant store, a participant of its commits. */
@Module({ imports: [QueryModule], controllers: [FtsController] })
export class FtsModule {
  constructor(tenants: TenantRegistry) {
    tenants.registerEngine('fts', () => new FtsParticipant());
  }
}
