/**
 * Our keys, all in keyspace V with the table name first (so a schema drop clears them):
 *   V [table, 'm']         → table spec JSON (the lock: dim, metric, index, params)
 *   V [table, 'e', id]     → entry: u32 dim | float32 × dim | metadata JSON (or empty)
 *   V [table, 'k', i]      → checkpoint chunk i of the table's image
 *   V [null, 'checkpoint'] → {lsn, tables: {name: chunks}} (null sorts before every table name)
 */
import { parseJsonExact, stringifyJson } from '@mmdb/core';
import { decodeKey, keyOf, prefixRange } from '@mmdb/storage';
import type { Metadata } from './validate';

const V = 'V';
export const V_BYTE = V.charCodeAt(0);

export const metaKey = (table: string) => keyOf(V, [table, 'm']);
export const entryKey = (table: string, id: string) => keyOf(V, [table, 'e', id]);
export const chunkKey = (table: string, i: number) => keyOf(V, [table, 'k', i]);
export const CHECKPOINT_KEY = keyOf(V, [null, 'checkpoint']);
export const tableRange = (table: string) => prefixRange(V, [table]);
export const chunkRange = (table: string) => prefixRange(V, [table, 'k']);
export const entryRange = (table: string) => prefixRange(V, [table, 'e']);
/** Every table's keys (strings sort after the null-led checkpoint record). */
export const ALL_TABLES = { gte: keyOf(V, ['']), lt: Buffer.from([V_BYTE + 1]) };

export type ParsedKey = { table: string; kind: 'm' } | { table: string; kind: 'e'; id: string } | { table: string; kind: 'k' } | null;

export function parseKey(key: Buffer): ParsedKey {
  if (key[0] !== V_BYTE) return null;
  const t = decodeKey(key);
  if (typeof t[0] !== 'string') return null;
  if (t[1] === 'm' && t.length === 2) return { table: t[0], kind: 'm' };
  if (t[1] === 'e' && t.length === 3) return { table: t[0], kind: 'e', id: String(t[2]) };
  return { table: t[0], kind: 'k' };
}

export function encodeEntry(embedding: ArrayLike<number>, metadata: Metadata | null): Buffer {
  const meta = metadata ? Buffer.from(stringifyJson(metadata), 'utf8') : Buffer.alloc(0);
  const b = Buffer.allocUnsafe(4 + embedding.length * 4 + meta.length);
  b.writeUInt32LE(embedding.length, 0);
  for (let i = 0; i < embedding.length; i++) b.writeFloatLE(embedding[i], 4 + i * 4);
  meta.copy(b, 4 + embedding.length * 4);
  return b;
}

export function decodeEntry(b: Buffer): { embedding: Float32Array; metadata: Metadata | null } {
  const dim = b.readUInt32LE(0);
  const embedding = new Float32Array(dim);
  for (let i = 0; i < dim; i++) embedding[i] = b.readFloatLE(4 + i * 4);
  const rest = b.subarray(4 + dim * 4);
  return { embedding, metadata: rest.length ? (parseJsonExact(rest.toString('utf8')) as Metadata) : null };
}
