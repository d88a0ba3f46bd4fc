/**
 * One tenant's store: a classic-level database holding the log (L), catalog and
 * metadata (M), rows (R), indexes (I), derived entries (F, V, E) and idempotency
 * records (K). All writes go through the commit coordinator; reads go through
 * explicit snapshots.
 *
 * @example
 *   const store = await TenantStore.open({ dir: '/data/t1' });
 *   await store.registerSchema('namespace = "shop"\ntable = "users"\nprimary_key = ["id"]\n[[columns]]\nname = "id"\nty = "str"');
 *   await store.put('shop.users', { id: 'u1' });
 *   const snap = store.snapshot();
 *   await snap.getRow('shop.users', ['u1']); // { version: 1, values: { id: 'u1' }, ... }
 *   await snap.release();
 */
import { statfs } from 'fs/promises';
import { ClassicLevel } from 'classic-level';
import { Observable, Subject } from 'rxjs';
import { DbError, isInternalTable, JsonValue, Row, TableManifest } from '@mmdb/core';
import type {
  CatalogKind,
  CheckEvaluator,
  RowMirror,
  MigrationChange,
  CommitParticipant,
  CommitRequest,
  CommitResult,
  CommittedFrame,
  KeyWrite,
  PkTuple,
  Precondition,
  Snapshot,
  StoreReader,
  StoredResponse,
  StoredRow,
} from './api';

/** An Idempotency-Key record as committed: the request's fingerprint and the response to replay. */
export interface IdempotencyRecordStored {
  readonly fingerprint: string;
  readonly expiresAt: number;
  readonly response: StoredResponse;
}
import { WriteSet } from './context';
import { FrameApplier } from './applier';
import { ChangeCursor, ChangeFeed, FeedHub, FeedOptions, READER_KINDS, ReaderKind } from './feed';
import { LogView } from './log-view';
import { Coordinator, SchemaEntry } from './coordinator';
import { HOLD_MS, PIECE_MS } from './pieces';
import { decodeFrame } from './frame';
import { currentLevelLog, fillLostDeferred, syncLevelLogs } from './deferred-sync';
import { indexParticipant } from './index-participant';
import { IDEMPOTENCY_PARTICIPANT, idempotencyParticipant } from './idempotency-participant';
import { KEYSPACE, decodeTuple, keyOf, prefixRange } from './keys';
import { parseManifest } from './manifest';
import { LOG_END, LOG_START, decodeRowText, idempotencyKey, keyIdOf, logKey, metaKey, parseJson, rowKey, splitRowRecord } from './records';
import { RowCache } from './row-cache';
import { PointReadSnapshot } from './point-snapshot';
import { SegmentIndex } from './segments';
import { Db, LevelSnapshotReader } from './snapshot';
import { verifyStore, VerifyReport } from './verify';

const ROW_KEY_PREFIX = KEYSPACE.row.charCodeAt(0);

/** One frame of the log: its stored bytes and their decoded form. */
export interface LogEntry {
  readonly frame: CommittedFrame;
  readonly bytes: Buffer;
}

export interface StoreOptions {
  /** Directory of the classic-level database (created if missing). */
  readonly dir: string;
  /** Derived-write producers (fts, vector, graph), in the order they run. Secondary indexes always run first. */
  readonly participants?: readonly CommitParticipant[];
  /** `batch(..., { sync })` per group; true (the default) makes every acknowledged commit durable. */
  readonly sync?: boolean;
  /**
   * A `redoable` background commit (a migration's backfill frame) is written without its own
   * fsync and synced right after by the writer, outside LevelDB's write queue, so a foreground
   * batch behind it is not held by that fsync; it is answered once durable (default true;
   * DESIGN.md "Deferred sync"). False: every batch is written with sync.
   */
  readonly deferRedoableSync?: boolean;
  /**
   * A background commit is prepared in pieces of this many ms with the event loop let go
   * between them, and a divisible one (`CommitRequest.split`, a backfill frame) is cut short
   * there for a foreground request (default 0.5; 0: prepared whole, never cut; DESIGN.md
   * "Background preparation in pieces").
   */
  readonly backgroundPieceMs?: number;
  /**
   * A background commit waits up to this many ms, before its preparation, for a foreground group
   * in flight to be written, applied and answered, instead of being prepared while that group is
   * written (default 0: not held; DESIGN.md "Hold for the foreground").
   */
  readonly backgroundHoldMs?: number;
  /** Fencing epoch stamped in every frame (default: the stored one, or 0). */
  readonly epoch?: number;
  /** Requests waiting beyond this are refused with 503 service_unavailable (default 10,000). */
  readonly queueLimit?: number;
  /** Most requests in one group commit (default 1,024). */
  readonly maxGroup?: number;
  /** Frames per log segment (default 4,096). */
  readonly segmentFrames?: number;
  /** Free bytes under which writes are refused as disk-full (default 64 MiB). */
  readonly minFreeBytes?: number;
  /** What to do when the log's tail fails its checksum at open: fail (default) or drop the bad tail frames. */
  readonly onCorruptTail?: 'fail' | 'truncate';
  /**
   * Bytes of the log's newest frames that open verifies by checksum (default 16 MiB): back to
   * the last 1,024 or until this many bytes are read. Frames it replays are verified anyway.
   */
  readonly verifyTailBytes?: number;
  readonly checkEvaluator?: CheckEvaluator;
  /** Rows kept by getRow's read cache (default 100,000; 0 turns it off). Snapshot reads never use it. */
  readonly rowCacheRows?: number;
  /** How often expired Idempotency-Key records are purged (default 10 minutes; 0 turns it off). */
  readonly idempotencyPurgeMs?: number;
  /**
   * LevelDB's memtable size in bytes (default 16 MiB; LevelDB's own 4 MiB flushes and
   * compacts four times as often, and an update-heavy load spent a fifth more CPU per commit).
   * A store holds up to two memtables (one being flushed).
   */
  readonly writeBufferBytes?: number;
  /** LevelDB's table file size in bytes (default: LevelDB's 2 MiB). */
  readonly tableFileBytes?: number;
  /**
   * Log retention: once this many frames are past the last checkpoint, the store checkpoints
   * every participant and drops the log segments no checkpoint (and no registered follower)
   * still needs (default 50,000; 0: only by time, see `checkpointMs`).
   */
  readonly checkpointFrames?: number;
  /** The same, once this long has passed since the last checkpoint with any frame after it (default 1 hour; 0: off). */
  readonly checkpointMs?: number;
  /** Change feed: most frames the log keeps for a lagging watch reader, which is told to resnapshot past it (default 100,000). */
  readonly feedHoldFrames?: number;
  /** The same bound in log bytes (default 256 MiB). */
  readonly feedHoldBytes?: number;
  /**
   * Change feed: the last published frames kept in memory, one buffer every reader takes its live
   * frames from (default 4,096 frames and 8 MiB of stored frames; at least the largest
   * `bufferFrames` of the open readers, within the bytes).
   */
  readonly feedTailFrames?: number;
  readonly feedTailBytes?: number;
}

/** Where the change feed stands (metrics). */
export interface FeedStats {
  readonly cursors: Readonly<Record<ReaderKind, number>>;
  /** The oldest LSN retention keeps for checkpoints, followers or readers (lastLsn + 1: none). */
  readonly oldestHeldLsn: number;
  /** The first LSN the log holds. */
  readonly firstLsn: number;
  /** Frames the log keeps because of each kind of holder (registered and open followers, watch readers, checkpoints). */
  readonly retainedFrames: Readonly<Record<ReaderKind | 'checkpoint', number>>;
  /** The last published frames the feed keeps in memory, once for all readers (bounded by `feedTailFrames` / `feedTailBytes`, whatever the readers do). */
  readonly memory: { readonly frames: number; readonly bytes: number };
}

/** What the background checkpoints have done since the store opened. */
export interface MaintenanceStats {
  checkpoints: number;
  segmentsDropped: number;
  /** LSN the last checkpoint covered (the log holds every frame after it). */
  lastCheckpointLsn: number;
  lastError: string | null;
}

export interface RecoveryReport {
  readonly lastLsn: number;
  /** Frames whose checksum was verified at open. */
  readonly framesVerified: number;
  /** Frames decoded at open: only those after the oldest participant checkpoint (the replay); the rest of the verified tail is checked, not parsed. */
  readonly framesDecoded: number;
  /** LSNs of frames that failed verification (dropped when onCorruptTail is "truncate"). */
  readonly corrupt: readonly number[];
  /** Frames replayed into participants' in-memory state, per participant. */
  readonly replayed: Readonly<Record<string, number>>;
  /** Schemas whose interrupted drop was finished at open. */
  readonly finishedDrops: readonly string[];
  /** LSNs of deferred (backfill) frames a power loss lost under a later frame, filled with empty frames at open (DESIGN.md "Deferred sync"). */
  readonly lostDeferred: readonly number[];
  /**
   * Where the open spent its time, in order of start: each phase's start and end in ms since
   * the process started (`performance.now()`). The participants' checkpoint loads (`open
   * <name>`) and the check of the log's newest frames (`verify log tail`) run concurrently, so
   * their spans overlap.
   */
  readonly phases: readonly OpenPhase[];
}

/** One step of a store's open (`RecoveryReport.phases`): ms since the process started. */
export interface OpenPhase {
  readonly name: string;
  readonly start: number;
  readonly end: number;
}

export interface StoreHealth {
  readonly writable: boolean;
  /** Why writes may be refused: null when healthy. */
  readonly pressure: null | 'disk_full' | 'queue_full' | 'closed';
  readonly queueDepth: number;
  readonly lastLsn: number;
  readonly freeBytes: number | null;
}

const VERIFY_TAIL = 1024;
/** At most this many bytes of that tail are verified (StoreOptions.verifyTailBytes). */
const VERIFY_TAIL_BYTES = 16 << 20;
/** The route a migration's cutover commits under: the one writer a schema fence lets through. */
export const FENCE_ROUTE = 'migration cutover';

/** One catalogue entry as committed. */
export interface CatalogEntry {
  readonly id: string;
  readonly record: JsonValue;
}

async function readCatalogFrom(db: Db, kind: CatalogKind): Promise<CatalogEntry[]> {
  const head = metaKey('catalog', kind).length;
  const out: CatalogEntry[] = [];
  for (const [k, v] of (await db.iterator(prefixRange(KEYSPACE.meta, ['catalog', kind])).all()) as Array<[Buffer, Buffer]>) {
    out.push({ id: String(decodeTuple(k, head)[0]), record: parseJson<JsonValue>(v) });
  }
  return out;
}

/** Bytes of values added to a checkpoint batch between two event-loop turns. */
const CHECKPOINT_YIELD_BYTES = 4 << 20;

export class TenantStore implements StoreReader {
  private readonly catalog = new Map<string, SchemaEntry>();
  /** LSN of the last applied frame that changed each schema's rows or manifest (0: not since open). */
  private readonly tableLsns = new Map<string, number>();
  /**
   * Recently read or written row records by row key (latin1): the record's JSON text, null
   * for a known-absent row; two generations (row-cache.ts). Reads fill it; each applied group writes its
   * rows through (before its callers resolve), so it always holds committed values. Strings,
   * not Buffers: a small Buffer pins its whole 8 KiB allocation slab.
   */
  private readonly rowCache: RowCache<string | null>;
  /** Counts applied groups, so a read that raced an apply is not cached. */
  private applySeq = 0;
  /** The LevelDB snapshot point reads share while no group is applied (point-snapshot.ts). */
  readonly pointReads: PointReadSnapshot;
  private readonly feed = new Subject<CommittedFrame>();
  /** Open cursors of `changesFrom`. */
  private readonly hub: FeedHub;
  /** The log as the feed reads it, with the epoch history. */
  private readonly log: LogView;
  /** The lowest LSN a follower registered with registerFollower has applied (Infinity: none). */
  private registeredFollowerMin = Infinity;
  private coordinator!: Coordinator;
  /** The one frame applier (commit path, recovery, followers). */
  private readonly applier: FrameApplier;
  private participantList: CommitParticipant[];
  private checkFn: CheckEvaluator | undefined;
  /** Dual-write hooks by source schema (setRowMirror). */
  private readonly mirrors = new Map<string, RowMirror>();
  private epochValue = 0;
  /** Set by recover(): see RecoveryReport.lostDeferred. */
  private lostDeferred: number[] = [];
  /** Replication's fence: throws when this store may not write (see setWriteGate). */
  private writeGate: (() => void) | undefined;
  /** setEpoch calls run one at a time. */
  private epochChain: Promise<unknown> = Promise.resolve();
  private closed = false;
  private readonly fences = new Set<string>();
  private diskFull = false;
  private freeBytes: number | null = null;
  private lastDiskCheck = 0;
  readonly segments: SegmentIndex;
  recovery!: RecoveryReport;
  /** The log's last LSN while participants open (before the coordinator exists). */
  private openingLsn = 0;
  private purgeTimer: NodeJS.Timeout | undefined;
  private maintenanceTimer: NodeJS.Timeout | undefined;
  private maintaining: Promise<unknown> | null = null;
  private lastCheckpointAt = Date.now();
  /** Background checkpoints and log retention (`checkpointFrames`, `checkpointMs`). */
  readonly maintenance: MaintenanceStats = { checkpoints: 0, segmentsDropped: 0, lastCheckpointLsn: 0, lastError: null };

  /**
   * Live frames only, each once it is durable and applied, in LSN order (no replay, no
   * resume): for in-process observers. Readers that must not miss a frame use `changesFrom`.
   */
  readonly changes: Observable<CommittedFrame> = this.feed.asObservable();

  private constructor(
    readonly db: Db,
    private readonly opts: StoreOptions,
  ) {
    this.participantList = [indexParticipant, idempotencyParticipant, ...(opts.participants ?? [])];
    this.checkFn = opts.checkEvaluator;
    this.segments = new SegmentIndex(db, opts.segmentFrames ?? 4096);
    this.rowCache = new RowCache(opts.rowCacheRows ?? 100_000);
    this.pointReads = new PointReadSnapshot(db, () => ({ lsn: this.lastLsn, tableLsns: new Map(this.tableLsns) }));
    this.log = new LogView(db, this.segments, () => this.lastLsn);
    this.hub = new FeedHub({ frames: opts.feedTailFrames, bytes: opts.feedTailBytes });
    this.applier = new FrameApplier({
      catalog: this.catalog,
      tableLsns: this.tableLsns,
      participants: () => this.participantList,
      clearSchema: (m) => this.clearSchema(m),
      del: (key) => this.db.del(key),
      retire: (id) => this.retire(id),
    });
  }

  static async open(opts: StoreOptions): Promise<TenantStore> {
    const db = new ClassicLevel<Buffer, Buffer>(opts.dir, {
      keyEncoding: 'buffer',
      valueEncoding: 'buffer',
      writeBufferSize: opts.writeBufferBytes ?? 16 * 1024 * 1024,
      ...(opts.tableFileBytes !== undefined ? { maxFileSize: opts.tableFileBytes } : {}),
    });
    const t0 = performance.now();
    await db.open();
    const store = new TenantStore(db, opts);
    store.phases.push({ name: 'leveldb open', start: t0, end: performance.now() });
    try {
      await store.recover();
    } catch (e) {
      await db.close();
      throw e;
    }
    for (const p of store.participantList) p.afterOpen?.();
    return store;
  }

  /**
   * Writes a store image (every key of another store's consistent snapshot, e.g. a follower
   * bootstrapping from its holder) into `dir`, which must not hold a store yet. Open it with
   * `TenantStore.open` afterwards: recovery loads the copied checkpoints and replays the log.
   */
  static async writeImage(dir: string, batches: AsyncIterable<ReadonlyArray<readonly [Buffer, Buffer]>>): Promise<{ keys: number }> {
    const db = new ClassicLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
    await db.open({ createIfMissing: true, errorIfExists: true });
    let keys = 0;
    try {
      for await (const kv of batches) {
        const b = db.batch();
        for (const [k, v] of kv) b.put(k, v);
        keys += kv.length;
        await b.write();
      }
      await db.put(metaKey('image'), Buffer.from(JSON.stringify({ keys, at: Date.now() })), { sync: true });
    } finally {
      await db.close();
    }
    return { keys };
  }

  get lastLsn(): number {
    return this.coordinator ? this.coordinator.lastLsn : this.openingLsn;
  }

  /**
   * The last frame handed to change-feed readers (`changesFrom`): every live reader's buffer
   * holds the frames up to it. At most `lastLsn` (a group is durable, then applied, then
   * published).
   */
  get publishedLsn(): number {
    return this.hub.published;
  }

  /** The fencing epoch stamped in every frame this store writes from now on. */
  get epoch(): number {
    return this.epochValue;
  }

  /**
   * Sets the fencing epoch (the lease revision of the writer) stamped in every frame prepared
   * from now on, and records it (`M ‖ epoch`, synced) so a restart keeps it. Epochs only grow:
   * a lower one is refused with `conflict` (a stale lease holder must not write); the same one
   * is a no-op. Frames already being prepared keep the epoch they were stamped with.
   *
   * @example
   *   await store.setEpoch(lease.revision); // on winning the lease, before taking writes
   */
  setEpoch(epoch: number): Promise<void> {
    const run = this.epochChain.then(async () => {
      if (!Number.isSafeInteger(epoch) || epoch < 0) throw new DbError('validation_failed', `an epoch is a non-negative integer, not ${String(epoch)}`);
      if (epoch < this.epochValue) throw new DbError('conflict', `epoch ${epoch} is below the store's epoch ${this.epochValue}`, { epoch: this.epochValue });
      if (epoch === this.epochValue) return;
      if (this.closed) throw new DbError('service_unavailable', 'the store is closed');
      await this.db.put(metaKey('epoch'), Buffer.from(JSON.stringify(epoch)), { sync: true });
      this.epochValue = epoch;
    });
    this.epochChain = run.catch(() => undefined);
    return run;
  }

  get dir(): string {
    return this.opts.dir;
  }

  /** The open's phases so far (RecoveryReport.phases). */
  private readonly phases: OpenPhase[] = [];

  /** Runs `fn` as the open's phase `name` (RecoveryReport.phases). */
  private async phase<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const start = performance.now();
    try {
      return await fn();
    } finally {
      this.phases.push({ name, start, end: performance.now() });
    }
  }

  /** The catalogue, background clears and interrupted drops, the epoch: the first step of the open. Returns the drops finished. */
  private async loadCatalog(): Promise<string[]> {
    for await (const batch of this.rawRange(prefixRange(KEYSPACE.meta, ['schema']))) {
      for (const [, v] of batch) {
        const { toml, physical } = parseJson<{ toml: string; physical?: string }>(v);
        const parsed = parseManifest(toml);
        const manifest = physical !== undefined && physical !== parsed.id ? { ...parsed, physical } : parsed;
        this.catalog.set(manifest.id, { manifest, toml });
      }
    }
    // Background clears resume first (an interrupted background drop leaves its rows to them).
    for await (const batch of this.rawRange(prefixRange(KEYSPACE.meta, ['retiring']))) {
      for (const [k] of batch) this.retire(decodeTuple(k, keyOf(KEYSPACE.meta, ['retiring']).length)[0] as string);
    }
    // Interrupted drops are finished once the catalog is loaded (a shadow's keys another table uses stay).
    const finishedDrops: string[] = [];
    for await (const batch of this.rawRange(prefixRange(KEYSPACE.meta, ['dropping']))) {
      for (const [k, v] of batch) {
        const m = parseJson<TableManifest>(v);
        await this.clearSchema(m);
        await this.db.del(k);
        finishedDrops.push(m.id);
      }
    }
    const storedEpoch = await this.db.get(metaKey('epoch'));
    this.epochValue = this.opts.epoch ?? (storedEpoch ? parseJson<number>(storedEpoch) : 0);
    if (this.opts.epoch !== undefined) await this.db.put(metaKey('epoch'), Buffer.from(JSON.stringify(this.opts.epoch)));
    return finishedDrops;
  }

  private async recover(): Promise<void> {
    const finishedDrops = await this.phase('catalog', () => this.loadCatalog());
    let lastLsn = await this.phase('log index', async () => {
      await this.segments.load();
      const tail = await this.db.keys({ gte: LOG_START, lt: LOG_END, reverse: true, limit: 1 }).all();
      const last = tail.length ? Number(tail[0].readBigUInt64BE(1)) : 0;
      // An LSN log retention dropped: below the oldest segment kept.
      const retained = (lsn: number) => {
        const kept = this.segments.list();
        return !kept.length || kept[0].segment <= this.segments.segmentOf(lsn);
      };
      this.lostDeferred = await fillLostDeferred(this.db, last, this.epochValue, retained);
      await this.log.load();
      this.registeredFollowerMin = await this.followerMin();
      return tail.length ? Number(tail[0].readBigUInt64BE(1)) : 0;
    });
    this.openingLsn = lastLsn;

    // Participants load their checkpoints, all at once (each reads its own keys: one's reads
    // overlap another's decoding); frames after the oldest one are replayed. Meanwhile the
    // newest frames are verified (checksum, structure; not decoded): the last VERIFY_TAIL of
    // them, newest first, within a byte budget. It was every one of the last 1,024 frames,
    // ~1 GB at 1M documents, whose reading was most of a restart; a reader of the log (feed,
    // followers) checks every frame it reads anyway. Frames to replay are decoded after.
    const budget = this.opts.verifyTailBytes ?? VERIFY_TAIL_BYTES;
    const opening = this.participantList.filter((p) => p.open);
    const [tailR, ...settled] = await Promise.allSettled([
      this.phase('verify log tail', () => this.log.verifyTail(Math.max(1, lastLsn - VERIFY_TAIL + 1), lastLsn, budget)),
      ...opening.map((p) => this.phase(`open ${p.name}`, () => p.open!(this))),
    ]);
    // all settle before a failure is thrown: the store closes its database then
    for (const r of [tailR, ...settled]) if (r.status === 'rejected') throw r.reason;
    const from = new Map<CommitParticipant, number>();
    opening.forEach((p, i) => from.set(p, (settled[i] as PromiseFulfilledResult<number>).value));
    const replayFrom = Math.min(lastLsn, ...from.values());
    const tail = (tailR as PromiseFulfilledResult<{ verified: number[]; corrupt: number[] }>).value;
    const bad = new Set(tail.corrupt);
    let verified = tail.verified.filter((l) => l <= replayFrom).length; // the later ones count as decoded below
    const frames: CommittedFrame[] = [];
    let decoded = 0;
    await this.phase('read replay', async () => {
      for await (const s of this.log.scan(replayFrom + 1)) {
        if (s.error) bad.add(s.lsn);
        else {
          verified++;
          decoded++;
          frames.push(s.entry.frame);
        }
      }
    });
    const corrupt = [...bad].sort((a, b) => a - b);
    if (corrupt.length) {
      const tailStart = corrupt[0];
      const onlyTail = corrupt.every((l, i) => l === tailStart + i) && corrupt[corrupt.length - 1] === lastLsn;
      if (this.opts.onCorruptTail !== 'truncate' || !onlyTail) {
        throw new DbError('corrupt_log', `log frames failed verification at open: lsn ${corrupt.join(', ')}${onlyTail ? ' (the tail; open with onCorruptTail "truncate" to drop them)' : ''}`, {
          corrupt,
        });
      }
      for (const l of corrupt) await this.db.del(logKey(l));
      lastLsn = tailStart - 1;
      frames.splice(frames.findIndex((f) => f.lsn >= tailStart) >>> 0);
    }
    const replayed: Record<string, number> = {};
    for (const p of from.keys()) replayed[p.name] = 0;
    const replayStart = performance.now();
    for (const f of frames) {
      if (f.lsn > lastLsn) break;
      this.applier.apply(f, from);
      for (const [p, lsn] of from) if (f.lsn > lsn) replayed[p.name]++;
    }
    this.phases.push({ name: 'replay', start: replayStart, end: performance.now() });
    this.coordinator = new Coordinator(this.coordinatorHost(), lastLsn);
    this.hub.published = lastLsn;
    const every = this.opts.idempotencyPurgeMs ?? 10 * 60_000;
    if (every > 0) {
      this.purgeTimer = setInterval(() => void this.purgeIdempotency().catch(() => undefined), every);
      this.purgeTimer.unref();
    }
    this.recovery = { lastLsn, framesVerified: verified, framesDecoded: decoded, corrupt, replayed, finishedDrops, lostDeferred: this.lostDeferred, phases: [...this.phases].sort((a, b) => a.start - b.start) };
    // the oldest checkpoint a participant opened from: a restart that replayed many frames
    // counts them, so the next maintenance comes as soon as they reach `checkpointFrames`
    this.maintenance.lastCheckpointLsn = Math.min(replayFrom, lastLsn);
    const everyFrames = this.opts.checkpointFrames ?? 50_000;
    const everyMs = this.opts.checkpointMs ?? 60 * 60_000;
    if (everyFrames > 0 || everyMs > 0) {
      this.maintenanceTimer = setInterval(() => this.maybeMaintain(everyFrames, everyMs), everyMs > 0 ? Math.min(1_000, everyMs) : 1_000);
      this.maintenanceTimer.unref();
    }
  }

  /** Starts a background `maintain()` when enough frames or time have gone by since the last checkpoint. */
  private maybeMaintain(frames: number, ms: number): void {
    if (this.closed || this.maintaining) return;
    const behind = this.lastLsn - this.maintenance.lastCheckpointLsn;
    if (behind <= 0) return;
    if (!((frames > 0 && behind >= frames) || (ms > 0 && Date.now() - this.lastCheckpointAt >= ms))) return;
    this.maintaining = this.maintain()
      .catch((e: unknown) => {
        this.maintenance.lastError = e instanceof Error ? e.message : String(e);
      })
      .finally(() => {
        this.maintaining = null;
      });
  }

  /**
   * Checkpoints every participant, then drops the log segments that no checkpoint and no
   * registered follower still needs. Commits go on meanwhile: a checkpoint covers the LSN its
   * participant had applied when it was taken, and later frames stay in the log.
   */
  async maintain(): Promise<{ checkpoint: Record<string, number>; dropped: number[] }> {
    const lsn = this.lastLsn;
    const checkpoint = await this.checkpoint();
    const dropped = await this.truncateLog();
    this.maintenance.checkpoints++;
    this.maintenance.segmentsDropped += dropped.length;
    this.maintenance.lastCheckpointLsn = Math.max(this.maintenance.lastCheckpointLsn, lsn);
    this.maintenance.lastError = null;
    this.lastCheckpointAt = Date.now();
    return { checkpoint, dropped };
  }

  private coordinatorHost() {
    return {
      db: this.db,
      sync: this.opts.sync ?? true,
      queueLimit: this.opts.queueLimit ?? 10_000,
      maxGroup: this.opts.maxGroup ?? 1024,
      epoch: () => this.epochValue,
      schema: (id: string) => this.catalog.get(id),
      schemas: () => this.catalog.values(),
      participants: () => this.participantList,
      checkEvaluator: () => this.checkFn,
      rowMirror: (schema: string) => this.mirrors.get(schema),
      groupMeta: (frames: readonly { lsn: number; bytes: number; epoch: number }[]) => {
        const meta = this.segments.record(frames);
        const e = this.log.noteEpochs(frames);
        if (e) meta.push(e);
        return meta;
      },
      cachedRow: (bin: string) => this.rowCache.get(bin),
      applyDurable: async (frames: readonly CommittedFrame[], droppedSchemas: readonly TableManifest[], writes: WriteSet) => {
        // paired with `publish`: the coordinator publishes every group it applies, in a finally
        this.applying++;
        this.applySeq++;
        let dropped = false;
        for (const f of frames) if (this.applier.apply(f)) dropped = true;
        this.cacheThrough(writes, dropped);
        await this.applier.finish(droppedSchemas);
        this.diskFull = false;
      },
      publish: (frames: readonly CommittedFrame[], bytes: readonly Buffer[]) => {
        try {
          for (const f of frames) this.feed.next(f);
          this.hub.publish(frames, bytes);
        } finally {
          this.applying--;
        }
      },
      gate: () => this.writeGate?.(),
      deferRedoable: this.opts.deferRedoableSync ?? true,
      pieceMs: this.opts.backgroundPieceMs ?? PIECE_MS,
      holdMs: this.opts.backgroundHoldMs ?? HOLD_MS,
      syncLog: () => syncLevelLogs(this.opts.dir),
      currentLog: () => currentLevelLog(this.opts.dir),
      onWriteError: (e: Error) => {
        if (/ENOSPC|no space left/i.test(e.message)) {
          this.diskFull = true;
          return new DbError('service_unavailable', 'the disk is full: writes are refused until space is freed');
        }
        return new DbError('internal_error', `write failed: ${e.message}`);
      },
    };
  }

  /**
   * Writes a group's row keys through the read cache (after its apply, before its callers
   * resolve). A bulk group (a load) updates the rows already cached but does not displace them.
   */
  private cacheThrough(writes: WriteSet, dropped: boolean): void {
    if (dropped) this.rowCache.clear();
    else if (this.rowCache.size > 0 || writes.size <= this.rowCache.bulk) {
      const through = writes.size <= this.rowCache.bulk;
      writes.forEachBin((k, v, text) => {
        if (k.charCodeAt(0) !== ROW_KEY_PREFIX) return;
        if (through || this.rowCache.has(k)) this.rowCache.set(k, v === null ? null : (text ?? v.toString('utf8')));
      });
    }
  }

  /**
   * Removes every key of a dropped schema: rows and each participant's ranges. A schema whose
   * keys another table now uses (a migration's shadow after the cutover pointed its table at
   * them) leaves its rows and index entries alone.
   */
  private async clearSchema(m: TableManifest): Promise<void> {
    // Shared with another table, or being cleared in the background (a `background` drop).
    const shared = this.retiringIds.has(keyIdOf(m)) || [...this.catalog.values()].some((e) => e.manifest.id !== m.id && keyIdOf(e.manifest) === keyIdOf(m));
    if (!shared) {
      const rows = prefixRange(KEYSPACE.row, [keyIdOf(m)]);
      await this.db.clear({ gte: rows.gte, lt: rows.lt });
    }
    for (const p of this.participantList) {
      // Entries kept under the key id (indexes, and fts, vector, graph's) belong to whoever uses it now.
      if (shared && (p === indexParticipant || p.keyRanges)) continue;
      for (const [gte, lt] of p.dropRanges?.(m) ?? []) await this.db.clear({ gte, lt });
    }
  }

  /**
   * Clears, in the background, the row and index keys of `keyId` (and participants' `keyRanges`) that a table left when a
   * cutover moved it to its new shape's keys (no manifest points at them any more; the
   * `retiring` marker written in that frame makes a restart finish the job).
   */
  private retire(keyId: string): void {
    if (this.retiringIds.has(keyId)) return;
    this.retiringIds.add(keyId);
    const run = (async () => {
      for (const space of [KEYSPACE.row, KEYSPACE.index]) {
        const r = prefixRange(space, [keyId]);
        await this.db.clear({ gte: r.gte, lt: r.lt });
      }
      // The derived entries participants keep under the key id (postings, vector entries, edges).
      for (const p of this.participantList) for (const [gte, lt] of p.keyRanges?.(keyId) ?? []) await this.db.clear({ gte, lt });
      await this.db.del(metaKey('retiring', keyId));
    })();
    const p = run
      .catch((e) => (this.maintenance.lastError = `retiring ${keyId}: ${(e as Error)?.message ?? String(e)}`))
      .finally(() => {
        this.retiring.delete(p);
        this.retiringIds.delete(keyId);
      });
    this.retiring.add(p);
  }

  /** Background clears of retired keys (awaited by close), and the key ids they clear. */
  private readonly retiring = new Set<Promise<unknown>>();
  private readonly retiringIds = new Set<string>();

  // ---- writes -------------------------------------------------------------

  /**
   * Commits a request atomically in one frame; rejects with a DbError when a check fails
   * (nothing is written). Not an async function: every write passes here, and an async
   * function handing back the coordinator's promise costs a promise and two microtask turns
   * more per request; a failed check is a rejected promise all the same.
   */
  commit(req: CommitRequest): Promise<CommitResult> {
    try {
      if (this.closed) throw new DbError('service_unavailable', 'the store is closed');
      if (this.fences.size && req.route !== FENCE_ROUTE) this.checkFences(req);
      if (this.diskCheck || Date.now() - this.lastDiskCheck >= 1000) return this.commitAfterDiskCheck(req);
      return this.submit(req);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * Every request that arrives while the disk check runs waits for that same check, so requests
   * are queued in the order they were made (a backfill relies on it for frames it has in flight).
   */
  private async commitAfterDiskCheck(req: CommitRequest): Promise<CommitResult> {
    await (this.diskCheck ??= this.checkDisk().finally(() => (this.diskCheck = null)));
    return this.submit(req);
  }

  private submit(req: CommitRequest): Promise<CommitResult> {
    if (this.diskFull) throw new DbError('service_unavailable', 'the disk is full: writes are refused until space is freed');
    this.writeGate?.();
    return this.coordinator.submit(req);
  }

  /**
   * Fences a schema's rows while a migration's cutover frame is built and applied: any other
   * request writing its rows gets 503 `service_unavailable` (retry: true). Only a request
   * with `route: FENCE_ROUTE` passes. Memory only: a crash lifts it (the cutover is one frame).
   */
  fenceSchema(schema: string, on: boolean): void {
    if (on) this.fences.add(schema);
    else this.fences.delete(schema);
  }

  private checkFences(req: CommitRequest): void {
    for (const c of req.changes) {
      if ((c.op === 'put' || c.op === 'delete' || c.op === 'mirror') && this.fences.has(c.schema)) {
        throw new DbError('service_unavailable', `writes to ${c.schema} are paused while a migration cuts over; retry shortly`, { schema: c.schema, migration: 'cutover' });
      }
    }
  }

  async put(schema: string, row: Row, precondition?: Precondition): Promise<CommitResult> {
    return this.commit({ changes: [{ op: 'put', schema, row, ...(precondition ? { precondition } : {}) }] });
  }

  async delete(schema: string, pk: PkTuple, precondition?: Precondition): Promise<CommitResult> {
    return this.commit({ changes: [{ op: 'delete', schema, pk, ...(precondition ? { precondition } : {}) }] });
  }

  /** Registers or updates a schema from its TOML manifest. */
  async registerSchema(toml: string): Promise<{ id: string; created: boolean }> {
    const r = await this.commit({ changes: [{ op: 'schema_put', toml }] });
    const res = r.results[0] as { schema: string; created: boolean };
    return { id: res.schema, created: res.created };
  }

  /** Drops a schema with its rows and every derived entry. False when it was not registered. */
  async dropSchema(id: string): Promise<boolean> {
    const r = await this.commit({ changes: [{ op: 'schema_drop', schema: id }] });
    return (r.results[0] as { dropped: boolean }).dropped;
  }

  /**
   * Installs the replication fence: `gate` runs when a commit is submitted and again right
   * before its group's batch is written, and throws (e.g. 503 `service_unavailable`) while this
   * store may not write, such as on a node that does not hold the tenant's lease or could not
   * renew it. A group refused at the batch writes nothing. `undefined` removes it.
   */
  setWriteGate(gate: (() => void) | undefined): void {
    this.writeGate = gate;
  }

  setCheckEvaluator(fn: CheckEvaluator | undefined): void {
    this.checkFn = fn;
  }

  /**
   * Installs (or removes, with undefined) the dual-write hook of a table: every put and delete
   * of its rows then carries the mirror's row changes in the same frame (RowMirror in api.ts).
   * Memory only, like the fence: its owner installs it again after a restart, before writes.
   */
  setRowMirror(schema: string, mirror: RowMirror | undefined): void {
    if (mirror) this.mirrors.set(schema, mirror);
    else this.mirrors.delete(schema);
  }

  // ---- reads --------------------------------------------------------------

  manifest(id: string): TableManifest | undefined {
    return this.catalog.get(id)?.manifest;
  }

  /** Whether a participant of that name is registered (the index participant always is). */
  hasParticipant(name: string): boolean {
    return this.participantList.some((p) => p.name === name);
  }

  /** Every registered manifest, internal tables (a migration's shadow) included: for the store's own parts. */
  manifests(): TableManifest[] {
    return [...this.catalog.values()].map((e) => e.manifest).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /**
   * The tables a user sees: every manifest but the internal ones (`isInternalTable`: a running
   * migration's shadow). The one listing behind every user surface (GET /schemas, Elasticsearch
   * index patterns, `_cat`, `_stats`, English questions, SQL names).
   */
  tables(): TableManifest[] {
    return this.manifests().filter((m) => !isInternalTable(m.table));
  }

  /** A user's table by id: undefined for an internal one (see tables()). */
  table(id: string): TableManifest | undefined {
    const m = this.manifest(id);
    return m && !isInternalTable(m.table) ? m : undefined;
  }

  schemaToml(id: string): string | undefined {
    return this.catalog.get(id)?.toml;
  }

  /**
   * The latest committed version of one row, read without an explicit snapshot (a point
   * read is consistent on its own). Throws schema_not_found for an unknown schema.
   */
  async getRow(schema: string, pk: PkTuple): Promise<StoredRow | undefined> {
    const text = await this.rowRecord(schema, pk);
    return text === undefined ? undefined : decodeRowText(schema, pk, text);
  }

  /**
   * getRow's row with its values as the JSON text they are stored as (no parse and no
   * re-serialization), for answering a read as stored.
   */
  async getRowJson(schema: string, pk: PkTuple): Promise<{ version: number; lsn: number; json: string } | undefined> {
    const text = await this.rowRecord(schema, pk);
    return text === undefined ? undefined : splitRowRecord(text);
  }

  /**
   * getRow of several rows of one schema (values in `pks` order): the cached ones from the read
   * cache, the others in one store read (one `getMany`, not a read per row).
   */
  async getRows(schema: string, pks: readonly PkTuple[]): Promise<Array<StoredRow | undefined>> {
    const keys = pks.map((pk) => this.rowKeyOf(schema, pk));
    const out = new Array<string | undefined>(keys.length);
    const miss: number[] = [];
    keys.forEach((key, i) => {
      const cached = this.rowCache.get(key.toString('latin1'));
      if (cached === undefined) miss.push(i);
      else out[i] = cached ?? undefined;
    });
    if (miss.length) {
      const seq = this.applySeq;
      const vs = await this.pointRead((o) => this.db.getMany(miss.map((i) => keys[i]), o));
      miss.forEach((i, j) => (out[i] = this.cacheRead(seq, keys[i], vs[j])));
    }
    return out.map((text, i) => (text === undefined ? undefined : decodeRowText(schema, pks[i], text)));
  }

  /** A row's key; throws what a read of an unknown schema or a closed store throws. */
  private rowKeyOf(schema: string, pk: PkTuple): Buffer {
    if (this.closed) throw new DbError('service_unavailable', 'the store is closed');
    const e = this.catalog.get(schema);
    if (!e) throw new DbError('schema_not_found', `no schema is registered as "${schema}"`);
    return rowKey(keyIdOf(e.manifest), pk);
  }

  /** A read of the store as committed: through the snapshot point reads share (point-snapshot.ts), not an implicit one per read. */
  private async pointRead<T>(read: (o: { snapshot?: ReturnType<Db['snapshot']> }) => Promise<T>): Promise<T> {
    const held = this.pointReads.acquire(this.applySeq, !this.coordinator.writing);
    try {
      return await read(held ? { snapshot: held.snap } : {});
    } finally {
      held?.release();
    }
  }

  /** A record read when the apply count was `seq`, as text, kept in the read cache when no group can have changed it meanwhile. */
  private cacheRead(seq: number, key: Buffer, v: Buffer | undefined): string | undefined {
    const text = v === undefined ? undefined : v.toString('utf8');
    // Cache only a value no group could have changed while it was read: none was being
    // written, and none was applied since the read began.
    if (seq === this.applySeq && !this.coordinator.writing) this.rowCache.set(key.toString('latin1'), text ?? null);
    return text;
  }

  /** The row's record text, through the read cache. */
  private async rowRecord(schema: string, pk: PkTuple): Promise<string | undefined> {
    const key = this.rowKeyOf(schema, pk);
    const cached = this.rowCache.get(key.toString('latin1'));
    if (cached !== undefined) return cached ?? undefined;
    const seq = this.applySeq;
    return this.cacheRead(seq, key, await this.pointRead((o) => this.db.get(key, o)));
  }

  /**
   * The tenant's catalogue entries of one kind, as committed, in id order. Catalogue changes
   * (`{ op: 'catalog', kind, id, record }`) are written in the tenant's frames, so a follower
   * or a copy of the log holds them too.
   */
  async catalogEntries(kind: CatalogKind): Promise<CatalogEntry[]> {
    if (this.closed) throw new DbError('service_unavailable', 'the store is closed');
    return readCatalogFrom(this.db, kind);
  }

  /**
   * catalogEntries of a store's directory that no process has open (e.g. a node building its
   * token index at start, before it opens the tenant's store). Opens the database without
   * recovery and closes it again.
   */
  static async readCatalog(dir: string, kind: CatalogKind): Promise<CatalogEntry[]> {
    const db = new ClassicLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer', createIfMissing: false });
    await db.open();
    try {
      return await readCatalogFrom(db, kind);
    } finally {
      await db.close();
    }
  }

  /** The last logged step of a migration (`{ op, migration, step, cursor?, state?, lsn }`), if any. */
  async migrationStep(id: string): Promise<(MigrationChange & { lsn: number }) | undefined> {
    const v = await this.db.get(metaKey('migration', id));
    return v ? parseJson<MigrationChange & { lsn: number }>(v) : undefined;
  }

  /** Deletes (in a frame) up to `limit` Idempotency-Key records whose expiry is at or before `now`. */
  async purgeIdempotency(now: number = Date.now(), limit = 10_000): Promise<number> {
    const r = await this.commit({ changes: [{ op: 'custom', participant: IDEMPOTENCY_PARTICIPANT, type: 'purge', payload: { now, limit } }] });
    const res = r.results[0];
    return res.op === 'custom' ? (res.result as { purged: number }).purged : 0;
  }

  /** The live Idempotency-Key record committed with an earlier request, if any (written in that request's frame: read as point reads are). */
  async idempotencyRecord(key: string): Promise<IdempotencyRecordStored | undefined> {
    const k = idempotencyKey(key);
    const v = await this.pointRead((o) => this.db.get(k, o));
    if (!v) return undefined;
    const rec = parseJson<IdempotencyRecordStored>(v);
    return rec.expiresAt > Date.now() ? rec : undefined;
  }

  /**
   * What `snapshot().tableLsn(schema)` would answer now (the last applied frame that changed the
   * schema's rows or manifest, 0 if none), without a LevelDB snapshot: creating and releasing one
   * takes LevelDB's mutex on the event loop (point-snapshot.ts).
   */
  tableLsn(schema: string): number {
    return this.tableLsns.get(schema) ?? 0;
  }

  /**
   * A snapshot for a query's reads of rows, indexes and derived entries (everything frames
   * write): the one LevelDB snapshot point reads share until the next applied group
   * (point-snapshot.ts), stable, so the query creates and releases none on the event loop; a
   * fresh `snapshot()` when there is none and a group is being written. Not for keys written
   * outside frames (participants' checkpoint images: `snapshot()`).
   */
  readSnapshot(): Snapshot {
    if (this.closed) throw new DbError('service_unavailable', 'the store is closed');
    const held = this.pointReads.acquire(this.applySeq, !this.coordinator.writing);
    if (!held) return this.snapshot();
    return new LevelSnapshotReader(this.db, held.snap, (id) => this.manifest(id), { lsn: held.at.lsn, stable: true, tableLsns: held.at.tableLsns }, held.release);
  }

  /**
   * True when every group applied to the participants has had its frames published: the
   * participants' in-memory indexes and the feed's readers (the SQL table cache) then hold the
   * same frames, so a read of both in one turn sees one state of the store without a LevelDB
   * snapshot (SQL's reads at the current LSN check it). The leader applies a group, then awaits
   * its finish before it publishes: a continuation queued in that gap would otherwise read an
   * index that holds the group beside a cache that does not.
   */
  get settled(): boolean {
    return this.applying === 0;
  }

  /** Groups applied to the participants whose frames are not yet published (`settled`). */
  private applying = 0;

  snapshot(): Snapshot {
    if (this.closed) throw new DbError('service_unavailable', 'the store is closed');
    // Stable: no group is between its batch and its apply, so the snapshot holds exactly
    // the frames up to lastLsn and tableLsn() describes it.
    const stable = !this.coordinator?.writing;
    return new LevelSnapshotReader(this.db, this.db.snapshot(), (id) => this.manifest(id), {
      lsn: this.lastLsn,
      stable,
      tableLsns: new Map(this.tableLsns),
    });
  }

  /** Raw range over the live store (not a snapshot); for recovery and maintenance. */
  private async *rawRange(r: { gte: Buffer; lt: Buffer }): AsyncIterable<Array<[Buffer, Buffer]>> {
    const it = this.db.iterator({ gte: r.gte, lt: r.lt });
    try {
      for (;;) {
        const e = await it.nextv(256);
        if (!e.length) return;
        yield e as Array<[Buffer, Buffer]>;
      }
    } finally {
      await it.close();
    }
  }

  /**
   * Appends frames written by another store (a follower applying its leader's log, or a store
   * rebuilt from a copy of a log) through the same applier as the commit path: each frame's
   * keys, its log entry and the segment index in one sync batch per run of frames (a run ends
   * at a schema drop, whose keys are cleared before later frames apply), then the in-memory
   * state, then the change feed. Every frame is verified first (checksum, `corrupt_log`);
   * frames this log already has are skipped (a re-delivery), unless this log has them under
   * another epoch (`resync_required`: its history differs); the rest must continue this log,
   * LSN `lastLsn + 1` onward with no gap (else `validation_failed`, nothing written). Local
   * commits wait meanwhile.
   *
   * @example
   *   const feed = leader.changesFrom({ epoch: cursor.epoch, lsn: follower.lastLsn }, { kind: 'follower', id: 'node-b' });
   *   for await (const batch of feed) await follower.applyFrames(batch.entries.map((e) => e.bytes));
   */
  async applyFrames(frames: readonly Uint8Array[]): Promise<{ lastLsn: number }> {
    return this.coordinator.exclusive(async () => {
      if (this.closed) throw new DbError('service_unavailable', 'the store is closed');
      const all = frames.map((b) => ({ f: decodeFrame(b), b: Buffer.from(b.buffer, b.byteOffset, b.byteLength) }));
      // Frames this log already has (a re-delivery) are skipped, if this log has them under the same epoch.
      for (const d of all) {
        if (d.f.lsn > this.lastLsn) break;
        const at = this.log.epochAt(d.f.lsn);
        if (at !== undefined && at !== d.f.epoch) {
          throw new DbError('resync_required', `frame ${d.f.lsn} was written under epoch ${d.f.epoch}, but this log has it under epoch ${at}: start again from a snapshot`, {
            reason: 'epoch',
          });
        }
      }
      const decoded = all.filter((d) => d.f.lsn > this.lastLsn);
      let expect = this.lastLsn + 1;
      for (const d of decoded) {
        if (d.f.lsn !== expect) throw new DbError('validation_failed', `frame lsn ${d.f.lsn} does not continue the log (expected ${expect})`, { expected: expect });
        expect++;
      }
      for (let i = 0; i < decoded.length; ) {
        let j = i;
        while (j < decoded.length - 1 && !decoded[j].f.changes.some((c) => c.op === 'schema_drop' || (c.op === 'schema_put' && c.physical !== undefined))) j++;
        await this.appendRun(decoded.slice(i, j + 1));
        i = j + 1;
      }
      return { lastLsn: this.lastLsn };
    });
  }

  /** One run of applyFrames: one batch, then the applier. */
  private async appendRun(run: ReadonlyArray<{ f: CommittedFrame; b: Buffer }>): Promise<void> {
    const writes = new WriteSet();
    // Row keys under each table's keys as of the run (a run ends at a frame that moves a table's keys).
    const keyId = (s: string) => {
      const m = this.catalog.get(s)?.manifest;
      return m ? keyIdOf(m) : s;
    };
    for (const { f, b } of run) for (const w of FrameApplier.keyWrites(f, b, keyId)) writes.set(w.key, w.value);
    const batch = this.db.batch();
    for (const [k, v] of writes.entries()) {
      if (v === null) batch.del(k);
      else batch.put(k, v);
    }
    const counted = run.map(({ f, b }) => ({ lsn: f.lsn, bytes: b.length, epoch: f.epoch }));
    const meta = this.segments.record(counted);
    const e = this.log.noteEpochs(counted);
    if (e) meta.push(e);
    for (const m of meta) {
      if (m.value === null) batch.del(m.key);
      else batch.put(m.key, m.value);
    }
    this.coordinator.writing = true;
    try {
      await batch.write({ sync: this.opts.sync ?? true });
      this.coordinator.adopt(run[run.length - 1].f.lsn);
      this.applySeq++;
      this.applying++; // until the frames are published (`settled`)
      try {
        let dropped = false;
        for (const { f } of run) if (this.applier.apply(f)) dropped = true;
        this.cacheThrough(writes, dropped);
        await this.applier.finish(run.flatMap(({ f }) => FrameApplier.dropped(f)));
      } catch (e) {
        this.applying--;
        throw e;
      }
    } finally {
      this.coordinator.writing = false;
    }
    try {
      for (const { f } of run) this.feed.next(f);
      this.hub.publish(
        run.map(({ f }) => f),
        run.map(({ b }) => b),
      );
    } finally {
      this.applying--;
    }
  }

  // ---- the change feed ------------------------------------------------------

  /**
   * A resumable reader of this log: the frames after `cursor` (replayed from the log), then
   * live frames as they commit, with no gap and no duplicate, in LSN order, in batches. A
   * cursor is the last frame a reader has and its epoch; `{ epoch: 0, lsn: 0 }` starts at the
   * beginning. The reader is told `resync_required` (details.reason) when it must start again
   * from a snapshot: its cursor names a frame this log's history does not have under that
   * epoch (`epoch`, `ahead`: rewritten by a new lease holder), the frames it needs were
   * dropped (`retention`), or a watch reader fell further behind than its bound (`lag`).
   * Followers hold the log for as long as their cursor is open; watch readers up to their
   * bound (`FeedOptions`, store options `feedHoldFrames`/`feedHoldBytes`). A slow reader
   * never blocks commits: its live buffer is bounded, and when it fills the reader goes back
   * to reading the log.
   *
   * @example
   *   const feed = store.changesFrom({ epoch: 0, lsn: 0 }, { kind: 'follower', id: 'node-b' });
   *   for await (const batch of feed) {
   *     await follower.applyFrames(batch.entries.map((e) => e.bytes));
   *     saveCursor(batch.cursor);
   *   }
   */
  changesFrom(cursor: ChangeCursor, opts: FeedOptions = {}): ChangeFeed {
    if (this.closed) throw new DbError('service_unavailable', 'the store is closed');
    if (opts.kind !== undefined && !READER_KINDS.includes(opts.kind)) throw new DbError('validation_failed', `unknown reader kind "${String(opts.kind)}"`);
    const feed = new ChangeFeed(this.log, this.hub, cursor, {
      ...opts,
      maxLagFrames: opts.maxLagFrames ?? this.opts.feedHoldFrames ?? 100_000,
      maxLagBytes: opts.maxLagBytes ?? this.opts.feedHoldBytes ?? 256 * 1024 * 1024,
    });
    this.hub.add(feed);
    // A named follower holds the log from where it starts until it is past it or removed.
    if (feed.kind === 'follower' && opts.id) void this.registerFollower(opts.id, cursor.lsn).catch(() => undefined);
    return feed;
  }

  /** The epoch the frame at `lsn` was written under (from the epoch history), or undefined when this log never had it. */
  epochOf(lsn: number): number | undefined {
    return this.log.epochAt(lsn);
  }

  /** Open cursors, the oldest LSN the log holds for any reason, and the frames each kind of holder keeps. */
  feedStats(): FeedStats {
    const last = this.lastLsn;
    const holds = this.hub.holds(last, this.log.bytesAfter);
    // only participants with in-memory state (an `open`) hold the log for their checkpoints
    const checkpoint = this.participantList.some((p) => p.open) ? Math.min(last, this.maintenance.lastCheckpointLsn) : last;
    const followers = Math.min(holds.follower, this.registeredFollowerMin);
    return {
      cursors: this.hub.counts(),
      oldestHeldLsn: Math.min(holds.watch, followers, checkpoint) + 1,
      firstLsn: this.log.firstLsn(),
      retainedFrames: { follower: last - followers, watch: last - holds.watch, checkpoint: last - checkpoint },
      memory: this.hub.held,
    };
  }

  /** The epoch frame `lsn` was written under (from the epoch history, so also for dropped frames), or undefined past the log's end. */
  epochAt(lsn: number): number | undefined {
    return this.log.epochAt(lsn);
  }

  /** Frames with lsn >= from, decoded and verified, in order. */
  async *frames(from = 1): AsyncIterable<CommittedFrame> {
    for await (const e of this.logFrames(from)) yield e.frame;
  }

  /** The log's frames with lsn >= from as stored (`bytes`, what `applyFrames` takes) and decoded, in order. */
  async *logFrames(from = 1): AsyncIterable<LogEntry> {
    for await (const s of this.log.scan(from)) {
      if (s.error) throw s.error;
      yield s.entry;
    }
  }

  // ---- maintenance --------------------------------------------------------

  /**
   * One atomic batch. Adding a value copies it into the native batch on the event loop
   * (~1 ms per MB), so a checkpoint of large images (a vector table's 8 MiB chunks) yields a
   * turn after every CHECKPOINT_YIELD_BYTES added: no stall over a few ms (issue 25).
   */
  async writeCheckpoint(writes: readonly KeyWrite[]): Promise<void> {
    const batch = this.db.batch();
    let added = 0;
    for (const w of writes) {
      if (w.value === null) batch.del(w.key);
      else {
        if (added >= CHECKPOINT_YIELD_BYTES) {
          added = 0;
          await new Promise((r) => setImmediate(r));
        }
        batch.put(w.key, w.value);
        added += w.value.length;
      }
    }
    await batch.write({ sync: true });
  }

  /** Asks every participant with in-memory state to checkpoint, and records the LSNs they cover. */
  async checkpoint(opts: { final?: boolean } = {}): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    for (const p of this.participantList) {
      if (!p.checkpoint) continue;
      const lsn = await p.checkpoint(this, { final: !!opts.final });
      await this.db.put(metaKey('checkpoint', p.name), Buffer.from(JSON.stringify(lsn)), { sync: true });
      out[p.name] = lsn;
    }
    return out;
  }

  /** Records how far a follower has applied the log (retention keeps what it still needs). */
  async registerFollower(id: string, appliedLsn: number): Promise<void> {
    await this.db.put(metaKey('follower', id), Buffer.from(JSON.stringify(appliedLsn)), { sync: true });
    this.registeredFollowerMin = await this.followerMin();
  }

  /**
   * Drops whole log segments that no checkpoint and no follower still needs. The
   * newest segment is always kept. Returns the segment numbers dropped.
   */
  async truncateLog(): Promise<number[]> {
    let needed = this.lastLsn;
    for (const p of this.participantList) {
      if (!p.open) continue;
      const v = await this.db.get(metaKey('checkpoint', p.name));
      needed = Math.min(needed, v ? parseJson<number>(v) : 0);
    }
    this.registeredFollowerMin = await this.followerMin();
    const holds = this.hub.holds(this.lastLsn, this.log.bytesAfter);
    needed = Math.min(needed, this.registeredFollowerMin, holds.follower, holds.watch);
    return this.segments.dropThrough(needed);
  }

  /** The lowest LSN any registered follower has applied (Infinity: none registered). */
  private async followerMin(): Promise<number> {
    let min = Infinity;
    for await (const batch of this.rawRange(prefixRange(KEYSPACE.meta, ['follower']))) for (const [, v] of batch) min = Math.min(min, parseJson<number>(v));
    return min;
  }

  /** Forgets a registered follower: the log no longer keeps frames for it. */
  async removeFollower(id: string): Promise<void> {
    await this.db.del(metaKey('follower', id), { sync: true });
    this.registeredFollowerMin = await this.followerMin();
  }

  /** Rebuilds every derived entry from the rows and reports each difference. */
  async verify(): Promise<VerifyReport> {
    await this.coordinator.drain();
    return verifyStore(this.db, this.manifests(), this.participantList);
  }

  /** The disk check in progress, if any (commit() waits for it). */
  private diskCheck: Promise<void> | null = null;

  private async checkDisk(): Promise<void> {
    const now = Date.now();
    if (now - this.lastDiskCheck < 1000) return;
    this.lastDiskCheck = now;
    try {
      const s = await statfs(this.opts.dir);
      this.freeBytes = Number(s.bavail) * Number(s.bsize);
      this.diskFull = this.freeBytes < (this.opts.minFreeBytes ?? 64 * 1024 * 1024);
    } catch {
      this.freeBytes = null;
    }
  }

  /** The log is mounted: the store is not closed and its database is open (liveness, spec §4.1). */
  get mounted(): boolean {
    return !this.closed && this.db.status === 'open';
  }

  async health(): Promise<StoreHealth> {
    this.lastDiskCheck = 0;
    await this.checkDisk();
    const depth = this.coordinator.depth;
    const queueFull = depth >= (this.opts.queueLimit ?? 10_000);
    const pressure = this.closed ? 'closed' : this.diskFull ? 'disk_full' : queueFull ? 'queue_full' : null;
    return { writable: pressure === null, pressure, queueDepth: depth, lastLsn: this.lastLsn, freeBytes: this.freeBytes };
  }

  /** Waits for queued commits, checkpoints participants, and closes the database. */
  async close(): Promise<void> {
    if (this.closed) return;
    clearInterval(this.purgeTimer);
    clearInterval(this.maintenanceTimer);
    await this.maintaining;
    await this.coordinator.drain();
    await Promise.allSettled([...this.retiring]);
    this.closed = true;
    this.coordinator.close();
    try {
      await this.checkpoint({ final: true });
    } finally {
      this.hub.closeAll();
      this.feed.complete();
      this.pointReads.retire();
      await this.db.close();
    }
  }
}

