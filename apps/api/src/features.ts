/**
 * The feature modules of the app (vector, fts, graph, query, ...). Each feature adds one
 * import and one array entry here; see apps/api/DESIGN.md ("Adding a feature").
 */
import type { Type } from '@nestjs/common';
import { OpenApiModule } from './openapi/openapi.module';
import { GraphModule } from './graph/graph.module';
import { FtsModule } from './fts/fts.module';
import { QueryModule } from './query/query.module';
import { VectorModule } from './vector/vector.module';
import { AskModule } from './ask/ask.module';
import { EsModule } from './es/es.module';
import { WatchModule } from './watch/watch.module';

export const FEATURE_MODULES: Type<unknown>[] = [GraphModule, FtsModule, QueryModule, VectorModule, EsModule, AskModule, WatchModule, OpenApiModule];
