/**
 * The public contract of the storage lib: what a commit is, what a participant
 * derives, what a snapshot reads. Implementations live beside this file.
 */
import type { DbError, JsonValue, Row, TableManifest, Lsn } from '@mmdb/core';

/** A primary-key tuple, in `primary_key` order. */
export type PkTuple = JsonValue[];

/** A row as stored: its key, version (1 on insert, +1 per write), the LSN that wrote it, its values. */
export interface StoredRow {
  readonly schema: string;
  readonly pk: PkTuple;
  readonly version: number;
  readonly lsn: Lsn;
  readonly values: Row;
}

/** Preconditions of one row write (spec §3.2). */
export type Precondition =
  | { readonly kind: 'insert' } // the row must be absent → conflict
  | { readonly kind: 'if_match'; readonly version: number | '*' } // absent → precondition_failed; other version → write_conflict
  | { readonly kind: 'exists' }; // the row must exist → row_not_found (used by SQL UPDATE)

export interface RowPutChange {
  readonly op: 'put';
  readonly schema: string;
  /** Full row values (missing optional columns get their default or stay absent). */
  readonly row: Row;
  readonly precondition?: Precondition;
}

export interface RowDeleteChange {
  readonly op: 'delete';
  readonly schema: string;
  readonly pk: PkTuple;
  readonly precondition?: Precondition;
}

/** A change addressed to one participant (e.g. a standalone vector put or fts document). */
export interface CustomChange {
  readonly op: 'custom';
  /** The participant's `name`. */
  readonly participant: string;
  readonly type: string;
  readonly payload: JsonValue;
}

export interface SchemaPutChange {
  readonly op: 'schema_put';
  /** The manifest TOML text, kept verbatim for GET. */
  readonly toml: string;
  /**
   * The keys the table's rows and index entries are under from this frame on (`keyIdOf`):
   * a migration's cutover points the table at the shadow's keys (one frame, no row rewritten);
   * the old keys are then cleared in the background. Absent: unchanged (a new table: its id).
   */
  readonly physical?: string;
  /**
   * The table's derived entries for this manifest are already in place: participants derive
   * nothing for it (deriveSchema sees the manifest as its own previous one). An online
   * migration's in-place cutover: its backfill and dual writes built the added indexes under the
   * table's keys (RowMirror.derive), and it clears the dropped ones after this frame. Not logged
   * (the frame's key writes are what followers apply).
   */
  readonly prebuilt?: boolean;
}

export interface SchemaDropChange {
  readonly op: 'schema_drop';
  readonly schema: string;
  /**
   * Its row and index keys are cleared in the background after the frame (a `retiring`
   * marker resumes the clear after a crash) instead of before the next group is prepared.
   * Only for an id never registered again (a migration's shadow table: its id holds a ULID),
   * since a table registered under the same id would see the old keys until the clear ends.
   */
  readonly background?: boolean;
}

/**
 * What a tenant's catalogue holds besides its schemas: everything needed to serve it (its
 * tokens' hashes, the users, grants, policies, credits and add-ons of the security work, and
 * the replication settings: `replication`, id `sync`).
 * Each entry lives at `M ‖ ("catalog", kind, id)` and is written in a frame like a row.
 */
export type CatalogKind = 'token' | 'user' | 'grant' | 'policy' | 'credit' | 'addon' | 'migration' | 'migration_audit' | 'replication';
export const CATALOG_KINDS: readonly CatalogKind[] = ['token', 'user', 'grant', 'policy', 'credit', 'addon', 'migration', 'migration_audit', 'replication'];

/** Puts (record) or removes (null) one catalogue entry. */
export interface CatalogChange {
  readonly op: 'catalog';
  readonly kind: CatalogKind;
  readonly id: string;
  readonly record: JsonValue | null;
}

/** The steps of an online migration that are logged (a backfill batch with its cursor, the cutover, the cleanup). */
export type MigrationStep = 'submit' | 'backfill' | 'cutover' | 'cleanup' | 'abort';
export const MIGRATION_STEPS: readonly MigrationStep[] = ['submit', 'backfill', 'cutover', 'cleanup', 'abort'];

/**
 * One step of a migration, recorded at `M ‖ ("migration", id)` (its last step) in the same
 * frame as the rows the step writes: a backfill batch's rows and its new `cursor` are durable
 * together, so a restart resumes from the cursor and never re-applies or skips a batch.
 */
export interface MigrationChange {
  readonly op: 'migration';
  readonly migration: string;
  readonly step: MigrationStep;
  /** Where a backfill resumes (e.g. the last primary key copied). */
  readonly cursor?: JsonValue;
  /** The migration's own state after the step (spec, counts, actor…). */
  readonly state?: JsonValue;
  /**
   * A compare-and-set: the `cursor` the migration's last recorded step must hold (null: no
   * backfill step yet), as this request sees it (earlier requests of the log included), or the
   * request fails with 409 `conflict`. A backfill that submits its next frame before the
   * previous one is durable passes the previous cursor, so a frame never lands after a
   * refused one (no row skipped). Not logged.
   */
  readonly expect_cursor?: JsonValue;
}

/**
 * Re-mirrors one row of a table that has a RowMirror (store.setRowMirror): the mirror's
 * changes for the row as it is when the request is prepared (its current version, read inside
 * the commit, or its absence). Used by an online migration's backfill, so a copied row can
 * never be older than a concurrent write's dual write. Not logged itself: the frame holds the
 * mirror's row changes. A change the mirror's target refuses fails the request.
 */
export interface RowMirrorChange {
  readonly op: 'mirror';
  readonly schema: string;
  readonly pk: PkTuple;
}

export type Change = RowPutChange | RowDeleteChange | CustomChange | SchemaPutChange | SchemaDropChange | CatalogChange | MigrationChange | RowMirrorChange;

/** What the coordinator records for an Idempotency-Key, in the same frame as the write. */
export interface IdempotencyRecord {
  readonly key: string;
  /** Hash of (method, route, body): a replay with another hash is a `conflict`. */
  readonly fingerprint: string;
  readonly expiresAt: number;
  /** The response to store, computed from the commit's results (so it carries the new version). */
  /** `lsn`: the frame's LSN (a route whose answer carries it, e.g. the vector put). */
  readonly render: (results: readonly ChangeResult[], lsn: number) => StoredResponse;
}

export interface StoredResponse {
  readonly status: number;
  readonly body: JsonValue;
  readonly headers?: Readonly<Record<string, string>>;
}

export interface CommitRequest {
  /** Applied in order, all or nothing, in one frame. */
  readonly changes: readonly Change[];
  readonly idempotency?: IdempotencyRecord;
  /** Who made the request (a token id, `operator`…), kept in the frame's annotations. */
  readonly actor?: string;
  /** The mutating route it came from (e.g. `PUT rows`), kept in the frame's annotations. */
  readonly route?: string;
  /**
   * Bulk background work (a migration's backfill frame): prepared in a commit group of its
   * own, and only when no foreground request is queued with it (those go first), so a
   * foreground write waits for at most the one background request being prepared.
   * Background requests keep their order among themselves.
   */
  readonly background?: boolean;
  /**
   * A `background` request whose loss in a crash its caller redoes (a backfill frame: the
   * backfill resumes from the cursor of the last durable frame). Its batch is written without
   * its own fsync; it becomes durable by the log sync the writer starts right after it (or a
   * later synced batch), and is applied, published and answered only then (DESIGN.md
   * "Deferred sync"). Ignored by a store opened with `deferRedoableSync: false` or `sync: false`.
   */
  readonly redoable?: boolean;
  /**
   * A `background` request the writer may cut short (DESIGN.md "Background preparation in
   * pieces"). Its changes are prepared in pieces of about half a millisecond with the event
   * loop let go between them; if a foreground request is queued by then, the writer calls
   * `split(k)` (k: the leading changes already prepared, at least 1) and, unless it answers
   * null, commits `head` (which must begin with those k changes, unchanged) as this frame and
   * queues `tail` as the next background request, ahead of the others, after the foreground
   * ones. The caller's promise settles with the last piece: its result (with `prepare_ms` the
   * sum of every piece's, `fg_wait_ms` and `fg_queue_ms` the longest any piece saw), or the first error of any piece (a head refused at its preparation
   * is not followed by its tail).
   */
  readonly split?: (k: number) => { readonly head: readonly Change[]; readonly tail: CommitRequest } | null;
}

export type ChangeResult =
  | { readonly op: 'put'; readonly schema: string; readonly pk: PkTuple; readonly version: number; readonly created: boolean }
  | { readonly op: 'delete'; readonly schema: string; readonly pk: PkTuple; readonly deleted: boolean; readonly version: number | null }
  | { readonly op: 'custom'; readonly participant: string; readonly result: JsonValue }
  | { readonly op: 'schema_put'; readonly schema: string; readonly created: boolean }
  | { readonly op: 'schema_drop'; readonly schema: string; readonly dropped: boolean }
  | { readonly op: 'catalog'; readonly kind: CatalogKind; readonly id: string; readonly existed: boolean }
  | { readonly op: 'migration'; readonly migration: string; readonly step: MigrationStep }
  | { readonly op: 'mirror'; readonly schema: string; readonly pk: PkTuple; readonly changes: number };

export interface CommitResult {
  readonly lsn: Lsn;
  readonly results: readonly ChangeResult[];
  /** Set when the Idempotency-Key was already committed with the same fingerprint: nothing was written. */
  readonly replayed?: StoredResponse;
  /**
   * A `background` request only: how long the single writer spent preparing it (ms, its reads
   * included), i.e. how long a write queued behind it waited for it (a backfill sizes its
   * frames by it).
   */
  readonly prepare_ms?: number;
  /**
   * A `background` request only: the longest time a foreground request written since the
   * previous background request was prepared waited, from queued to its own batch issued
   * (the queue, its preparation, the group in flight below it; ms, 0 when none came): how
   * long the writer's other work held foreground writes up. A backfill's throttle backs off
   * on it.
   */
  readonly fg_wait_ms?: number;
  /**
   * A `background` request only: of the same foreground requests, the longest wait before
   * their group's preparation began (behind another group's preparation; ms). The rest of
   * `fg_wait_ms` is the wait for the group in flight (its log write).
   */
  readonly fg_queue_ms?: number;
}

/** One raw key write. `value: null` deletes the key. */
export interface KeyWrite {
  readonly key: Buffer;
  readonly value: Buffer | null;
}

/** A row change as participants see it: images before and after, the manifest in force. */
export interface RowChangeEvent {
  readonly schema: string;
  readonly manifest: TableManifest;
  readonly pk: PkTuple;
  readonly before: StoredRow | null;
  readonly after: StoredRow | null;
  /**
   * A backfill's copy (RowMirror.derive): `before` is null and `after` is the row as it is, but
   * its entries may exist already (a dual write made them): read them rather than assume none.
   */
  readonly copy?: boolean;
}

/** Read access while deriving: committed state plus the earlier writes of the same group. */
export interface DeriveContext {
  readonly lsn: Lsn;
  get(key: Buffer): Promise<Buffer | undefined>;
  /** Keys in [gte, lt), merged with the group's pending writes, in key order. */
  range(opts: { gte: Buffer; lt: Buffer; limit?: number; reverse?: boolean }): Promise<Array<[Buffer, Buffer]>>;
  getRow(schema: string, pk: PkTuple): Promise<StoredRow | undefined>;
  manifest(schema: string): TableManifest | undefined;
}

/** A frame after decoding: what participants apply and followers ship. */
export interface CommittedFrame {
  readonly version: number;
  readonly epoch: number;
  readonly lsn: Lsn;
  readonly time: number;
  /** The logical changes, as JSON (row puts carry the full stored row and version). */
  readonly changes: readonly LoggedChange[];
  /**
   * Every derived key write of the frame (indexes, postings, vectors, edges, idempotency
   * record). Row keys are implied by the `put`/`delete` changes; `frameKeyWrites(frame)`
   * returns both, which is what a follower applies.
   */
  readonly writes: readonly KeyWrite[];
  /** Format v2: the frame's annotations, when the request had any. */
  readonly meta?: FrameMeta;
}

/**
 * A v2 frame's annotations: which request made it. The Idempotency-Key record itself (with
 * the stored response) is one of the frame's key writes; this names it, so a reader of the
 * log sees which request of which route a frame answers.
 */
export interface FrameMeta {
  readonly idempotency?: { readonly key: string; readonly fingerprint: string; readonly expires_at: number };
  readonly actor?: string;
  readonly route?: string;
}

export type LoggedChange =
  /** `old`: the row's values before an update (absent on an insert, and in frames written before it was logged). */
  | { readonly op: 'put'; readonly schema: string; readonly pk: PkTuple; readonly version: number; readonly values: Row; readonly old?: Row }
  /** `old`: the values of the deleted row (absent in frames written before it was logged). */
  | { readonly op: 'delete'; readonly schema: string; readonly pk: PkTuple; readonly old?: Row }
  | { readonly op: 'custom'; readonly participant: string; readonly type: string; readonly payload: JsonValue }
  | { readonly op: 'schema_put'; readonly schema: string; readonly toml: string; readonly physical?: string }
  | { readonly op: 'schema_drop'; readonly schema: string; readonly background?: boolean }
  | CatalogChange
  | MigrationChange;

/**
 * A derived-write producer (secondary index, fts, vector, graph). Registered on a
 * store before it opens; the coordinator calls it for every change of a request,
 * and after durability applies frames to it in LSN order.
 */
export interface CommitParticipant {
  readonly name: string;
  /** Key writes implied by a row change. Throwing a DbError rejects that request alone. */
  deriveRow?(change: RowChangeEvent, ctx: DeriveContext): Promise<readonly KeyWrite[]> | readonly KeyWrite[];
  /** Key writes for a custom change addressed to this participant, and the result returned to the caller. */
  deriveCustom?(
    change: CustomChange,
    ctx: DeriveContext,
  ): Promise<{ writes: readonly KeyWrite[]; result: JsonValue }> | { writes: readonly KeyWrite[]; result: JsonValue };
  /** Checks a schema before it is registered (throw validation_failed), and derives writes for its (re)registration. */
  deriveSchema?(manifest: TableManifest, previous: TableManifest | undefined, ctx: DeriveContext): Promise<readonly KeyWrite[]> | readonly KeyWrite[];
  /** Key ranges [gte, lt) holding this participant's entries for a schema; cleared when the schema is dropped. */
  dropRanges?(manifest: TableManifest): ReadonlyArray<readonly [Buffer, Buffer]>;
  /**
   * Key ranges of the entries kept under a table's key id (`keyIdOf`), cleared in the background
   * once no table uses that key id any more (a migration's cutover moved its table to its
   * shadow's keys, or a shadow was dropped). Participants that key derived entries by the
   * table's key id name them here.
   */
  keyRanges?(keyId: string): ReadonlyArray<readonly [Buffer, Buffer]>;
  /**
   * Key ranges holding only the entries this participant derives from a schema's rows, which
   * `verify` rebuilds and compares (default: dropRanges). A participant that also keeps other
   * keys there (a spec written at registration, checkpoint images) names the narrower ranges.
   */
  verifyRanges?(manifest: TableManifest): ReadonlyArray<readonly [Buffer, Buffer]>;
  /** Applies a durable frame to in-memory structures. Called in LSN order, before callers resolve. */
  apply?(frame: CommittedFrame): void;
  /** Loads the participant's checkpoint at open; returns the LSN it covers (frames after it are replayed through apply). */
  open?(store: StoreReader): Promise<Lsn>;
  /**
   * Called once the store is open (every participant loaded, the log replayed): background work
   * the first reads do not need starts here, so it does not compete with the open itself.
   */
  afterOpen?(): void;
  /**
   * Writes a checkpoint of in-memory state (returns the LSN it covers); called by
   * store.checkpoint(), by the background maintenance and at close (`final`). A participant
   * whose images are costly may skip a non-final one and answer the LSN of its last image:
   * log retention then keeps every frame after that.
   */
  checkpoint?(store: StoreReader, opts?: { readonly final?: boolean }): Promise<Lsn>;
}

/** A consistent view of one tenant store (an explicit classic-level snapshot). */
export interface Snapshot {
  /** The last durable LSN when the snapshot was taken. */
  readonly lsn: Lsn;
  /**
   * True when no commit group was between its write and its apply at that moment: the
   * snapshot then holds exactly the frames up to `lsn`, and `tableLsn` describes it.
   * (A snapshot taken in that gap may also hold the writes of a group not yet acknowledged.)
   */
  readonly stable: boolean;
  /**
   * LSN of the last frame, at or before `lsn`, that changed this schema's rows or manifest
   * since the store opened (0 if none). Two stable snapshots with the same `tableLsn` hold
   * the same rows for that schema, so a reader may cache what it decoded from one.
   */
  tableLsn(schema: string): Lsn;
  getRow(schema: string, pk: PkTuple): Promise<StoredRow | undefined>;
  /** Rows in pk order, in batches. `prefix` fixes the leading pk columns; `gte`/`lt` etc. bound the pk tuple. */
  scanRows(schema: string, opts?: ScanOptions): AsyncIterable<StoredRow[]>;
  /** Rows through a secondary index, in index order, in batches. Bounds apply to the index's value tuple. */
  scanIndex(schema: string, index: string, opts?: ScanOptions): AsyncIterable<StoredRow[]>;
  rawGet(key: Buffer): Promise<Buffer | undefined>;
  /** rawGet of several keys in one store call, values in the keys' order. */
  rawGetMany(keys: readonly Buffer[]): Promise<Array<Buffer | undefined>>;
  rawRange(opts: { gte: Buffer; lt: Buffer; reverse?: boolean; limit?: number; batchSize?: number }): AsyncIterable<Array<[Buffer, Buffer]>>;
  /** Frees the snapshot. Reads after release fail. */
  release(): Promise<void>;
}

export interface ScanOptions {
  /** Equality on the leading tuple components. */
  readonly prefix?: PkTuple;
  readonly gt?: PkTuple;
  readonly gte?: PkTuple;
  readonly lt?: PkTuple;
  readonly lte?: PkTuple;
  readonly reverse?: boolean;
  readonly limit?: number;
  /** Rows per batch (default 256). */
  readonly batchSize?: number;
}

/** Read-side handle given to participants at open/checkpoint. */
export interface StoreReader {
  snapshot(): Snapshot;
  manifests(): TableManifest[];
  /** Writes raw keys outside the log (participant checkpoints only), durably. */
  writeCheckpoint(writes: readonly KeyWrite[]): Promise<void>;
  readonly lastLsn: Lsn;
}

/** Evaluates a manifest CHECK expression against a row; registered by the query engine. `false` fails; `null`/`true` pass (SQL rule). */
/** A put (after) or delete (after null) of a row of a mirrored table. */
export interface RowMirrorEvent {
  readonly schema: string;
  readonly pk: PkTuple;
  readonly before: StoredRow | null;
  readonly after: StoredRow | null;
}

/**
 * Dual writes (store.setRowMirror): the row changes that follow every put and delete of one
 * table in the same request, hence in the same frame, whatever surface wrote it (rows, batch,
 * NDJSON, SQL, ES). An online migration fills it to write each row's new shape beside the old.
 * `mirror` runs inside the commit (it sees the request's pending writes through `ctx`) and
 * must not write itself. Its changes are not mirrored again; a put stores the source row's
 * version (so a table moved onto the mirror's keys keeps its versions). When the store refuses one of
 * them (the new shape rejects the row), the source write still commits without its mirror
 * and `refused` is told (the migration then fails); a `mirror` change fails instead.
 */
export interface RowMirror {
  /**
   * The table the mirror's puts and deletes go to, keyed by the same primary key (a
   * migration's shadow), if any: the coordinator then reads those rows ahead with the group's
   * other reads (one getMany) instead of one get per mirrored row.
   */
  readonly target?: string;
  mirror(ev: RowMirrorEvent, ctx: DeriveContext): ReadonlyArray<RowPutChange | RowDeleteChange>;
  /**
   * A manifest of the same table (same key id) whose derived entries also follow every put and
   * delete of the table, in the same frame: an online migration building new indexes in place
   * (the manifest holds only them). A `mirror` change (the backfill's copy) derives them for the
   * row as it is, as if it were new. An entry it refuses (a unique clash) is refused like a
   * mirrored row change.
   */
  readonly derive?: TableManifest;
  refused?(ev: RowMirrorEvent, error: DbError): void;
}

export type CheckEvaluator = (expr: string, row: Row, manifest: TableManifest) => boolean | null;
