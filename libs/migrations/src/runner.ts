/**
 * The work of a migration: the throttled backfill into the shadow table (one frame per batch,
 * the cursor in the frame's `migration` change), the cutover frame, and the cleanup.
 */
import { isDbError, stringifyJson, type JsonValue, type Row } from '@mmdb/core';
import { encodeTuple, FENCE_ROUTE, keyIdOf, parseManifest, type Change, type CommitResult, type StoredRow } from '@mmdb/storage';
import type { Migrations, MoveOptions } from './engine';
import { countRows, frameRequest, KeyCursor, Slicer, type ForegroundWait } from './backfill';
import { installMirror, mirrored, reshapeRow, type Shaping } from './mirror';
import { derivedChanges, reshape } from './ops';
import { nowS, type MigrationRecord } from './record';
import { isFinal, move } from './states';
import { inPlace } from './in-place';

const MAX_OFFENDING = 10;
/** Index entries cleared per background frame after an in-place migration. */
const CLEAR_BATCH = 2000;

/** Whether a migration copies rows (into a shadow) or builds entries in place: a backfill either way. */
const copies = (r: MigrationRecord): boolean => !!r.shadow || inPlace(r);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Backfill frames submitted and not yet awaited, at most: the store prepares the next while it
 * writes one, and writes a few without their own fsync before one sync covers them (storage's
 * deferred sync), each answered once durable.
 */
const IN_FLIGHT = 6;

/** Waits for the frames in flight, whatever their outcome (the store's cursor says what landed). */
async function settle(pos: Position): Promise<void> {
  const fs = pos.inflight;
  pos.inflight = [];
  for (const f of fs) await f.commit.catch(() => undefined);
}

/** A backfill frame submitted to the store and not yet awaited. */
interface InFlight {
  readonly pks: JsonValue[][];
  /** Rows done once it is durable. */
  readonly done: number;
  readonly t0: number;
  readonly commit: Promise<CommitResult>;
}

/** A running backfill's position: rows durable, the frame in flight, the key cursor, the throttle. */
interface Position {
  done: number;
  /** The cursor of the last frame submitted (what the next one expects), null before the first. */
  cursor: JsonValue[] | null;
  /** Frames submitted and not yet awaited, oldest first. */
  inflight: InFlight[];
  /** The last durable frame's commit: its whole time, the writer's preparation of it, the foreground's wait before it. */
  last: { wallMs: number; prepareMs?: number; fg?: ForegroundWait };
  readonly keys: KeyCursor;
  readonly slicer: Slicer;
}

export class Runner {
  private readonly running = new Set<string>();
  private closed = false;
  private readonly loops = new Set<Promise<void>>();

  constructor(
    private readonly m: Migrations,
    private readonly shaping: Shaping,
  ) {}

  /** Installs or removes the dual-write mirror of a migration's table as its state calls for. */
  mirror(r: MigrationRecord): void {
    // A finished migration leaves the mirror of a newer open one on the same table alone.
    if (!mirrored(r) && [...this.m.list({ limit: 1000 }).items].some((o) => o.id !== r.id && o.schema === r.schema && mirrored(o))) return;
    installMirror(this.m.store, r, this.shaping, (pk, e) => {
      // A write the new shape refuses (it committed without its dual write): the migration fails, naming the key.
      void this.m
        .serial(async () => {
          const cur = this.m.get(r.id);
          if (!isFinal(cur.state)) await this.fail(cur, e, [pk]);
        })
        .catch((err) => this.m.opts.onError?.(r.id, err));
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([...this.loops]);
  }

  /** Starts (or resumes) the background work a migration's state calls for. */
  kick(id: string): void {
    if (this.closed || this.running.has(id)) return;
    this.running.add(id);
    const p = this.loop(id)
      .catch(async (e) => {
        if (isDbError(e) && (e.code === 'service_unavailable' || e.code === 'gateway_timeout')) {
          // Transient (the commit queue is full, or this node is a follower / lost the writer
          // lease): retry later from the state the log holds by then (a new lease holder resumes).
          if (!this.closed) setTimeout(() => void this.m.refresh(id).then(() => this.kick(id), () => undefined), 1000).unref();
          return;
        }
        // An unexpected fault (not a row the new shape refuses): the migration fails with the reason, never silently stalls.
        this.m.opts.onError?.(id, e);
        const r = this.m.get(id);
        if (!isFinal(r.state) && !this.closed) await this.m.serial(() => this.fail(this.m.get(id), e, [])).catch(() => undefined);
        if (!this.closed) setTimeout(() => this.kick(id), 1000).unref();
      })
      .finally(() => {
        this.running.delete(id);
        this.loops.delete(p);
      });
    this.loops.add(p);
  }

  private async loop(id: string): Promise<void> {
    // The backfill's position, read from the store when the loop (re)starts: after a restart,
    // a pause or a transient refusal it resumes exactly after the last durable frame.
    let pos: Position | null = null;
    try {
      while (!this.closed) {
        const r = this.m.get(id);
        if (isFinal(r.state) && !r.cleaned) {
          await this.cleanup(id);
          return;
        }
        if (r.state === 'Pending') {
          // The progress total is counted beside the copy (position() starts that), not before it.
          await this.m.serial(() => {
            const cur = this.m.get(id);
            if (cur.state !== 'Pending') return Promise.resolve(cur);
            return this.m.commitMove({ ...cur, state: move(id, cur.state, 'start') }, cur.state, 'start', { actor: 'system' });
          });
          continue;
        }
        if (r.state === 'ReadyToCutover' && r.auto_cutover) {
          // A refused cutover fails the migration; a transient one (503, the queue is full) is retried shortly.
          await this.cutover(id, { actor: 'system', trigger: 'auto-cutover' }).catch(() => sleep(100));
          continue;
        }
        if (r.state !== 'Backfilling') return;
        if (!pos) pos = await this.position(r);
        const p = pos;
        const copied = await this.m.serial(() => this.batch(id, p));
        if (copied < 0) {
          await settle(p);
          await p.keys.close();
          pos = null;
          continue;
        }
        const wait = copied > 0 ? p.slicer.done(copied, p.last.wallMs, p.last.prepareMs, p.last.fg) : 0;
        // Slept in slices, so a pause, an abort or close() is not held up by a long wait.
        const until = Date.now() + wait;
        while (!this.closed && Date.now() < until && this.m.get(id).state === 'Backfilling') await sleep(Math.min(100, until - Date.now()));
      }
    } finally {
      if (pos) {
        await settle(pos);
        await pos.keys.close();
      }
    }
  }

  /**
   * Counts the table's rows (one snapshot, keys only) in the background and records them as the
   * progress total (in memory; stored with the next move).
   */
  private countTotal(id: string): void {
    const run = async () => {
      const n = await countRows(this.m.store, this.m.get(id).schema, () => this.closed);
      if (this.closed) return;
      await this.m.serial(async () => {
        const cur = this.m.get(id);
        if (cur.state === 'Backfilling' || cur.state === 'Paused') this.m.touch({ ...cur, progress: { ...cur.progress, total: Math.max(n, cur.progress.done) } });
      });
    };
    const p = run().catch((e) => this.m.opts.onError?.(id, e)).finally(() => this.loops.delete(p));
    this.loops.add(p);
  }

  /** Where a backfill resumes: the cursor and count of the last durable `backfill` step. */
  private async position(r: MigrationRecord): Promise<Position> {
    // Resumed after a restart before the total was stored: count it again.
    if (r.progress.total === 0 && copies(r)) this.countTotal(r.id);
    const step = await this.m.store.migrationStep(r.id);
    const cursor = step?.step === 'backfill' ? ((step.cursor as JsonValue[] | undefined) ?? null) : null;
    const done = step?.step === 'backfill' ? Number((step.state as { done?: number } | undefined)?.done ?? 0) : 0;
    return { done, cursor, inflight: [], last: { wallMs: 0 }, keys: new KeyCursor(this.m.store, r.schema, cursor ?? undefined), slicer: new Slicer(r.throttle) };
  }

  /**
   * One step of the backfill: submits the next frame (the next rows after the cursor, copied
   * into the shadow table, with the new cursor), then, with IN_FLIGHT frames submitted, waits
   * for the oldest, so the store prepares one while it writes another. Returns the rows of the
   * frame that became durable (0 when none was awaited), or -1 after a move (ReadyToCutover at
   * the end of the table, Failed on a row the new shape refuses). Each frame carries the cursor
   * its predecessor left (`expect_cursor`): if one is refused, those after it are refused too,
   * so no row is ever skipped, and the loop starts again from the store's cursor.
   */
  private async batch(id: string, pos: Position): Promise<number> {
    const r = this.m.get(id);
    if (r.state !== 'Backfilling' || !copies(r)) {
      if (r.state === 'Backfilling') await this.m.commitMove({ ...r, state: move(id, r.state, 'ready') }, r.state, 'ready', { actor: 'system' });
      return -1;
    }
    const pks = await pos.keys.take(pos.slicer.next());
    if (pks.length === 0) {
      while (pos.inflight.length) if ((await this.finish(id, pos)) < 0) return -1;
      const cur = this.m.get(id);
      await this.m.commitMove({ ...cur, state: move(id, cur.state, 'ready'), progress: { ...cur.progress, done: pos.done, total: Math.max(cur.progress.total, pos.done), eta_s: 0 } }, cur.state, 'ready', { actor: 'system' });
      return -1;
    }
    // Each row is copied by the table's mirror inside the commit, from the row as it is then
    // (a write since this read is never overwritten by an older copy; a deleted row is skipped).
    const done = (pos.inflight.length ? pos.inflight[pos.inflight.length - 1].done : pos.done) + pks.length;
    const cursor = pks[pks.length - 1];
    const t0 = performance.now();
    // Background, redoable and divisible (a foreground write arriving while it is prepared cuts it short): frameRequest.
    const commit = this.m.store.commit(frameRequest(r.schema, id, pks, done, pos.cursor));
    commit.catch(() => undefined); // awaited by finish()
    pos.inflight.push({ pks, done, t0, commit });
    pos.cursor = cursor;
    if (pos.inflight.length < IN_FLIGHT) return 0;
    return this.finish(id, pos);
  }

  /** Waits for the oldest frame in flight; see batch(). */
  private async finish(id: string, pos: Position): Promise<number> {
    const frame = pos.inflight[0];
    let res: CommitResult;
    try {
      res = await frame.commit;
    } catch (e) {
      // The frames after it expected its cursor: they are refused too; the next loop starts from the store.
      await settle(pos);
      // Refused by its cursor check (the frame before it did not land): start again from the store's cursor.
      if (isDbError(e) && e.code === 'conflict' && (e.details as { expect_cursor?: unknown }).expect_cursor !== undefined) return -1;
      const r = this.m.get(id);
      if (!isDbError(e) || e.code === 'service_unavailable' || e.code === 'internal_error' || r.state !== 'Backfilling') throw e;
      return this.fail(r, e, await this.offending(r, frame.pks));
    }
    pos.inflight.shift();
    pos.last = { wallMs: performance.now() - frame.t0, prepareMs: res.prepare_ms, fg: res.fg_wait_ms === undefined ? undefined : { waitMs: res.fg_wait_ms, queueMs: res.fg_queue_ms } };
    pos.done = frame.done;
    const r = this.m.get(id);
    const total = Math.max(r.progress.total, frame.done);
    const rate = pos.slicer.rowsPerS;
    this.m.touch({ ...r, progress: { done: frame.done, total, rate: Math.round(rate), eta_s: rate > 0 ? Math.ceil((total - frame.done) / rate) : null } });
    this.m.opts.onRows?.(frame.pks.length);
    return frame.pks.length;
  }

  /**
   * The first rows of a failed batch that the new shape refuses (nothing is kept). Each try is a
   * dry run: copies of a prefix of the batch and a change that always fails, so nothing is
   * written. The shortest refused prefix (a binary search) ends with an offending row, which is
   * named and left out; the rest is searched again. So a row that clashes with another row of
   * the same batch (a new unique index) is found too.
   */
  private async offending(r: MigrationRecord, pks: JsonValue[][]): Promise<JsonValue[][]> {
    const refused = async (pks: JsonValue[][]): Promise<boolean> => {
      try {
        await this.m.store.commit({ changes: [...pks.map((pk): Change => ({ op: 'mirror', schema: r.schema, pk })), { op: 'delete', schema: '\u0000no-such-schema', pk: [] }] });
        return false;
      } catch (e) {
        // Refused at the last change (the one that always fails): every copy before it passed.
        return !(isDbError(e) && (e.details as { index?: unknown }).index === pks.length);
      }
    };
    const bad: JsonValue[][] = [];
    let left = pks;
    let good = 0; // a prefix known to pass
    while (bad.length < MAX_OFFENDING && left.length > good && (await refused(left))) {
      let lo = good;
      let hi = left.length;
      while (hi - lo > 1) {
        const mid = (lo + hi) >> 1;
        if (await refused(left.slice(0, mid))) hi = mid;
        else lo = mid;
      }
      bad.push(left[hi - 1]);
      left = [...left.slice(0, hi - 1), ...left.slice(hi)];
      good = hi - 1;
    }
    return bad;
  }

  private async fail(r: MigrationRecord, e: unknown, keys: JsonValue[][]): Promise<number> {
    const reason = isDbError(e) ? `${e.code}: ${e.message}` : String(e);
    await this.m.commitMove({ ...r, state: move(r.id, r.state, 'failure'), reason, offending_keys: keys, completed_at: nowS() }, r.state, 'failure', { actor: 'system' });
    return -1;
  }

  /**
   * The cutover: fence the table's writes (503), let the queued writes land, remove the
   * mirror, then one frame. Normally (`switchable`) that frame is small whatever the table
   * holds: the target manifest with `physical` = the shadow's key id, so the table reads and
   * writes the shadow's rows and the index entries, postings, vector entries and edges the
   * shadow built as it filled (dual writes and backfill kept them exact; `catchUp`, before the
   * fence, repairs any row they missed); the old keys are cleared in the background. A shadow
   * without the target's derived sections (an older version's, or `cutover: 'rewrite'`) takes
   * the O(rows) frame instead: the manifest without indexes, every row in the new shape (from
   * the shadow where current, else reshaped from the source), then the target manifest whose
   * derive step rebuilds indexes, postings, vectors and edges from those rows.
   */
  async cutover(id: string, opts: MoveOptions): Promise<MigrationRecord> {
    return this.m.serial(async () => {
      const r = this.m.get(id);
      const to = move(id, r.state, 'cutover');
      const store = this.m.store;
      const built = inPlace(r);
      const fast = !built && this.switchable(r);
      // Before the fence: any row the dual writes missed is mirrored now (writes go on, dual-written).
      const caught = fast ? await this.catchUp(r) : null;
      const t0 = Date.now();
      store.fenceSchema(r.schema, true);
      try {
        // Every write queued before the fence commits before this frame (the coordinator is FIFO), dual-written.
        await store.commit({ changes: [{ op: 'catalog', kind: 'migration', id, record: r as unknown as JsonValue }], route: FENCE_ROUTE, actor: 'system' });
        store.setRowMirror(r.schema, undefined);
        const changes: Change[] = [];
        let stats: { rows: number; from_shadow: number; reshaped: number; switched?: boolean } | undefined;
        if (built) {
          // Indexes built in place (backfill and dual writes): the manifest alone, nothing derived under the fence.
          changes.push({ op: 'schema_put', toml: r.target_toml, prebuilt: true }, { op: 'migration', migration: id, step: 'cutover' });
          stats = { rows: 0, from_shadow: 0, reshaped: 0 };
        } else if (fast) {
          // One small frame whatever the row count: the table now reads and writes the shadow's keys
          // (rows and index entries the dual writes kept exact); its old keys are cleared in the background.
          changes.push({ op: 'schema_put', toml: r.target_toml, physical: keyIdOf(store.manifest(r.shadow!)!) }, { op: 'migration', migration: id, step: 'cutover' });
          stats = { rows: caught!.rows, from_shadow: caught!.rows - caught!.repaired, reshaped: caught!.repaired, switched: true };
        } else if (r.shadow) {
          // Without indexes and foreign keys (their old entries go, the target's are built from the rows),
          // with the target's derived sections: each row's put re-derives its vector entry, postings and edges.
          changes.push({ op: 'schema_put', toml: reshape(r.target_toml, { strip: ['indexes', 'foreign_keys'] }) });
          stats = await this.rowsInNewShape(r, changes);
        }
        if (!fast && !built) changes.push({ op: 'schema_put', toml: r.target_toml }, { op: 'migration', migration: id, step: 'cutover' });
        const next: MigrationRecord = {
          ...r, state: to, completed_at: nowS(), progress: { ...r.progress, eta_s: 0 },
          ...(stats ? { cutover: { ...stats, fenced_ms: Date.now() - t0 } } : {}),
        };
        try {
          const done = await this.m.commitMove(next, r.state, opts.trigger ?? 'cutover', opts, changes, FENCE_ROUTE);
          if (!done.cutover) return done;
          // The fence's whole length, commit included (stored with the cleanup step's object).
          const timed = { ...done, cutover: { ...done.cutover, fenced_ms: Date.now() - t0 } };
          this.m.touch(timed);
          return timed;
        } catch (e) {
          if (!isDbError(e) || e.code === 'service_unavailable' || e.code === 'internal_error') throw e;
          const i = (e.details as { index?: number }).index;
          const c = i !== undefined ? changes[i] : undefined;
          const keys = c && c.op === 'put' ? [store.manifest(r.schema)!.primary_key.map((k) => (c.row as Row)[k] ?? null)] : [];
          await this.fail(r, e, keys as JsonValue[][]);
          throw e;
        }
      } finally {
        // Not cut over (a transient refusal): the table is dual-written again before its writes resume.
        this.mirror(this.m.get(id));
        store.fenceSchema(r.schema, false);
        this.kick(id);
      }
    });
  }

  /**
   * Whether the cutover can switch the table onto the shadow's keys (one frame): the shadow
   * built the target's derived entries (its indexes, full-text, vector and relation sections are
   * the target's), which every shadow made since they are kept under the table's key id does.
   * A shadow without them (submitted by an older version) takes the O(rows) rewrite instead.
   */
  private switchable(r: MigrationRecord): boolean {
    const shadow = r.shadow ? this.m.store.manifest(r.shadow) : undefined;
    return !!shadow && !derivedChanges(shadow, parseManifest(r.target_toml));
  }

  /**
   * Compares the shadow with the table (a snapshot, not fenced) and re-mirrors every row whose
   * new shape is missing, stale (another version than its source row) or left over: writes made
   * while no mirror was installed. Returns how many it repaired (0 when the dual writes held).
   */
  private async catchUp(r: MigrationRecord): Promise<{ rows: number; repaired: number }> {
    const store = this.m.store;
    const snap = store.snapshot();
    const stale: JsonValue[][] = [];
    let count = 0;
    try {
      // Both tables in primary-key order (the key's type never changes), walked side by side.
      const rowsOf = async function* (schema: string): AsyncGenerator<StoredRow> {
        for await (const rows of snap.scanRows(schema, { batchSize: 1024 })) yield* rows;
      };
      const src = rowsOf(r.schema);
      const dst = rowsOf(r.shadow!);
      let a = await src.next();
      let b = await dst.next();
      while (!a.done || !b.done) {
        const order = a.done ? 1 : b.done ? -1 : Buffer.compare(encodeTuple(a.value.pk), encodeTuple(b.value.pk));
        if (order < 0) stale.push(a.value!.pk as JsonValue[]); // no copy
        else if (order > 0) stale.push(b.value!.pk as JsonValue[]); // a copy left over
        else if (b.value.version !== a.value.version || b.value.lsn < a.value.lsn) stale.push(a.value.pk as JsonValue[]);
        if (order <= 0) {
          count++;
          a = await src.next();
        }
        if (order >= 0) b = await dst.next();
      }
    } finally {
      await snap.release();
    }
    for (let i = 0; i < stale.length; i += 500) {
      const copies: Change[] = stale.slice(i, i + 500).map((pk) => ({ op: 'mirror', schema: r.schema, pk }));
      await store.commit({ changes: copies, actor: 'system', route: 'migration backfill' });
    }
    return { rows: count, repaired: stale.length };
  }

  /** Puts of every source row in the new shape into `changes`, from the shadow where it is current. */
  private async rowsInNewShape(r: MigrationRecord, changes: Change[]): Promise<{ rows: number; from_shadow: number; reshaped: number }> {
    const store = this.m.store;
    const source = store.manifest(r.schema)!;
    const snap = store.snapshot();
    const stats = { rows: 0, from_shadow: 0, reshaped: 0 };
    try {
      const shadow = new Map<string, StoredRow>();
      for await (const rows of snap.scanRows(r.shadow!, { batchSize: 1024 })) for (const row of rows) shadow.set(stringifyJson(row.pk as JsonValue[]), row);
      for await (const rows of snap.scanRows(r.schema, { batchSize: 1024 })) {
        for (const row of rows) {
          const copy = shadow.get(stringifyJson(row.pk as JsonValue[]));
          const current = copy !== undefined && copy.lsn >= row.lsn;
          changes.push({ op: 'put', schema: r.schema, row: current ? copy.values : reshapeRow(r, source, row.values, this.shaping) });
          stats.rows++;
          if (current) stats.from_shadow++;
          else stats.reshaped++;
        }
      }
    } finally {
      await snap.release();
    }
    return stats;
  }

  /**
   * An in-place migration's leftovers: the dropped indexes' entries once it completed, or the
   * entries it built if it was aborted or failed, cleared in background frames of up to
   * CLEAR_BATCH keys (each its own move, so pauses and other moves interleave). False when the
   * runner closed first (a restart resumes it: clearing is idempotent).
   */
  private async clearIndexes(r: MigrationRecord): Promise<boolean> {
    const d = r.in_place!;
    const done = r.state === 'Completed';
    const clears = [
      ...(done ? d.dropped : d.added).map((index) => ({ participant: 'index', type: 'clear_index', payload: { schema: r.schema, index, limit: CLEAR_BATCH } })),
      ...((done ? d.fields_dropped : d.fields_added) ?? []).map((field) => ({ participant: 'fts', type: 'clear_field', payload: { schema: r.schema, field, limit: CLEAR_BATCH } })),
      ...((done ? d.relations_dropped : d.relations_added) ?? []).map((relation) => ({ participant: 'graph', type: 'clear_relation', payload: { schema: r.schema, relation, limit: CLEAR_BATCH } })),
    ];
    // A participant this store does not run derived nothing to clear.
    for (const c of clears.filter((x) => this.m.store.hasParticipant(x.participant))) {
      for (;;) {
        if (this.closed) return false;
        const res = await this.m.serial(() =>
          this.m.store.commit({ changes: [{ op: 'custom', ...c }], actor: 'system', route: 'migration cleanup', background: true }),
        );
        const out = res.results[0] as { result?: { deleted?: number } };
        if ((out.result?.deleted ?? 0) < CLEAR_BATCH) break;
      }
    }
    return true;
  }

  /**
   * Background, after cutover, abort or failure: drops the shadow table (a schema drop is a
   * frame of its own; its keys are cleared after it is durable), then records the `cleanup`
   * step. A crash between the two finds the shadow gone and only records the step.
   */
  private async cleanup(id: string): Promise<void> {
    const first = this.m.get(id);
    if (first.in_place && !first.cleaned && !(await this.clearIndexes(first))) return;
    await this.m.serial(async () => {
      const r = this.m.get(id);
      if (r.cleaned) return;
      // The shadow's id is never registered again: its keys (unless the table now uses them) go in the background.
      if (r.shadow && this.m.store.manifest(r.shadow)) await this.m.store.commit({ changes: [{ op: 'schema_drop', schema: r.shadow, background: true }], actor: 'system', route: 'migration cleanup' });
      await this.m.commitMove({ ...r, cleaned: true }, r.state, 'cleanup', { actor: 'system' }, [{ op: 'migration', migration: id, step: 'cleanup' }]);
    });
  }
}
