/**
 * The vector CommitParticipant of one tenant store, and its reader (top-k).
 *
 * Writes: a standalone put/delete is a `custom` change; a row of a schema whose manifest
 * declares `[vector]` derives its entry from the row. Both become key writes under V in
 * the same frame as the change. `apply` then feeds the frame's V writes to the in-memory
 * tables, so the state is a pure function of the keys (live, replay and rebuild alike).
 *
 * @example
 *   const vectors = new VectorParticipant();
 *   const store = await TenantStore.open({ dir, participants: [vectors] });
 *   await store.commit({ changes: [VectorParticipant.put('docs', { id: 'a', embedding: [1, 0] })] });
 *   vectors.topk('docs', { vector: [1, 0], k: 5 }); // [{ id: 'a', distance: 0, metadata: null }]
 */
import { DbError, stringifyJson, type JsonValue, type Lsn, type TableManifest, type VectorIndexKind } from '@mmdb/core';
import type { CommitParticipant, CommittedFrame, CustomChange, DeriveContext, KeyWrite, RowChangeEvent, Snapshot, StoreReader } from '@mmdb/storage';
import { decodeKey, keyIdOf, prefixRange } from '@mmdb/storage';
import { VectorTable, type Match, type TableSpec } from './table';
import { V_BYTE, CHECKPOINT_KEY, ALL_TABLES, chunkKey, decodeEntry, encodeEntry, entryKey, entryRange, metaKey, parseKey, tableRange } from './keys';
import { checkDirection, checkVector, parseId, parseK, parseMetadata, parseMetric, parseMode, parseTableName, parseVector, toNumbers, type Metadata } from './validate';
import type { VectorMetric } from './metric';

export const PARTICIPANT = 'vector';
const CHUNK = 8 << 20;
/** Vector writes below which a background checkpoint never re-images (see `checkpoint`). */
const IMAGE_MIN_CHANGES = 1_000;

export interface PutEntry {
  id: string;
  embedding: number[];
  metadata?: Metadata | null;
  metric?: VectorMetric;
}

export interface TopKRequest {
  vector: unknown;
  k?: unknown;
  mode?: unknown;
  filter?: unknown;
  metric?: unknown;
}

interface StoredSpec extends TableSpec {
  /** The row column holding the vector, for manifest tables. */
  column?: string;
}

/** The store's last LSN; read from the log's tail when the store cannot say yet (during its open). */
async function lastLsnOf(store: StoreReader, snap: Snapshot): Promise<Lsn> {
  try {
    const n = store.lastLsn;
    if (typeof n === 'number') return n;
  } catch {
    /* the coordinator is not up while the store opens */
  }
  for await (const batch of snap.rawRange({ gte: Buffer.from('L'), lt: Buffer.from('M'), reverse: true, limit: 1 }))
    for (const [k] of batch) return Number(k.readBigUInt64BE(1));
  return 0;
}

/** A row's id in its vector table: the single pk value as text, or the pk tuple as JSON. */
export function rowVectorId(pk: readonly JsonValue[]): string {
  return pk.length === 1 ? String(pk[0]) : stringifyJson(pk);
}

export class VectorParticipant implements CommitParticipant {
  readonly name = PARTICIPANT;
  private reader?: StoreReader;
  private readonly tables = new Map<string, VectorTable>();
  private readonly dirty = new Set<string>();
  private readonly chunksOf = new Map<string, number>();
  private applied: Lsn = 0;
  /** Whether the store holds images (CHECKPOINT_KEY), their LSN, and the vector writes applied since (see `checkpoint`). */
  private hasImage = false;
  private imageLsn: Lsn = 0;
  private changedSinceImage = 0;
  /** How the last open went (tests and benchmarks read it). */
  readonly stats = { openedFrom: 'none' as 'none' | 'checkpoint' | 'keys', checkpointLsn: 0, checkpoints: 0, checkpointsSkipped: 0 };

  /** Builds the custom change for a standalone put (checks the body; the lock is checked at commit). */
  static put(table: string, body: unknown): CustomChange {
    if (!body || typeof body !== 'object' || Array.isArray(body)) throw new DbError('validation_failed', 'body must be an object {id, embedding, metadata?, metric?}');
    const b = body as Record<string, unknown>;
    const payload = {
      table: parseTableName(table),
      id: parseId(b.id),
      embedding: toNumbers(parseVector('embedding', b.embedding)),
      metadata: parseMetadata('metadata', b.metadata),
      metric: parseMetric(b.metric) ?? null,
    };
    return { op: 'custom', participant: PARTICIPANT, type: 'put', payload };
  }

  static delete(table: string, id: string): CustomChange {
    return { op: 'custom', participant: PARTICIPANT, type: 'delete', payload: { table: parseTableName(table), id: parseId(id) } };
  }

  // ---- derive (inside the commit, before the frame is written) ----

  async deriveCustom(change: CustomChange, ctx: DeriveContext): Promise<{ writes: KeyWrite[]; result: JsonValue }> {
    const p = change.payload as Record<string, JsonValue>;
    const table = parseTableName(p.table);
    const id = parseId(p.id);
    if (ctx.manifest(table)) throw new DbError('validation_failed', `"${table}" is a schema: its vectors are written through its rows`, { field: 'table' });
    const ek = entryKey(table, id);
    const existed = (await ctx.get(ek)) !== undefined;
    if (change.type === 'delete') return { writes: existed ? [{ key: ek, value: null }] : [], result: { id, deleted: existed } };
    if (change.type !== 'put') throw new DbError('validation_failed', `unknown vector change "${change.type}"`);
    const embedding = parseVector('embedding', p.embedding);
    const metric = parseMetric(p.metric);
    const metadata = parseMetadata('metadata', p.metadata);
    const writes: KeyWrite[] = [];
    const raw = await ctx.get(metaKey(table));
    if (raw) {
      const spec = JSON.parse(raw.toString('utf8')) as StoredSpec;
      if (metric && metric !== spec.metric)
        throw new DbError('metric_mismatch', `table "${table}" is locked to metric ${spec.metric}, not ${metric}`, { field: 'metric', expected: spec.metric });
      parseVector('embedding', p.embedding, spec.dim);
      checkDirection('embedding', embedding, spec.metric);
    } else {
      const spec: StoredSpec = { dim: embedding.length, metric: metric ?? 'cosine', index: 'auto', params: {} };
      checkDirection('embedding', embedding, spec.metric);
      writes.push({ key: metaKey(table), value: Buffer.from(JSON.stringify(spec)) });
    }
    writes.push({ key: ek, value: encodeEntry(embedding, metadata) });
    return { writes, result: { id, table, created: !existed } };
  }

  async deriveSchema(m: TableManifest, previous: TableManifest | undefined, ctx?: DeriveContext): Promise<KeyWrite[]> {
    if (!m.vector) return [];
    // Entries are kept under the table's key id (keyIdOf). A migration's cutover moved the table
    // onto its shadow's keys: the entries there are the shadow's, built under its declaration.
    const id = keyIdOf(m);
    if (previous && ctx && keyIdOf(previous) !== id) previous = ctx.manifest(id) ?? previous;
    const v = m.vector;
    const pv = previous?.vector;
    if (pv && (pv.dim !== v.dim || pv.metric !== v.metric || pv.column !== v.column))
      throw new DbError('validation_failed', `[vector] of "${m.id}" is locked to ${pv.column}/${pv.dim}/${pv.metric}`, { field: 'vector' });
    const existing = this.tables.get(id);
    // A standalone vector table (vector puts) of that name is refused. The table's own
    // declaration put back is not: a migration's cutover frame registers the manifest without
    // its derived sections, then the target manifest with them (issue 15: a rewrite migration
    // of a table with a [vector] section failed here).
    if (!pv && existing && (existing.spec as StoredSpec).column === undefined) throw new DbError('validation_failed', `a vector table "${m.id}" already exists`, { field: 'vector' });
    const spec: StoredSpec = { dim: v.dim, metric: v.metric, index: v.index as VectorIndexKind, params: v.params, column: v.column };
    const out: KeyWrite[] = [{ key: metaKey(id), value: Buffer.from(JSON.stringify(spec)) }];
    if (pv || !ctx) return out;
    // The declaration is new to this manifest: the entries are rebuilt from the table's rows
    // (including rows put earlier in the same frame, as a migration's cutover puts them).
    const fresh = new Map<string, KeyWrite>();
    for (const [key] of await ctx.range(prefixRange('R', [keyIdOf(m)]))) {
      const pk = decodeKey(key).slice(1) as JsonValue[];
      const row = await ctx.getRow(m.id, pk);
      if (row) for (const w of this.deriveRow({ schema: m.id, manifest: m, pk, before: null, after: row })) fresh.set(w.key.toString('latin1'), w);
    }
    const r = entryRange(id);
    for (const [key] of await ctx.range({ gte: r.gte, lt: r.lt })) if (!fresh.has(key.toString('latin1'))) out.push({ key, value: null });
    out.push(...fresh.values());
    return out;
  }

  deriveRow(c: RowChangeEvent): KeyWrite[] {
    const v = c.manifest.vector;
    if (!v) return [];
    const id = rowVectorId(c.pk);
    const value = c.after?.values[v.column];
    const table = keyIdOf(c.manifest);
    if (value === undefined || value === null) return c.before?.values[v.column] != null ? [{ key: entryKey(table, id), value: null }] : [];
    const embedding = parseVector(v.column, value, v.dim);
    checkDirection(v.column, embedding, v.metric);
    const metadata: Metadata = {};
    for (const [k, x] of Object.entries(c.after!.values)) if (k !== v.column) metadata[k] = x;
    return [{ key: entryKey(table, id), value: encodeEntry(embedding, metadata) }];
  }

  /** What verify rebuilds from rows: the entries (not the spec written at registration, nor checkpoint images). */
  verifyRanges(m: TableManifest): Array<[Buffer, Buffer]> {
    const r = entryRange(keyIdOf(m));
    return [[r.gte, r.lt]];
  }

  dropRanges(m: TableManifest): Array<[Buffer, Buffer]> {
    return this.keyRanges(keyIdOf(m));
  }

  keyRanges(keyId: string): Array<[Buffer, Buffer]> {
    const r = tableRange(keyId);
    return [[r.gte, r.lt]];
  }

  // ---- apply (after durability, in LSN order) ----

  apply(frame: CommittedFrame): void {
    for (const ch of frame.changes) {
      // A dropped shadow whose keys its table now uses keeps them; a table moved to other keys leaves its old index.
      if (ch.op === 'schema_drop') {
        // A migration's shadow goes in a background drop, and its id is never registered again; a
        // table dropped by its user may be registered again later (recovery replays with the final catalogue).
        if (ch.background !== true || !this.liveKeys()?.has(ch.schema)) this.dropTable(ch.schema);
        this.sweep();
      } else if (ch.op === 'schema_put' && ch.physical !== undefined) this.sweep();
    }
    // a frame's writes may come in key order, where a table's spec ('m') sorts after its entries ('e')
    for (const w of frame.writes) if (w.key[0] === V_BYTE && parseKey(w.key)?.kind === 'm') this.applyWrite(w.key, w.value);
    for (const w of frame.writes) if (w.key[0] === V_BYTE && parseKey(w.key)?.kind !== 'm') this.applyWrite(w.key, w.value);
    if (frame.lsn > this.applied) this.applied = frame.lsn;
  }

  /** The key ids the registered tables' entries are under (undefined before open). */
  private liveKeys(): Set<string> | undefined {
    return this.reader ? new Set(this.reader.manifests().map(keyIdOf)) : undefined;
  }

  /** Drops the in-memory index of a manifest table whose key id no table uses any more (its keys are retired in the background). */
  private sweep(): void {
    const live = this.liveKeys();
    if (!live) return;
    for (const [name, t] of [...this.tables]) if ((t.spec as StoredSpec).column !== undefined && !live.has(name)) this.dropTable(name);
  }

  /** The key id of a table's entries: its manifest's (keyIdOf), or a standalone table's name. */
  private keyOf(name: string): string {
    const m = this.reader?.manifests().find((x) => x.id === name);
    return m ? keyIdOf(m) : name;
  }

  private dropTable(name: string): void {
    this.tables.delete(name);
    this.dirty.add(name);
  }

  private applyWrite(key: Buffer, value: Buffer | null): void {
    const k = parseKey(key);
    if (!k) return;
    if (k.kind === 'm') {
      if (value === null) return this.dropTable(k.table);
      const spec = JSON.parse(value.toString('utf8')) as StoredSpec;
      const t = this.tables.get(k.table);
      if (!t || t.spec.dim !== spec.dim || t.spec.metric !== spec.metric) this.tables.set(k.table, new VectorTable(k.table, spec));
      else if (t.spec.index !== spec.index || stringifyJson(t.spec.params as JsonValue) !== stringifyJson(spec.params as JsonValue)) t.retune(spec);
      this.dirty.add(k.table);
    } else if (k.kind === 'e') {
      const t = this.tables.get(k.table);
      if (!t) return;
      if (value === null) t.delete(k.id);
      else {
        const e = decodeEntry(value);
        t.upsert(k.id, e.embedding, e.metadata);
      }
      this.dirty.add(k.table);
      this.changedSinceImage++;
    }
  }

  // ---- read ----

  /** The table, or 404 `not_found`. */
  table(name: string): VectorTable {
    const t = this.tables.get(this.keyOf(name));
    if (!t) throw new DbError('not_found', `no vector table "${name}"`, { table: name });
    return t;
  }

  /** Names of the tables: a manifest table by its schema id (not the key id its entries are under). */
  tableNames(): string[] {
    const byKey = new Map<string, string>();
    // Keys another table was switched onto are that table's (its migration's shadow is on its way out).
    for (const m of this.reader?.manifests() ?? []) if (!byKey.has(keyIdOf(m)) || m.physical !== undefined) byKey.set(keyIdOf(m), m.id);
    return [...this.tables.keys()].map((k) => byKey.get(k) ?? k);
  }

  /** Checks a top-k request (spec §4.8) against the table: the query vector, k, mode, metric lock and metadata filter. */
  checkTopK(name: string, body: TopKRequest): { table: VectorTable; vector: readonly number[]; k: number; mode: ReturnType<typeof parseMode>; filter: Metadata | null } {
    if (!body || typeof body !== 'object' || Array.isArray(body)) throw new DbError('validation_failed', 'body must be an object {vector, k?, mode?, filter?, metric?}');
    const t = this.table(name);
    const vector = checkVector('vector', body.vector, t.spec.dim); // not copied: topk copies it into the table's query buffer
    checkDirection('vector', vector, t.spec.metric);
    const k = parseK(body.k);
    const mode = parseMode(body.mode);
    const metric = parseMetric(body.metric);
    if (metric && metric !== t.spec.metric)
      throw new DbError('metric_mismatch', `table "${name}" is locked to metric ${t.spec.metric}, not ${metric}`, { field: 'metric', expected: t.spec.metric });
    return { table: t, vector, k, mode, filter: parseMetadata('filter', body.filter) };
  }

  /** Top-k over a table, checking the request (spec §4.8). */
  topk(name: string, body: TopKRequest): Match[] {
    const c = this.checkTopK(name, body);
    return c.table.topk(c.vector, { k: c.k, mode: c.mode, filter: c.filter });
  }

  // ---- durability ----

  async open(store: StoreReader): Promise<Lsn> {
    this.reader = store;
    const snap = store.snapshot();
    try {
      return await this.load(store, snap);
    } finally {
      this.sweep();
    }
  }

  private async load(store: StoreReader, snap: Snapshot): Promise<Lsn> {
    try {
      const rec = await snap.rawGet(CHECKPOINT_KEY);
      if (rec) {
        const { lsn, tables } = JSON.parse(rec.toString('utf8')) as { lsn: Lsn; tables: Record<string, number> };
        // every table's chunks in one read each, the tables loaded at once (an HNSW graph is
        // read on hnswlib's thread meanwhile), then kept in the record's order
        const loaded = await Promise.all(
          Object.entries(tables).map(async ([name, chunks]) => {
            const parts = await snap.rawGetMany(Array.from({ length: chunks }, (_, i) => chunkKey(name, i)));
            // a missing chunk: dropped after the checkpoint, and the replay drops it too
            if (parts.some((c) => c === undefined)) return null;
            return [name, chunks, await VectorTable.load(name, parts as Buffer[])] as const;
          }),
        );
        for (const l of loaded) {
          if (!l) continue;
          this.tables.set(l[0], l[2]);
          this.chunksOf.set(l[0], l[1]);
        }
        this.applied = lsn;
        this.hasImage = true;
        this.imageLsn = lsn;
        this.changedSinceImage = 0; // the replay that follows counts the frames after the image
        Object.assign(this.stats, { openedFrom: 'checkpoint', checkpointLsn: lsn });
        return lsn;
      }
      // no checkpoint yet: the V keys are the whole truth as of this snapshot
      // specs sort after their entries ('m' > 'e'): create the tables first
      const entries: Array<[Buffer, Buffer]> = [];
      for await (const batch of snap.rawRange({ ...ALL_TABLES, batchSize: 1024 }))
        for (const [k, v] of batch) {
          const pk = parseKey(k);
          if (pk?.kind === 'm') this.applyWrite(k, v);
          else if (pk?.kind === 'e') entries.push([k, v]);
        }
      for (const [k, v] of entries) this.applyWrite(k, v);
      const last = await lastLsnOf(store, snap);
      this.applied = last;
      Object.assign(this.stats, { openedFrom: 'keys', checkpointLsn: 0 });
      return last;
    } finally {
      await snap.release();
    }
  }

  /**
   * Images of the tables written since the last checkpoint, with the LSN they cover. Each image
   * is taken at one instant and produced in steps off the event loop (`VectorTable.imageChunks`),
   * but still costs time and I/O in proportion to its size (a 100k × 128 table: 120 MB), so a background (non-final) checkpoint is skipped until the vector writes since the
   * last image reach a tenth of all vectors (at least IMAGE_MIN_CHANGES). A skipped one answers
   * the last image's LSN, and the log keeps the frames after it for the replay; with no image in
   * the store it answers the LSN applied, since `open` then rebuilds from the V keys and needs no
   * frame. Imaging costs O(1) per write, and the log kept for vectors stays within a tenth of
   * their count.
   */
  async checkpoint(store: StoreReader, opts: { final?: boolean } = {}): Promise<Lsn> {
    // one at a time: a table's image holds its index still until the image is written
    const run = this.checkpointing.then(() => this.checkpointNow(store, opts));
    this.checkpointing = run.catch(() => undefined);
    return run;
  }

  private checkpointing: Promise<unknown> = Promise.resolve();

  private async checkpointNow(store: StoreReader, opts: { final?: boolean }): Promise<Lsn> {
    if (!opts.final && this.dirty.size > 0) {
      let total = 0;
      for (const t of this.tables.values()) total += t.size;
      if (this.changedSinceImage < Math.max(IMAGE_MIN_CHANGES, total / 10)) {
        this.stats.checkpointsSkipped++;
        return this.hasImage ? this.imageLsn : this.applied;
      }
    }
    const lsn = this.applied;
    const tables: Record<string, number> = {};
    const images: Array<[string, Promise<Buffer[]>]> = [];
    for (const [name, t] of this.tables) {
      if (!this.dirty.has(name) && this.chunksOf.has(name)) tables[name] = this.chunksOf.get(name)!;
      // every image is taken here, synchronously, at `lsn`; the bytes are produced in steps
      else images.push([name, t.imageChunks(CHUNK)]);
    }
    // frames applied while the images are produced and written mark tables dirty again
    this.dirty.clear();
    const changed = this.changedSinceImage;
    this.changedSinceImage = 0;
    const writes: KeyWrite[] = [];
    try {
      const chunks = await Promise.all(images.map(([, p]) => p));
      images.forEach(([name], j) => {
        const n = chunks[j].length;
        for (let i = 0; i < n; i++) writes.push({ key: chunkKey(name, i), value: chunks[j][i] });
        for (let i = n; i < (this.chunksOf.get(name) ?? 0); i++) writes.push({ key: chunkKey(name, i), value: null });
        tables[name] = n;
      });
      writes.push({ key: CHECKPOINT_KEY, value: Buffer.from(JSON.stringify({ lsn, tables })) });
      await store.writeCheckpoint(writes);
    } catch (e) {
      // nothing was written (one batch): the previous checkpoint stands; image these tables next time
      for (const [name] of images) this.dirty.add(name);
      this.changedSinceImage += changed;
      throw e;
    }
    this.hasImage = true;
    this.imageLsn = lsn;
    for (const name of [...this.chunksOf.keys()]) if (!(name in tables)) this.chunksOf.delete(name);
    for (const [name, n] of Object.entries(tables)) this.chunksOf.set(name, n);
    this.stats.checkpoints++;
    return lsn;
  }
}
