import { Module } from '@nestjs/common';
import { GraphIndex } from '@mmdb/graph';
import { TenantRegistry } from '../tenancy/tenant-registry';
import { QueryModule } from '../query/query.module';
import { GraphController } from './graph.controller';

/** Graph traversals (spec §4.10): one GraphIndex per tenant store, a participant of its commits. */
@Module({ imports: [QueryModule], controllers: [GraphController] })
export class GraphModule {
  constructor(tenants: TenantRegistry) {
    tenants.registerEngine('graph', () => new GraphIndex());
  }
}
