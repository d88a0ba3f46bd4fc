/**
 * A posting list still in its checkpoint image (image.ts): the varint runs of its doc gaps and
 * term frequencies, decoded the first time the list is read. Opening a store reads only the
 * term dictionary (terms, n, maxTf) and skips over each list's bytes; the first search decodes
 * the lists it touches, and the rest are decoded after the open (FtsParticipant.afterOpen).
 */
import { corruptData } from '@mmdb/core';

export interface Packed {
  /** The image holding the runs: gaps from `at`, then tfs up to `end`. */
  readonly b: Buffer;
  readonly at: number;
  readonly end: number;
  /** Doc ordinals of the field: every doc of the list is below it. */
  readonly ordinals: number;
}

/**
 * `len` varints from `b` at `p` into `out` (running sums when `gaps`); returns the offset after
 * them. Inline, one call per list: a call per posting was most of the load time. Reading past
 * the end yields zeros and an offset past it, which the caller checks.
 */
export function readRun(b: Buffer, p: number, out: Int32Array, len: number, gaps: boolean): number {
  let acc = 0;
  for (let i = 0; i < len; i++) {
    let x = b[p++];
    let v = x & 0x7f;
    for (let shift = 7; x >= 0x80; shift += 7) {
      x = b[p++];
      v |= (x & 0x7f) << shift;
    }
    out[i] = gaps ? (acc += v) : v;
  }
  return p;
}

/** The offset after `count` varints from `p`, not past `end` (then `end + 1`): a list skipped at open. */
export function skipVarints(b: Buffer, p: number, count: number, end: number): number {
  // a varint ends at each byte under 0x80: counted without a branch per byte (a branch on the
  // byte mispredicts about every other posting: 3-4x slower over 50 MB)
  let seen = 0;
  while (seen < count && p < end) seen += (b[p++] >> 7) ^ 1;
  return seen < count ? end + 1 : p;
}

export const badImage = (why: string) => corruptData('fts checkpoint image', `fts image: ${why}`);

/** Decodes a packed list's runs (docs ascending, each below the field's ordinals); throws corrupt_log-class errors. */
export function unpackRuns(term: string, s: Packed, n: number): { docs: Int32Array<ArrayBuffer>; tfs: Int32Array<ArrayBuffer> } {
  const docs = new Int32Array(Math.max(4, n));
  const tfs = new Int32Array(Math.max(4, n));
  let p = readRun(s.b, s.at, docs, n, true);
  p = readRun(s.b, p, tfs, n, false);
  for (let i = 1; i < n; i++) if (docs[i] <= docs[i - 1]) throw badImage(`list "${term}" out of order`);
  if (p !== s.end || (n > 0 && docs[n - 1] >= s.ordinals)) throw badImage(`list "${term}" past the end`);
  return { docs, tfs };
}

/** The doc run of the list being passed over by `arenaPass` (reused: no allocation per list). */
let scratch = new Int32Array(1024);

/**
 * The per-doc arena's two passes (FieldIndex.buildArena) over a packed list's doc run, without
 * keeping it decoded: `fill` null counts each doc's lists into `count`; else writes `id` at
 * `arena[fill[doc]++]`. A store's first change after a restart builds the arena; its lists stay packed.
 */
export function arenaPass(s: Packed, n: number, count: Int32Array, fill: Int32Array | null, arena: Int32Array | null, id: number): void {
  if (scratch.length < n) scratch = new Int32Array(Math.max(n, scratch.length * 2));
  const docs = scratch;
  readRun(s.b, s.at, docs, n, true);
  if (n > 0 && (docs[0] < 0 || docs[n - 1] >= s.ordinals)) throw badImage(`a list past the end`);
  if (fill === null) for (let i = 0; i < n; i++) count[docs[i]]++;
  else for (let i = 0; i < n; i++) (arena as Int32Array)[fill[docs[i]]++] = id;
}
