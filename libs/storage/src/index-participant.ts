/**
 * Secondary indexes as the first CommitParticipant: one I-key per row and index
 * (declared [[indexes]] plus an implicit one per foreign key). A unique index refuses a
 * second row with the same non-null values with `conflict`.
 */
import { DbError, TableManifest, type JsonValue } from '@mmdb/core';
import type { CommitParticipant, CustomChange, DeriveContext, KeyWrite, RowChangeEvent, StoredRow } from './api';
import { KEYSPACE, canonicalJson, decodeTuple, keyOf, prefixRange } from './keys';
import { decodeRow, indexEntry, keyIdOf, maintainedIndexes } from './records';
import { clearUnused } from './clear-unused';

type Idx = ReturnType<typeof maintainedIndexes>[number];

function valuesOf(idx: Idx, row: StoredRow) {
  return idx.columns.map((c) => row.values[c] ?? null);
}

/** The row's entry in `idx` is the same before and after (same values, same key): nothing to write, nothing to encode. */
function sameEntry(idx: Idx, before: StoredRow, after: StoredRow): boolean {
  if (before.pk !== after.pk && (before.pk.length !== after.pk.length || before.pk.some((v, i) => !Object.is(v, after.pk[i])))) return false;
  // Object.is: 0 and -0 (distinct keys) are not taken as equal; objects (json columns) fall back to the keys.
  return idx.columns.every((c) => Object.is(before.values[c] ?? null, after.values[c] ?? null));
}

/** Indexes per manifest (manifests are immutable once parsed): one list, not one per row. */
const indexesOf = new WeakMap<TableManifest, Idx[]>();
function indexes(m: TableManifest): Idx[] {
  let l = indexesOf.get(m);
  if (!l) indexesOf.set(m, (l = maintainedIndexes(m)));
  return l;
}

/** A unique entry is keyed by its values: another row's pk under the same key is a clash. */
async function checkUnique(idx: Idx, schema: string, row: StoredRow, entry: { key: Buffer; value: Buffer }, get: (k: Buffer) => Promise<Buffer | undefined>): Promise<void> {
  const vals = valuesOf(idx, row);
  if (vals.some((v) => v === null)) return; // SQL: NULLs never clash
  const holder = await get(entry.key);
  if (holder && !holder.equals(entry.value)) {
    throw new DbError('conflict', `unique index "${idx.name}" on ${schema} already has (${idx.columns.join(', ')}) = ${canonicalJson(vals)}`, {
      index: idx.name,
    });
  }
}

export const indexParticipant: CommitParticipant = {
  name: 'index',

  // Synchronous unless a unique index needs a read: most rows then cost no await at all.
  deriveRow(ch: RowChangeEvent, ctx: DeriveContext): KeyWrite[] | Promise<KeyWrite[]> {
    const out: KeyWrite[] = [];
    const checks: Array<() => Promise<void>> = [];
    const id = keyIdOf(ch.manifest);
    for (const idx of indexes(ch.manifest)) {
      if (ch.before && ch.after && sameEntry(idx, ch.before, ch.after)) continue;
      const before = ch.before ? indexEntry(id, idx, valuesOf(idx, ch.before), ch.before.pk) : null;
      const after = ch.after ? indexEntry(id, idx, valuesOf(idx, ch.after), ch.after.pk) : null;
      if (before && after && before.key.equals(after.key) && before.value.equals(after.value)) continue;
      if (before) out.push({ key: before.key, value: null });
      if (after) {
        // The row's own old entry is deleted first, so it never clashes with itself.
        if (idx.unique) checks.push(() => checkUnique(idx, ch.schema, ch.after!, after, (k) => (before && k.equals(before.key) ? Promise.resolve(undefined) : ctx.get(k))));
        out.push(after);
      }
    }
    if (!checks.length) return out;
    return (async () => {
      for (const c of checks) await c();
      return out;
    })();
  },

  async deriveSchema(m: TableManifest, prev: TableManifest | undefined, ctx: DeriveContext): Promise<KeyWrite[]> {
    if (!prev) return [];
    const id = keyIdOf(m);
    // A cutover moved the table to another table's keys: the entries there are that table's indexes.
    if (keyIdOf(prev) !== id) prev = ctx.manifest(id) ?? prev;
    const out: KeyWrite[] = [];
    const before = new Map(maintainedIndexes(prev).map((i) => [i.name, i]));
    const after = new Map(maintainedIndexes(m).map((i) => [i.name, i]));
    const same = (a: Idx, b: Idx) => a.unique === b.unique && canonicalJson(a.columns as string[]) === canonicalJson(b.columns as string[]);
    for (const [name] of before) {
      if (after.has(name) && same(before.get(name)!, after.get(name)!)) continue;
      for (const [k] of await ctx.range(prefixRange(KEYSPACE.index, [id, name]))) out.push({ key: k, value: null });
    }
    const added = [...after.values()].filter((i) => !before.has(i.name) || !same(before.get(i.name)!, i));
    if (added.length) {
      // Backfill from the rows already stored (uniqueness is checked as we go).
      const seen = new Map<string, string>();
      const rowRange = prefixRange(KEYSPACE.row, [id]);
      const headLen = keyOf(KEYSPACE.row, [id]).length;
      for (const [k, v] of await ctx.range(rowRange)) {
        const row = decodeRow(m.id, decodeTuple(k, headLen), v);
        for (const idx of added) {
          const vals = valuesOf(idx, row);
          if (idx.unique && !vals.some((x) => x === null)) {
            const sig = `${idx.name}\u0000${canonicalJson(vals)}`;
            if (seen.has(sig)) throw new DbError('conflict', `unique index "${idx.name}" cannot be built: (${idx.columns.join(', ')}) = ${canonicalJson(vals)} appears more than once`, { index: idx.name });
            seen.set(sig, '');
          }
          const e = indexEntry(id, idx, vals, row.pk);
          out.push({ key: e.key, value: e.value });
        }
      }
    }
    return out;
  },

  /**
   * `clear_index {schema, index, limit?}`: deletes up to `limit` (default 2,000) entries of an
   * index the table does not maintain (an online migration's dropped index after its cutover, or
   * the index it was building when it was aborted), in key order; answers `{deleted}` (fewer
   * than `limit`: none left). An index the table maintains is refused.
   */
  deriveCustom(ch: CustomChange, ctx: DeriveContext): Promise<{ writes: KeyWrite[]; result: JsonValue }> {
    return clearUnused(
      { type: 'clear_index', field: 'index', declared: (m, n) => maintainedIndexes(m).some((i) => i.name === n), range: (id, n) => prefixRange(KEYSPACE.index, [id, n]) },
      ch,
      ctx,
    );
  },

  dropRanges(m: TableManifest) {
    const r = prefixRange(KEYSPACE.index, [keyIdOf(m)]);
    return [[r.gte, r.lt] as const];
  },
};
