import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Put, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DbError, type JsonValue } from '@mmdb/core';
import { ActingUser, TenantCtx } from '../http/decorators';
import { SystemStore } from '../system/system-store';
import { parseIssue } from '../system/token-params';
import { replayToken, tokenIdempotency } from '../system/token-replay';
import { APP_CONFIG, type AppConfig } from '../config';
import type { TenantHandle } from '../tenancy/tenant-registry';
import { Acting, MASK_KINDS, OWNER, parseUser, USER_NAME, userChange, type ColumnMask, type PolicyRecord } from './catalog';

function parseMask(v: unknown): ColumnMask {
  const m = (v ?? {}) as Record<string, unknown>;
  if (typeof m.column !== 'string' || !m.column) throw new DbError('validation_failed', 'mask.column must name a column', { field: 'mask.column' });
  if (!(MASK_KINDS as readonly unknown[]).includes(m.kind)) throw new DbError('validation_failed', `mask.kind must be one of ${MASK_KINDS.join(', ')}`, { field: 'mask.kind' });
  if (m.kind === 'partial' && m.n !== undefined && (!Number.isInteger(m.n) || (m.n as number) < 1 || (m.n as number) > 64)) throw new DbError('validation_failed', 'mask.n must be an integer 1..64', { field: 'mask.n' });
  if (m.kind === 'expr' && typeof m.expr !== 'string') throw new DbError('validation_failed', 'mask.expr must be SQL text', { field: 'mask.expr' });
  return { column: m.column, kind: m.kind as ColumnMask['kind'], ...(m.kind === 'partial' ? { n: (m.n as number) ?? 4 } : {}), ...(m.kind === 'expr' ? { expr: m.expr as string } : {}) };
}

function ownerOnly(a: Acting): void {
  if (!a.isOwner) throw new DbError('forbidden', `user ${a.name} may not manage users or policies (owner only)`);
}

function userName(name: string): string {
  if (!USER_NAME.test(name) || name === OWNER) throw new DbError('validation_failed', `user name must match ${USER_NAME.source} and not be "${OWNER}"`, { field: 'name' });
  return name;
}

/**
 * Database users, their grants and tokens, and row-level security policies (our design for
 * spec §5.9; see apps/api/README.md "Users and grants"). Every change is a catalogue change
 * committed to the tenant's log (actor `user:<acting>`, route `security`): followers enforce
 * it, the log is its audit trail, and it takes effect on the next request.
 */
@Controller('v1/tenants/:tenant')
export class UsersController {
  constructor(
    private readonly system: SystemStore,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  private commit(t: TenantHandle, a: Acting, changes: Parameters<TenantHandle['commit']>[0]['changes']) {
    return t.commit({ changes, actor: `user:${a.name}`, route: 'security' });
  }

  /** `[{name, grants, attributes, manage_tokens, created}]` (owner and token managers). */
  @Get('users')
  list(@ActingUser() a: Acting) {
    if (!a.manageTokens) throw new DbError('forbidden', `user ${a.name} may not list users`);
    return [...a.catalog.users].map(([name, r]) => ({ name, ...r }));
  }

  /** Creates or replaces a user: `{grants?: {schema: [read|insert|update|delete|manage]}, attributes?, manage_tokens?}`. */
  @Put('users/:name')
  @HttpCode(200)
  async put(@TenantCtx() t: TenantHandle, @ActingUser() a: Acting, @Param('name') name: string, @Body() body: unknown) {
    ownerOnly(a);
    const rec = parseUser(body, Date.now(), undefined);
    const prev = a.catalog.user(userName(name));
    const out = { ...rec, created: prev?.created ?? rec.created };
    await this.commit(t, a, [userChange(name, out)]);
    return { name, ...out };
  }

  /** Removes a user: its tokens stop reaching any schema at once (they act as a user with no grant). */
  @Delete('users/:name')
  async remove(@TenantCtx() t: TenantHandle, @ActingUser() a: Acting, @Param('name') name: string) {
    ownerOnly(a);
    if (!a.catalog.user(name)) return { deleted: false };
    await this.commit(t, a, [userChange(name, null)]);
    return { deleted: true };
  }

  /** Issues a token acting as the user: the caller must manage tokens and hold every grant the user has. */
  @Post('users/:name/tokens')
  @HttpCode(201)
  async issue(@ActingUser() a: Acting, @Param('tenant') tenant: string, @Param('name') name: string, @Body() body: unknown, @TenantCtx() t: TenantHandle, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply) {
    const target = name === OWNER ? null : a.catalog.user(name);
    if (name !== OWNER && !target) throw new DbError('not_found', `no user ${name}`);
    if (!a.manageTokens || !a.covers(target ?? null)) throw new DbError('forbidden', `user ${a.name} may not issue a token for ${name}`);
    const ttl = parseIssue(body).ttlSeconds;
    // Idempotency-Key: as on POST /tokens (token-replay.ts)
    const idem = await tokenIdempotency(t.store, req, this.config.idempotencyTtlMs, 201);
    if (idem?.replayed) return replayToken(reply, idem, req);
    const r = await this.system.issueToken(tenant, ttl, name, idem);
    return idem?.replayed ? replayToken(reply, idem, req) : r;
  }

  /** `[{id, schema, users, using?, check?}]`. */
  @Get('policies')
  policies(@ActingUser() a: Acting) {
    ownerOnly(a);
    return [...a.catalog.policies].map(([id, p]) => ({ id, ...p }));
  }

  /** Creates or replaces a row-level security policy `{schema, users: [name|*], using?, check?}` (SQL boolean expressions). */
  @Put('policies/:id')
  @HttpCode(200)
  async putPolicy(@TenantCtx() t: TenantHandle, @ActingUser() a: Acting, @Param('id') id: string, @Body() body: unknown) {
    ownerOnly(a);
    const b = (body ?? {}) as Record<string, unknown>;
    const users = b.users ?? ['*'];
    if (typeof b.schema !== 'string') throw new DbError('validation_failed', 'schema must be a string', { field: 'schema' });
    if (!Array.isArray(users) || users.some((u) => typeof u !== 'string')) throw new DbError('validation_failed', 'users must be an array of names', { field: 'users' });
    for (const f of ['using', 'check'] as const) if (b[f] !== undefined && typeof b[f] !== 'string') throw new DbError('validation_failed', `${f} must be SQL text`, { field: f });
    const mask = b.mask === undefined ? undefined : parseMask(b.mask);
    if (b.using === undefined && b.check === undefined && !mask) throw new DbError('validation_failed', 'a policy needs using, check or mask', { field: 'using' });
    const rec: PolicyRecord = { schema: b.schema, users: users as string[], ...(b.using !== undefined ? { using: b.using as string } : {}), ...(b.check !== undefined ? { check: b.check as string } : {}), ...(mask ? { mask } : {}) };
    await this.commit(t, a, [{ op: 'catalog', kind: 'policy', id, record: rec as unknown as JsonValue }]);
    return { id, ...rec };
  }

  @Delete('policies/:id')
  async removePolicy(@TenantCtx() t: TenantHandle, @ActingUser() a: Acting, @Param('id') id: string) {
    ownerOnly(a);
    if (!a.catalog.policies.has(id)) return { deleted: false };
    await this.commit(t, a, [{ op: 'catalog', kind: 'policy', id, record: null }]);
    return { deleted: true };
  }
}
