/**
 * The custom change that clears the entries of a section a table no longer (or not yet)
 * declares, a bounded slice per frame: an online migration's dropped index, full-text field or
 * relation after its cutover, or the one it was building in place when it was aborted
 * (libs/migrations "In place"). Each participant names its section and key range.
 */
import { DbError, type JsonValue, type TableManifest } from '@mmdb/core';
import type { CustomChange, DeriveContext, KeyWrite } from './api';
import { keyIdOf } from './records';

export interface ClearSection {
  /** The change type (`clear_index`), and the payload field naming the section (`index`). */
  readonly type: string;
  readonly field: string;
  /** Whether the table declares that section now (then it is refused: 409 conflict). */
  declared(m: TableManifest, name: string): boolean;
  /** The keys of that section under a key id. */
  range(keyId: string, name: string): { gte: Buffer; lt: Buffer };
}

/** Default keys deleted per frame. */
const LIMIT = 2000;

/**
 * `{schema, <field>, limit?}`: deletes up to `limit` keys of the section in key order; answers
 * `{deleted}` (fewer than `limit`: none left).
 */
export async function clearUnused(s: ClearSection, ch: CustomChange, ctx: DeriveContext): Promise<{ writes: KeyWrite[]; result: JsonValue }> {
  const p = ch.payload as Record<string, unknown> | null;
  const name = p?.[s.field];
  if (ch.type !== s.type || !p || typeof p.schema !== 'string' || typeof name !== 'string') {
    throw new DbError('validation_failed', `expected ${s.type} {schema, ${s.field}, limit?}`);
  }
  const m = ctx.manifest(p.schema);
  if (!m) throw new DbError('schema_not_found', `no schema is registered as "${p.schema}"`, { schema: p.schema });
  if (s.declared(m, name)) throw new DbError('conflict', `${s.field} "${name}" of ${m.id} is in use: it cannot be cleared`, { [s.field]: name });
  const limit = typeof p.limit === 'number' && p.limit >= 1 ? Math.floor(p.limit) : LIMIT;
  const keys = await ctx.range({ ...s.range(keyIdOf(m), name), limit });
  return { writes: keys.map(([key]) => ({ key, value: null })), result: { deleted: keys.length } };
}
