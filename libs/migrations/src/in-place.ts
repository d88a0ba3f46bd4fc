/**
 * Derived-only changes built in place: when a migration changes nothing but the table's
 * secondary indexes (added ones, unique or not; dropped ones, foreign keys' implicit indexes
 * included), full-text fields and relations (added or dropped), no row is copied. The new
 * entries (index entries, postings, edges) are written under the table's own keys by the backfill frames and by every
 * write of the table (storage's `RowMirror.derive`: dual writes of the entries alone), the
 * cutover frame registers the target manifest as `prebuilt` (nothing derived under the fence),
 * and the dropped ones are cleared after it in background frames (`clear_index`, fts's
 * `clear_field`, graph's `clear_relation`); an abort or a failure clears what was built instead.
 */
import type { FullTextDef, IndexDef, TableManifest } from '@mmdb/core';
import { fkIndexName } from '@mmdb/storage';
import { derivedChanges } from './ops';
import type { MigrationRecord } from './record';

/** The index names and full-text fields an in-place migration adds and drops. */
export interface IndexDelta {
  readonly added: readonly string[];
  readonly dropped: readonly string[];
  readonly fields_added?: readonly string[];
  readonly fields_dropped?: readonly string[];
  readonly relations_added?: readonly string[];
  readonly relations_dropped?: readonly string[];
}

/**
 * The delta when going from `source` to `target` changes derived entries through indexes alone
 * and can be built in place; null otherwise (other derived sections change, a foreign key is
 * added or changed, or an index keeps its name with another definition: its entries would mix).
 */
export function indexDelta(source: TableManifest, target: TableManifest): IndexDelta | null {
  if (derivedChanges({ ...source, indexes: target.indexes, foreign_keys: target.foreign_keys, fulltext: target.fulltext, relations: relationsAs(target, source.id) }, target)) return null;
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  // A field analyzed another way keeps its keys (field, term, doc): old and new postings would mix.
  const analysis = (d: FullTextDef) => [d.analyzer, d.stopwords ?? null];
  const oldFields = new Map(source.fulltext.map((d) => [d.field, d]));
  const newFields = new Map(target.fulltext.map((d) => [d.field, d]));
  for (const [f, d] of newFields) if (oldFields.has(f) && !same(analysis(oldFields.get(f)!), analysis(d))) return null;
  // A relation redefined under its own name keeps its edge keys (relation, src, dst): old and new would mix.
  const rel = (m: TableManifest) => new Map(relationsAs(m, '').map((r) => [r.name, r]));
  const oldRels = rel(source);
  const newRels = rel(target);
  for (const [n, r] of newRels) if (oldRels.has(n) && !same(oldRels.get(n), r)) return null;
  const relationsAdded = [...newRels.keys()].filter((n) => !oldRels.has(n));
  const relationsDropped = [...oldRels.keys()].filter((n) => !newRels.has(n));
  const fieldsAdded = [...newFields.keys()].filter((f) => !oldFields.has(f));
  const fieldsDropped = [...oldFields.keys()].filter((f) => !newFields.has(f));
  const fks = new Map(source.foreign_keys.map((f) => [f.name, f]));
  for (const f of target.foreign_keys) if (!fks.has(f.name) || !same(fks.get(f.name)!.columns, f.columns)) return null;
  const before = new Map(source.indexes.map((i) => [i.name, i]));
  const after = new Map(target.indexes.map((i) => [i.name, i]));
  const def = (i: IndexDef) => [i.columns, !!i.unique];
  for (const [name, i] of after) if (before.has(name) && !same(def(before.get(name)!), def(i))) return null;
  const added = [...after.keys()].filter((n) => !before.has(n));
  const dropped = [
    ...[...before.keys()].filter((n) => !after.has(n)),
    ...source.foreign_keys.filter((f) => !target.foreign_keys.some((t) => t.name === f.name)).map((f) => fkIndexName(f.name)),
  ];
  if (![added, dropped, fieldsAdded, fieldsDropped, relationsAdded, relationsDropped].some((x) => x.length)) return null;
  return {
    added, dropped,
    ...(fieldsAdded.length || fieldsDropped.length ? { fields_added: fieldsAdded, fields_dropped: fieldsDropped } : {}),
    ...(relationsAdded.length || relationsDropped.length ? { relations_added: relationsAdded, relations_dropped: relationsDropped } : {}),
  };
}

/** A manifest's relations with its own id (as source or target) written as `self`. */
function relationsAs(m: TableManifest, self: string): TableManifest['relations'] {
  return m.relations.map((r) => ({ ...r, source: r.source === m.id ? self : r.source, target: r.target === m.id ? self : r.target }));
}

/** The manifest whose entries an in-place migration builds: the table with the added indexes, fields and relations only. */
export function buildManifest(source: TableManifest, target: TableManifest, delta: IndexDelta): TableManifest {
  const { vector: _vector, ...rest } = source;
  return {
    ...rest,
    indexes: target.indexes.filter((i) => delta.added.includes(i.name)),
    fulltext: target.fulltext.filter((d) => (delta.fields_added ?? []).includes(d.field)),
    relations: target.relations.filter((r) => (delta.relations_added ?? []).includes(r.name)),
    foreign_keys: [], checks: [],
  };
}

/** Whether a migration builds its derived entries in place (no shadow table). */
export function inPlace(r: MigrationRecord): boolean {
  return r.plan === 'in_place' && !!r.in_place;
}
