import { Controller, Get, HttpCode, Post } from '@nestjs/common';
import { OperatorOnly } from '../http/decorators';
import { SystemStore } from './system-store';

/** Operator-only tenant provisioning over HTTP (a tenant's tokens: tokens.controller.ts). */
@OperatorOnly()
@Controller('v1/tenants')
export class TenantsController {
  constructor(private readonly system: SystemStore) {}

  @Get()
  list() {
    return this.system.listTenants();
  }

  /** Creates a tenant and its first token → `{tenant, token_id, token, created, expires_at}`; the token is shown only in this answer. */
  @Post()
  @HttpCode(201)
  create() {
    return this.system.createTenant();
  }
}
