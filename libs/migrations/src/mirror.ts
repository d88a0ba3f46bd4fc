/**
 * Dual writes: while a rewrite migration is open (Pending, Backfilling, Paused,
 * ReadyToCutover) its table carries a RowMirror (store.setRowMirror), so every put and delete
 * of the table, whatever surface made it, also writes or deletes the row's new shape in the
 * shadow table in the same frame. The backfill uses the same hook (`mirror` changes), so a
 * copied row is read inside its commit and can never be older than a dual write.
 */
import { DbError, type JsonValue, type Row, type TableManifest } from '@mmdb/core';
import { parseManifest, type RowMirror, type TenantStore } from '@mmdb/storage';
import type { MigrationRecord } from './record';
import { buildManifest, inPlace } from './in-place';

/** The value of a SQL expression over one row of `manifest` (the SQL engine's rowEvaluator), synchronous. */
export type RowEvaluator = (expr: string, row: Row, manifest: TableManifest) => JsonValue;

/**
 * A whole row in the new shape, computed by the owner of the table's format (registered by the
 * app, named by an internal submit: the Elasticsearch surface's typed columns of a document), for
 * values a SQL `using` cannot express. Synchronous: it runs inside commits.
 */
export type RowReshaper = (row: Row, target: TableManifest, source: TableManifest) => Row;

/** How rows get their new shape: the SQL evaluator of `using`, and the registered reshapers. */
export interface Shaping {
  readonly evaluate?: RowEvaluator;
  readonly reshapers?: Readonly<Record<string, RowReshaper>>;
}

let lastTarget: { toml: string; manifest: TableManifest } | null = null;

/** A row of the source table in the new shape: `mapping.from` copies, `mapping.using` evaluated over the old row (or the migration's reshaper). */
export function reshapeRow(r: MigrationRecord, source: TableManifest, values: Row, shaping: Shaping): Row {
  if (r.reshape !== undefined) {
    const fn = shaping.reshapers?.[r.reshape];
    if (!fn) throw new DbError('internal_error', `this store has no row reshaper "${r.reshape}"`);
    if (lastTarget?.toml !== r.target_toml) lastTarget = { toml: r.target_toml, manifest: parseManifest(r.target_toml) };
    return fn(values, lastTarget.manifest, source);
  }
  const evaluate = shaping.evaluate;
  const out: Record<string, JsonValue> = {};
  for (const [to, from] of Object.entries(r.mapping.from)) if (values[from] !== undefined) out[to] = values[from];
  for (const [to, expr] of Object.entries(r.mapping.using)) {
    if (!evaluate) throw new DbError('internal_error', 'this store has no SQL evaluator for `using`');
    out[to] = evaluate(expr, values, source);
  }
  return out;
}

/** Whether a migration's table is dual-written in its state. */
export function mirrored(r: MigrationRecord): boolean {
  return (!!r.shadow || inPlace(r)) && (r.state === 'Pending' || r.state === 'Backfilling' || r.state === 'Paused' || r.state === 'ReadyToCutover');
}

/**
 * Installs (or removes) the mirror of `r` on its table. `refused`: a dual write the new shape
 * refused (the source write committed without it): the migration must fail.
 */
export function installMirror(store: TenantStore, r: MigrationRecord, shaping: Shaping, refused: (pk: JsonValue[], e: DbError) => void): void {
  if (!mirrored(r)) {
    store.setRowMirror(r.schema, undefined);
    return;
  }
  if (inPlace(r)) {
    // Indexes built in place: every write of the table also writes their entries (no row mirrored).
    const source = store.manifest(r.schema)!;
    store.setRowMirror(r.schema, {
      derive: buildManifest(source, parseManifest(r.target_toml), r.in_place!),
      mirror: () => [],
      refused: (ev, e) => refused(ev.pk as JsonValue[], e),
    });
    return;
  }
  const shadow = r.shadow!;
  const mirror: RowMirror = {
    // Same primary key: the store reads the shadow's row ahead with the source's.
    target: shadow,
    mirror(ev, ctx) {
      // Before the submit frame creates the shadow (same group), or after cleanup dropped it: nothing to mirror.
      if (!ctx.manifest(shadow)) return [];
      if (!ev.after) return [{ op: 'delete', schema: shadow, pk: ev.pk }];
      const source = ctx.manifest(ev.schema)!;
      return [{ op: 'put', schema: shadow, row: reshapeRow(r, source, ev.after.values, shaping) }];
    },
    refused: (ev, e) => refused(ev.pk as JsonValue[], e),
  };
  store.setRowMirror(r.schema, mirror);
}
