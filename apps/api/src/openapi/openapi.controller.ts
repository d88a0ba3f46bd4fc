import { Controller, Get } from '@nestjs/common';
import { OpenApiService } from './openapi.service';

/** `GET /v1/openapi.json`: the OpenAPI 3.1 document (authenticated like every /v1/ route). */
@Controller()
export class OpenApiController {
  constructor(private readonly openapi: OpenApiService) {}

  @Get('v1/openapi.json')
  document() {
    return this.openapi.document();
  }
}
