import { Controller, Get, Param, Query } from '@nestjs/common';
import type { GraphIndex } from '@mmdb/graph';
import { TenantCtx } from '../http/decorators';
import type { TenantHandle } from '../tenancy/tenant-registry';
import { DEFAULT_DEPTH, MAX_DEPTH, depth, optional, required, weights, type Query as Q } from './graph.params';

/** Spec §4.10: graph traversals, all GET under /v1/tenants/{tenant}/graph/{schema}/. */
@Controller('v1/tenants/:tenant/graph/:schema')
export class GraphController {
  private graph(t: TenantHandle): GraphIndex {
    return t.engine<GraphIndex>('graph');
  }

  @Get('neighbors')
  neighbors(@TenantCtx() t: TenantHandle, @Param('schema') schema: string, @Query() q: Q) {
    return this.graph(t).neighbors(schema, required(q, 'rel'), required(q, 'node'));
  }

  @Get('bfs')
  bfs(@TenantCtx() t: TenantHandle, @Param('schema') schema: string, @Query() q: Q) {
    return this.graph(t).bfs(schema, required(q, 'rel'), required(q, 'src'), depth(q, 'depth', DEFAULT_DEPTH));
  }

  @Get('reverse')
  reverse(@TenantCtx() t: TenantHandle, @Param('schema') schema: string, @Query() q: Q) {
    return this.graph(t).reverse(schema, required(q, 'rel'), required(q, 'pk'));
  }

  @Get('path')
  path(@TenantCtx() t: TenantHandle, @Param('schema') schema: string, @Query() q: Q) {
    return this.graph(t).path(schema, required(q, 'rel'), required(q, 'src'), required(q, 'dst'), depth(q, 'max_depth', MAX_DEPTH));
  }

  @Get('dijkstra')
  dijkstra(@TenantCtx() t: TenantHandle, @Param('schema') schema: string, @Query() q: Q) {
    const rel = required(q, 'rel');
    const src = required(q, 'src');
    const dst = required(q, 'dst');
    return this.graph(t).dijkstra(schema, rel, src, dst, { weightField: optional(q, 'weight_field'), weights: weights(q) });
  }
}
