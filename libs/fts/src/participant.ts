/**
 * The fts CommitParticipant: derives postings, per-doc entries and field totals as
 * key writes of the row's frame (rows of tables with [[fulltext]] fields) or of a
 * standalone document's frame (`custom` changes `put_doc` / `delete_doc`), keeps the
 * in-memory FieldIndex of every field current from applied frames, and answers
 * searches.
 *
 * @example
 *   const fts = new FtsParticipant();
 *   const store = await TenantStore.open({ dir, participants: [fts] });
 *   await store.commit({ changes: [FtsParticipant.putDoc('notes', 'body', 'n1', 'shock waves')] });
 *   await fts.search('notes', 'body', '"shock wave"'); // [{ doc_id: 'n1', score: … }]
 */
import { DbError, parseJsonExact, stringifyJson, type FullTextDef, type JsonValue, type TableManifest } from '@mmdb/core';
import type {
  CommitParticipant,
  CommittedFrame,
  CustomChange,
  DeriveContext,
  KeyWrite,
  PkTuple,
  RowChangeEvent,
  StoreReader,
} from '@mmdb/storage';
import { clearUnused, decodeKey, keyIdOf, KEYSPACE, prefixRange } from '@mmdb/storage';
import { analyzerFor, queryStopTerms, type Analyzer } from './analysis';
import {
  configKey,
  decodeDocEntry,
  type DocEntry,
  decodeTermPositions,
  decodeFtsKey,
  decodeStats,
  docKey,
  encodeDocTerms,
  type FieldStats,
  encodeStats,
  statsKey,
  fieldRange,
  tableRange,
} from './codec';
import { FieldIndex } from './field-index';
import { ALL_TABLES, CHECKPOINT_FORMAT, CHECKPOINT_KEY, type CheckpointRecord, type ImagedField, allChunkKeys, chunkKey, crcOf, loadCheckpoint } from './checkpoint';
import { encodeFieldImage } from './image';
import { type SearchContext, compileQuery, type FeedbackOptions, type RankedDoc } from './query';
import { RANKING_DEFAULTS, rankClauses, type RankOptions } from './rank';
import { parseQuery } from './query-parser';
import { compileStructured, type StructuredQuery } from './structured';
import { DEFAULT_BM25, type Bm25Params } from './similarity';
import type { CollectStats } from './collector';

export const FTS_PARTICIPANT = 'fts';
/** Doc writes below which a background checkpoint never re-images (see `checkpoint`). */
const IMAGE_MIN_CHANGES = 1_000;
/**
 * Ranking options of a search; every default is the best measured general setting
 * (README "Ranking"), and `{ feedback: 'none', proximity: 'none', queryStopwords: 'none' }`
 * is plain BM25.
 */
export interface SearchOptions extends RankOptions {
  /**
   * `none` (default): the query's words are analyzed like the field's; `auto`: also drop
   * QUERY_STOPWORDS (request phrasing: papers, available…) from bare optional words, for the
   * english/standard analyzers. Off by default: the list was written while reading the public
   * Cranfield queries (DESIGN.md "Quality choices").
   */
  readonly queryStopwords?: 'auto' | 'none';
  readonly rm3?: FeedbackOptions;
  readonly stats?: CollectStats;
  /**
   * Read doc entries (positions, term vectors) from this snapshot, the caller's (a plan reads
   * rows and postings from one snapshot); not released here. Default: one taken per search.
   */
  readonly snapshot?: ReturnType<StoreReader['snapshot']>;
  /** Lifts the MAX_LIMIT cap (plans asking for every match pass the field's doc count). */
  readonly unbounded?: boolean;
  /** Plain BM25 hits carry their ordinal in the field's index (`RankedDoc.ord`, `docIds`). */
  readonly ordinals?: boolean;
  /** With `unbounded` and plain BM25 (no proximity, no feedback): every match, in no particular order (an aggregation's input). */
  readonly unordered?: boolean;
  /** Where a structured query sits in the caller's request, for its errors (default `$.query`). */
  readonly queryPath?: string;
}

/** Default and largest `limit` of a search. */
export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 1000;

/** Settings of one field: from its manifest declaration, or a standalone field's defaults. */
export interface FieldSettings {
  readonly analyzer: string;
  readonly stopwords?: readonly string[];
  readonly k1: number;
  readonly b: number;
}

/** The doc id of a row: its single pk value as text, or the JSON of a composite pk. */
export function pkDocId(pk: PkTuple): string {
  return pk.length === 1 ? String(pk[0]) : stringifyJson(pk);
}

const fkey = (table: string, field: string) => `${table}\u0000${field}`;

/** What derive produced, by the value buffer: apply skips decoding when the frame carries the same buffer. */
interface DerivedDoc extends DocEntry {
  readonly kind: 'd';
  readonly table: string;
  readonly field: string;
  readonly doc: string;
}
interface DerivedStats extends FieldStats {
  readonly kind: 's';
  readonly table: string;
  readonly field: string;
}

interface PutDocPayload {
  table: string;
  field: string;
  doc_id: string;
  text: string | null;
}

/** Work per event-loop turn of the champion tiers' build after an open. */
const TIER_TURN_MS = 5;

export class FtsParticipant implements CommitParticipant {
  readonly name = FTS_PARTICIPANT;
  private reader?: StoreReader;
  /** LSN of the last frame applied to the in-memory index (its F entries are in the store with it). */
  private applied = 0;
  private readonly fields = new Map<string, FieldIndex>();
  /** Standalone fields, as created by their first POST. */
  private readonly standalone = new Map<string, FieldSettings>();
  private readonly analyzers = new Map<string, Analyzer>();
  private manifestCache: Map<string, TableManifest> | null = null;
  /** The checkpoint: which fields' images the store holds, the fields changed since, and leftovers of an unusable one. */
  private readonly imaged = new Map<string, ImagedField>();
  private readonly dirty = new Set<string>();
  private staleChunks: Buffer[] = [];
  private hasImage = false;
  private imageLsn = 0;
  private changedSinceImage = 0;
  /**
   * How the last open went and what checkpoints did (tests, benchmarks, diagnostics):
   * `openDecoded` is the doc entries the last open decoded (0 when it loaded an image and
   * replayed no frame), `entriesDecoded` the running total, `fallback` why a stored checkpoint
   * was not used.
   */
  readonly stats = {
    openedFrom: 'none' as 'none' | 'checkpoint' | 'keys',
    checkpointLsn: 0,
    imageBytes: 0,
    fallback: null as string | null,
    openDecoded: 0,
    entriesDecoded: 0,
    checkpoints: 0,
    checkpointsSkipped: 0,
    /** ms the background build of the champion tiers (and decoding of the lists left packed) took after the last open (-1 while it runs). */
    tiersMs: 0,
    /** What stopped that background work (a packed list that did not decode), else null. */
    backgroundError: null as string | null,
  };
  /** Decoded doc entries and totals by the value buffer derive produced (see DerivedDoc). */
  private readonly derived = new WeakMap<Buffer, DerivedDoc | DerivedStats>();

  /** A `custom` change that indexes (or replaces) a standalone document. */
  static putDoc(table: string, field: string, docId: string, text: string): CustomChange {
    return { op: 'custom', participant: FTS_PARTICIPANT, type: 'put_doc', payload: { table, field, doc_id: docId, text } };
  }

  /** A `custom` change that removes a standalone document. */
  static deleteDoc(table: string, field: string, docId: string): CustomChange {
    return { op: 'custom', participant: FTS_PARTICIPANT, type: 'delete_doc', payload: { table, field, doc_id: docId, text: null } };
  }

  // ---- derivation (inside the commit, before durability) ----

  /**
   * Validates the fulltext sections and makes the stored documents follow a changed manifest
   * (in the same frame): a field no longer indexed loses its documents and totals; a field newly
   * indexed, or whose analysis changed (analyzer, stopwords), is indexed again from every row.
   */
  async deriveSchema(manifest: TableManifest, previous?: TableManifest, ctx?: DeriveContext): Promise<KeyWrite[]> {
    this.validate(manifest);
    if (!previous || !ctx) return [];
    // Entries are kept under the table's key id (keyIdOf). A migration's cutover moved the table
    // onto its shadow's keys: the postings there are the shadow's, built under its sections.
    const id = keyIdOf(manifest);
    if (keyIdOf(previous) !== id) previous = ctx.manifest(id) ?? previous;
    const sig = (d: FullTextDef) => `${d.analyzer}|${d.stopwords ? d.stopwords.join('\u0000') : '-'}`;
    const before = new Map(previous.fulltext.map((d) => [d.field, d]));
    const now = new Set(manifest.fulltext.map((d) => d.field));
    const out: KeyWrite[] = [];
    for (const d of previous.fulltext) {
      if (now.has(d.field)) continue;
      for (const [k] of await ctx.range(fieldRange(id, d.field))) out.push({ key: k, value: null });
    }
    const again = manifest.fulltext.filter((d) => before.get(d.field) === undefined || sig(before.get(d.field)!) !== sig(d));
    if (!again.length) return out;
    const rows: Array<[PkTuple, Record<string, JsonValue>]> = [];
    for (const [k, v] of await ctx.range(prefixRange(KEYSPACE.row, [keyIdOf(manifest)]))) {
      rows.push([decodeKey(k).slice(1) as PkTuple, (parseJsonExact(v.toString('utf8')) as [number, number, Record<string, JsonValue>])[2]]);
    }
    for (const def of again) {
      // Every entry of the field is replaced: the old ones go first, the rows' entries win.
      for (const [k] of await ctx.range(fieldRange(id, def.field))) out.push({ key: k, value: null });
      const analyzer = this.analyzer(def);
      let docs = 0;
      let total = 0;
      for (const [pk, values] of rows) {
        const text = values[def.field];
        if (typeof text !== 'string') continue;
        const d = analyzer.analyzeDoc(text);
        const value = encodeDocTerms(d);
        this.derived.set(value, { kind: 'd', table: id, field: def.field, doc: pkDocId(pk), length: d.length, terms: d.terms, tfs: Array.from(d.tfs) });
        out.push({ key: docKey(id, def.field, pkDocId(pk)), value });
        docs++;
        total += d.length;
      }
      const sv = docs ? encodeStats({ docs, total }) : null;
      if (sv) this.derived.set(sv, { kind: 's', table: id, field: def.field, docs, total });
      out.push({ key: statsKey(id, def.field), value: sv });
    }
    return out;
  }

  private validate(manifest: TableManifest): void {
    for (const def of manifest.fulltext) {
      const col = manifest.columns.find((c) => c.name === def.field);
      if (!col) throw new DbError('validation_failed', `fulltext field "${def.field}" is not a column of ${manifest.id}`, { field: 'fulltext.field' });
      if (col.ty !== 'str') throw new DbError('validation_failed', `fulltext field "${def.field}" must be a str column, not ${col.ty}`, { field: 'fulltext.field' });
      analyzerFor(def); // throws validation_failed for an unknown analyzer
      if (!(def.k1 >= 0) || !(def.b >= 0 && def.b <= 1))
        throw new DbError('validation_failed', `fulltext field "${def.field}": k1 must be ≥ 0 and b in [0, 1]`, { field: 'fulltext' });
    }
  }

  dropRanges(manifest: TableManifest): Array<readonly [Buffer, Buffer]> {
    return this.keyRanges(keyIdOf(manifest));
  }

  keyRanges(keyId: string): Array<readonly [Buffer, Buffer]> {
    const r = tableRange(keyId);
    return [[r.gte, r.lt]];
  }

  async deriveRow(ch: RowChangeEvent, ctx: DeriveContext): Promise<KeyWrite[]> {
    if (ch.manifest.fulltext.length === 0) return [];
    const doc = pkDocId(ch.pk);
    const out: KeyWrite[] = [];
    for (const def of ch.manifest.fulltext) {
      const before = ch.before?.values[def.field];
      const after = ch.after?.values[def.field];
      const text = typeof after === 'string' ? after : null;
      if (ch.before && typeof before === 'string' && before === text) continue;
      // a row that had no text has no entry (a new row needs no read); else (or for a backfill's
      // copy, whose entry a dual write may have made) read the entry to stay exact
      const hadEntry = ch.copy || typeof before === 'string' ? undefined : false;
      out.push(...(await this.docWrites(keyIdOf(ch.manifest), def.field, doc, text, this.analyzer(def), ctx, hadEntry)));
    }
    return out;
  }

  async deriveCustom(ch: CustomChange, ctx: DeriveContext): Promise<{ writes: KeyWrite[]; result: JsonValue }> {
    if (ch.type === 'clear_field') return this.clearField(ch, ctx);
    const p = ch.payload as unknown as PutDocPayload;
    if (!p || typeof p.table !== 'string' || typeof p.field !== 'string' || typeof p.doc_id !== 'string')
      throw new DbError('validation_failed', 'fts change needs table, field and doc_id strings');
    // A registered schema's documents are its rows (their postings derive from them): a standalone
    // document there would be a posting with no row, which no delete of a row would remove.
    if (ctx.manifest(p.table)) throw new DbError('validation_failed', `"${p.table}" is a schema: its full-text documents are written through its rows`, { field: 'table' });
    if (ch.type === 'put_doc') {
      if (typeof p.text !== 'string') throw new DbError('validation_failed', 'fts document needs a "text" string', { field: 'text' });
      const writes: KeyWrite[] = [];
      let settings: FieldSettings | undefined = this.declared(p.table, p.field, ctx.manifest(p.table)) ?? this.standalone.get(fkey(p.table, p.field));
      if (!settings) {
        const raw = await ctx.get(configKey(p.table, p.field));
        if (raw) settings = JSON.parse(raw.toString('utf8')) as FieldSettings;
        else {
          settings = { analyzer: 'english', k1: DEFAULT_BM25.k1, b: DEFAULT_BM25.b };
          writes.push({ key: configKey(p.table, p.field), value: Buffer.from(JSON.stringify(settings)) });
        }
      }
      const existed = (await ctx.get(docKey(p.table, p.field, p.doc_id))) !== undefined;
      const analyzer = this.analyzer(settings);
      writes.push(...(await this.docWrites(p.table, p.field, p.doc_id, p.text, analyzer, ctx)));
      return { writes, result: { doc_id: p.doc_id, created: !existed } };
    }
    if (ch.type === 'delete_doc') {
      const existed = (await ctx.get(docKey(p.table, p.field, p.doc_id))) !== undefined;
      const writes = existed ? await this.docWrites(p.table, p.field, p.doc_id, null, analyzerFor({}), ctx) : [];
      return { writes, result: { doc_id: p.doc_id, deleted: existed } };
    }
    throw new DbError('validation_failed', `unknown fts change type "${ch.type}"`);
  }

  /**
   * `clear_field {schema, field, limit?}`: deletes up to `limit` (default 2,000) keys of a field
   * the table does not declare (an online migration's dropped field after its cutover, or the
   * field it was building in place when it was aborted); answers `{deleted}` (fewer than
   * `limit`: none left). A declared field is refused.
   */
  private clearField(ch: CustomChange, ctx: DeriveContext): Promise<{ writes: KeyWrite[]; result: JsonValue }> {
    return clearUnused({ type: 'clear_field', field: 'field', declared: (m, f) => m.fulltext.some((d) => d.field === f), range: fieldRange }, ch, ctx);
  }

  /** Writes that turn the stored entry of `doc` into `text` (null: remove it), keeping totals exact. */
  private async docWrites(
    table: string,
    field: string,
    doc: string,
    text: string | null,
    analyzer: Analyzer,
    ctx: DeriveContext,
    hadEntry?: false,
  ): Promise<KeyWrite[]> {
    const out: KeyWrite[] = [];
    const dk = docKey(table, field, doc);
    const oldRaw = hadEntry === false ? undefined : await ctx.get(dk);
    const old = oldRaw ? decodeDocEntry(oldRaw) : null;
    if (!old && text === null) return out;
    let value: Buffer | null = null;
    let length = 0;
    if (text !== null) {
      const d = analyzer.analyzeDoc(text);
      length = d.length;
      value = encodeDocTerms(d);
      // a plain array (on the JS heap): a typed copy this small would cost a backing store per doc
      const nt = d.terms.length;
      const tfs: number[] = new Array(nt);
      for (let i = 0; i < nt; i++) tfs[i] = d.tfs[i];
      this.derived.set(value, { kind: 'd', table, field, doc, length, terms: d.terms, tfs });
    }
    out.push({ key: dk, value });
    const sk = statsKey(table, field);
    const raw = await ctx.get(sk);
    // the totals this participant just wrote (same group) need no JSON parse
    const prev = raw && this.derived.get(raw);
    const s = prev && prev.kind === 's' ? prev : decodeStats(raw);
    const docs = s.docs + (text !== null ? 1 : 0) - (old ? 1 : 0);
    const total = s.total + length - (old ? old.length : 0);
    let sv: Buffer | null = null;
    if (docs !== 0) {
      sv = encodeStats({ docs, total });
      this.derived.set(sv, { kind: 's', table, field, docs, total });
    }
    out.push({ key: sk, value: sv });
    return out;
  }

  // ---- in-memory state (after durability) ----

  /**
   * Loads the checkpoint image (term dictionary, posting lists, doc ordinals and lengths of
   * every field) and returns the LSN it covers: the store replays the frames after it through
   * `apply`. A store without a usable checkpoint (none yet, another format, a missing or
   * damaged chunk) is rebuilt from its F keys instead, every doc entry decoded, and then covers
   * the last frame. `stats` tells which way it went.
   */
  async open(reader: StoreReader): Promise<number> {
    this.reader = reader;
    this.fields.clear();
    this.standalone.clear();
    this.imaged.clear();
    this.dirty.clear();
    this.staleChunks = [];
    this.manifestCache = null;
    this.changedSinceImage = 0;
    const decodedBefore = this.stats.entriesDecoded;
    const snap = reader.snapshot();
    let covered = 0;
    try {
      const loaded = await loadCheckpoint<FieldSettings>(snap);
      if (loaded.ok) {
        for (const [f, fi] of loaded.fields) {
          this.fields.set(fkey(f.table, f.field), fi);
          this.imaged.set(fkey(f.table, f.field), f);
        }
        for (const [table, field, st] of loaded.record.standalone) this.standalone.set(fkey(table, field), st);
        covered = loaded.record.lsn;
        this.hasImage = true;
        this.imageLsn = covered;
        Object.assign(this.stats, { openedFrom: 'checkpoint', checkpointLsn: covered, imageBytes: loaded.bytes, fallback: null });
      } else {
        // no usable checkpoint: the F keyspace is the whole state; the LSN it covers is the last frame's
        if (loaded.reason !== 'none') this.staleChunks = await allChunkKeys(snap);
        this.hasImage = false;
        for await (const batch of snap.rawRange({ gte: Buffer.from('L'), lt: Buffer.from('M'), reverse: true, limit: 1 }))
          for (const [k] of batch) covered = Number(k.readBigUInt64BE(1));
        for await (const batch of snap.rawRange({ ...ALL_TABLES, batchSize: 4096 })) {
          for (const [k, v] of batch) this.applyWrite(k, v);
        }
        Object.assign(this.stats, { openedFrom: 'keys', checkpointLsn: 0, imageBytes: 0, fallback: loaded.reason === 'none' ? null : loaded.reason });
      }
    } finally {
      await snap.release();
    }
    this.stats.openDecoded = this.stats.entriesDecoded - decodedBefore;
    this.applied = covered;
    this.sweep();
    return covered;
  }

  /**
   * Champion tiers of the long lists: built once the store is open (not while the other
   * participants load and the log is checked), a few ms of work per event-loop turn, so the
   * store opens and answers without waiting for them (issue 25 §2: ~2 s of a 1M-doc open); a
   * search that needs a tier not built yet builds that one list's.
   */
  afterOpen(): void {
    this.tiers = this.prepareTiers().catch((e: unknown) => {
      // a packed list that does not decode (corrupt_log-class): the searches reading it say so
      this.stats.backgroundError = e instanceof Error ? e.message : String(e);
    });
  }

  /** The background build of the champion tiers started by the last open. */
  private tiers: Promise<void> = Promise.resolve();

  /** Resolves once the champion tiers of every long list are built and every packed list decoded (benchmarks, tests). */
  tiersReady(): Promise<void> {
    return this.tiers;
  }

  private async prepareTiers(): Promise<void> {
    const t0 = performance.now();
    this.stats.tiersMs = -1;
    await new Promise((r) => setImmediate(r)); // not a step inside the store's open
    // Fields are under their table's key id (keyIdOf); its settings are in the manifest.
    const byKey = new Map(this.reader?.manifests().map((m) => [keyIdOf(m), m.id]) ?? []);
    for (const [key, fi] of [...this.fields]) {
      const [table, field] = key.split('\u0000');
      const st = this.settings(byKey.get(table) ?? table, field);
      if (!st) continue;
      let turn = performance.now();
      // the long lists' tiers, then every list still packed (image.ts): after this the index
      // holds no image bytes, as if built by writes
      steps: for (const steps of [fi.tierSteps(st.k1, st.b), fi.unpackSteps()])
        for (const _ of steps) {
          if (performance.now() - turn < TIER_TURN_MS) continue;
          await new Promise((r) => setImmediate(r));
          if (this.fields.get(key) !== fi) break steps; // dropped or reopened meanwhile
          turn = performance.now();
        }
    }
    this.stats.tiersMs = Math.round(performance.now() - t0);
  }

  apply(frame: CommittedFrame): void {
    for (const ch of frame.changes) {
      if (ch.op === 'schema_put' || ch.op === 'schema_drop') this.manifestCache = null;
      // A dropped shadow whose keys its table now uses keeps them; a table moved to other keys leaves its old fields.
      if (ch.op === 'schema_drop') {
        // A migration's shadow goes in a background drop, and its id is never registered again; a
        // table dropped by its user may be registered again later (recovery replays with the final catalogue).
        if (ch.background !== true || !this.liveKeys()?.has(ch.schema)) this.dropTable(ch.schema);
        this.sweep();
      } else if (ch.op === 'schema_put' && ch.physical !== undefined) this.sweep();
    }
    for (const w of frame.writes) if (w.key[0] === 0x46) this.applyWrite(w.key, w.value);
    this.applied = frame.lsn;
  }

  /**
   * Writes an image of every field changed since the last one (unchanged fields keep theirs)
   * and the record naming them with the LSN applied, in one synced batch; returns that LSN.
   * Imaging costs time in proportion to the field's postings, on the event loop (a consistent
   * cut needs no frame applied meanwhile), so a background (non-final) checkpoint is skipped
   * while the doc writes since the last image are under a tenth of the live docs (at least
   * IMAGE_MIN_CHANGES): it answers the image's LSN and the log keeps the frames after it for
   * the replay. With no image yet it images now (a restart would otherwise rebuild).
   */
  async checkpoint(store: StoreReader, opts: { final?: boolean } = {}): Promise<number> {
    if (!opts.final && this.hasImage && this.dirty.size > 0) {
      let live = 0;
      for (const fi of this.fields.values()) live += fi.liveDocs;
      if (this.changedSinceImage < Math.max(IMAGE_MIN_CHANGES, live / 10)) {
        this.stats.checkpointsSkipped++;
        return this.imageLsn;
      }
    }
    const lsn = this.applied;
    const writes: KeyWrite[] = this.staleChunks.map((key) => ({ key, value: null }));
    const fields: ImagedField[] = [];
    for (const [key, fi] of this.fields) {
      const prev = this.imaged.get(key);
      if (prev && !this.dirty.has(key)) {
        fields.push(prev);
        continue;
      }
      const [table, field] = key.split('\u0000');
      const chunks = encodeFieldImage(fi);
      chunks.forEach((c, i) => writes.push({ key: chunkKey(table, field, i), value: c }));
      for (let i = chunks.length; i < (prev?.chunks ?? 0); i++) writes.push({ key: chunkKey(table, field, i), value: null });
      const f: ImagedField = { table, field, chunks: chunks.length, bytes: chunks.reduce((n, c) => n + c.length, 0), crc: crcOf(chunks) };
      fields.push(f);
      this.imaged.set(key, f);
    }
    for (const [key, f] of [...this.imaged]) {
      if (this.fields.has(key)) continue;
      for (let i = 0; i < f.chunks; i++) writes.push({ key: chunkKey(f.table, f.field, i), value: null });
      this.imaged.delete(key);
    }
    const standalone = [...this.standalone].map(([key, st]) => [...(key.split('\u0000') as [string, string]), st] as const);
    const record: CheckpointRecord<FieldSettings> = { v: CHECKPOINT_FORMAT, lsn, fields, standalone };
    writes.push({ key: CHECKPOINT_KEY, value: Buffer.from(JSON.stringify(record)) });
    // the images were taken synchronously at `lsn`; frames applied during the write mark fields dirty again
    this.dirty.clear();
    this.staleChunks = [];
    this.changedSinceImage = 0;
    try {
      await store.writeCheckpoint(writes);
    } catch (e) {
      // the store keeps the previous checkpoint; the next one re-images every field and deletes these chunks
      for (const key of this.fields.keys()) this.dirty.add(key);
      this.staleChunks = writes.filter((w) => w.value !== null && !w.key.equals(CHECKPOINT_KEY)).map((w) => w.key);
      this.imaged.clear();
      throw e;
    }
    this.hasImage = true;
    this.imageLsn = lsn;
    this.stats.checkpoints++;
    return lsn;
  }

  private applyWrite(key: Buffer, value: Buffer | null): void {
    // a value this participant derived: no key or value decoding
    const dv = value && this.derived.get(value);
    if (dv) {
      const fi = this.fieldIndex(dv.table, dv.field);
      this.touch(dv.table, dv.field, dv.kind === 'd');
      if (dv.kind === 'd') fi.putDoc(dv.doc, dv.length, dv.terms, dv.tfs);
      else fi.setStats(dv.docs, dv.total);
      return;
    }
    const k = decodeFtsKey(key);
    if (!k) return;
    this.touch(k.table, k.field, k.kind === 'd');
    if (k.kind === 'c') {
      if (value) this.standalone.set(fkey(k.table, k.field), JSON.parse(value.toString('utf8')) as FieldSettings);
      else this.standalone.delete(fkey(k.table, k.field));
      return;
    }
    const fi = this.fieldIndex(k.table, k.field);
    if (k.kind === 'd') {
      if (value) {
        const e = decodeDocEntry(value);
        this.stats.entriesDecoded++;
        fi.putDoc(k.doc, e.length, e.terms, e.tfs);
      } else fi.removeDoc(k.doc);
    } else if (k.kind === 's') {
      if (value) {
        const s = decodeStats(value);
        fi.setStats(s.docs, s.total);
      } else fi.setStats(0, 0);
    }
  }

  /** Marks a field's image stale (and counts a doc write toward the next image). */
  private touch(table: string, field: string, doc: boolean): void {
    this.dirty.add(fkey(table, field));
    if (doc) this.changedSinceImage++;
  }

  private fieldIndex(table: string, field: string): FieldIndex {
    const key = fkey(table, field);
    let fi = this.fields.get(key);
    if (!fi) {
      fi = new FieldIndex();
      this.fields.set(key, fi);
    }
    return fi;
  }

  /** The key ids the registered tables' entries are under (undefined before open). */
  private liveKeys(): Set<string> | undefined {
    return this.reader ? new Set(this.reader.manifests().map(keyIdOf)) : undefined;
  }

  /** Drops the in-memory fields of key ids no table uses any more (their keys are retired in the background). */
  private sweep(): void {
    const live = this.liveKeys();
    if (!live) return;
    for (const key of [...this.fields.keys()]) {
      const table = key.slice(0, key.indexOf('\u0000'));
      if (live.has(table) || this.standalone.has(key)) continue;
      this.fields.delete(key);
      this.dirty.add(key);
    }
  }

  private dropTable(table: string): void {
    for (const key of this.fields.keys()) if (key.startsWith(`${table}\u0000`)) this.dirty.add(key);
    for (const key of [...this.fields.keys()]) if (key.startsWith(`${table}\u0000`)) this.fields.delete(key);
    for (const key of [...this.standalone.keys()]) if (key.startsWith(`${table}\u0000`)) this.standalone.delete(key);
  }

  // ---- settings ----

  private manifestOf(table: string): TableManifest | undefined {
    if (!this.reader) return undefined;
    if (!this.manifestCache) this.manifestCache = new Map(this.reader.manifests().map((m) => [m.id, m]));
    return this.manifestCache.get(table);
  }

  /** The key id a table's entries are under: its manifest's (keyIdOf), or a standalone table's name. */
  private keyOf(table: string): string {
    const m = this.manifestOf(table);
    return m ? keyIdOf(m) : table;
  }

  private declared(table: string, field: string, m: TableManifest | undefined): FullTextDef | undefined {
    return m?.fulltext.find((f) => f.field === field);
  }

  /** The settings of a field, or undefined when neither a manifest nor a standalone POST created it. */
  settings(table: string, field: string): FieldSettings | undefined {
    return this.declared(table, field, this.manifestOf(table)) ?? this.standalone.get(fkey(table, field));
  }

  private analyzer(s: FieldSettings): Analyzer {
    const sig = `${s.analyzer}|${s.stopwords ? s.stopwords.join('\u0000') : '-'}`;
    let a = this.analyzers.get(sig);
    if (!a) {
      a = analyzerFor(s);
      this.analyzers.set(sig, a);
    }
    return a;
  }

  // ---- search ----

  private readonly qstops = new WeakMap<Analyzer, Set<string>>();
  private queryStops(a: Analyzer): Set<string> {
    let s = this.qstops.get(a);
    if (!s) this.qstops.set(a, (s = queryStopTerms(a)));
    return s;
  }

  /**
   * The doc id of each ordinal of a field's index (`RankedDoc.ord`), or undefined. Ordinals are
   * never reused: a removed doc's slot is blank (and never a hit); the array grows as docs come,
   * and is replaced when an image is loaded.
   */
  docIds(table: string, field: string): readonly string[] | undefined {
    return this.fields.get(fkey(table, field))?.docIds;
  }

  /**
   * Ranks the documents of `table`/`field` for `q` (syntax in README.md, or a structured
   * query: structured.ts) by BM25, best
   * first, ties by doc id. Throws validation_failed for a bad q or limit, not_found for
   * a table/field no manifest declares and no POST created.
   */
  async search(
    table: string,
    field: string,
    q: string | StructuredQuery,
    limit: number = DEFAULT_LIMIT,
    opts: SearchOptions = {},
  ): Promise<RankedDoc[]> {
    const stats = opts.stats;
    if (!Number.isInteger(limit) || limit < 1 || (limit > MAX_LIMIT && !opts.unbounded))
      throw new DbError('validation_failed', `limit must be an integer from 1 to ${MAX_LIMIT}`, { field: 'limit' });
    const parsed = typeof q === 'string' ? parseQuery(q) : null;
    const s = this.settings(table, field);
    if (!s) {
      const m = this.manifestOf(table);
      if (m) throw new DbError('not_found', `field "${field}" of table "${table}" is not a full-text field`, { table, field });
      throw new DbError('not_found', `no full-text table "${table}" with field "${field}"`, { table, field });
    }
    const analyzer = this.analyzer(s);
    const qstop = (opts.queryStopwords ?? RANKING_DEFAULTS.queryStopwords) === 'auto' && (analyzer.name === 'english' || analyzer.name === 'standard');
    const copts = { queryStopTerms: qstop ? this.queryStops(analyzer) : undefined };
    const clauses = parsed ? compileQuery(parsed, analyzer, copts) : compileStructured(q, analyzer, copts, opts.queryPath);
    const keyId = this.keyOf(table);
    const index = this.fields.get(fkey(keyId, field)) ?? new FieldIndex();
    const params: Bm25Params = { k1: s.k1, b: s.b };
    let snap: ReturnType<StoreReader['snapshot']> | undefined = opts.snapshot;
    const own = !opts.snapshot;
    const reader = this.reader;
    // Doc entries read from one snapshot, once per search (proximity and RM3 share them).
    // The entries asked for in one turn (proximity and RM3 ask for all their docs at once)
    // are read in one rawGetMany instead of a store call each.
    const raw = new Map<string, Promise<Buffer | undefined>>();
    let batch: Array<{ key: Buffer; resolve: (v: Buffer | undefined) => void; reject: (e: unknown) => void }> | null = null;
    const flush = () => {
      const b = batch!;
      batch = null;
      snap!.rawGetMany(b.map((x) => x.key)).then(
        (vs) => b.forEach((x, i) => x.resolve(vs[i])),
        (e: unknown) => b.forEach((x) => x.reject(e)),
      );
    };
    const entry = (doc: string) => {
      let e = raw.get(doc);
      if (!e) {
        snap ??= (reader as StoreReader).snapshot(); // taken now, so the search's finally releases it
        e = new Promise<Buffer | undefined>((resolve, reject) => {
          if (!batch) {
            batch = [];
            process.nextTick(flush);
          }
          batch.push({ key: docKey(keyId, field, doc), resolve, reject });
        });
        // A search that fails early leaves entries nobody awaits: no unhandled rejection.
        e.catch(() => undefined);
        raw.set(doc, e);
      }
      return e;
    };
    const termBytes = new Map<string, Buffer>();
    const bytesOf = (t: string) => {
      let b = termBytes.get(t);
      if (!b) termBytes.set(t, (b = Buffer.from(t, 'utf8')));
      return b;
    };
    const ctx: SearchContext = {
      index,
      params,
      positions: async (term, doc) => {
        const v = reader ? await entry(doc) : undefined;
        return v ? decodeTermPositions(v, [bytesOf(term)])[0] : undefined;
      },
      positionsOf: async (doc, terms) => {
        const v = reader ? await entry(doc) : undefined;
        return v ? decodeTermPositions(v, terms.map(bytesOf)) : terms.map(() => undefined);
      },
      termVector: async (doc) => {
        const v = reader ? await entry(doc) : undefined;
        if (!v) return undefined;
        const e = decodeDocEntry(v);
        const m = new Map<string, number>();
        for (let i = 0; i < e.terms.length; i++) m.set(e.terms[i], e.tfs[i]);
        return m;
      },
    };
    try {
      return await rankClauses(clauses, ctx, limit, { ...opts, stats });
    } finally {
      if (own) await snap?.release();
    }
  }

  /** Fields of a standalone (POST-created, no manifest) table; empty when there is none. */
  standaloneFields(table: string): string[] {
    const out: string[] = [];
    for (const k of this.standalone.keys()) if (k.startsWith(`${table}\u0000`)) out.push(k.slice(table.length + 1));
    return out;
  }

  /** Long posting lists of a field still packed in the image it was opened from (decoded at first read, or after the open; a short list is decoded at open). */
  packedLists(table: string, field: string): number {
    return this.fields.get(fkey(this.keyOf(table), field))?.packedLists() ?? 0;
  }

  /** Document count and total length of a field (as committed), for diagnostics and tests. */
  fieldStats(table: string, field: string): { docs: number; total: number; liveDocs: number; terms: number; longLists: number } {
    const fi = this.fields.get(fkey(this.keyOf(table), field));
    return { docs: fi?.docs ?? 0, total: fi?.total ?? 0, liveDocs: fi?.liveDocs ?? 0, terms: fi?.termCount ?? 0, longLists: fi?.longLists ?? 0 };
  }

  /** Document frequency of an analyzed term, for tests and explain. */
  docFreq(table: string, field: string, term: string): number {
    return this.fields.get(fkey(this.keyOf(table), field))?.df(term) ?? 0;
  }
}
