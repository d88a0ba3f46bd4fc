/**
 * A stored document in the shape of a changed index (its mapping's typed and text columns), for
 * an online migration's row copy: `PUT _mapping` over documents that hold a new field runs as a
 * libs/migrations migration whose registered reshaper is this (apps/api wires it), so the dual
 * writes and the backfill compute each row's columns by Elasticsearch's rules, as a write would.
 */
import { DbError, type JsonValue } from '@mmdb/core';
import { parseMeta, type IndexMeta } from './indices';
import { toDocRow } from './state';
import { toRow } from './writes';

let last: { description: string; meta: IndexMeta } | null = null;

/** `row` (a stored document of any earlier mapping) as the index `id` with manifest description `description` stores it. */
export function esRowFor(row: Record<string, JsonValue>, id: string, description: string | undefined): Record<string, JsonValue> {
  let meta = last && last.description === description ? last.meta : undefined;
  if (!meta) {
    meta = parseMeta({ id, description, columns: [], primaryKey: [], fulltext: [], fulltextAllWords: [] });
    if (!meta || description === undefined) throw new DbError('validation_failed', `${id} is not an Elasticsearch index: its rows have no document shape`);
    last = { description, meta };
  }
  return toRow(toDocRow(row), meta) as Record<string, JsonValue>;
}
