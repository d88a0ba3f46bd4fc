import { Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { OperatorOnly } from '../http/decorators';
import { SystemStore } from './system-store';

/** Operator-only provisioning over HTTP (the same operations as the provisioning command). */
@OperatorOnly()
@Controller('v1/tenants')
export class TenantsController {
  constructor(private readonly system: SystemStore) {}

  @Get()
  list() {
    return this.system.listTenants();
  }

  /** Creates a tenant and its first token; the token is shown only in this answer. */
  @Post()
  @HttpCode(201)
  create() {
    return this.system.createTenant();
  }

  /** Issues one more token for the tenant. */
  @Post(':tenant/tokens')
  @HttpCode(201)
  async token(@Param('tenant') tenant: string) {
    return { tenant: tenant.toUpperCase(), token: await this.system.issueToken(tenant) };
  }
}
