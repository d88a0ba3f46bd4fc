/**
 * Where the fts checkpoint lives and how it is read back. Outside every table's range (a
 * null-led key sorts before every table name), so schema drops and `verify` leave it alone:
 *
 *   F [null, 'checkpoint']           → JSON CheckpointRecord (format `v`, the LSN it covers, its fields)
 *   F [null, 'k', table, field, i]   → chunk i of that field's image (image.ts)
 *
 * The record and every chunk it names are written in one synced batch (StoreReader.
 * writeCheckpoint), so a crash mid-checkpoint leaves the previous checkpoint whole. A record
 * of another format, a missing chunk, a checksum mismatch or an image that does not decode
 * makes `loadCheckpoint` answer a reason instead, and the participant rebuilds from the keys.
 */
import { crc32 } from 'node:zlib';
import type { Snapshot } from '@mmdb/storage';
import { keyOf } from '@mmdb/storage';
import { SPACE } from './codec';
import type { FieldIndex } from './field-index';
import { decodeFieldImage } from './image';

export const CHECKPOINT_FORMAT = 1;
export const CHECKPOINT_KEY = keyOf(SPACE, [null, 'checkpoint']);
export const chunkKey = (table: string, field: string, i: number): Buffer => keyOf(SPACE, [null, 'k', table, field, i]);
/** Every chunk of every image. */
export const IMAGE_RANGE = { gte: keyOf(SPACE, [null, 'k']), lt: Buffer.concat([keyOf(SPACE, [null, 'k']), Buffer.from([0xff])]) };
/** Every table's keys (strings sort after the null-led checkpoint keys). */
export const ALL_TABLES = { gte: keyOf(SPACE, ['']), lt: Buffer.from([SPACE.charCodeAt(0) + 1]) };

export interface ImagedField {
  readonly table: string;
  readonly field: string;
  readonly chunks: number;
  readonly bytes: number;
  readonly crc: number;
}

export interface CheckpointRecord<S> {
  readonly v: number;
  readonly lsn: number;
  readonly fields: readonly ImagedField[];
  /** Standalone fields' settings (their `c` keys), so open needs no scan of the keyspace. */
  readonly standalone: ReadonlyArray<readonly [string, string, S]>;
}

export type Loaded<S> =
  | { readonly ok: true; readonly record: CheckpointRecord<S>; readonly fields: ReadonlyArray<readonly [ImagedField, FieldIndex]>; readonly bytes: number }
  | { readonly ok: false; readonly reason: string };

export function crcOf(chunks: readonly Buffer[]): number {
  let c = 0;
  for (const b of chunks) c = crc32(b, c);
  return c;
}

/** Reads the checkpoint from a snapshot; `reason` says why there is none to use. */
export async function loadCheckpoint<S>(snap: Snapshot): Promise<Loaded<S>> {
  const raw = await snap.rawGet(CHECKPOINT_KEY);
  if (!raw) return { ok: false, reason: 'none' };
  let record: CheckpointRecord<S>;
  try {
    record = JSON.parse(raw.toString('utf8')) as CheckpointRecord<S>;
  } catch {
    return { ok: false, reason: 'unreadable record' };
  }
  if (record.v !== CHECKPOINT_FORMAT) return { ok: false, reason: `format ${String(record.v)}` };
  const fields: Array<readonly [ImagedField, FieldIndex]> = [];
  let bytes = 0;
  for (const f of record.fields) {
    const keys: Buffer[] = [];
    for (let i = 0; i < f.chunks; i++) keys.push(chunkKey(f.table, f.field, i));
    const chunks = await snap.rawGetMany(keys);
    if (chunks.some((c) => c === undefined)) return { ok: false, reason: `missing chunk of ${f.table}/${f.field}` };
    const parts = chunks as Buffer[];
    if (crcOf(parts) !== f.crc) return { ok: false, reason: `checksum mismatch in ${f.table}/${f.field}` };
    try {
      fields.push([f, decodeFieldImage(parts)]); // read in place, not concatenated
    } catch (e) {
      return { ok: false, reason: `${f.table}/${f.field}: ${e instanceof Error ? e.message : String(e)}` };
    }
    bytes += f.bytes;
  }
  return { ok: true, record, fields, bytes };
}

/** Keys of every stored chunk (to delete the leftovers of a checkpoint that could not be used). */
export async function allChunkKeys(snap: Snapshot): Promise<Buffer[]> {
  const out: Buffer[] = [];
  for await (const batch of snap.rawRange({ ...IMAGE_RANGE, batchSize: 16 })) for (const [k] of batch) out.push(k);
  return out;
}
