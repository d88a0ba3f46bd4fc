/** Row records and the key layouts of the R, I, L, M and K keyspaces. */
import { parseJsonExact, stringifyJson, type JsonValue, type Row, type TableManifest } from '@mmdb/core';
import type { CommittedFrame, KeyWrite, PkTuple, StoredRow } from './api';
import { KEYSPACE, keyOf, decodeTuple, encodeTuple } from './keys';
import { writeU64BE } from './frame';

/** The id a table's row and index keys are under: its own, unless a migration's cutover moved them (`physical`). */
export function keyIdOf(m: TableManifest): string {
  return m.physical ?? m.id;
}

/** `rowKey(schema, …)` and the other key builders take this id (keyIdOf), not the schema id. */
export function rowKey(schema: string, pk: readonly JsonValue[]): Buffer {
  return keyOf(KEYSPACE.row, [schema, ...pk]);
}

export function encodeRow(version: number, lsn: number, values: Row): Buffer {
  return encodeRowJson(version, lsn, stringifyJson(values));
}

/** encodeRow with the values already serialized (stringifyJson(values)). */
export function encodeRowJson(version: number, lsn: number, valuesJson: string): Buffer {
  return Buffer.from(rowRecordText(version, lsn, valuesJson), 'utf8');
}

/** A row record's text (encodeRowJson is its UTF-8): what the store's read cache holds. */
export function rowRecordText(version: number, lsn: number, valuesJson: string): string {
  return `[${version},${lsn},${valuesJson}]`;
}

export function decodeRow(schema: string, pk: PkTuple, b: Uint8Array): StoredRow {
  return decodeRowText(schema, pk, Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8'));
}

/** decodeRow of the record as text (as the store's read cache holds it). */
export function decodeRowText(schema: string, pk: PkTuple, text: string): StoredRow {
  const [version, lsn, values] = parseJsonExact(text) as [number, number, Row];
  return { schema, pk, version, lsn, values };
}

/**
 * A row record's version, LSN and values JSON, split off the record text without parsing the
 * values: encodeRow writes `[version,lsn,{...}]` with stringifyJson, so the values start after
 * the second comma and end before the closing bracket.
 */
export function splitRowRecord(text: string): { version: number; lsn: number; json: string } {
  const a = text.indexOf(',');
  const b = text.indexOf(',', a + 1);
  return { version: Number(text.slice(1, a)), lsn: Number(text.slice(a + 1, b)), json: text.slice(b + 1, text.length - 1) };
}

export function pkOf(manifest: TableManifest, values: Row): PkTuple {
  return manifest.primary_key.map((c) => values[c] ?? null);
}

/** Index entry: I ‖ (schema, index, ...values, ...pk) → empty. */
export function indexKey(schema: string, index: string, values: readonly JsonValue[], pk: readonly JsonValue[]): Buffer {
  return keyOf(KEYSPACE.index, [schema, index, ...values, ...pk]);
}

export const EMPTY = Buffer.alloc(0);

/**
 * The I-key entry of one row in one index. A unique index with all values non-null
 * keys by the values alone and stores the pk tuple as the value, so a uniqueness check
 * is a point read; otherwise the key is (values, pk) with an empty value, so equal
 * values (and NULLs in unique indexes) sit side by side.
 */
export function indexEntry(schema: string, idx: { name: string; unique: boolean }, values: readonly JsonValue[], pk: readonly JsonValue[]): { key: Buffer; value: Buffer } {
  if (idx.unique && values.every((v) => v !== null)) return { key: keyOf(KEYSPACE.index, [schema, idx.name, ...values]), value: encodeTuple(pk) };
  return { key: indexKey(schema, idx.name, values, pk), value: EMPTY };
}

/** The pk tuple an index entry points at (see indexEntry). */
export function pkOfIndexEntry(key: Uint8Array, value: Uint8Array, headLength: number, columns: number): PkTuple {
  const t = decodeTuple(key, headLength);
  return t.length > columns ? t.slice(columns) : decodeTuple(value);
}

/** Name of the implicit index that backs a foreign key's restrict check. */
export function fkIndexName(fkName: string): string {
  return `fk:${fkName}`;
}

/** Every index the store maintains for a manifest: declared ones plus one per foreign key. */
export function maintainedIndexes(m: TableManifest): Array<{ name: string; columns: readonly string[]; unique: boolean }> {
  return [...m.indexes, ...m.foreign_keys.map((fk) => ({ name: fkIndexName(fk.name), columns: fk.columns, unique: false }))];
}

export function logKey(lsn: number): Buffer {
  const b = Buffer.allocUnsafe(9);
  b[0] = KEYSPACE.log.charCodeAt(0);
  writeU64BE(b, lsn, 1);
  return b;
}

export const LOG_START = logKey(0);
export const LOG_END = Buffer.from([KEYSPACE.log.charCodeAt(0) + 1]);

export function metaKey(...parts: JsonValue[]): Buffer {
  return keyOf(KEYSPACE.meta, parts);
}

export function idempotencyKey(key: string): Buffer {
  return keyOf(KEYSPACE.idempotency, [key]);
}

export function json(v: unknown): Buffer {
  return Buffer.from(stringifyJson(v), 'utf8');
}

export function parseJson<T>(b: Uint8Array): T {
  return parseJsonExact(Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8')) as T;
}

/**
 * Every key write a frame stands for: the row keys implied by its put/delete changes,
 * then the derived writes it carries. This is what a follower applies.
 */
export function frameKeyWrites(frame: CommittedFrame, keyId: (schema: string) => string = (s) => s): KeyWrite[] {
  const out: KeyWrite[] = [];
  for (const c of frame.changes) {
    if (c.op === 'put') out.push({ key: rowKey(keyId(c.schema), c.pk), value: encodeRow(c.version, frame.lsn, c.values) });
    else if (c.op === 'delete') out.push({ key: rowKey(keyId(c.schema), c.pk), value: null });
  }
  return out.concat(frame.writes);
}
