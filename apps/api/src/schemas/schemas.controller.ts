import { Controller, Delete, Get, Header, HttpCode, Inject, Param, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DbError, stringifyJson, type JsonValue, TableManifest } from '@mmdb/core';
import { parseManifest } from '@mmdb/storage';
import type { MigrationsEngine } from '../migrations/migrations.module';
import { actorOf } from '../migrations/migrations.controller';
import type { ChangeResult, StoredResponse } from '@mmdb/storage';
import { APP_CONFIG, AppConfig } from '../config';
import { Accepts } from '../http/body';
import { ActingUser, OperatorOnly, TenantCtx } from '../http/decorators';
import type { Acting } from '../security/catalog';
import { Requires } from '../security/security.service';
import type { TenantHandle } from '../tenancy/tenant-registry';
import { idempotencyFor } from '../rows/idempotency';

/** Spec §4.2: TOML manifests in and out as text/plain. */
@Controller('v1/tenants/:tenant/schemas')
export class SchemasController {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  @Get()
  list(@TenantCtx() t: TenantHandle, @ActingUser() a: Acting): string[] {
    // only the schemas the acting user may read (a migration's shadow is no schema of theirs)
    return t.store.tables().map((m) => m.id).filter((id) => a.can(id, 'read'));
  }

  @Post()
  @HttpCode(200)
  @Accepts('text')
  async register(@TenantCtx() t: TenantHandle, @ActingUser() a: Acting, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply) {
    if (typeof req.body !== 'string') throw new DbError('invalid_body', 'a schema is a TOML manifest sent as Content-Type: text/plain (or application/toml)');
    if (!a.isOwner) a.require(parseManifest(req.body).id, 'manage');
    const render = (res: readonly ChangeResult[]): StoredResponse => {
      const r = res[0] as Extract<ChangeResult, { op: 'schema_put' }>;
      return { status: 200, body: { id: r.schema, tenant: t.tenant, created: r.created } };
    };
    const migrated = await this.migrateIfChanged(t, req);
    if (migrated) return migrated;
    return this.run(t, req, reply, [{ op: 'schema_put', toml: req.body }], render);
  }

  /**
   * A changed manifest of a registered schema runs as an online migration with auto-cutover,
   * answered once it completes (spec 4.2 "registers or updates"; apps/api/README.md): the one
   * way derived state (indexes, postings, vectors, edges) follows a changed manifest, and it
   * leaves a migration object and audit entries even when no row is rewritten. A new schema,
   * or the same manifest again, is one schema frame.
   */
  private async migrateIfChanged(t: TenantHandle, req: FastifyRequest): Promise<Record<string, unknown> | null> {
    const toml = req.body as string;
    let target: TableManifest;
    try {
      target = parseManifest(toml);
    } catch {
      return null; // the schema frame reports the manifest's error
    }
    const id = target.id;
    const current = t.store.manifest(id);
    const engine = t.engine<MigrationsEngine>('migrations');
    // `physical` (the keys a past migration's cutover moved the table to) is not part of the manifest as sent.
    const { physical: _keys, ...registered } = current ?? ({} as TableManifest);
    if (!current || stringifyJson(registered as unknown as JsonValue) === stringifyJson(target as unknown as JsonValue) || !engine?.migrations) return null;
    const m = await engine.runToCompletion({ schema: id, manifest: toml }, actorOf(req));
    const body = { id, tenant: t.tenant, created: false, migration: m.id };
    // The Idempotency-Key answer rides in a frame of its own once the migration completed (the
    // manifest as it now is, a no-op): a replay then finds the manifest unchanged and gets it.
    const idempotency = idempotencyFor(req, this.config.idempotencyTtlMs, () => ({ status: 200, body }));
    const now = t.store.schemaToml(id);
    if (idempotency && now !== undefined) await t.commit({ changes: [{ op: 'schema_put', toml: now }], idempotency });
    return body;
  }

  /** Drops every schema (operator only), referencing schemas before the ones they reference. */
  @OperatorOnly()
  @Delete()
  async dropAll(@TenantCtx() t: TenantHandle, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply) {
    const order = dropOrder(t.store.manifests());
    const render = (res: readonly ChangeResult[]): StoredResponse => {
      const ids = res.filter((r) => r.op === 'schema_drop' && r.dropped).map((r) => (r as { schema: string }).schema);
      return { status: 200, body: { deleted: ids.length, ids } };
    };
    if (order.length === 0) return render([]).body;
    return this.run(t, req, reply, order.map((schema) => ({ op: 'schema_drop', schema })), render);
  }

  @Get(':id')
  @Requires('id', 'read')
  @Header('content-type', 'text/plain; charset=utf-8')
  get(@TenantCtx() t: TenantHandle, @Param('id') id: string): string {
    const toml = t.store.table(id) ? t.store.schemaToml(id) : undefined;
    if (toml === undefined) throw new DbError('schema_not_found', `no schema is registered as "${id}"`, { schema: id });
    return toml;
  }

  /** Drops one schema with its rows and every derived entry: 204, or 404 when absent. */
  @Delete(':id')
  @Requires('id', 'manage')
  async drop(@TenantCtx() t: TenantHandle, @Param('id') id: string, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply) {
    if (!t.store.table(id)) throw new DbError('schema_not_found', `no schema is registered as "${id}"`, { schema: id });
    const render = (res: readonly ChangeResult[]): StoredResponse => {
      const r = res[0] as Extract<ChangeResult, { op: 'schema_drop' }>;
      return r.dropped
        ? { status: 204, body: null }
        : { status: 404, body: { error: 'schema_not_found', message: `no schema is registered as "${id}"`, request_id: String(req.id), retry: false } };
    };
    const out = await this.run(t, req, reply, [{ op: 'schema_drop', schema: id }], render);
    return reply.statusCode === 204 ? undefined : out;
  }

  private async run(t: TenantHandle, req: FastifyRequest, reply: FastifyReply, changes: any[], render: (r: readonly ChangeResult[]) => StoredResponse) {
    const idempotency = idempotencyFor(req, this.config.idempotencyTtlMs, render);
    const res = await t.commit({ changes, idempotency });
    const s = res.replayed ?? render(res.results);
    if (res.replayed) reply.header('x-db-idempotent-replay', 'true');
    reply.status(s.status);
    for (const [k, v] of Object.entries(s.headers ?? {})) reply.header(k, v);
    return s.body;
  }
}

/** Schemas in an order where each comes before the schemas its foreign keys reference. */
function dropOrder(ms: TableManifest[]): string[] {
  const left = new Map(ms.map((m) => [m.id, m]));
  const out: string[] = [];
  while (left.size) {
    const free = [...left.values()].filter((m) => ![...left.values()].some((o) => o.id !== m.id && o.foreign_keys.some((f) => f.references === m.id)));
    const next = free.length ? free : [...left.values()]; // a cycle: let the store say why
    for (const m of next) {
      out.push(m.id);
      left.delete(m.id);
    }
  }
  return out;
}
