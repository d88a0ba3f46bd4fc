import { Controller, Get, Param, Query } from '@nestjs/common';
import { graphBfsRoute, graphDijkstraRoute, graphNeighborsRoute, graphPathRoute, graphReverseRoute, type QueryOptions, type SqlEngine } from '@mmdb/sql';
import { TenantCtx } from '../http/decorators';
import { Requires } from '../security/security.service';
import { QueryRunner } from '../query/query.runner';
import type { TenantHandle } from '../tenancy/tenant-registry';
import { DEFAULT_DEPTH, MAX_DEPTH, depth, optional, required, weights, type Query as Q } from './graph.params';

/** Spec §4.10: graph traversals, all GET under /v1/tenants/{tenant}/graph/{schema}/, each answered by a graph plan node. */
@Requires('schema', 'read')
@Controller('v1/tenants/:tenant/graph/:schema')
export class GraphController {
  constructor(private readonly runner: QueryRunner) {}

  private run<T>(t: TenantHandle, fn: (engine: SqlEngine, opts: QueryOptions) => Promise<T>): Promise<T> {
    return this.runner.run(t, 'graph', fn);
  }

  @Get('neighbors')
  neighbors(@TenantCtx() t: TenantHandle, @Param('schema') schema: string, @Query() q: Q) {
    const [rel, node] = [required(q, 'rel'), required(q, 'node')];
    return this.run(t, (e, o) => graphNeighborsRoute(e, schema, rel, node, o));
  }

  @Get('bfs')
  bfs(@TenantCtx() t: TenantHandle, @Param('schema') schema: string, @Query() q: Q) {
    const [rel, src, d] = [required(q, 'rel'), required(q, 'src'), depth(q, 'depth', DEFAULT_DEPTH)];
    return this.run(t, (e, o) => graphBfsRoute(e, schema, rel, src, d, o));
  }

  @Get('reverse')
  reverse(@TenantCtx() t: TenantHandle, @Param('schema') schema: string, @Query() q: Q) {
    const [rel, pk] = [required(q, 'rel'), required(q, 'pk')];
    return this.run(t, (e, o) => graphReverseRoute(e, schema, rel, pk, o));
  }

  @Get('path')
  path(@TenantCtx() t: TenantHandle, @Param('schema') schema: string, @Query() q: Q) {
    const [rel, src, dst, d] = [required(q, 'rel'), required(q, 'src'), required(q, 'dst'), depth(q, 'max_depth', MAX_DEPTH)];
    return this.run(t, (e, o) => graphPathRoute(e, schema, rel, src, dst, d, o));
  }

  @Get('dijkstra')
  dijkstra(@TenantCtx() t: TenantHandle, @Param('schema') schema: string, @Query() q: Q) {
    const rel = required(q, 'rel');
    const src = required(q, 'src');
    const dst = required(q, 'dst');
    const w = { weightField: optional(q, 'weight_field'), weights: weights(q) };
    return this.run(t, (e, o) => graphDijkstraRoute(e, schema, rel, src, dst, w, o));
  }
}
