import { Module } from '@nestjs/common';
import { VectorParticipant } from '@mmdb/vector';
import { TenantRegistry } from '../tenancy/tenant-registry';
import { QueryModule } from '../query/query.module';
import { VectorController } from './vector.controller';

/** Vector search (spec §4.8): one VectorParticipant per tenant store, a participant of its commits. */
@Module({ imports: [QueryModule], controllers: [VectorController] })
export class VectorModule {
  constructor(tenants: TenantRegistry) {
    tenants.registerEngine('vector', () => new VectorParticipant());
  }
}
