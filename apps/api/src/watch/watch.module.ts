import { Module } from '@nestjs/common';
import { QueryModule } from '../query/query.module';
import { WatchController } from './watch.controller';
import { WatchService } from './watch.service';

/** Spec §4.7 and §6: SSE change streams of a query's result, fed by the store's resumable change feed. */
@Module({ imports: [QueryModule], controllers: [WatchController], providers: [WatchService] })
export class WatchModule {}
