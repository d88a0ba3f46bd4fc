/**
 * The graph's checkpoint: an image of each built relation's adjacency (compacted: node tables,
 * CSR base, weights, owners, props), so a restart need not scan every edge key again.
 *
 *   E [null, 'checkpoint']        → JSON {v: 1, lsn, rels: [{schema, rel, chunks, crc}]}
 *   E [null, 'k', schema, rel, i] → chunk i (≤ 8 MB) of: u32 header length, header JSON
 *                                   ({edges, baseNodes, baseEdges, propNames, arrays: [[kind, length]]}),
 *                                   then each array's bytes (little-endian, in that order)
 *
 * Null-led keys sort before every schema: no schema's edge range holds them, so drops and
 * `verify` leave them alone. Record and chunks are written in one synced batch; a missing chunk,
 * a CRC mismatch or another format makes `loadGraphImages` answer null, and the relations are
 * built from their edge keys on first use, as without a checkpoint.
 */
import { crc32 } from 'node:zlib';
import { keyOf, type Snapshot } from '@mmdb/storage';
import { Adjacency } from './adjacency';
import { EDGE_SPACE } from './edges';

export const GRAPH_IMAGE_FORMAT = 1;
export const GRAPH_CHECKPOINT_KEY = keyOf(EDGE_SPACE, [null, 'checkpoint']);
export const graphChunkKey = (schema: string, rel: string, i: number): Buffer => keyOf(EDGE_SPACE, [null, 'k', schema, rel, i]);
const CHUNK = 8 << 20;

export interface ImagedRel {
  readonly schema: string;
  readonly rel: string;
  readonly chunks: number;
  readonly crc: number;
}
export interface GraphRecord {
  readonly v: number;
  readonly lsn: number;
  readonly rels: readonly ImagedRel[];
}

type Arr = Int32Array | Uint16Array | Float64Array;
const KINDS = { i32: Int32Array, u16: Uint16Array, f64: Float64Array } as const;
const kindOf = (a: Arr): keyof typeof KINDS => (a instanceof Int32Array ? 'i32' : a instanceof Uint16Array ? 'u16' : 'f64');

/** The image of one adjacency, as chunks (copies: the live arrays may change while they are written). */
export function encodeAdjacency(adj: Adjacency): Buffer[] {
  const { header, arrays } = adj.toImage();
  const head = Buffer.from(JSON.stringify({ ...header, arrays: arrays.map((a) => [kindOf(a), a.length]) }), 'utf8');
  let size = 4 + head.length;
  for (const a of arrays) size += a.byteLength;
  const out = Buffer.allocUnsafe(size);
  out.writeUInt32LE(head.length, 0);
  head.copy(out, 4);
  let at = 4 + head.length;
  for (const a of arrays) {
    Buffer.from(a.buffer, a.byteOffset, a.byteLength).copy(out, at);
    at += a.byteLength;
  }
  const chunks: Buffer[] = [];
  for (let i = 0; i < size; i += CHUNK) chunks.push(out.subarray(i, Math.min(size, i + CHUNK)));
  return chunks;
}

/**
 * An adjacency back from its image, given whole or as its chunks (read in place: each array is
 * copied straight from the chunks it spans, no concatenation of the image first); throws on a
 * malformed one.
 */
export function decodeAdjacency(image: Buffer | readonly Buffer[]): Adjacency {
  const chunks = Buffer.isBuffer(image) ? [image] : image;
  const total = chunks.reduce((n, c) => n + c.length, 0);
  let ci = 0; // the chunk holding byte `at`, from `base`
  let base = 0;
  /** Copies bytes [at, at + n) of the image into `out` from its offset 0. */
  const copy = (at: number, n: number, out: Uint8Array): void => {
    while (ci < chunks.length && at >= base + chunks[ci].length) base += chunks[ci++].length;
    let done = 0;
    for (let i = ci, b = base; done < n; b += chunks[i++].length) {
      if (i >= chunks.length) throw new Error('graph image: truncated');
      const c = chunks[i];
      const from = at + done - b;
      const m = Math.min(n - done, c.length - from);
      out.set(c.subarray(from, from + m), done);
      done += m;
    }
  };
  if (total < 4) throw new Error('graph image: truncated');
  const lens = Buffer.alloc(4);
  copy(0, 4, lens);
  const hl = lens.readUInt32LE(0);
  if (4 + hl > total) throw new Error('graph image: truncated');
  const head = Buffer.alloc(hl);
  copy(4, hl, head);
  const h = JSON.parse(head.toString('utf8')) as { edges: number; baseNodes: number; baseEdges: number; propNames: string[]; arrays: Array<[keyof typeof KINDS, number]> };
  let at = 4 + hl;
  const arrays: Arr[] = [];
  for (const [kind, len] of h.arrays) {
    const C = KINDS[kind];
    const bytes = len * C.BYTES_PER_ELEMENT;
    if (!C || at + bytes > total) throw new Error('graph image: truncated');
    const a = new C(len);
    copy(at, bytes, new Uint8Array(a.buffer));
    arrays.push(a);
    at += bytes;
  }
  if (at !== total) throw new Error('graph image: trailing bytes');
  return Adjacency.fromImage(h, arrays);
}

export function crcOf(chunks: readonly Buffer[]): number {
  let c = 0;
  for (const x of chunks) c = crc32(x, c);
  return c;
}

/** The stored images, or null when there is none usable (the relations then build from their keys). */
export async function loadGraphImages(snap: Snapshot): Promise<{ record: GraphRecord; adjs: Array<[ImagedRel, Adjacency]> } | null> {
  const raw = await snap.rawGet(GRAPH_CHECKPOINT_KEY);
  if (!raw) return null;
  try {
    const record = JSON.parse(raw.toString('utf8')) as GraphRecord;
    if (record.v !== GRAPH_IMAGE_FORMAT) return null;
    // every relation's chunks in one read (all relations at once), each decoded in place
    const read = await Promise.all(record.rels.map((r) => snap.rawGetMany(Array.from({ length: r.chunks }, (_, i) => graphChunkKey(r.schema, r.rel, i)))));
    const adjs: Array<[ImagedRel, Adjacency]> = [];
    for (const [i, r] of record.rels.entries()) {
      const parts = read[i];
      if (parts.some((p) => p === undefined) || crcOf(parts as Buffer[]) !== r.crc) return null;
      adjs.push([r, decodeAdjacency(parts as Buffer[])]);
    }
    return { record, adjs };
  } catch {
    return null;
  }
}
