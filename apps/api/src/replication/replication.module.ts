import { Module } from '@nestjs/common';
import { ReplicationController } from './replication.controller';

/** Replication routes (spec §4.13). The `Replication` service itself is a core provider (health and server use it). */
@Module({ controllers: [ReplicationController] })
export class ReplicationModule {}
