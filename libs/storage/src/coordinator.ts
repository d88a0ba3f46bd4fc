/**
 * The commit coordinator: the single writer of a tenant store (ARCHITECTURE.md §2).
 *
 * Requests queue up; each turn takes every waiting request (group commit), prepares
 * them one by one against committed state plus the earlier requests of the group,
 * gives each successful one the next LSN and one frame, and writes every frame and
 * every key of the group in one `batch(..., { sync })`. A request that fails its checks
 * is rejected alone. After durability the frames are applied in LSN order, then the
 * callers resolve, then the frames go out on the change feed.
 */
import { DbError, Row, TableManifest, coerceValue, isDbError, stringifyJson } from '@mmdb/core';
import type {
  Change,
  ChangeResult,
  FrameMeta,
  CheckEvaluator,
  CommitParticipant,
  CommitRequest,
  CommitResult,
  CommittedFrame,
  CustomChange,
  LoggedChange,
  PkTuple,
  Precondition,
  RowDeleteChange,
  RowMirror,
  RowMirrorChange,
  RowMirrorEvent,
  RowPutChange,
  StoredResponse,
  StoredRow,
} from './api';
import { catalogChange, migrationChange } from './catalog-changes';
import { KeyReader, MISS, RequestContext, WriteSet, storedValuesJson } from './context';
import { encodeFrame, FRAME_VERSION } from './frame';
import { DEFERRED_MARK, deferredMark } from './deferred-sync';
import { KEYSPACE, canonicalJson, decodeTuple, keyOf, prefixRange } from './keys';
import { parseManifest } from './manifest';
import { PieceClock } from './pieces';
import { RowTops } from './row-tops';
import { fkIndexName, idempotencyKey, indexEntry, json, keyIdOf, logKey, metaKey, parseJson, pkOf, rowKey, rowRecordText } from './records';
import type { Db } from './snapshot';

export interface SchemaEntry {
  readonly manifest: TableManifest;
  readonly toml: string;
}

export interface CoordinatorHost {
  readonly db: Db;
  readonly sync: boolean;
  readonly queueLimit: number;
  readonly maxGroup: number;
  epoch(): number;
  schema(id: string): SchemaEntry | undefined;
  schemas(): Iterable<SchemaEntry>;
  participants(): readonly CommitParticipant[];
  checkEvaluator(): CheckEvaluator | undefined;
  /** The dual-write hook of a table (store.setRowMirror), if any. */
  rowMirror(schema: string): RowMirror | undefined;
  /** Extra store-local writes for the group's batch (segment index). */
  groupMeta(frames: readonly { lsn: number; bytes: number; epoch: number }[]): Array<{ key: Buffer; value: Buffer | null }>;
  /** A row's committed record as the store's read cache holds it, as text (null: known absent), or undefined when not cached. */
  cachedRow(bin: string): string | null | undefined;
  /**
   * Applies durable frames in LSN order (catalog, participants, the read cache from the
   * group's key writes); drops finished schemas.
   */
  applyDurable(frames: readonly CommittedFrame[], dropped: readonly TableManifest[], writes: WriteSet): Promise<void>;
  /** Publishes frames (and their encoded bytes) on the change feed. */
  publish(frames: readonly CommittedFrame[], bytes: readonly Buffer[]): void;
  onWriteError(e: Error): DbError;
  /** Throws (a DbError) when the store may not write now (a fenced replica); runs right before each group's batch. */
  gate(): void;
  /** Whether a `redoable` background request is written without its own fsync ("Deferred sync" in DESIGN.md). */
  readonly deferRedoable: boolean;
  /** A background request's preparation lets the event loop go after this many ms (0: never; PieceClock). */
  readonly pieceMs: number;
  /**
   * A background request waits up to this many ms, before its preparation, for a foreground
   * group in flight to be applied and answered (0: it is prepared while that group is written;
   * DESIGN.md "Background preparation in pieces", "Hold for the foreground").
   */
  readonly holdMs: number;
  /** Makes every batch written so far durable: an fsync of each of the database's log files. */
  syncLog(): Promise<void>;
  /** The name of the log file LevelDB appends to now (null: unknown); a change means it switched files. */
  currentLog(): Promise<string | null>;
}

interface Pending {
  readonly req: CommitRequest;
  /** When it was queued (performance.now()). */
  readonly at: number;
  /** When its group's preparation began, it was prepared, its batch was issued and written (performance.now(); for `trace`). */
  taken?: number;
  prepared?: number;
  issued?: number;
  written?: number;
  /** A tail of a split background request: the preparation its earlier pieces took (ms), and the foreground waits they saw (fg_wait_ms, fg_queue_ms). */
  readonly spent?: number;
  readonly waits?: readonly [number, number];
  readonly resolve: (r: CommitResult) => void;
  readonly reject: (e: unknown) => void;
}

/** One request's path through the writer (performance.now() times; a phase it skipped is undefined). */
export interface CommitTrace {
  readonly background: boolean;
  readonly at: number;
  readonly taken?: number;
  readonly prepared?: number;
  readonly issued?: number;
  readonly written?: number;
  readonly resolved: number;
}

interface Prepared {
  readonly pending: Pending;
  readonly result?: CommitResult;
  readonly error?: unknown;
  readonly frame?: CommittedFrame;
  readonly bytes?: Buffer;
  readonly dropped?: TableManifest[];
  /** A background request cut short: the request that carries its remaining changes (`CommitRequest.split`). */
  readonly tail?: CommitRequest;
  /** The time its preparation let the event loop go (ms; PieceClock). */
  readonly away?: number;
}

const ROW_PREFIX = KEYSPACE.row.charCodeAt(0);
/** The backfill cursor keys (M ‖ "migration" ‖ id): the steps a run of deferred groups may move. */
const STEPS = prefixRange(KEYSPACE.meta, ['migration']);
const isStepKey = (k: Buffer): boolean => k[0] === STEPS.gte[0] && Buffer.compare(k, STEPS.gte) >= 0 && Buffer.compare(k, STEPS.lt) < 0;
/** Deferred groups waiting for no sync, beyond which the writer syncs the log itself (DESIGN.md "Deferred sync"). */
const SYNC_EVERY = 3;
/** Deferred groups not applied yet, beyond which the next background group waits for them. */
const MAX_DEFERRED = 6;

/** A v2 frame's annotations for a request (only built when it has any). */
function frameMeta(req: CommitRequest): FrameMeta {
  const i = req.idempotency;
  return {
    ...(i ? { idempotency: { key: i.key, fingerprint: i.fingerprint, expires_at: i.expiresAt } } : {}),
    ...(req.actor !== undefined ? { actor: req.actor } : {}),
    ...(req.route !== undefined ? { route: req.route } : {}),
  };
}
/** stringifyJson(pk); JSON.stringify's text is the same for strings and safe integers (the usual keys). */
const pkJson = (pk: PkTuple): string =>
  pk.length === 1 && Number.isSafeInteger(pk[0]) ? `[${pk[0] as number}]` : pk.every((v) => typeof v === 'string' || Number.isSafeInteger(v)) ? JSON.stringify(pk) : stringifyJson(pk);
/** Column names per manifest (manifests are immutable once parsed). */
const columnNames = new WeakMap<TableManifest, Set<string>>();

/**
 * A request's logged changes with their JSON text, so that a put's values, serialized once
 * for its row record, are reused in the frame (`json()` is exactly stringifyJson(changes)).
 */
class ChangeLog {
  readonly changes: LoggedChange[] = [];
  private readonly parts: string[] = [];

  add(change: LoggedChange, text: string = stringifyJson(change)): void {
    this.changes.push(change);
    this.parts.push(text);
  }

  json(): string {
    return `[${this.parts.join(',')}]`;
  }

  /** Appends another log's changes (a mirror's, once they are kept). */
  append(other: ChangeLog): void {
    this.changes.push(...other.changes);
    this.parts.push(...other.parts);
  }
}

/**
 * A redoable group written without sync. `synced` resolves once a later synced batch of this
 * writer went to the same log file (its fsync made this group durable too), so that its apply,
 * and a foreground group's behind it, need not wait for the log sync started for it.
 */
interface Deferred {
  readonly g: PreparedGroup;
  readonly log: string | null;
  covered: boolean;
  applied?: Promise<void>;
  readonly synced: Promise<void>;
  readonly markSynced: () => void;
}

interface PreparedGroup {
  readonly writes: WriteSet;
  readonly schemas: Map<string, SchemaEntry | null>;
  readonly prepared: Prepared[];
  readonly rowidBefore: Map<string, number>;
  hasDrop: boolean;
  lastLsn: number;
}

interface Flight extends PreparedGroup {
  /** Set when its batch is written (true; a deferred group: once recorded as one) or failed (false). */
  landed?: boolean;
  /** Resolves with `landed`. */
  readonly durable: Promise<boolean>;
  /** Resolves once the group is applied and its callers answered (false: its write failed). */
  readonly done: Promise<boolean>;
  /** Written without its own fsync (a redoable background group; "Deferred sync"). */
  readonly deferred: boolean;
  /** A background request already waited for it (`holdMs`). */
  held?: boolean;
}

/**
 * Requests waiting before the writer, waiting for the group in flight, prepares them into the
 * next group (each wake costs a turn of the event loop; the rest are prepared when it lands).
 */
const GATHER_CHUNK = 8;
/** A request the next group may gather while the one in flight is written (not a backfill frame, not a drop). */
const gatherable = (p: Pending): boolean => p.req.background !== true && !p.req.changes?.some((c) => c.op === 'schema_drop');

interface IdempotencyStored {
  fingerprint: string;
  expiresAt: number;
  response: StoredResponse;
}

export class Coordinator {
  private queue: Pending[] = [];
  private running = false;
  /** Groups from their batch issued until applied (or failed), oldest first: what a group prepared now reads on top of. */
  private unapplied: PreparedGroup[] = [];
  /** Set while the pump waits for the group in flight to land with nothing to prepare: a submit or the landing wakes it. */
  private wake: (() => void) | null = null;
  /** Set when a background request was held for a foreground group (`holdMs`): it is taken next, before any foreground request. */
  private owed = false;
  /** Set while the pump holds a background request back (too many deferred groups): a foreground submit wakes it. */
  private arrival: (() => void) | null = null;
  private closed = false;
  private rowidNext = new Map<string, number>();
  private readonly base: KeyReader;
  /** Per key id, an upper bound of its row keys: a put above it reads nothing (row-tops.ts). */
  private readonly tops: RowTops;
  /** Row values read ahead for the current group (one getMany instead of a get per change). */
  private prefetched: Map<string, Buffer | undefined> | null = null;
  /** The row key the read-ahead built for each put of the current group (its pk as the row gave it), so the put does not build it again. */
  private putKeys: Map<RowPutChange, { readonly id: string; readonly pk: readonly unknown[]; readonly key: Buffer; readonly bin: string }> | null = null;
  /** The longest wait, queued to its batch issued, of a foreground request written since the last background one was prepared (ms). */
  private fgWait = 0;
  /** The same requests' longest wait before their group's preparation began (ms). */
  private fgQueue = 0;
  /** The last durable LSN. */
  lastLsn: number;
  /** The last LSN handed out (ahead of lastLsn while a group is being written). */
  private nextLsn: number;
  /** `deferred`: groups written without their own fsync (a redoable backfill frame's); `logSyncs`: the writer's own syncs of the log files for them; `holds`: background requests that waited for a foreground group (`holdMs`). */
  readonly stats = { groups: 0, requests: 0, frames: 0, deferred: 0, logSyncs: 0, splits: 0, holds: 0 };
  /** Called for every request as it resolves or fails, with its phases (a profiling hook; unset: no cost). */
  trace: ((t: CommitTrace) => void) | null = null;
  /** Groups between their batch issued and their frames applied. */
  private inWrite = 0;
  private external = false;
  /**
   * Redoable groups written without sync and not applied yet, oldest first (a run; DESIGN.md
   * "Deferred sync"): the log file each went to, and whether a sync covering it was started.
   */
  private deferred: Array<Deferred> = [];
  /**
   * The current run's recovery clue (M ‖ "deferred"), written in every batch while `deferred`
   * is not empty: its first LSN and each backfill cursor key its groups write, with the key's
   * value before the run.
   */
  private run: { readonly from: number; readonly restore: Map<string, Buffer | null>; mark: Buffer } | null = null;
  /**
   * The value (hex key → value, null: deleted) each backfill cursor key (M ‖ "migration" …) has
   * after the last batch that wrote it, for the keys a batch of this writer wrote: the run's clue
   * takes a key's value before the run from here instead of a read (DESIGN.md "Deferred sync").
   * Cleared when frames join the log from elsewhere (`exclusive`).
   */
  private stepValues = new Map<string, Buffer | null>();
  /** The log file name the writer last read (currentLog), or null. */
  private lastLog: string | null = null;
  /** Every group's apply (and a deferred one's log sync before it) is chained here, so frames apply in LSN order. Never rejects. */
  private applyChain: Promise<void> = Promise.resolve();
  /** The last LSN whose batch was written (durable, or deferred). */
  private writtenLsn: number;
  /** Set when a deferred group's log sync failed: its outcome is unknown, every later commit is refused until a reopen. */
  private broken: DbError | null = null;

  /** True from the moment a group's batch is issued until its frames are applied (or while set from outside). */
  get writing(): boolean {
    return this.inWrite > 0 || this.external;
  }

  set writing(v: boolean) {
    this.external = v;
  }

  constructor(
    private readonly host: CoordinatorHost,
    lastLsn: number,
  ) {
    this.lastLsn = lastLsn;
    this.nextLsn = lastLsn;
    this.writtenLsn = lastLsn;
    const db = host.db;
    this.tops = new RowTops(async (id) => {
      const r = prefixRange(KEYSPACE.row, [id]);
      const top = await db.keys({ gte: r.gte, lt: r.lt, reverse: true, limit: 1 }).all();
      return top.length ? top[0].toString('latin1') : null;
    });
    this.base = {
      get: (key, bin) => {
        const k = bin ?? key.toString('latin1');
        if (this.prefetched?.has(k)) return Promise.resolve(this.prefetched.get(k));
        if (key[0] === ROW_PREFIX) {
          const c = host.cachedRow(k);
          if (c !== undefined) return Promise.resolve(c === null ? undefined : Buffer.from(c, 'utf8'));
        }
        return db.get(key);
      },
      range: (o) => db.iterator(o).all() as Promise<Array<[Buffer, Buffer]>>,
      peek: (bin) => {
        if (this.prefetched?.has(bin)) return this.prefetched.get(bin) ?? null;
        if (bin.charCodeAt(0) === ROW_PREFIX) {
          const c = host.cachedRow(bin);
          if (c !== undefined) return c;
        }
        return MISS;
      },
    };
  }

  get depth(): number {
    return this.queue.length;
  }

  submit(req: CommitRequest): Promise<CommitResult> {
    if (this.closed) return Promise.reject(new DbError('service_unavailable', 'the store is closing'));
    if (this.broken) return Promise.reject(this.broken);
    if (this.queue.length >= this.host.queueLimit) {
      return Promise.reject(new DbError('service_unavailable', `commit queue is full (${this.host.queueLimit} waiting requests); retry shortly`));
    }
    return new Promise<CommitResult>((resolve, reject) => {
      // Every field set here, in one order: the writer adds its phase times to the same shape.
      this.queue.push({ req, at: performance.now(), taken: undefined, prepared: undefined, issued: undefined, written: undefined, spent: undefined, waits: undefined, resolve, reject });
      if (!this.running) void this.pump();
      else if (this.wake && this.queue.length >= GATHER_CHUNK) this.wake();
      else if (this.arrival && req.background !== true) this.arrival();
    });
  }

  /** Set while `exclusive` runs: the pump finishes its group in flight, then waits. */
  private gate: Promise<void> | null = null;
  private idleAtGate = false;

  /**
   * Runs `fn` while no group is being prepared or written (commits queue up meanwhile and
   * go on after it): how frames from elsewhere (a leader's, a copy's) join this log.
   */
  async exclusive<T>(fn: () => Promise<T>): Promise<T> {
    while (this.gate) await this.gate;
    let open!: () => void;
    this.gate = new Promise<void>((r) => (open = r));
    try {
      while (this.running && !this.idleAtGate) await new Promise((r) => setTimeout(r, 1));
      // Deferred groups are durable and applied before frames from elsewhere follow them.
      this.coverDeferred();
      await this.applyChain;
      this.stepValues.clear();
      return await fn();
    } finally {
      this.gate = null;
      open();
      if (this.queue.length && !this.running) void this.pump();
    }
  }

  /** After frames were appended outside the pump (`exclusive`): the log now ends at `lastLsn`. */
  adopt(lastLsn: number): void {
    this.lastLsn = lastLsn;
    this.nextLsn = lastLsn;
    this.writtenLsn = lastLsn;
    // hidden rowids and the row-key bounds are re-read from the rows when next needed
    this.rowidNext = new Map();
    this.tops.forget();
  }

  /** Resolves when the queue is empty and no group is being written or waiting for its log sync. */
  async drain(): Promise<void> {
    while (this.running || this.queue.length || this.deferred.length || this.unapplied.length) await new Promise((r) => setTimeout(r, 1));
  }

  close(): void {
    this.closed = true;
  }

  private async pump(): Promise<void> {
    this.running = true;
    // The group being written. The next group gathers while its batch is written: a request
    // that arrives meanwhile is prepared at once, on top of it, and the group is issued the
    // moment the flight's batch is durable, before the flight is applied (a pipeline of depth two).
    let flight: Flight | null = null;
    try {
      while (this.queue.length || flight) {
        if (this.gate) {
          if (flight) await flight.done;
          flight = null;
          this.coverDeferred();
          await this.applyChain;
          this.idleAtGate = true;
          while (this.gate) await this.gate;
          this.idleAtGate = false;
          continue;
        }
        if (flight && !flight.hasDrop && !this.gate && !this.owed && (!this.queue.length || gatherable(this.queue[0]))) {
          flight = await this.gather(flight);
          continue;
        }
        if (!this.queue.length) {
          await flight!.done;
          flight = null;
          // Nothing else to write: deferred groups are synced now.
          if (!this.queue.length) this.coverDeferred();
          continue;
        }
        // Let callers resolved by the last group (and every request issued in this turn
        // of the event loop) queue up first, so that they share the next group's fsync.
        await new Promise<void>((r) => setImmediate(r));
        // A schema drop ends its group: its keys are cleared before anything after it is prepared.
        if (flight?.hasDrop) {
          await flight.done;
          flight = null;
        }
        // Hold for the foreground: a background request is not prepared while a foreground group
        // it would be prepared on is still written or applied (at most holdMs, once per flight;
        // a foreground arrival ends it: that request goes first).
        if (this.host.holdMs > 0 && flight && !flight.deferred && !flight.held && this.queue.length && this.queue.every((p) => p.req.background === true)) {
          flight.held = true;
          let timer: NodeJS.Timeout | undefined;
          await Promise.race([flight.done, new Promise<void>((r) => (this.arrival = r)), new Promise<void>((r) => (timer = setTimeout(r, this.host.holdMs)))]);
          clearTimeout(timer);
          this.arrival = null;
          this.stats.holds++;
          // The background request goes next, before foreground requests that came meanwhile
          // (they cut it after its first piece): held once per flight, it is never starved.
          this.owed = true;
          continue;
        }
        // A background request waits before its preparation (not after it) while MAX_DEFERRED
        // deferred groups are not applied, so a foreground request arriving meanwhile goes first.
        const inAir = flight?.deferred === true && flight.landed === undefined;
        if (this.deferred.length + (inAir ? 1 : 0) >= MAX_DEFERRED && this.queue.every((p) => p.req.background === true)) {
          if (inAir && this.deferred.length < MAX_DEFERRED) {
            // The deferred group in flight is one of them once written.
            await flight!.durable;
            continue;
          }
          this.coverDeferred();
          await Promise.race([this.deferred[0].applied, new Promise<void>((r) => (this.arrival = r))]);
          this.arrival = null;
          continue;
        }
        let n = Math.min(this.queue.length, this.host.maxGroup);
        const dropAt = this.queue.slice(0, n).findIndex((p) => p.req.changes?.some((c) => c.op === 'schema_drop'));
        if (dropAt >= 0) n = dropAt + 1;
        const items = this.take(n);
        const group = this.newGroup();
        await this.prepareInto(group, items);
        if (flight) {
          const ok = await flight.durable;
          flight = null;
          if (!ok) {
            // It was prepared on writes that never became durable.
            this.nextLsn = this.writtenLsn;
            for (const p of group.prepared) p.pending.reject(p.error ?? new DbError('service_unavailable', 'an earlier commit group failed to write; retry'));
            continue;
          }
        }
        const background = items.length === 1 && items[0].req.background === true;
        // At most MAX_DEFERRED groups not applied yet: the next background one waits for the oldest.
        while (background && this.deferred.length >= MAX_DEFERRED) {
          this.coverDeferred();
          await this.deferred[0].applied;
        }
        const defer = background && items[0].req.redoable === true && this.host.deferRedoable && this.host.sync && !group.hasDrop && group.schemas.size === 0;
        flight = this.launch(group, defer);
      }
    } finally {
      this.running = false;
      // However the loop ended, no deferred group is left without a sync.
      this.coverDeferred();
    }
  }

  /**
   * The next group: the first `n` queued requests, except that background work (a migration's
   * backfill frame) yields: while foreground requests are among them, they go first (in their
   * order) and the background ones wait; a background request goes alone, the oldest first.
   */
  private take(n: number): Pending[] {
    if (this.owed) {
      this.owed = false;
      const i = this.queue.findIndex((p) => p.req.background === true);
      if (i >= 0) return this.queue.splice(i, 1);
    }
    const window = this.queue.slice(0, n);
    if (!window.some((p) => p.req.background === true)) return this.queue.splice(0, n);
    const fg = window.filter((p) => p.req.background !== true);
    const taken = new Set(fg.length ? fg : [window[0]]);
    this.queue = this.queue.filter((p) => !taken.has(p));
    return [...taken];
  }

  /**
   * While `flight` is written, prepares the requests that arrive (gatherable, up to
   * `maxGroup`; GATHER_CHUNK at a time, the rest when it lands) into the next group, on top of
   * it; issues that group the moment the flight's batch is durable. Null when none came, or when the flight failed (what was prepared on
   * its writes is rejected). Waking the loop to prepare an arrival as a group of its own
   * (issue 21a) made groups smaller: this group stays open until the flight lands.
   */
  private async gather(flight: Flight): Promise<Flight | null> {
    let group: PreparedGroup | null = null;
    for (;;) {
      if (flight.landed === false) break;
      const landed = flight.landed === true;
      let n = 0;
      const room = this.host.maxGroup - (group?.prepared.length ?? 0);
      while (!this.gate && n < room && n < this.queue.length && gatherable(this.queue[n])) n++;
      // While the flight is written, a chunk at a time; once it landed, what came meanwhile.
      if (n > 0 && (landed || n >= GATHER_CHUNK)) {
        group ??= this.newGroup();
        await this.prepareInto(group, this.queue.splice(0, n));
        if (landed) break;
        continue;
      }
      if (landed) break;
      await new Promise<void>((r) => (this.wake = r));
      this.wake = null;
      // The requests that arrive in one turn of the event loop are prepared together.
      if (flight.landed === undefined) await new Promise<void>((r) => setImmediate(r));
    }
    if (!flight.landed) {
      this.nextLsn = this.writtenLsn;
      this.rowidNext = flight.rowidBefore;
      for (const p of group?.prepared ?? []) p.pending.reject(p.error ?? new DbError('service_unavailable', 'an earlier commit group failed to write; retry'));
      return null;
    }
    return group ? this.launch(group, false) : null;
  }


  /** Issues a prepared group's batch (writeGroup) and tracks it as the flight. */
  private launch(g: PreparedGroup, deferred: boolean): Flight {
    let land!: (ok: boolean) => void;
    const durable = new Promise<boolean>((r) => (land = r));
    const f: { -readonly [K in keyof Flight]: Flight[K] } = { ...g, durable, done: Promise.resolve(false), deferred };
    f.done = this.writeGroup(g, deferred, (ok) => {
      f.landed = ok;
      land(ok);
      this.wake?.();
    });
    // A flight the pump no longer holds (it gathered the next group and moved on) is not awaited:
    // a failure of its apply must not surface as an unhandled rejection.
    f.done.catch(() => undefined);
    return f;
  }

  private newGroup(): PreparedGroup {
    return { writes: new WriteSet(), schemas: new Map(), prepared: [], rowidBefore: new Map(this.rowidNext), hasDrop: false, lastLsn: this.nextLsn };
  }

  /** Prepares `items` in order into `g`, on top of the writes of every group not applied yet (newest first). */
  private async prepareInto(g: PreparedGroup, items: Pending[]): Promise<void> {
    const { writes, schemas } = g;
    const below = this.unapplied.slice().reverse();
    // What every request of these reads under its own writes: the group's, then the groups not applied yet (one array for all).
    const layers = [writes, ...below.map((b) => b.writes)];
    // A background request is alone in its group: its time includes the group's reads ahead.
    const t0 = performance.now();
    for (const p of items) {
      p.taken = t0;
      if (p.req.background !== true) this.fgQueue = Math.max(this.fgQueue, t0 - p.at);
    }
    await this.prefetch(items);
    const prepared = g.prepared;
    const from = prepared.length;
    for (const p of items) {
      try {
        const r = await this.prepare(p, writes, schemas, below, layers, this.nextLsn + 1);
        if (r.frame) this.nextLsn = r.frame.lsn;
        if (!p.req.background || !r.result) {
          prepared.push(r);
          continue;
        }
        const spent = (p.spent ?? 0) + performance.now() - t0 - (r.away ?? 0);
        const waits = [Math.max(this.fgWait, p.waits?.[0] ?? 0), Math.max(this.fgQueue, p.waits?.[1] ?? 0)] as const;
        const out = { ...r, result: { ...r.result, prepare_ms: spent, fg_wait_ms: waits[0], fg_queue_ms: waits[1] } };
        if (!r.tail) {
          prepared.push(out);
          continue;
        }
        // Cut short for a foreground request: this piece answers nobody; its tail, queued
        // first among the background requests, answers the caller (or fails it).
        this.queue.unshift({ req: r.tail, at: p.at, taken: undefined, prepared: undefined, issued: undefined, written: undefined, spent, waits, resolve: p.resolve, reject: p.reject });
        this.stats.splits++;
        prepared.push({ ...out, pending: { ...p, resolve: () => undefined, reject: () => undefined } });
      } catch (e) {
        prepared.push({ pending: p, error: e });
      }
    }
    this.prefetched = null;
    this.putKeys = null;
    const t1 = performance.now();
    for (const p of items) p.prepared = t1;
    for (const x of prepared.slice(from)) x.pending.prepared = t1;
    if (items.some((p) => p.req.background === true)) this.fgWait = this.fgQueue = 0;
    g.hasDrop ||= prepared.some((p) => p.dropped?.length);
    g.lastLsn = this.nextLsn;
  }

  /**
   * Writes a prepared group in one sync batch, then applies, resolves and publishes it. False
   * if the write failed. `deferred`: the batch is written without sync and the call returns
   * once it is written (the next group may be written after it); the group is applied,
   * resolved and published once a log sync or a later synced batch made it durable
   * (coverDeferred; DESIGN.md "Deferred sync").
   */
  private async writeGroup(g: PreparedGroup, deferred: boolean, onLand: (ok: boolean) => void): Promise<boolean> {
    const framed = g.prepared.filter((p) => p.frame);
    if (!framed.length) {
      onLand(true);
      // In order: after every group written before it is applied.
      await (this.applyChain = this.applyChain.then(() => this.resolveAll(g.prepared)));
      return true;
    }
    this.unapplied.push(g);
    // A chained batch: abstract-level's array form costs several times more per key.
    const batch = this.host.db.batch();
    let counted = false;
    // Deferred groups this synced batch is written over before a sync covering them started.
    const under = deferred ? [] : this.deferred.slice();
    // What recovery needs should a power loss keep a later batch and lose one of the run's groups.
    if (deferred) await this.noteRun(g);
    if (deferred && this.lastLog === null) await this.readLog();
    const logBefore = this.lastLog;
    try {
      for (const [key, v] of g.writes.entries()) {
        if (v === null) batch.del(key);
        else batch.put(key, v);
      }
      for (const p of framed) batch.put(logKey(p.frame!.lsn), p.bytes!);
      for (const m of this.host.groupMeta(framed.map((p) => ({ lsn: p.frame!.lsn, bytes: p.bytes!.length, epoch: p.frame!.epoch })))) {
        if (m.value === null) batch.del(m.key);
        else batch.put(m.key, m.value);
      }
      // Written while deferred groups may not be durable yet: recovery fills a missing LSN of the
      // run with an empty frame and sets its backfill cursors back (DESIGN.md "Deferred sync").
      if (this.run && (deferred || this.deferred.length)) batch.put(DEFERRED_MARK, this.run.mark);
      else if (this.run) {
        // The run is durable: its clue goes (a stale one would only cost recovery a scan).
        batch.del(DEFERRED_MARK);
        this.run = null;
      }
      this.host.gate();
      this.inWrite++;
      counted = true;
      const issued = performance.now();
      for (const p of framed) {
        p.pending.issued = issued;
        if (p.pending.req.background !== true) this.fgWait = Math.max(this.fgWait, issued - p.pending.at);
      }
      await batch.write({ sync: this.host.sync && !deferred });
      this.noteSteps(g.writes);
      const written = performance.now();
      for (const p of framed) p.pending.written = written;
    } catch (e) {
      if (counted) this.inWrite--;
      await batch.close().catch(() => undefined);
      this.rowidNext = g.rowidBefore;
      this.nextLsn = this.writtenLsn;
      const err = isDbError(e) ? e : this.host.onWriteError(e as Error);
      for (const p of g.prepared) p.pending.reject(p.error ?? err);
      this.forget(g);
      onLand(false);
      return false;
    }
    this.writtenLsn = g.lastLsn;
    this.stats.groups++;
    this.stats.requests += g.prepared.length;
    this.stats.frames += framed.length;
    if (deferred) {
      this.stats.deferred++;
      // Which log file it went to: the newest one, if it was already the newest before the write
      // (LevelDB numbers its log files in order; any other writer could switch files meanwhile).
      const after = await this.readLog();
      let markSynced!: () => void;
      const synced = new Promise<void>((r) => (markSynced = r));
      this.deferred.push({ g, log: logBefore !== null && logBefore === after ? after : null, covered: false, synced, markSynced });
      // Synced once SYNC_EVERY are waiting; until then a foreground batch's own sync covers them.
      if (this.deferred.filter((d) => !d.covered).length >= SYNC_EVERY) this.coverDeferred();
      onLand(true);
      return true;
    }
    // Its own fsync covered the deferred groups written before it if LevelDB appended them all
    // to the same log file; if it switched files in between, the older ones are synced first.
    // Those a log sync already covers but that are still waiting for it are durable now too when
    // they went to the same log file: their apply (and this group's, after them) need not wait for it.
    const open = under.filter((d) => !d.covered);
    const waiting = under.filter((d) => d.covered && this.deferred.includes(d));
    if (open.length || waiting.length) {
      const now = await this.readLog();
      if (open.length) this.coverDeferred(now !== null && open.every((d) => d.log === now) ? Promise.resolve() : undefined, open);
      for (const d of waiting) if (now !== null && d.log === now) d.markSynced();
    }
    // Durable: the next group's batch is issued now (in gather), before this one is applied.
    onLand(true);
    const applied = this.applyChain.then(() => this.applyGroup(g));
    this.applyChain = applied.catch(() => undefined);
    await applied;
    return true;
  }

  /**
   * Settles deferred groups (`which`, by default every one no sync covers yet) once `durable`
   * resolves (by default a sync of the log files, started now): they are then applied,
   * resolved and published, in order, after every group written before them.
   */
  private coverDeferred(durable?: Promise<void>, which = this.deferred.filter((d) => !d.covered)): void {
    if (!which.length) return;
    for (const d of which) d.covered = true;
    const p = durable ?? this.host.syncLog();
    if (!durable) this.stats.logSyncs++;
    for (const d of which) {
      this.applyChain = d.applied = this.applyChain
        .then(() => Promise.race([p, d.synced]))
        .then(
          () => this.applyGroup(d.g),
          (e) => this.breakOn(e, d.g),
        )
        .catch(() => undefined)
        .finally(() => {
          this.deferred = this.deferred.filter((x) => x !== d);
        });
    }
  }

  /** Remembers the backfill cursor keys a batch just written set (`stepValues`). */
  private noteSteps(writes: WriteSet): void {
    for (const [k, v] of writes.entries()) if (isStepKey(k)) this.stepValues.set(k.toString('hex'), v);
  }

  /** The name of LevelDB's current log file (null: unknown), remembered as `lastLog`. */
  private async readLog(): Promise<string | null> {
    this.lastLog = await this.host.currentLog().catch(() => null);
    return this.lastLog;
  }

  /**
   * Records a deferred group `g` in the run's clue (a run starts with it when no deferred group
   * is pending): the run's first LSN, and the value before the run of each backfill cursor key
   * `g` writes that the run has not written yet (read now: every earlier write of it was synced,
   * by a group before the run or a synced one within it), so that a hole sets them back.
   */
  private async noteRun(g: PreparedGroup): Promise<void> {
    if (!this.deferred.length) this.run = null;
    const keys: Buffer[] = [];
    for (const [k] of g.writes.entries()) if (isStepKey(k) && !this.run?.restore.has(k.toString('hex'))) keys.push(k);
    if (this.run && !keys.length) return;
    // Every earlier batch is written: a key this writer wrote has the value it left; the others are read
    // (a getMany takes LevelDB's lock on the event loop, and this one was in the frame's write path).
    const unknown = keys.filter((k) => !this.stepValues.has(k.toString('hex')));
    const read = unknown.length ? await this.host.db.getMany(unknown) : [];
    unknown.forEach((k, i) => this.stepValues.set(k.toString('hex'), read[i] ?? null));
    const restore = new Map(this.run?.restore ?? []);
    for (const k of keys) restore.set(k.toString('hex'), this.stepValues.get(k.toString('hex')) ?? null);
    const from = this.run?.from ?? g.prepared.find((p) => p.frame)?.frame?.lsn ?? g.lastLsn;
    this.run = { from, restore, mark: deferredMark(from, [...restore].map(([k, v]) => [Buffer.from(k, 'hex'), v])) };
  }

  /** Applies a durable group's frames (after every earlier one), then resolves its callers and publishes its frames. */
  private async applyGroup(g: PreparedGroup): Promise<void> {
    if (this.broken) {
      this.inWrite--;
      this.forget(g);
      for (const p of g.prepared) p.pending.reject(p.error ?? this.broken);
      return;
    }
    const framed = g.prepared.filter((p) => p.frame);
    this.lastLsn = g.lastLsn;
    const frames = framed.map((p) => p.frame!);
    try {
      await this.host.applyDurable(frames, framed.flatMap((p) => p.dropped ?? []), g.writes);
    } finally {
      this.forget(g);
      this.inWrite--;
      this.resolveAll(g.prepared);
      this.host.publish(
        frames,
        framed.map((p) => p.bytes!),
      );
    }
  }

  /** `g` is applied (or will never be): later groups no longer read on top of its writes. */
  private forget(g: PreparedGroup): void {
    const i = this.unapplied.indexOf(g);
    if (i >= 0) this.unapplied.splice(i, 1);
  }

  /** A deferred group's log sync failed: whether it is durable is unknown, so the store refuses every commit from now on. */
  private breakOn(e: unknown, g: PreparedGroup): void {
    this.broken = new DbError('internal_error', `the log could not be synced (${(e as Error)?.message ?? String(e)}); the store refuses writes until it is reopened`);
    this.inWrite--;
    this.forget(g);
    for (const p of g.prepared) p.pending.reject(this.broken);
    for (const p of this.queue.splice(0)) p.reject(this.broken);
  }

  /**
   * Reads the current value of every row the group's puts and deletes name: from the store's
   * read cache where it holds them, the rest in one getMany.
   */
  private async prefetch(items: readonly Pending[]): Promise<void> {
    // The row-key bound of each table a put names, read once (RowTops).
    let unknown: string[] | null = null;
    for (const p of items) {
      for (const c of p.req.changes ?? []) {
        if (c.op !== 'put') continue;
        const m = this.host.schema(c.schema)?.manifest;
        if (m && !this.tops.known(keyIdOf(m))) (unknown ??= []).push(keyIdOf(m));
      }
    }
    if (unknown) await this.tops.load(unknown);
    const keys: Buffer[] = [];
    const bins: string[] = [];
    const known = new Map<string, Buffer | undefined>();
    // A row key above every row its table may hold is known absent; a cached row is read from the
    // cache when the put asks for it (peek); only the other rows are read ahead.
    const putKeys = new Map<RowPutChange, { id: string; pk: readonly unknown[]; key: Buffer; bin: string }>();
    const want = (id: string, key: Buffer, put: RowPutChange | null, pk: readonly unknown[]): void => {
      const bin = key.toString('latin1');
      if (put) putKeys.set(put, { id, pk, key, bin });
      if (put && this.tops.above(id, bin)) known.set(bin, undefined);
      else if (this.host.cachedRow(bin) === undefined) {
        keys.push(key);
        bins.push(bin);
      }
    };
    for (const p of items) {
      for (const c of p.req.changes ?? []) {
        if (c.op !== 'put' && c.op !== 'delete' && c.op !== 'mirror') continue;
        const m = this.host.schema(c.schema)?.manifest;
        if (!m) continue;
        const pk = c.op !== 'put' ? c.pk : c.row && typeof c.row === 'object' ? m.primary_key.map((k) => (c.row as Row)[k]) : null;
        if (!Array.isArray(pk) || pk.length !== m.primary_key.length || pk.some((v) => v === undefined || v === null)) continue;
        const id = keyIdOf(m);
        want(id, rowKey(id, pk), c.op === 'put' ? c : null, pk);
        // A mirrored table's dual write (or a backfill's copy) reads the same key of its target too.
        const target = this.host.rowMirror(m.id)?.target;
        const tm = target !== undefined ? this.host.schema(target)?.manifest : undefined;
        if (tm) want(keyIdOf(tm), rowKey(keyIdOf(tm), pk), null, pk);
        if (c.op !== 'put') continue;
        // The unique-index entries the put will check (a miss only falls back to a get).
        for (const idx of m.indexes) {
          if (!idx.unique) continue;
          const vals = idx.columns.map((col) => (c.row as Row)[col]);
          if (vals.every((v) => v !== undefined && v !== null)) {
            keys.push(indexEntry(id, idx, vals, pk).key);
            bins.push(keys[keys.length - 1].toString('latin1'));
          }
        }
      }
    }
    // One missing key is read by the fallback get as cheaply as by a getMany.
    if (keys.length >= 2) {
      const values = await this.host.db.getMany(keys);
      for (let i = 0; i < keys.length; i++) known.set(bins[i], values[i]);
    }
    if (known.size) this.prefetched = known;
    if (putKeys.size) this.putKeys = putKeys;
  }

  private resolveAll(prepared: Prepared[]): void {
    if (this.trace) {
      const now = performance.now();
      for (const { pending: q } of prepared) this.trace({ background: q.req.background === true, at: q.at, taken: q.taken, prepared: q.prepared, issued: q.issued, written: q.written, resolved: now });
    }
    for (const p of prepared) {
      if (p.error !== undefined) p.pending.reject(p.error);
      else p.pending.resolve(p.result!);
    }
  }

  private async prepare(p: Pending, group: WriteSet, groupSchemas: Map<string, SchemaEntry | null>, below: readonly PreparedGroup[], layers: readonly WriteSet[], lsn: number): Promise<Prepared> {
    const req = p.req;
    if (!Array.isArray(req.changes) || req.changes.length === 0) throw new DbError('validation_failed', 'a commit needs at least one change');
    if (req.changes.some((c) => c.op === 'schema_drop') && req.changes.some((c) => c.op !== 'schema_drop')) {
      throw new DbError('validation_failed', 'a schema drop cannot share a commit with other changes');
    }
    const ownSchemas = new Map<string, SchemaEntry | null>();
    const schemaOf = (id: string): SchemaEntry | undefined => {
      if (ownSchemas.has(id)) return ownSchemas.get(id) ?? undefined;
      if (groupSchemas.has(id)) return groupSchemas.get(id) ?? undefined;
      for (const b of below) if (b.schemas.has(id)) return b.schemas.get(id) ?? undefined;
      return this.host.schema(id);
    };
    const ctx = new RequestContext(lsn, this.base, layers, (id) => schemaOf(id)?.manifest);

    if (req.idempotency) {
      const prior = await ctx.get(idempotencyKey(req.idempotency.key));
      if (prior) {
        const rec = parseJson<IdempotencyStored>(prior);
        if (rec.expiresAt > Date.now()) {
          if (rec.fingerprint !== req.idempotency.fingerprint) {
            throw new DbError('conflict', `Idempotency-Key "${req.idempotency.key}" was already used with a different request`);
          }
          return { pending: p, result: { lsn: this.nextLsn, results: [], replayed: rec.response } };
        }
      }
    }

    const results: ChangeResult[] = [];
    const logged = new ChangeLog();
    const dropped: TableManifest[] = [];
    const rowids = new Map<string, number>();
    // A background request is prepared in pieces (the event loop runs between them); a
    // divisible one is cut short there when a foreground request has come (DESIGN.md).
    const clock = req.background === true && this.host.pieceMs > 0 ? new PieceClock(this.host.pieceMs) : null;
    let changes: readonly Change[] = req.changes;
    let tail: CommitRequest | undefined;
    for (let i = 0; i < changes.length; i++) {
      if (clock && i > 0 && tail === undefined && clock.over()) {
        await clock.pause();
        if (req.split && this.queue.some((q) => q.req.background !== true)) {
          const s = req.split(i);
          if (s) {
            if (s.head.length < i || changes.slice(0, i).some((c, j) => s.head[j] !== c)) throw new DbError('internal_error', 'a split request\'s head must begin with the changes already prepared');
            changes = s.head;
            tail = s.tail;
            if (i === changes.length) break;
          }
        }
      }
      const change = changes[i];
      try {
        switch (change.op) {
          case 'put':
            await this.put(ctx, change, results, logged, rowids);
            break;
          case 'delete':
            await this.del(ctx, change, results, logged);
            break;
          case 'custom':
            await this.custom(ctx, change, results, logged);
            break;
          case 'mirror':
            await this.remirror(ctx, change, results, logged);
            break;
          case 'schema_put': {
            const entry = await this.schemaPut(ctx, change.toml, schemaOf, change.physical, change.prebuilt === true);
            results.push({ op: 'schema_put', schema: entry.manifest.id, created: !schemaOf(entry.manifest.id) });
            ownSchemas.set(entry.manifest.id, entry);
            logged.add(change.physical === undefined ? { op: 'schema_put', schema: entry.manifest.id, toml: entry.toml } : { op: 'schema_put', schema: entry.manifest.id, toml: entry.toml, physical: change.physical });
            break;
          }
          case 'schema_drop': {
            const m = schemaOf(change.schema)?.manifest;
            if (!m) {
              results.push({ op: 'schema_drop', schema: change.schema, dropped: false });
              break;
            }
            for (const other of this.allManifests(groupSchemas, ownSchemas)) {
              const fk = other.foreign_keys.find((f) => f.references === m.id);
              if (fk && other.id !== m.id) {
                throw new DbError('validation_failed', `schema "${m.id}" is referenced by foreign key "${fk.name}" of "${other.id}"; drop that schema first`);
              }
            }
            ctx.put(metaKey('schema', m.id), null);
            ctx.put(metaKey('dropping', m.id), json(m));
            // (Not when another table now uses its keys: a shadow after its table's cutover.)
            const shared = this.allManifests(groupSchemas, ownSchemas).some((o) => o.id !== m.id && keyIdOf(o) === keyIdOf(m));
            if (change.background === true && !shared) ctx.put(metaKey('retiring', keyIdOf(m)), json({ dropped: m.id }));
            ownSchemas.set(m.id, null);
            dropped.push(m);
            results.push({ op: 'schema_drop', schema: m.id, dropped: true });
            logged.add(change.background === true ? { op: 'schema_drop', schema: m.id, background: true } : { op: 'schema_drop', schema: m.id });
            break;
          }
          case 'catalog':
          case 'migration': {
            const r = change.op === 'catalog' ? await catalogChange(ctx, change) : await migrationChange(ctx, change);
            logged.add(r.logged);
            results.push(r.result);
            break;
          }
          default:
            throw new DbError('validation_failed', `unknown change op "${(change as { op: string }).op}"`);
        }
      } catch (e) {
        if (isDbError(e) && req.changes.length > 1 && e.details.index === undefined) {
          throw new DbError(e.code, e.message, { ...e.details, index: i });
        }
        throw e;
      }
    }

    if (req.idempotency) {
      const response = req.idempotency.render(results, lsn);
      const rec: IdempotencyStored = { fingerprint: req.idempotency.fingerprint, expiresAt: req.idempotency.expiresAt, response };
      ctx.put(idempotencyKey(req.idempotency.key), json(rec));
    }
    if (ctx.own.size === 0) {
      return { pending: p, result: { lsn: this.nextLsn, results }, tail, away: clock?.away };
    }
    // Row keys are implied by the logical changes (frameKeyWrites rebuilds them); the
    // frame carries every other key write.
    const writes = ctx.own.writes().filter((w) => w.key[0] !== ROW_PREFIX);
    const meta = req.idempotency || req.actor || req.route ? frameMeta(req) : undefined;
    const frame: CommittedFrame = meta
      ? { version: FRAME_VERSION, epoch: this.host.epoch(), lsn, time: Date.now(), changes: logged.changes, writes, meta }
      : { version: FRAME_VERSION, epoch: this.host.epoch(), lsn, time: Date.now(), changes: logged.changes, writes };
    const bytes = encodeFrame(frame, logged.json());
    ctx.own.mergeInto(group);
    for (const [k, v] of ownSchemas) groupSchemas.set(k, v);
    for (const [k, v] of rowids) this.rowidNext.set(k, Math.max(this.rowidNext.get(k) ?? 0, v));
    return { pending: p, frame, bytes, dropped, result: { lsn, results }, tail, away: clock?.away };
  }

  private allManifests(groupSchemas: Map<string, SchemaEntry | null>, own: Map<string, SchemaEntry | null>): TableManifest[] {
    const all = new Map<string, TableManifest>();
    for (const e of this.host.schemas()) all.set(e.manifest.id, e.manifest);
    for (const m of [groupSchemas, own]) {
      for (const [k, v] of m) {
        if (v) all.set(k, v.manifest);
        else all.delete(k);
      }
    }
    return [...all.values()];
  }

  private manifest(ctx: RequestContext, schema: string): TableManifest {
    const m = ctx.manifest(schema);
    if (!m) throw new DbError('schema_not_found', `no schema is registered as "${schema}"`);
    return m;
  }

  /** Checks and normalizes a row: known columns, types, defaults, required. */
  private normalize(m: TableManifest, row: Row): Row {
    if (row === null || typeof row !== 'object' || Array.isArray(row)) throw new DbError('invalid_body', 'a row must be a JSON object');
    const out: Row = {};
    let known = columnNames.get(m);
    if (!known) columnNames.set(m, (known = new Set(m.columns.map((c) => c.name))));
    for (const k in row) {
      if (!known.has(k)) throw new DbError('validation_failed', `unknown column "${k}" in ${m.id}`, { field: k });
    }
    for (const c of m.columns) {
      let v = row[c.name];
      if (v === undefined || v === null) {
        if (c.default !== undefined && v === undefined) v = c.default;
        else if (c.required) throw new DbError('missing_required', `column "${c.name}" is required in ${m.id}`, { field: c.name });
        else {
          if (v === null) out[c.name] = null;
          continue;
        }
      }
      out[c.name] = coerceValue(c.name, c.ty, v, c.dim);
    }
    return out;
  }

  private checkPrecondition(pre: Precondition | undefined, before: StoredRow | undefined, schema: string, pk: PkTuple): void {
    if (!pre) return;
    const name = `${schema}/${canonicalJson(pk)}`;
    switch (pre.kind) {
      case 'insert':
        if (before) throw new DbError('conflict', `row ${name} already exists`, { current_version: before.version });
        return;
      case 'exists':
        if (!before) throw new DbError('row_not_found', `row ${name} does not exist`);
        return;
      case 'if_match':
        if (!before) throw new DbError('precondition_failed', `If-Match given but row ${name} does not exist`);
        if (pre.version !== '*' && pre.version !== before.version) {
          throw new DbError('write_conflict', `row ${name} is at version ${before.version}, not ${pre.version}`, { current_version: before.version });
        }
    }
  }

  private async nextRowid(ctx: RequestContext, schema: string, rowids: Map<string, number>): Promise<number> {
    let next = rowids.get(schema) ?? this.rowidNext.get(schema);
    if (next === undefined) {
      const id = keyIdOf(this.manifest(ctx, schema));
      const r = prefixRange(KEYSPACE.row, [id]);
      const last = await ctx.range({ ...r, reverse: true, limit: 1 });
      const head = keyOf(KEYSPACE.row, [id]).length;
      next = last.length ? Number(decodeTuple(last[0][0], head)[0]) + 1 : 1;
    }
    rowids.set(schema, next + 1);
    return next;
  }

  /** `version`: the version to store (a mirror's put keeps its source row's), instead of the next one. */
  private async put(ctx: RequestContext, ch: RowPutChange, results: ChangeResult[], logged: ChangeLog, rowids: Map<string, number>, mirrored = true, version?: number): Promise<void> {
    const m = this.manifest(ctx, ch.schema);
    const input = ch.row;
    if (m.hidden_rowid && input && typeof input === 'object' && (input as Row)._rowid == null) {
      ch = { ...ch, row: { ...input, _rowid: await this.nextRowid(ctx, m.id, rowids) } };
    }
    const values = this.normalize(m, ch.row);
    if (m.hidden_rowid && typeof values._rowid === 'number') {
      rowids.set(m.id, Math.max(rowids.get(m.id) ?? this.rowidNext.get(m.id) ?? 1, values._rowid + 1));
    }
    const pk = pkOf(m, values);
    pk.forEach((v, i) => {
      if (v === null) throw new DbError('missing_required', `primary key column "${m.primary_key[i]}" is required in ${m.id}`, { field: m.primary_key[i] });
    });
    const keyId = keyIdOf(m);
    // The read-ahead's key when it was built for the same key id and pk (the row's own values, before normalisation).
    const early = this.putKeys?.get(ch);
    const same = early !== undefined && early.id === keyId && early.pk.length === pk.length && pk.every((v, i) => Object.is(v, early.pk[i]));
    const key = same ? early.key : rowKey(keyId, pk);
    const bin = same ? early.bin : key.toString('latin1');
    // Above every row the store may hold (a hidden rowid just assigned, a key the read-ahead did not see): no read.
    const fresh = this.tops.above(keyId, bin);
    this.tops.wrote(keyId, bin);
    const now = ctx.getRowNow(m.id, pk, key, bin);
    const before = now === MISS ? (fresh ? undefined : await ctx.getRow(m.id, pk, key)) : now;
    this.checkPrecondition(ch.precondition, before, m.id, pk);
    const after: StoredRow = { schema: m.id, pk, version: version ?? (before?.version ?? 0) + 1, lsn: ctx.lsn, values };
    const evaluate = this.host.checkEvaluator();
    if (evaluate) {
      for (const c of m.checks) {
        if (evaluate(c.expr, values, m) === false) {
          throw new DbError('check_violation', `row fails CHECK constraint "${c.name}" (${c.expr}) of ${m.id}`, { constraint: c.name });
        }
      }
    }
    // The values are serialized once: for the row record and for the frame's change.
    const valuesJson = stringifyJson(values);
    const record = rowRecordText(after.version, after.lsn, valuesJson);
    ctx.put(key, Buffer.from(record, 'utf8'), bin, record);
    for (const fk of m.foreign_keys) {
      const vals = fk.columns.map((c) => values[c] ?? null);
      if (vals.some((v) => v === null)) continue;
      const target = ctx.manifest(fk.references);
      if (!target || !(await ctx.getRow(target.id, vals))) {
        throw new DbError('fk_violation', `foreign key "${fk.name}" of ${m.id}: no row ${fk.references}/${canonicalJson(vals)}`, { constraint: fk.name });
      }
    }
    await this.derive(ctx, m, pk, before ?? null, after);
    // An update also logs the row it replaced (its before image), so a reader of the log alone
    // (watch streams resuming from an LSN) knows what a change changed.
    const oldJson = before ? storedValuesJson(before) : null;
    logged.add(
      before ? { op: 'put', schema: m.id, pk, version: after.version, values, old: before.values } : { op: 'put', schema: m.id, pk, version: after.version, values },
      `{"op":"put","schema":${JSON.stringify(m.id)},"pk":${pkJson(pk)},"version":${after.version},"values":${valuesJson}${oldJson === null ? '' : `,"old":${oldJson}`}}`,
    );
    results.push({ op: 'put', schema: m.id, pk, version: after.version, created: !before });
    if (mirrored) await this.mirror(ctx, { schema: m.id, pk, before: before ?? null, after }, logged, rowids, false);
  }

  private async del(ctx: RequestContext, ch: RowDeleteChange, results: ChangeResult[], logged: ChangeLog, mirrored = true): Promise<void> {
    const m = this.manifest(ctx, ch.schema);
    if (!Array.isArray(ch.pk) || ch.pk.length !== m.primary_key.length) {
      throw new DbError('validation_failed', `${m.id} has a ${m.primary_key.length}-column primary key (${m.primary_key.join(', ')})`);
    }
    const pk = m.primary_key.map((c, i) => {
      const col = m.columns.find((x) => x.name === c)!;
      return coerceValue(c, col.ty, ch.pk[i]);
    });
    const now = ctx.getRowNow(m.id, pk);
    const before = now === MISS ? await ctx.getRow(m.id, pk) : now;
    this.checkPrecondition(ch.precondition, before, m.id, pk);
    if (!before) {
      results.push({ op: 'delete', schema: m.id, pk, deleted: false, version: null });
      return;
    }
    ctx.put(rowKey(keyIdOf(m), pk), null);
    await this.derive(ctx, m, pk, before, null);
    // Restrict: no row may still reference this one (checked after this request's own deletes).
    for (const e of this.host.schemas()) {
      const other = ctx.manifest(e.manifest.id);
      if (!other) continue;
      for (const fk of other.foreign_keys) {
        if (fk.references !== m.id || fk.on_delete !== 'restrict') continue;
        const hits = await ctx.range({ ...prefixRange(KEYSPACE.index, [keyIdOf(other), fkIndexName(fk.name), ...pk]), limit: 1 });
        if (hits.length) {
          throw new DbError('fk_violation', `row ${m.id}/${canonicalJson(pk)} is still referenced by ${other.id} through foreign key "${fk.name}"`, {
            constraint: fk.name,
          });
        }
      }
    }
    logged.add({ op: 'delete', schema: m.id, pk, old: before.values });
    results.push({ op: 'delete', schema: m.id, pk, deleted: true, version: before.version });
    if (mirrored) await this.mirror(ctx, { schema: m.id, pk, before, after: null }, logged, new Map(), false);
  }

  /**
   * Dual writes: the row changes the table's RowMirror asks for, prepared in a child context
   * so that a refused one leaves nothing behind (the source write keeps going without its
   * mirror, and the mirror is told) unless `strict` (a `mirror` change: the request fails).
   */
  private async mirror(ctx: RequestContext, ev: RowMirrorEvent, logged: ChangeLog, rowids: Map<string, number>, strict: boolean, copy = false): Promise<number> {
    const mirror = this.host.rowMirror(ev.schema);
    if (!mirror) return 0;
    const child = ctx.child();
    const log = new ChangeLog();
    const ids = new Map(rowids);
    let n = 0;
    try {
      for (const c of mirror.mirror(ev, child)) {
        // A put keeps the source row's version, so the table's versions survive a cutover onto these keys.
        if (c.op === 'put') await this.put(child, c, [], log, ids, false, ev.after?.version);
        else if (c.op === 'delete') await this.del(child, c, [], log, false);
        else throw new DbError('internal_error', `a row mirror may only put or delete rows, not "${(c as { op: string }).op}"`);
        n++;
      }
      // Entries built in place: a copy derives them for the row as it is (as if it were new).
      if (mirror.derive) await this.derive(child, mirror.derive, ev.pk, copy ? null : ev.before, ev.after, copy);
    } catch (e) {
      if (strict) throw e;
      mirror.refused?.(ev, isDbError(e) ? e : new DbError('internal_error', `row mirror of ${ev.schema}: ${(e as Error)?.message ?? String(e)}`));
      return 0;
    }
    child.own.mergeInto(ctx.own);
    logged.append(log);
    for (const [k, v] of ids) rowids.set(k, v);
    return n;
  }

  /** A `mirror` change: the mirror's changes for the row as it is now (a backfill's copy). */
  private async remirror(ctx: RequestContext, ch: RowMirrorChange, results: ChangeResult[], logged: ChangeLog): Promise<void> {
    const m = this.manifest(ctx, ch.schema);
    if (!this.host.rowMirror(m.id)) throw new DbError('validation_failed', `${m.id} has no row mirror`, { schema: m.id });
    if (!Array.isArray(ch.pk) || ch.pk.length !== m.primary_key.length) {
      throw new DbError('validation_failed', `${m.id} has a ${m.primary_key.length}-column primary key (${m.primary_key.join(', ')})`);
    }
    const now = (await ctx.getRow(m.id, ch.pk)) ?? null;
    const n = await this.mirror(ctx, { schema: m.id, pk: ch.pk, before: now, after: now }, logged, new Map(), true, true);
    results.push({ op: 'mirror', schema: m.id, pk: ch.pk, changes: n });
  }

  private async derive(ctx: RequestContext, m: TableManifest, pk: PkTuple, before: StoredRow | null, after: StoredRow | null, copy = false): Promise<void> {
    const ev = copy ? { schema: m.id, manifest: m, pk, before, after, copy } : { schema: m.id, manifest: m, pk, before, after };
    for (const part of this.host.participants()) {
      if (!part.deriveRow) continue;
      const r = part.deriveRow(ev, ctx);
      for (const w of r instanceof Promise ? await r : r) ctx.put(w.key, w.value);
    }
  }

  private async custom(ctx: RequestContext, ch: CustomChange, results: ChangeResult[], logged: ChangeLog): Promise<void> {
    const part = this.host.participants().find((x) => x.name === ch.participant);
    if (!part?.deriveCustom) throw new DbError('validation_failed', `no participant "${ch.participant}" takes custom changes`);
    const { writes, result } = await part.deriveCustom(ch, ctx);
    for (const w of writes) ctx.put(w.key, w.value);
    logged.add({ op: 'custom', participant: ch.participant, type: ch.type, payload: ch.payload });
    results.push({ op: 'custom', participant: ch.participant, result });
  }

  private async schemaPut(ctx: RequestContext, toml: string, schemaOf: (id: string) => SchemaEntry | undefined, moveTo?: string, prebuilt = false): Promise<SchemaEntry> {
    if (typeof toml !== 'string') throw new DbError('validation_failed', 'a manifest must be TOML text');
    const parsed = parseManifest(toml);
    const before = schemaOf(parsed.id)?.manifest;
    if (moveTo !== undefined) {
      // A cutover: the table's rows and index entries are those already under `moveTo` (the shadow's).
      const owner = schemaOf(moveTo)?.manifest;
      if (typeof moveTo !== 'string' || !before || !owner || keyIdOf(owner) !== moveTo || moveTo === keyIdOf(before)) {
        throw new DbError('validation_failed', `physical: "${String(moveTo)}" is not the keys of another registered table`, { key: 'physical' });
      }
    }
    const physical = moveTo ?? before?.physical;
    const m: TableManifest = physical !== undefined && physical !== parsed.id ? { ...parsed, physical } : parsed;
    if (m.hidden_rowid) {
      const c = m.columns.find((x) => x.name === '_rowid');
      if (m.primary_key.length !== 1 || m.primary_key[0] !== '_rowid' || c?.ty !== 'i64') {
        throw new DbError('validation_failed', 'manifest: hidden_rowid: needs primary_key = ["_rowid"] and an i64 column "_rowid"', { key: 'hidden_rowid' });
      }
    }
    m.foreign_keys.forEach((fk, i) => {
      const target = fk.references === m.id ? m : schemaOf(fk.references)?.manifest;
      if (!target) throw new DbError('validation_failed', `manifest: foreign_keys[${i}].references: no schema "${fk.references}" is registered`, { key: `foreign_keys[${i}].references` });
      if (fk.ref_columns.length && canonicalJson(fk.ref_columns as string[]) !== canonicalJson(target.primary_key as string[])) {
        throw new DbError('validation_failed', `manifest: foreign_keys[${i}].ref_columns: must be the primary key of ${target.id} (${target.primary_key.join(', ')})`, {
          key: `foreign_keys[${i}].ref_columns`,
        });
      }
      if (fk.columns.length !== target.primary_key.length) {
        throw new DbError('validation_failed', `manifest: foreign_keys[${i}].columns: ${target.id} has a ${target.primary_key.length}-column primary key`, {
          key: `foreign_keys[${i}].columns`,
        });
      }
    });
    const prev = before;
    if (prev && canonicalJson(prev.primary_key as string[]) !== canonicalJson(m.primary_key as string[])) {
      const any = await ctx.range({ ...prefixRange(KEYSPACE.row, [keyIdOf(prev)]), limit: 1 });
      if (any.length) throw new DbError('validation_failed', `manifest: primary_key: cannot change the primary key of ${m.id} while it has rows`, { key: 'primary_key' });
    }
    for (const part of this.host.participants()) {
      if (!part.deriveSchema) continue;
      // Prebuilt: the entries this manifest implies are in place already (SchemaPutChange.prebuilt).
      for (const w of await part.deriveSchema(m, prebuilt && prev ? m : prev, ctx)) ctx.put(w.key, w.value);
    }
    ctx.put(metaKey('schema', m.id), json(m.physical === undefined ? { toml } : { toml, physical: m.physical }));
    // The keys the table leaves are cleared in the background once this frame is applied (the marker survives a crash).
    if (prev && keyIdOf(prev) !== keyIdOf(m)) ctx.put(metaKey('retiring', keyIdOf(prev)), json({ from: m.id }));
    return { manifest: m, toml };
  }
}
