import { createParamDecorator, ExecutionContext, SetMetadata } from '@nestjs/common';
import type { TenantHandle } from '../tenancy/tenant-registry';
import type { Principal } from '../system/system-store';
import type { Acting } from '../security/catalog';

export const PUBLIC_ROUTE = 'mmdb:public';
export const OPERATOR_ONLY = 'mmdb:operator';

/** The route needs no bearer token (/health, /ready, /metrics). */
export const Public = () => SetMetadata(PUBLIC_ROUTE, true);

/** Only the operator token may call the route; a tenant token gets 403 `forbidden`. */
export const OperatorOnly = () => SetMetadata(OPERATOR_ONLY, true);

/** Fields the auth guard sets on the fastify request. */
export interface AuthedRequest {
  principal?: Principal;
  tenantHandle?: TenantHandle;
  /** The database user the request acts as (set by the GrantGuard on tenant routes). */
  acting?: Acting;
}

/** The acting database user of a tenant route (see security/catalog.ts). */
export const ActingUser = createParamDecorator((_: unknown, ctx: ExecutionContext): Acting => {
  const a = ctx.switchToHttp().getRequest<AuthedRequest>().acting;
  if (!a) throw new Error('ActingUser used on a route without a :tenant path parameter');
  return a;
});

/**
 * The authenticated tenant's handle (`{ tenant, store, engine(name), write(fn), commit(req) }`)
 * for a route under `/v1/tenants/:tenant/`.
 */
export const TenantCtx = createParamDecorator((_: unknown, ctx: ExecutionContext): TenantHandle => tenantOf(ctx.switchToHttp().getRequest<AuthedRequest>()));

/** What @TenantCtx gives, read off the request (for a handler that takes the request alone). */
export function tenantOf(req: AuthedRequest): TenantHandle {
  if (!req.tenantHandle) throw new Error('TenantCtx used on a route without a :tenant path parameter');
  return req.tenantHandle;
}

/** The caller's principal `{ tenant, operator }`. */
export const Caller = createParamDecorator((_: unknown, ctx: ExecutionContext): Principal => {
  return ctx.switchToHttp().getRequest<AuthedRequest>().principal!;
});
