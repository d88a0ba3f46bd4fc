/**
 * The graph engine of one tenant store: a `CommitParticipant` that derives edge
 * keys in the row's frame, and the reader that serves traversals from an
 * in-memory adjacency per relation (built lazily from the `E` keys, then kept
 * current from applied frames).
 *
 * @example
 *   const graph = new GraphIndex();
 *   const store = await TenantStore.open({ dir, participants: [graph] });
 *   await store.registerSchema(toml);          // with [[relations]] name = "cites" ...
 *   await store.put('lib.papers', { id: 'a', cites: ['b', 'c'] });
 *   await graph.neighbors('lib.papers', 'cites', 'a'); // ['b', 'c']
 */
import { DbError, isInternalTable, type JsonValue, type Lsn, type RelationDef, type Row, type TableManifest } from '@mmdb/core';
import {
  clearUnused,
  decodeKey,
  keyIdOf,
  prefixRange,
  type CommitParticipant,
  type CommittedFrame,
  type CustomChange,
  type DeriveContext,
  type KeyWrite,
  type RowChangeEvent,
  type StoreReader,
} from '@mmdb/storage';
import { Adjacency } from './adjacency';
import { decodeEdgeEnds, decodeEdgeValue, edgesOfRow, edgeWrites, EDGE_SPACE, FORWARD, relationRange, schemaEdgeRange } from './edges';
import { tupleOfNode } from './node';
import { crcOf, encodeAdjacency, GRAPH_CHECKPOINT_KEY, GRAPH_IMAGE_FORMAT, graphChunkKey, loadGraphImages, type GraphRecord, type ImagedRel } from './graph-image';
import { bfs, dijkstra, shortestPath, type DijkstraResult, type Visit, type WeightFn } from './traverse';

/** Deepest BFS / path search a request may ask for. */
export const MAX_DEPTH = 64;
export const DEFAULT_DEPTH = 3;

/** A relation as the reader resolves it: where it is declared and what it links. */
export interface ResolvedRelation {
  /** The schema whose rows make the edges (where `[[relations]]` is declared). */
  readonly schema: string;
  readonly def: RelationDef;
}

/** One relation's adjacency; dropped when a frame changes its declaring schema. */
interface RelState {
  adj?: Adjacency;
  building?: Promise<Adjacency>;
  /** Edge writes applied while the initial scan runs, replayed after it. */
  pending?: KeyWrite[];
}

const E_BYTE = EDGE_SPACE.charCodeAt(0);
/** Edge writes below which a background checkpoint never re-images (see `checkpoint`). */
const MIN_IMAGE_CHANGES = 4096;
const ROW_SPACE = 'R';

export class GraphIndex implements CommitParticipant {
  readonly name = 'graph';
  private reader?: StoreReader;
  private readonly rels = new Map<string, RelState>();
  /** The checkpoint (graph-image.ts): the LSN applied, which relations the stored images hold, what changed since. */
  private applied: Lsn = 0;
  private hasImage = false;
  private imageLsn: Lsn = 0;
  private changed = 0;
  private readonly imaged = new Map<string, ImagedRel>();
  private readonly dirty = new Set<string>();
  /** How the last open went (tests, benchmarks): `relations` restored from images. */
  readonly stats = { openedFrom: 'none' as 'none' | 'checkpoint' | 'keys', relations: 0, checkpoints: 0, checkpointsSkipped: 0 };
  /** (request schema, rel) → resolution; cleared whenever a frame changes any schema. */
  private readonly resolved = new Map<string, ResolvedRelation>();

  // ---- participant: writes -------------------------------------------------

  deriveRow(change: RowChangeEvent): readonly KeyWrite[] {
    const m = change.manifest;
    if (m.relations.length === 0) return [];
    const writes: KeyWrite[] = [];
    for (const rel of m.relations) {
      const before = change.before ? edgesOfRow(rel, m, change.pk, change.before.values) : [];
      const after = change.after ? edgesOfRow(rel, m, change.pk, change.after.values) : [];
      writes.push(...edgeWrites(keyIdOf(m), rel.name, before, after));
    }
    return writes;
  }

  async deriveSchema(manifest: TableManifest, previous: TableManifest | undefined, ctx: DeriveContext): Promise<readonly KeyWrite[]> {
    for (const rel of manifest.relations) checkRelation(manifest, rel, ctx);
    // Edges are kept under the table's key id (keyIdOf). A migration's cutover moved the table
    // onto its shadow's keys: the edges there are the shadow's, made by the same relations.
    const id = keyIdOf(manifest);
    if (previous && keyIdOf(previous) !== id) previous = ctx.manifest(id) ?? previous;
    if (!previous || sameRelations(previous, manifest)) return [];
    // Relations changed on a table that may hold rows: rewrite its edges from its rows.
    const writes: KeyWrite[] = [];
    const [gte, lt] = schemaEdgeRange(id);
    for (const [key] of await ctx.range({ gte, lt })) writes.push({ key, value: null });
    if (manifest.relations.length === 0) return writes;
    const rows = prefixRange(ROW_SPACE, [keyIdOf(manifest)]);
    const fresh = new Map<string, KeyWrite>();
    for (const [key] of await ctx.range(rows)) {
      const pk = decodeKey(key).slice(1);
      const row = await ctx.getRow(manifest.id, pk);
      if (!row) continue;
      for (const rel of manifest.relations) {
        for (const w of edgeWrites(id, rel.name, [], edgesOfRow(rel, manifest, pk, row.values))) fresh.set(w.key.toString('latin1'), w);
      }
    }
    const out = writes.filter((w) => !fresh.has(w.key.toString('latin1')));
    out.push(...fresh.values());
    return out;
  }

  dropRanges(manifest: TableManifest): ReadonlyArray<readonly [Buffer, Buffer]> {
    return this.keyRanges(keyIdOf(manifest));
  }

  /**
   * `clear_relation {schema, relation, limit?}`: deletes up to `limit` (default 2,000) edge keys
   * (both directions) of a relation the table does not declare (an online migration's dropped
   * relation after its cutover, or the one it was building in place when it was aborted);
   * answers `{deleted}` (fewer than `limit`: none left). A declared relation is refused. No
   * adjacency in memory holds an undeclared relation, so nothing else changes.
   */
  deriveCustom(ch: CustomChange, ctx: DeriveContext): Promise<{ writes: KeyWrite[]; result: JsonValue }> {
    return clearUnused(
      { type: 'clear_relation', field: 'relation', declared: (m, r) => m.relations.some((x) => x.name === r), range: (id, r) => prefixRange(EDGE_SPACE, [id, r]) },
      ch,
      ctx,
    );
  }

  keyRanges(keyId: string): ReadonlyArray<readonly [Buffer, Buffer]> {
    return [schemaEdgeRange(keyId)];
  }

  // ---- participant: frames and open -----------------------------------------

  /**
   * Keeps the store for lazy builds, and loads the checkpoint's images of the relations that
   * were built when it was taken (graph-image.ts): those answer at once, and the frames after
   * the image's LSN are replayed into them. Every other relation is built from its edge keys on
   * first use (the keys cover every frame), as is every relation of a store without images.
   */
  async open(store: StoreReader): Promise<Lsn> {
    this.reader = store;
    this.rels.clear();
    this.imaged.clear();
    this.dirty.clear();
    this.changed = 0;
    const snap = store.snapshot();
    try {
      const loaded = await loadGraphImages(snap);
      if (loaded) {
        for (const [r, adj] of loaded.adjs) {
          this.rels.set(relKey(r.schema, r.rel), { adj });
          this.imaged.set(relKey(r.schema, r.rel), r);
        }
        this.applied = loaded.record.lsn;
        this.hasImage = true;
        this.imageLsn = loaded.record.lsn;
        Object.assign(this.stats, { openedFrom: 'checkpoint', relations: loaded.adjs.length });
        return loaded.record.lsn;
      }
      this.applied = store.lastLsn; // the store's last LSN (while it opens: the log's tail)
      Object.assign(this.stats, { openedFrom: 'keys', relations: 0 });
      return Number.MAX_SAFE_INTEGER;
    } finally {
      await snap.release();
    }
  }

  /**
   * Images the built relations changed since the last checkpoint (compacting them first), with
   * the LSN applied, in one synced batch. Imaging is synchronous (a consistent cut), so a
   * background checkpoint is skipped while the edge writes since the last image are under a
   * tenth of the built relations' edges (at least MIN_IMAGE_CHANGES); it then answers the
   * image's LSN and the log keeps the frames after it. With nothing built and no image there is
   * nothing to write: the edge keys are the state, and every frame is covered.
   */
  async checkpoint(store: StoreReader, opts: { final?: boolean } = {}): Promise<Lsn> {
    const built = [...this.rels].filter(([, st]) => st.adj) as Array<[string, RelState & { adj: Adjacency }]>;
    if (built.length === 0 && !this.hasImage) return store.lastLsn;
    if (!opts.final && this.hasImage && this.dirty.size > 0) {
      let edges = 0;
      for (const [, st] of built) edges += st.adj.edgeCount;
      if (this.changed < Math.max(MIN_IMAGE_CHANGES, edges / 10)) {
        this.stats.checkpointsSkipped++;
        return this.imageLsn;
      }
    }
    const lsn = this.applied;
    const writes: KeyWrite[] = [];
    const rels: ImagedRel[] = [];
    for (const [key, st] of built) {
      const prev = this.imaged.get(key);
      if (prev && !this.dirty.has(key)) {
        rels.push(prev);
        continue;
      }
      const [schema, rel] = key.split('\u0000');
      const chunks = encodeAdjacency(st.adj);
      chunks.forEach((c, i) => writes.push({ key: graphChunkKey(schema, rel, i), value: c }));
      for (let i = chunks.length; i < (prev?.chunks ?? 0); i++) writes.push({ key: graphChunkKey(schema, rel, i), value: null });
      const r: ImagedRel = { schema, rel, chunks: chunks.length, crc: crcOf(chunks) };
      rels.push(r);
      this.imaged.set(key, r);
    }
    for (const [key, r] of [...this.imaged]) {
      if (this.rels.get(key)?.adj) continue;
      for (let i = 0; i < r.chunks; i++) writes.push({ key: graphChunkKey(r.schema, r.rel, i), value: null });
      this.imaged.delete(key);
    }
    const record: GraphRecord = { v: GRAPH_IMAGE_FORMAT, lsn, rels };
    writes.push({ key: GRAPH_CHECKPOINT_KEY, value: Buffer.from(JSON.stringify(record)) });
    this.dirty.clear();
    this.changed = 0;
    try {
      await store.writeCheckpoint(writes);
    } catch (e) {
      // the store keeps the previous checkpoint; the next one images every built relation again
      for (const [key] of built) this.dirty.add(key);
      throw e;
    }
    this.hasImage = true;
    this.imageLsn = lsn;
    this.stats.checkpoints++;
    return lsn;
  }

  /** Gives the engine its store when it was not opened as a participant (apps/api EngineHooks). */
  attach(store: StoreReader): void {
    this.reader ??= store;
  }

  apply(frame: CommittedFrame): void {
    if (frame.lsn > this.applied) this.applied = frame.lsn;
    for (const c of frame.changes) {
      if (c.op === 'schema_put' || c.op === 'schema_drop') {
        // Adjacencies are by key id: the schema's own, and any no table uses any more (a cutover moved off them).
        const live = new Set(this.reader?.manifests().map(keyIdOf) ?? []);
        const own = this.reader?.manifests().find((m) => m.id === c.schema);
        this.forgetSchema(own ? keyIdOf(own) : c.schema);
        if (this.reader) for (const k of [...this.rels.keys()]) if (!live.has(k.slice(0, k.indexOf('\u0000')))) this.forgetSchema(k.slice(0, k.indexOf('\u0000')));
        this.resolved.clear();
      }
    }
    if (this.rels.size === 0) return;
    for (const w of frame.writes) {
      if (w.key[0] !== E_BYTE) continue;
      const t = decodeKey(w.key);
      if (t[2] !== FORWARD) continue;
      const key = relKey(t[0] as string, t[1] as string);
      const st = this.rels.get(key);
      if (!st) continue;
      this.dirty.add(key);
      this.changed++;
      if (st.adj) applyWrite(st.adj, t, w.value);
      else st.pending?.push(w);
    }
  }

  private forgetSchema(schema: string): void {
    for (const k of [...this.rels.keys()]) if (k.startsWith(`${schema}\u0000`)) this.rels.delete(k);
    for (const k of this.imaged.keys()) if (k.startsWith(`${schema}\u0000`)) this.dirty.add(k);
  }

  // ---- reader --------------------------------------------------------------

  /**
   * Finds `rel` for a request on `schema`: declared on `schema`, else a relation of that
   * name on another table whose source (then: target) is `schema`, so that
   * `/graph/{target}/reverse?rel=` works from the target's side. Unknown schema → `schema_not_found`;
   * unknown relation → `not_found`.
   */
  resolve(schema: string, rel: string): ResolvedRelation {
    const key = relKey(schema, rel);
    let r = this.resolved.get(key);
    if (!r) this.resolved.set(key, (r = this.lookup(schema, rel)));
    return r;
  }

  private lookup(schema: string, rel: string): ResolvedRelation {
    const manifests = this.store().manifests();
    const m = manifests.find((x) => x.id === schema);
    if (!m) throw new DbError('schema_not_found', `schema "${schema}" is not registered`, { schema });
    const own = m.relations.find((r) => r.name === rel);
    if (own) return { schema, def: own };
    for (const end of ['source', 'target'] as const) {
      // A migration's shadow table (`<table>__mig_<id>`) repeats its table's relations: never the one meant.
      for (const other of manifests.filter((x) => !isInternalTable(x.table))) {
        const r = other.relations.find((x) => x.name === rel && x[end] === schema);
        if (r) return { schema: other.id, def: r };
      }
    }
    throw new DbError('not_found', `relation "${rel}" is not declared on schema "${schema}", nor on a table whose relation starts or ends there`, {
      schema,
      rel,
    });
  }

  /** Adjacency keys of resolved relations (a schema change clears `resolved`, hence new objects and keys). */
  private readonly relKeys = new WeakMap<ResolvedRelation, string>();

  /** The key of a resolved relation's adjacency: its schema's key id and its name (keyOf lists the manifests: ~15 µs). */
  private relKeyOf(relation: ResolvedRelation): string {
    let k = this.relKeys.get(relation);
    if (k === undefined) this.relKeys.set(relation, (k = relKey(this.keyOf(relation.schema), relation.def.name)));
    return k;
  }

  /** The adjacency of a relation when it is built (no build started), else undefined: for a read answered in this turn. */
  adjacencyNow(schema: string, rel: string): { relation: ResolvedRelation; adj: Adjacency } | undefined {
    const relation = this.resolve(schema, rel);
    const adj = this.rels.get(this.relKeyOf(relation))?.adj;
    return adj ? { relation, adj } : undefined;
  }

  /** The adjacency of a relation, built from the store on first use. */
  async adjacency(schema: string, rel: string): Promise<{ relation: ResolvedRelation; adj: Adjacency }> {
    const relation = this.resolve(schema, rel);
    const key = this.relKeyOf(relation);
    let st = this.rels.get(key);
    if (!st) this.rels.set(key, (st = {}));
    if (st.adj) return { relation, adj: st.adj };
    st.building ??= this.build(key, st, relation);
    return { relation, adj: await st.building };
  }

  private async build(key: string, st: RelState, relation: ResolvedRelation): Promise<Adjacency> {
    st.pending = [];
    // The snapshot is taken after `pending` starts collecting, so every frame is
    // either in the snapshot, in `pending`, or both (applying twice is harmless).
    const snap = this.store().snapshot();
    const adj = new Adjacency();
    try {
      const { gte, lt } = relationRange(this.keyOf(relation.schema), relation.def.name, FORWARD);
      for await (const batch of snap.rawRange({ gte, lt, batchSize: 4096 })) {
        for (const [k, v] of batch) {
          const [src, dst, owner] = decodeEdgeEnds(k, gte.length);
          if (v.length === 0) adj.append({ src, dst, owner });
          else adj.append({ src, dst, owner, ...decodeEdgeValue(v) });
        }
      }
      await adj.compactInSteps(); // the scan's edges become the CSR base, without a long stall
    } catch (e) {
      if (this.rels.get(key) === st) this.rels.delete(key);
      throw e;
    } finally {
      await snap.release();
    }
    for (const w of st.pending) applyWrite(adj, decodeKey(w.key), w.value);
    st.pending = undefined;
    st.adj = adj;
    st.building = undefined;
    return adj;
  }

  /** The key id a schema's edges are under (keyIdOf its manifest). */
  private keyOf(schema: string): string {
    const m = this.store().manifests().find((x) => x.id === schema);
    return m ? keyIdOf(m) : schema;
  }

  private store(): StoreReader {
    if (!this.reader) throw new DbError('internal_error', 'graph index is not attached to a store');
    return this.reader;
  }

  /** Distinct neighbour node strings of `node` along `rel`. */
  async neighbors(schema: string, rel: string, node: string): Promise<string[]> {
    const { adj } = await this.adjacency(schema, rel);
    return adj.neighbors(node);
  }

  /** Breadth-first visit from `src`, `depth` hops at most (0..MAX_DEPTH), the source first. */
  async bfs(schema: string, rel: string, src: string, depth: number = DEFAULT_DEPTH): Promise<Visit[]> {
    checkDepth(depth, 'depth');
    const { adj } = await this.adjacency(schema, rel);
    return bfs(adj, src, depth);
  }

  /** Whether `dst` is reachable from `src` in at most `maxDepth` hops, with a fewest-hops path. */
  async path(schema: string, rel: string, src: string, dst: string, maxDepth: number = MAX_DEPTH): Promise<{ reachable: boolean; path: string[] }> {
    checkDepth(maxDepth, 'max_depth');
    const { adj } = await this.adjacency(schema, rel);
    const p = shortestPath(adj, src, dst, maxDepth);
    return p ? { reachable: true, path: p } : { reachable: false, path: [] };
  }

  /**
   * Least-weight path. Edge weight: `weights["<from>|<to>"]` if given, else the row's
   * `weightField` column (default: the relation's `weight` column), else 1.
   */
  async dijkstra(
    schema: string,
    rel: string,
    src: string,
    dst: string,
    opts: { weightField?: string; weights?: Readonly<Record<string, number>>; pass?: (node: string) => boolean } = {},
  ): Promise<DijkstraResult> {
    const overrides = opts.weights ? checkWeights(opts.weights) : undefined;
    const { relation, adj } = await this.adjacency(schema, rel);
    const field = opts.weightField === undefined || opts.weightField === relation.def.weight ? undefined : opts.weightField;
    const base: WeightFn = field === undefined ? adj.weights() : adj.propWeights(field);
    const weight: WeightFn = overrides
      ? (u, v, slot) => {
          const o = overrides.get(`${adj.name(u)}|${adj.name(v)}`);
          return o === undefined ? base(u, v, slot) : o;
        }
      : base;
    const pass = opts.pass;
    return dijkstra(adj, src, dst, weight, pass ? (v) => pass(adj.name(v)) : undefined);
  }

  /**
   * Rows of the relation's source table that point at `pk` (one hop inbound).
   * A self-relation (source = target) is refused: its direction is ambiguous.
   */
  async reverse(schema: string, rel: string, pk: string): Promise<Row[]> {
    const relation = this.resolve(schema, rel);
    checkReverse(relation, rel);
    const { adj } = await this.adjacency(schema, rel);
    const sources = adj.sources(pk);
    const sm = this.store().manifests().find((m) => m.id === relation.def.source);
    if (!sm || sources.length === 0) return [];
    const snap = this.store().snapshot();
    try {
      const rows: Row[] = [];
      for (const s of sources) {
        let tuple: JsonValue[];
        try {
          tuple = tupleOfNode(s, sm);
        } catch {
          continue; // a key text that cannot be a key of the source table names no row
        }
        const r = await snap.getRow(sm.id, tuple);
        if (r) rows.push(r.values);
      }
      return rows;
    } finally {
      await snap.release();
    }
  }
}

/** The reverse route's rule (spec §2.6): a self-relation (source = target) is refused, its direction being ambiguous. */
export function checkReverse(relation: ResolvedRelation, rel: string): void {
  if (relation.def.source === relation.def.target) {
    throw new DbError(
      'validation_failed',
      `relation "${rel}" links ${relation.def.source} to itself: reverse traversal is only defined when the source and target tables differ (use neighbors on the relation instead)`,
      { rel },
    );
  }
}

function relKey(schema: string, rel: string): string {
  return `${schema}\u0000${rel}`;
}

function applyWrite(adj: Adjacency, t: JsonValue[], value: Buffer | null): void {
  const src = t[3] as string;
  const dst = t[4] as string;
  const owner = t[5] as string | null;
  if (value === null) adj.remove(src, dst, owner);
  else adj.put({ src, dst, owner, ...decodeEdgeValue(value) });
}

function checkDepth(d: number, name: string): void {
  if (!Number.isInteger(d) || d < 0 || d > MAX_DEPTH) {
    throw new DbError('validation_failed', `${name} must be an integer from 0 to ${MAX_DEPTH}, got ${d}`, { field: name });
  }
}

function checkWeights(weights: Readonly<Record<string, number>>): Map<string, number> {
  const m = new Map<string, number>();
  for (const [k, v] of Object.entries(weights)) {
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
      throw new DbError('validation_failed', `weights_json["${k}"] must be a finite number >= 0, got ${JSON.stringify(v)}`, { field: 'weights_json' });
    }
    if (!k.includes('|')) throw new DbError('validation_failed', `weights_json key "${k}" must be "<from>|<to>"`, { field: 'weights_json' });
    m.set(k, v);
  }
  return m;
}

/** Same relations and key; `a` may be a migration's shadow of `b` (its own id standing for b's). */
function sameRelations(a: TableManifest, b: TableManifest): boolean {
  const rels = (m: TableManifest) => m.relations.map((r) => ({ ...r, source: r.source === m.id ? '' : r.source, target: r.target === m.id ? '' : r.target }));
  return JSON.stringify(rels(a)) === JSON.stringify(rels(b)) && JSON.stringify(a.primary_key) === JSON.stringify(b.primary_key);
}

/** Semantic checks beyond the grammar: key arity against registered tables. */
function checkRelation(m: TableManifest, rel: RelationDef, ctx: DeriveContext): void {
  const where = `relations "${rel.name}"`;
  const target = rel.target === m.id ? m : ctx.manifest(rel.target);
  if (target && target.primary_key.length !== rel.columns.length) {
    throw new DbError(
      'validation_failed',
      `manifest: ${where}: columns has ${rel.columns.length} column(s) but ${rel.target} has a ${target.primary_key.length}-column primary key (a composite target key needs one column per key part)`,
      { key: `${where}.columns` },
    );
  }
  if (rel.source_columns) {
    const source = rel.source === m.id ? m : ctx.manifest(rel.source);
    if (source && source.primary_key.length !== rel.source_columns.length) {
      throw new DbError(
        'validation_failed',
        `manifest: ${where}: source_columns has ${rel.source_columns.length} column(s) but ${rel.source} has a ${source.primary_key.length}-column primary key`,
        { key: `${where}.source_columns` },
      );
    }
  } else if (rel.source !== m.id) {
    throw new DbError('validation_failed', `manifest: ${where}: source must be this table unless source_columns names the edge table's source key`, {
      key: `${where}.source`,
    });
  }
}

