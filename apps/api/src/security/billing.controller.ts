import { Body, Controller, Get, HttpCode, Param, Put } from '@nestjs/common';
import { DbError, newUlid } from '@mmdb/core';
import { ActingUser, OperatorOnly, TenantCtx } from '../http/decorators';
import type { TenantHandle } from '../tenancy/tenant-registry';
import { ADDONS, usage } from './billing';
import type { Acting } from './catalog';

/**
 * Credits and add-ons of a tenant: set by the operator (catalogue entries in the tenant's log,
 * actor `operator`), usage visible to the tenant.
 */
@Controller('v1/tenants/:tenant')
export class BillingController {
  /** `{credits, used, remaining, by_class, costs, addons}` (the tenant's token managers and the operator). */
  @Get('usage')
  usage(@ActingUser() a: Acting) {
    if (!a.manageTokens) throw new DbError('forbidden', `user ${a.name} may not read the tenant's usage`);
    return usage(a.catalog);
  }

  /** `{credits: number|null, reset?: boolean}`: the credit granted (null: unlimited); `reset` starts a new period. */
  @OperatorOnly()
  @Put('credits')
  @HttpCode(200)
  async credits(@TenantCtx() t: TenantHandle, @ActingUser() a: Acting, @Body() body: unknown) {
    const b = (body ?? {}) as { credits?: unknown; reset?: unknown };
    if (b.credits !== null && (typeof b.credits !== 'number' || !Number.isInteger(b.credits) || b.credits < 0)) {
      throw new DbError('validation_failed', 'credits must be a non-negative integer or null (unlimited)', { field: 'credits' });
    }
    if (b.reset !== undefined && typeof b.reset !== 'boolean') throw new DbError('validation_failed', 'reset must be a boolean', { field: 'reset' });
    await t.commit({ changes: [{ op: 'catalog', kind: 'credit', id: 'grant', record: { credits: b.credits, reset: b.reset === true, ...(b.reset === true ? { period: newUlid() } : {}) } }], actor: 'operator', route: 'credits' });
    return usage(a.catalog);
  }

  /** `{enabled: boolean}` for an add-on (`vector`, `es`, `ask`). */
  @OperatorOnly()
  @Put('addons/:name')
  @HttpCode(200)
  async addon(@TenantCtx() t: TenantHandle, @ActingUser() a: Acting, @Param('name') name: string, @Body() body: unknown) {
    if (!(ADDONS as readonly string[]).includes(name)) throw new DbError('not_found', `no add-on "${name}" (add-ons: ${ADDONS.join(', ')})`);
    const enabled = (body as { enabled?: unknown } | null)?.enabled;
    if (typeof enabled !== 'boolean') throw new DbError('validation_failed', 'enabled must be a boolean', { field: 'enabled' });
    await t.commit({ changes: [{ op: 'catalog', kind: 'addon', id: name, record: { enabled } }], actor: 'operator', route: 'addons' });
    return usage(a.catalog).addons;
  }
}
