/**
 * Edges of one row under one relation, and their keys in the `E` keyspace.
 *
 * Key layout (tuple-encoded after the one-byte `E` prefix):
 *   forward  E ‖ (schema, rel, 'f', src, dst, owner)  → value
 *   reverse  E ‖ (schema, rel, 'r', dst, src, owner)  → value
 * `schema` is the table that declares the relation (whose rows make the edges),
 * `owner` the node string of that row when (src, dst) alone does not identify it
 * (an edge table whose key is not just its two ends), else null.
 * Value: empty, or JSON `{ "w": weight?, "p": { numeric column: value }? }`.
 */
import type { JsonValue, RelationDef, Row, TableManifest } from '@mmdb/core';
import { decodeKey, keyOf, prefixRange, type KeyWrite, type PkTuple } from '@mmdb/storage';
import { nodeOf, nodeOfValue } from './node';

export const EDGE_SPACE = 'E';
export const FORWARD = 'f';
export const REVERSE = 'r';

export interface Edge {
  readonly src: string;
  readonly dst: string;
  /** Node string of the row that makes the edge, when (src, dst) does not imply it. */
  readonly owner: string | null;
  /** The manifest's weight column, when set and a finite number. */
  readonly weight?: number;
  /** Other numeric (i64/f64) columns of that row, for `weight_field`. */
  readonly props?: Readonly<Record<string, number>>;
}

/** True when the edge's row is identified by its two ends (no owner needed in the key). */
export function ownerImplied(rel: RelationDef, manifest: TableManifest): boolean {
  const src = rel.source_columns;
  if (!src) return true;
  return manifest.primary_key.every((c) => src.includes(c) || rel.columns.includes(c));
}

/** Node strings named by `cols` of a row: one composite key, or for one column a key or an array of keys. */
export function keysIn(row: Row, cols: readonly string[]): string[] {
  if (cols.length === 1) {
    const v = row[cols[0]];
    if (Array.isArray(v)) {
      const out: string[] = [];
      for (const e of v) {
        const n = nodeOfValue(e);
        if (n !== undefined) out.push(n);
      }
      return out;
    }
    const n = nodeOfValue(v);
    return n === undefined ? [] : [n];
  }
  const tuple: JsonValue[] = [];
  for (const c of cols) {
    const v = row[c];
    if (v === null || v === undefined) return [];
    tuple.push(v);
  }
  return [nodeOf(tuple)];
}

/** The distinct edges a row makes under a relation of its manifest. */
export function edgesOfRow(rel: RelationDef, manifest: TableManifest, pk: PkTuple, row: Row): Edge[] {
  const srcs = rel.source_columns ? keysIn(row, rel.source_columns) : [nodeOf(pk)];
  const dsts = keysIn(row, rel.columns);
  if (srcs.length === 0 || dsts.length === 0) return [];
  const owner = ownerImplied(rel, manifest) ? null : nodeOf(pk);
  const wv = rel.weight === undefined ? undefined : row[rel.weight];
  const weight = typeof wv === 'number' && Number.isFinite(wv) ? wv : undefined;
  const props = numericProps(rel, manifest, row);
  const seen = new Set<string>();
  const out: Edge[] = [];
  for (const src of srcs) {
    for (const dst of dsts) {
      const id = `${src}\u0000${dst}`;
      if (seen.has(id)) continue;
      seen.add(id);
      out.push({ src, dst, owner, ...(weight !== undefined ? { weight } : {}), ...(props ? { props } : {}) });
    }
  }
  return out;
}

function numericProps(rel: RelationDef, manifest: TableManifest, row: Row): Record<string, number> | undefined {
  let props: Record<string, number> | undefined;
  for (const c of manifest.columns) {
    if (c.ty !== 'i64' && c.ty !== 'f64') continue;
    if (c.name === rel.weight || manifest.primary_key.includes(c.name) || rel.columns.includes(c.name)) continue;
    if (rel.source_columns?.includes(c.name)) continue;
    const v = row[c.name];
    if (typeof v === 'number' && Number.isFinite(v)) (props ??= {})[c.name] = v;
  }
  return props;
}

export function forwardKey(schema: string, rel: string, e: Pick<Edge, 'src' | 'dst' | 'owner'>): Buffer {
  return keyOf(EDGE_SPACE, [schema, rel, FORWARD, e.src, e.dst, e.owner]);
}

export function reverseKey(schema: string, rel: string, e: Pick<Edge, 'src' | 'dst' | 'owner'>): Buffer {
  return keyOf(EDGE_SPACE, [schema, rel, REVERSE, e.dst, e.src, e.owner]);
}

const EMPTY = Buffer.alloc(0);

export function encodeEdgeValue(e: Edge): Buffer {
  if (e.weight === undefined && e.props === undefined) return EMPTY;
  const v: { w?: number; p?: Record<string, number> } = {};
  if (e.weight !== undefined) v.w = e.weight;
  if (e.props !== undefined) v.p = { ...e.props };
  return Buffer.from(JSON.stringify(v), 'utf8');
}

export function decodeEdgeValue(b: Uint8Array | undefined): { weight?: number; props?: Record<string, number> } {
  if (!b || b.length === 0) return {};
  const v = JSON.parse(Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8')) as { w?: number; p?: Record<string, number> };
  return { ...(v.w !== undefined ? { weight: v.w } : {}), ...(v.p !== undefined ? { props: v.p } : {}) };
}

/** Key writes turning the edges of `before` into those of `after` (forward and reverse). */
export function edgeWrites(schema: string, rel: string, before: readonly Edge[], after: readonly Edge[]): KeyWrite[] {
  const writes: KeyWrite[] = [];
  const next = new Map<string, Edge>();
  for (const e of after) next.set(edgeId(e), e);
  const prev = new Map<string, Edge>();
  for (const e of before) prev.set(edgeId(e), e);
  for (const [id, e] of prev) {
    if (next.has(id)) continue;
    writes.push({ key: forwardKey(schema, rel, e), value: null }, { key: reverseKey(schema, rel, e), value: null });
  }
  for (const [id, e] of next) {
    const value = encodeEdgeValue(e);
    const old = prev.get(id);
    if (old && encodeEdgeValue(old).equals(value)) continue;
    writes.push({ key: forwardKey(schema, rel, e), value }, { key: reverseKey(schema, rel, e), value });
  }
  return writes;
}

function edgeId(e: Edge): string {
  return `${e.src}\u0000${e.dst}\u0000${e.owner ?? ''}`;
}

/** [gte, lt) of every edge key a schema owns (all its relations, both directions). */
export function schemaEdgeRange(schema: string): readonly [Buffer, Buffer] {
  const r = prefixRange(EDGE_SPACE, [schema]);
  return [r.gte, r.lt];
}

/** [gte, lt) of one relation's forward (or reverse) keys. */
export function relationRange(schema: string, rel: string, dir: typeof FORWARD | typeof REVERSE): { gte: Buffer; lt: Buffer } {
  return prefixRange(EDGE_SPACE, [schema, rel, dir]);
}

const T_NULL = 0x01;
const T_STR = 0x30;

/**
 * The (first end, second end, owner) of an edge key whose first `prefixLength` bytes are
 * its relation range prefix: a fast path for the bulk build (native UTF-8 slices instead of
 * the general tuple decoder), falling back to `decodeKey` for escaped NUL bytes.
 */
export function decodeEdgeEnds(key: Buffer, prefixLength: number): [string, string, string | null] {
  let pos = prefixLength;
  const read = (): string | null | undefined => {
    const tag = key[pos];
    if (tag === T_NULL) {
      pos++;
      return null;
    }
    if (tag !== T_STR) return undefined;
    const end = key.indexOf(0, pos + 1);
    if (end < 0 || key[end + 1] === 0xff) return undefined;
    const s = key.toString('utf8', pos + 1, end);
    pos = end + 1;
    return s;
  };
  const a = read();
  const b = a == null ? undefined : read();
  const o = b == null ? undefined : read();
  if (typeof a === 'string' && typeof b === 'string' && o !== undefined && pos === key.length) return [a, b, o];
  const t = decodeKey(key);
  return [t[3] as string, t[4] as string, t[5] as string | null];
}
