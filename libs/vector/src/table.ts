/**
 * One table's vectors: id ↔ label map, metadata and its equality postings, the float
 * slab, and the index chosen for the table. Pure in-memory; the participant feeds it
 * committed frames and checkpoints it.
 */
import { DbError, parseJsonExact, stringifyJson, type JsonValue, type VectorIndexKind } from '@mmdb/core';
import type { AnnIndex, Hit, IndexContext, SearchMode } from './ann';
import type { Calibration } from './calibrate';
import { ExactIndex, exactOver } from './exact';
import { HnswIndex } from './hnsw';
import { IvfIndex } from './ivf';
import { normalize, scorer, type VectorMetric } from './metric';
import { Parts } from './parts';
import { VectorSlab } from './slab';
import type { Metadata } from './validate';

/** `auto`: below this many vectors a table is searched exactly (no index kept). */
export const EXACT_MAX = 2000;
/** `auto`: from this many vectors on, a table moves to IVF-PQ (compressed codes). */
export const AUTO_IVFPQ_MIN = 2_000_000;
/**
 * Which filters an exact scan of their members answers: at most `min` entries, or at most
 * `perSqrt`·√(table size). A scan costs ~0.6 µs a member at 128 dimensions (rows read out of
 * order: memory latency, not arithmetic); a filtered HNSW search grows as 1/selectivity
 * (1.7 ms at 10% of 100k). Measured at 100k × 128 they cross near 5,000 members, 16·√100k.
 * Tests lower both to send every filter through the index.
 */
export const filterExact = { min: 2_000, perSqrt: 16 };

/** The largest filter (in matching entries) answered by an exact scan in a table of `size` entries. */
export function filterExactMax(size: number): number {
  return Math.max(filterExact.min, Math.round(filterExact.perSqrt * Math.sqrt(size)));
}
/** IVF indexes retrain when the table has grown past this multiple of their training size. */
const RETRAIN_GROWTH = 4;

export interface TableSpec {
  readonly dim: number;
  readonly metric: VectorMetric;
  readonly index: VectorIndexKind;
  readonly params: Readonly<Record<string, number>>;
}

export interface Match {
  id: string;
  distance: number;
  metadata: Metadata | null;
}

export interface TopKOptions {
  k: number;
  mode: SearchMode;
  /** Metadata equalities; every one must hold. */
  filter?: Metadata | null;
  /** Only these ids (a plan's filter over row columns, evaluated by the executor); with `filter`, both hold. */
  ids?: Iterable<string>;
  /** Only these entries, as `labelsOf` gave them (valid while the table is unchanged): no id lookups per search. */
  labels?: ReadonlySet<number>;
}

function postingKey(field: string, v: JsonValue): string {
  return `${field}\u0000${canonical(v)}`;
}

function canonical(v: JsonValue): string {
  if (typeof v === 'bigint') return v.toString();
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  return `{${Object.keys(v)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`)
    .join(',')}}`;
}

/** Which index kind serves the table at its current size. */
export function chooseKind(spec: TableSpec, size: number): 'exact' | 'hnsw' | 'ivf' | 'ivfpq' {
  switch (spec.index) {
    case 'exact':
      return 'exact';
    case 'hnsw':
      return spec.metric === 'manhattan' ? 'ivf' : 'hnsw';
    case 'ivfpq':
      return size < EXACT_MAX ? 'exact' : 'ivfpq';
    default:
      if (size < EXACT_MAX) return 'exact';
      if (size >= AUTO_IVFPQ_MIN) return 'ivfpq';
      return spec.metric === 'manhattan' ? 'ivf' : 'hnsw';
  }
}

export class VectorTable {
  private readonly labelOf = new Map<string, number>();
  private idOf: (string | null)[] = [];
  private meta: (Metadata | null)[] = [];
  private free: number[] = [];
  private readonly postings = new Map<string, Set<number>>();
  slab: VectorSlab;
  private index: AnnIndex;
  private readonly ctx: IndexContext;
  /** Set by `rebuild(kind)`: the table keeps that kind instead of choosing by size. */
  private pinned: AnnIndex['kind'] | null = null;
  /** The query of the running `topk` (normalised in place for cosine): one buffer, no allocation per query. */
  private readonly query: Float32Array;

  constructor(readonly name: string, public spec: TableSpec) {
    this.slab = new VectorSlab(spec.dim);
    this.query = new Float32Array(spec.dim);
    const slabOf = () => this.slab; // the slab is replaced on restore: read it through the table
    const specOf = () => this.spec; // the spec changes with the manifest (retune)
    this.ctx = {
      metric: spec.metric,
      dim: spec.dim,
      get slab() {
        return slabOf();
      },
      get params() {
        return specOf().params;
      },
    };
    this.index = new ExactIndex(this.ctx);
    if (spec.index === 'hnsw' && spec.metric !== 'manhattan') this.index = new HnswIndex(this.ctx);
  }

  get size(): number {
    return this.labelOf.size;
  }

  get kind(): AnnIndex['kind'] {
    return this.index.kind;
  }

  has(id: string): boolean {
    return this.labelOf.has(id);
  }

  /** Adds or replaces `id`. `embedding` must already have the table's dimension. */
  upsert(id: string, embedding: ArrayLike<number>, metadata: Metadata | null): void {
    if (embedding.length !== this.spec.dim)
      throw new DbError('dim_mismatch', `embedding has ${embedding.length} dimensions; the table is locked to ${this.spec.dim}`);
    const v = Float32Array.from(embedding);
    if (this.spec.metric === 'cosine') normalize(v);
    let label = this.labelOf.get(id);
    if (label === undefined) {
      label = this.free.length ? this.free.pop()! : this.idOf.length;
      this.labelOf.set(id, label);
      this.idOf[label] = id;
    } else this.unpost(label);
    this.meta[label] = metadata;
    this.post(label);
    this.slab.set(label, v);
    this.index.add(label);
    this.maybeRebuild();
    this.tune();
  }

  /** The entries of `ids` (absent ones left out), for `TopKOptions.labels`. */
  labelsOf(ids: Iterable<string>): Set<number> {
    const out = new Set<number>();
    for (const id of ids) {
      const l = this.labelOf.get(id);
      if (l !== undefined) out.add(l);
    }
    return out;
  }

  /** The stored vector of `id` (unit length in a cosine table), or undefined. */
  vectorOf(id: string): Float32Array | undefined {
    const l = this.labelOf.get(id);
    return l === undefined ? undefined : this.slab.get(l);
  }

  /** The metadata of `id` (null when it has none or is absent). */
  metadataOf(id: string): Metadata | null {
    const l = this.labelOf.get(id);
    return l === undefined ? null : this.meta[l];
  }

  /** Every id with its metadata (an implicit table's rows). */
  *entries(): Iterable<{ id: string; metadata: Metadata | null }> {
    for (let l = 0; l < this.idOf.length; l++) {
      const id = this.idOf[l];
      if (id != null) yield { id, metadata: this.meta[l] };
    }
  }

  delete(id: string): boolean {
    const label = this.labelOf.get(id);
    if (label === undefined) return false;
    this.index.remove(label);
    this.unpost(label);
    this.slab.clear(label);
    this.labelOf.delete(id);
    this.idOf[label] = null;
    this.meta[label] = null;
    this.free.push(label);
    return true;
  }

  private post(label: number): void {
    const m = this.meta[label];
    if (!m) return;
    for (const [f, v] of Object.entries(m)) {
      const key = postingKey(f, v);
      let s = this.postings.get(key);
      if (!s) this.postings.set(key, (s = new Set()));
      s.add(label);
    }
  }

  private unpost(label: number): void {
    const m = this.meta[label];
    if (!m) return;
    for (const [f, v] of Object.entries(m)) {
      const key = postingKey(f, v);
      const s = this.postings.get(key);
      if (!s) continue;
      s.delete(label);
      if (s.size === 0) this.postings.delete(key);
    }
  }

  private maybeRebuild(): void {
    const want = this.pinned ?? chooseKind(this.spec, this.size);
    const cur = this.index;
    const stale = (cur.kind === 'ivf' || cur.kind === 'ivfpq') && this.size > RETRAIN_GROWTH * Math.max(1, (cur as IvfIndex).trainedOn);
    if (want === cur.kind && !stale) return;
    if (want === 'exact' && cur.kind !== 'exact') return; // an index once built stays
    this.replace(this.build(want));
  }

  private replace(index: AnnIndex): void {
    this.index.dispose?.();
    this.index = index;
  }

  /**
   * Starts the index's background tuning when due (HNSW: the ef calibration, calibrate.ts) and
   * answers the running one, or null. Called as the table grows and on searches (after a restart).
   */
  tune(): Promise<void> | null {
    return this.index.tune?.(this.size) ?? null;
  }

  /** Whether the HNSW index is calibrating its ef now (a background job sharing the event loop; explain shows it). */
  calibrating(): boolean {
    return this.index instanceof HnswIndex && this.index.calibrating;
  }

  /** The HNSW index's last ef calibration (kept in the checkpoint image), or null. */
  private calibration(): Calibration | null {
    return this.index instanceof HnswIndex ? this.index.calibrated : null;
  }

  /**
   * The ef an HNSW search of `k` would use (`passing`: the share of entries a filter lets
   * through), or null for another index kind: what explain shows.
   */
  efFor(k: number, mode: SearchMode, passing = 1): number | null {
    return this.index instanceof HnswIndex ? this.index.efFor(k, mode, passing) : null;
  }

  /**
   * A changed `[vector]` declaration of the same dim and metric (index kind, params): the index
   * is built again over every live vector with them, so a changed manifest takes effect at once.
   */
  retune(spec: TableSpec): void {
    if (spec.dim !== this.spec.dim || spec.metric !== this.spec.metric) throw new Error('retune keeps dim and metric');
    this.spec = spec;
    this.rebuild();
  }

  /** Builds the given kind over every live vector (used on growth and by benchmarks). */
  rebuild(kind?: AnnIndex['kind']): void {
    this.pinned = kind ?? null;
    this.replace(this.build(kind ?? chooseKind(this.spec, this.size)));
  }

  private build(kind: AnnIndex['kind']): AnnIndex {
    switch (kind) {
      case 'exact':
        return new ExactIndex(this.ctx);
      case 'hnsw': {
        const h = new HnswIndex(this.ctx);
        for (let l = 0; l < this.slab.high; l++) if (this.slab.live[l]) h.add(l);
        return h;
      }
      default:
        return new IvfIndex(this.ctx, kind === 'ivfpq');
    }
  }

  /** Labels matching every equality of `filter` (smallest posting first), or null for no filter. */
  private matching(filter: Metadata | null | undefined): Set<number> | number[] | null {
    if (!filter) return null;
    const entries = Object.entries(filter);
    if (entries.length === 0) return null;
    const sets: Set<number>[] = [];
    for (const [f, v] of entries) {
      const s = this.postings.get(postingKey(f, v));
      if (!s) return [];
      sets.push(s);
    }
    sets.sort((a, b) => a.size - b.size);
    if (sets.length === 1) return sets[0];
    const out: number[] = [];
    for (const l of sets[0]) if (sets.every((s) => s.has(l))) out.push(l);
    return out;
  }

  /** The k closest entries, closest first. Query length must equal the table's dimension. */
  topk(query: ArrayLike<number>, o: TopKOptions): Match[] {
    if (query.length !== this.spec.dim)
      throw new DbError('dim_mismatch', `"vector" has ${query.length} dimensions; the table is locked to ${this.spec.dim}`, { field: 'vector' });
    // topk is synchronous and no index keeps the query: one buffer per table serves every call
    const q = this.query;
    q.set(query);
    if (this.spec.metric === 'cosine') normalize(q);
    let members: Set<number> | number[] | null = this.matching(o.filter);
    if (o.labels) {
      const within = members && new Set(members);
      members = within ? [...o.labels].filter((l) => within.has(l)) : (o.labels as Set<number>);
    } else if (o.ids) {
      const within = members && new Set(members);
      const labels: number[] = [];
      for (const id of o.ids) {
        const l = this.labelOf.get(id);
        if (l !== undefined && (!within || within.has(l))) labels.push(l);
      }
      members = labels;
    }
    this.tune(); // a table restored from a checkpoint calibrates on its first searches
    let hits: Hit[];
    if (members === null) hits = this.index.search(q, { k: o.k, mode: o.mode });
    else {
      const n = Array.isArray(members) ? members.length : members.size;
      if (n === 0) return [];
      if (n <= filterExactMax(this.size) || this.index.kind === 'exact') hits = exactOver(this.ctx, q, members, o.k);
      else {
        const set = Array.isArray(members) ? new Set(members) : members;
        hits = this.index.search(q, { k: o.k, mode: o.mode, filter: (l) => set.has(l), passing: n / Math.max(1, this.size) });
        // the index may fall short of k under a filter: the exact scan of the members never does
        if (hits.length < Math.min(o.k, n)) hits = exactOver(this.ctx, q, members, o.k);
      }
    }
    const finish = scorer(this.spec.metric).finish;
    const out: Match[] = [];
    for (const h of hits) {
      const id = this.idOf[h.label];
      if (id == null) continue;
      out.push({ id, distance: finish(h.score), metadata: this.meta[h.label] });
    }
    return out;
  }

  /** Bytes held by the index beside the float vectors. */
  indexBytes(): number {
    return this.index.memoryBytes();
  }

  /** The index itself (benchmarks read IVF-PQ code sizes from it). */
  get ann(): AnnIndex {
    return this.index;
  }

  /** Checkpoint image: a JSON header (ids, metadata, kind), the slab, the index bytes. */
  serialize(): Buffer {
    const head = Buffer.from(
      stringifyJson({ spec: this.spec, kind: this.index.kind, ids: this.idOf, meta: this.meta, high: this.slab.high, cal: this.calibration() }),
      'utf8',
    );
    const slab = this.slab.serialize();
    const idx = this.index.serialize();
    const lens = Buffer.alloc(12);
    lens.writeUInt32LE(head.length, 0);
    lens.writeUInt32LE(slab.length, 4);
    lens.writeUInt32LE(idx.length, 8);
    return Buffer.concat([lens, head, slab, idx]);
  }

  /**
   * The image `serialize()` would give now, as the `chunk`-byte pieces a checkpoint writes,
   * without holding the event loop for its length (issue 25: ~0.3 s at 100k × 128). The
   * state is the one at the call: the slab's vectors are copied in steps with copy-on-write,
   * the live flags and the id and metadata arrays copied at once (small), the index gives its
   * own image (an HNSW graph is written on hnswlib's thread). The JSON header is written a
   * few thousand entries per turn, so writes and searches go on meanwhile.
   */
  imageChunks(chunk: number): Promise<Buffer[]> {
    const high = this.slab.high;
    const vectors = this.slab.copyInSteps();
    const live = this.slab.live.slice(0, high);
    const ids = this.idOf.slice();
    const meta = this.meta.slice();
    const kind = this.index.kind;
    const cal = this.calibration();
    const idx = this.index.image ? this.index.image() : Promise.resolve(this.index.serialize());
    return (async () => {
      const fields = [
        `"spec":${stringifyJson(this.spec)}`,
        `"kind":${JSON.stringify(kind)}`,
        `"ids":${await stringifyArray(ids)}`,
        `"meta":${await stringifyArray(meta)}`,
        `"high":${high}`,
        `"cal":${stringifyJson(cal)}`,
      ];
      const head = Buffer.from(`{${fields.join(',')}}`, 'utf8');
      const data = await vectors;
      const index = await idx;
      const lens = Buffer.alloc(12);
      lens.writeUInt32LE(head.length, 0);
      lens.writeUInt32LE(data.byteLength + live.byteLength, 4);
      lens.writeUInt32LE(index.length, 8);
      const bytes = (a: Float32Array | Uint8Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);
      return inChunks([lens, head, bytes(data), bytes(live), index], chunk);
    })();
  }

  static deserialize(name: string, b: Buffer): VectorTable {
    const { t, h, index } = VectorTable.restore(name, new Parts([b]));
    if (h.kind === 'hnsw') t.index = withCalibration(new HnswIndex(t.ctx, index.slice(0, index.length)), h.cal);
    return t;
  }

  /**
   * A table back from its image as the store holds it (`imageChunks`' chunks), without
   * concatenating them; an HNSW graph is read on hnswlib's thread (`HnswIndex.load`), so the
   * event loop serves the other participants' loads meanwhile.
   */
  static async load(name: string, chunks: readonly Buffer[]): Promise<VectorTable> {
    const { t, h, index } = VectorTable.restore(name, new Parts(chunks));
    if (h.kind === 'hnsw') t.index = withCalibration(await HnswIndex.load(t.ctx, index.pieces(0, index.length)), h.cal);
    return t;
  }

  /** Everything of an image but an HNSW graph (left to the caller: `index`, the graph's bytes). */
  private static restore(name: string, b: Parts): { t: VectorTable; h: { kind: string; cal?: unknown }; index: Parts } {
    const lens = b.slice(0, 12);
    const hl = lens.readUInt32LE(0);
    const sl = lens.readUInt32LE(4);
    const il = lens.readUInt32LE(8);
    const h = parseJsonExact(b.slice(12, 12 + hl).toString('utf8')) as any;
    const t = new VectorTable(name, h.spec);
    t.slab = VectorSlab.deserialize(t.spec.dim, h.high, b.pieces(12 + hl, 12 + hl + sl));
    t.idOf = h.ids;
    t.meta = h.meta;
    for (let l = 0; l < t.idOf.length; l++) {
      const id = t.idOf[l];
      if (id == null) t.free.push(l);
      else {
        t.labelOf.set(id, l);
        t.post(l);
      }
    }
    const index = new Parts(b.pieces(12 + hl + sl, 12 + hl + sl + il));
    if (h.kind === 'ivf' || h.kind === 'ivfpq') t.index = new IvfIndex(t.ctx, h.kind === 'ivfpq', index.slice(0, index.length));
    else if (h.kind !== 'hnsw') t.index = new ExactIndex(t.ctx);
    return { t, h, index };
  }
}

/** Array entries stringified per event-loop turn. */
const JSON_STEP = 4096;

/** `stringifyJson(a)`, JSON_STEP entries per turn. */
async function stringifyArray(a: readonly unknown[]): Promise<string> {
  const parts: string[] = [];
  for (let i = 0; i < a.length; i += JSON_STEP) {
    if (i > 0) await new Promise((r) => setImmediate(r));
    parts.push(stringifyJson(a.slice(i, i + JSON_STEP)).slice(1, -1));
  }
  return `[${parts.join(',')}]`;
}

/** Bytes copied per turn where a chunk spans two parts. */
const COPY_STEP = 1 << 20;

/**
 * The concatenation of `parts` cut into `size`-byte buffers: a view where a chunk lies inside
 * one part, else a copy made COPY_STEP bytes per turn.
 */
async function inChunks(parts: readonly Buffer[], size: number): Promise<Buffer[]> {
  const total = parts.reduce((n, p) => n + p.length, 0);
  const out: Buffer[] = [];
  let p = 0;
  let off = 0;
  for (let start = 0; start < total || out.length === 0; start += size) {
    const len = Math.min(size, total - start);
    while (p < parts.length - 1 && off >= parts[p].length) {
      p++;
      off = 0;
    }
    if (parts[p].length - off >= len) {
      out.push(parts[p].subarray(off, off + len));
      off += len;
      continue;
    }
    const buf = Buffer.allocUnsafe(len);
    let at = 0;
    let since = 0;
    while (at < len) {
      if (since >= COPY_STEP) {
        since = 0;
        await new Promise((r) => setImmediate(r));
      }
      const n = parts[p].copy(buf, at, off, Math.min(parts[p].length, off + len - at, off + COPY_STEP));
      at += n;
      off += n;
      since += n;
      if (off >= parts[p].length && p < parts.length - 1) {
        p++;
        off = 0;
      }
    }
    out.push(buf);
  }
  return out;
}

/** Restores the ef calibration kept in an HNSW image (absent from images written before it existed). */
function withCalibration(hn: HnswIndex, cal: unknown): HnswIndex {
  if (cal) hn.restore(cal as Calibration);
  return hn;
}
