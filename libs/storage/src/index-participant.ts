/**
 * Secondary indexes as the first CommitParticipant: one I-key per row and index
 * (declared [[indexes]] plus an implicit one per foreign key). A unique index refuses a
 * second row with the same non-null values with `conflict`.
 */
import { DbError, TableManifest } from '@mmdb/core';
import type { CommitParticipant, DeriveContext, KeyWrite, RowChangeEvent, StoredRow } from './api';
import { KEYSPACE, canonicalJson, decodeTuple, keyOf, prefixRange } from './keys';
import { EMPTY, decodeRow, indexKey, maintainedIndexes } from './records';

type Idx = ReturnType<typeof maintainedIndexes>[number];

function valuesOf(idx: Idx, row: StoredRow) {
  return idx.columns.map((c) => row.values[c] ?? null);
}

async function checkUnique(idx: Idx, schema: string, row: StoredRow, ctx: DeriveContext): Promise<void> {
  const vals = valuesOf(idx, row);
  if (vals.some((v) => v === null)) return; // SQL: NULLs never clash
  const r = prefixRange(KEYSPACE.index, [schema, idx.name, ...vals]);
  const hits = await ctx.range({ ...r, limit: 2 });
  const mine = indexKey(schema, idx.name, vals, row.pk);
  if (hits.some(([k]) => !k.equals(mine))) {
    throw new DbError('conflict', `unique index "${idx.name}" on ${schema} already has (${idx.columns.join(', ')}) = ${canonicalJson(vals)}`, {
      index: idx.name,
    });
  }
}

export const indexParticipant: CommitParticipant = {
  name: 'index',

  async deriveRow(ch: RowChangeEvent, ctx: DeriveContext): Promise<KeyWrite[]> {
    const out: KeyWrite[] = [];
    for (const idx of maintainedIndexes(ch.manifest)) {
      const beforeKey = ch.before ? indexKey(ch.schema, idx.name, valuesOf(idx, ch.before), ch.before.pk) : null;
      const afterKey = ch.after ? indexKey(ch.schema, idx.name, valuesOf(idx, ch.after), ch.after.pk) : null;
      if (beforeKey && afterKey && beforeKey.equals(afterKey)) continue;
      if (beforeKey) out.push({ key: beforeKey, value: null });
      if (afterKey) {
        if (idx.unique) await checkUnique(idx, ch.schema, ch.after!, ctx);
        out.push({ key: afterKey, value: EMPTY });
      }
    }
    return out;
  },

  async deriveSchema(m: TableManifest, prev: TableManifest | undefined, ctx: DeriveContext): Promise<KeyWrite[]> {
    if (!prev) return [];
    const out: KeyWrite[] = [];
    const before = new Map(maintainedIndexes(prev).map((i) => [i.name, i]));
    const after = new Map(maintainedIndexes(m).map((i) => [i.name, i]));
    const same = (a: Idx, b: Idx) => a.unique === b.unique && canonicalJson(a.columns as string[]) === canonicalJson(b.columns as string[]);
    for (const [name] of before) {
      if (after.has(name) && same(before.get(name)!, after.get(name)!)) continue;
      for (const [k] of await ctx.range(prefixRange(KEYSPACE.index, [m.id, name]))) out.push({ key: k, value: null });
    }
    const added = [...after.values()].filter((i) => !before.has(i.name) || !same(before.get(i.name)!, i));
    if (added.length) {
      // Backfill from the rows already stored (uniqueness is checked as we go).
      const seen = new Map<string, string>();
      const rowRange = prefixRange(KEYSPACE.row, [m.id]);
      const headLen = keyOf(KEYSPACE.row, [m.id]).length;
      for (const [k, v] of await ctx.range(rowRange)) {
        const row = decodeRow(m.id, decodeTuple(k, headLen), v);
        for (const idx of added) {
          const vals = valuesOf(idx, row);
          if (idx.unique && !vals.some((x) => x === null)) {
            const sig = `${idx.name}\u0000${canonicalJson(vals)}`;
            if (seen.has(sig)) throw new DbError('conflict', `unique index "${idx.name}" cannot be built: (${idx.columns.join(', ')}) = ${canonicalJson(vals)} appears more than once`, { index: idx.name });
            seen.set(sig, '');
          }
          out.push({ key: indexKey(m.id, idx.name, vals, row.pk), value: EMPTY });
        }
      }
    }
    return out;
  },

  dropRanges(m: TableManifest) {
    const r = prefixRange(KEYSPACE.index, [m.id]);
    return [[r.gte, r.lt] as const];
  },
};
