import { Module } from '@nestjs/common';
import { OpenApiController } from './openapi.controller';
import { OpenApiService } from './openapi.service';

/** The interface description (spec 9.2), built from @mmdb/client's route registry. */
@Module({ controllers: [OpenApiController], providers: [OpenApiService], exports: [OpenApiService] })
export class OpenApiModule {}
