/**
 * The v2 change ops that are not rows: a tenant's catalogue entries (`catalog`) and the
 * logged steps of a migration (`migration`). Each becomes one key write under M, carried in
 * the frame like any other, so a follower or a copy of the log holds them.
 */
import { DbError, type JsonValue } from '@mmdb/core';
import { CATALOG_KINDS, MIGRATION_STEPS } from './api';
import type { CatalogChange, ChangeResult, LoggedChange, MigrationChange, MigrationStep } from './api';
import { canonicalJson } from './keys';
import type { RequestContext } from './context';
import { json, metaKey, parseJson } from './records';

export interface Prepared {
  readonly logged: LoggedChange;
  readonly result: ChangeResult;
}

/** `M ‖ ("catalog", kind, id)` ← the record (null removes it). */
export async function catalogChange(ctx: RequestContext, ch: CatalogChange): Promise<Prepared> {
  if (!CATALOG_KINDS.includes(ch.kind)) throw new DbError('validation_failed', `unknown catalogue kind "${String(ch.kind)}" (${CATALOG_KINDS.join(', ')})`);
  if (typeof ch.id !== 'string' || ch.id === '') throw new DbError('validation_failed', 'a catalogue entry needs a non-empty string id');
  if (ch.record === undefined) throw new DbError('validation_failed', 'a catalogue change needs a record (null removes the entry)');
  const key = metaKey('catalog', ch.kind, ch.id);
  const existed = (await ctx.get(key)) !== undefined;
  ctx.put(key, ch.record === null ? null : json(ch.record));
  return { logged: { op: 'catalog', kind: ch.kind, id: ch.id, record: ch.record }, result: { op: 'catalog', kind: ch.kind, id: ch.id, existed } };
}

/** `M ‖ ("migration", id)` ← the step with its LSN (the migration's last step). */
export async function migrationChange(ctx: RequestContext, ch: MigrationChange): Promise<Prepared> {
  if (typeof ch.migration !== 'string' || ch.migration === '') throw new DbError('validation_failed', 'a migration step needs a non-empty migration id');
  if (!MIGRATION_STEPS.includes(ch.step)) throw new DbError('validation_failed', `unknown migration step "${String(ch.step)}" (${MIGRATION_STEPS.join(', ')})`);
  if (ch.expect_cursor !== undefined) {
    const prior = await ctx.get(metaKey('migration', ch.migration));
    const last = prior ? parseJson<{ step: MigrationStep; cursor?: JsonValue }>(prior) : undefined;
    const cursor = last?.step === 'backfill' ? (last.cursor ?? null) : null;
    if (canonicalJson(cursor) !== canonicalJson(ch.expect_cursor)) {
      throw new DbError('conflict', `migration ${ch.migration}: its last step is not at the expected cursor (a frame before this one was not written)`, { migration: ch.migration, cursor, expect_cursor: ch.expect_cursor, step: last?.step ?? null });
    }
  }
  const step: LoggedChange = {
    op: 'migration',
    migration: ch.migration,
    step: ch.step,
    ...(ch.cursor !== undefined ? { cursor: ch.cursor } : {}),
    ...(ch.state !== undefined ? { state: ch.state } : {}),
  };
  ctx.put(metaKey('migration', ch.migration), json({ ...step, lsn: ctx.lsn }));
  return { logged: step, result: { op: 'migration', migration: ch.migration, step: ch.step } };
}
