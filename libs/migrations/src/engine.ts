/**
 * One tenant store's migrations: submit, the state moves, and the audit. Every move is one
 * frame holding the migration object (`catalog` kind `migration`), its audit entry (kind
 * `migration_audit`) and, for the logged steps, a `migration` change: so recovery and
 * followers replay a migration through the one frame applier. The copying (backfill, cutover,
 * cleanup) is in runner.ts.
 */
import { DbError, INTERNAL_TABLE_MARK, isDbError, newUlid, type JsonValue } from '@mmdb/core';
import { FENCE_ROUTE, parseManifest, type Change, type IdempotencyRecord, type TenantStore } from '@mmdb/storage';
import { applyOperations, planManifest, reshape, shadowToml as shadowOf, type Operation } from './ops';
import { nowS, type AuditEntry, type MigrationRecord, type Throttle } from './record';
import { isFinal, move, type MigrationState, type Trigger } from './states';
import { Runner } from './runner';
import { mirrored, type RowEvaluator, type RowReshaper } from './mirror';
import { DEFAULT_SLICE_MS } from './backfill';

export interface SubmitInput {
  readonly schema: string;
  readonly manifest?: string;
  readonly operations?: readonly Operation[];
  readonly auto_cutover?: boolean;
  readonly throttle?: Partial<Throttle>;
}

export interface MigrationsOptions {
  /**
   * Evaluates a `using` SQL expression over a source row, synchronously and without a read
   * (the SQL engine's `rowEvaluator`, wired by the app): it runs inside commits (dual writes).
   */
  readonly evaluate?: RowEvaluator;
  /** Row reshapers an internal submit may name (`SubmitOptions.reshape`), by name; see RowReshaper. */
  readonly reshapers?: Readonly<Record<string, RowReshaper>>;
  /** Called with the rows each backfill frame copied (metrics). */
  readonly onRows?: (n: number) => void;
  /** Called after every state move (metrics). */
  readonly onState?: () => void;
  /** Called when a migration's background work hits an unexpected fault (it then fails). */
  readonly onError?: (id: string, e: unknown) => void;
  /** Start background work (backfill, cleanup) at attach; default true. */
  readonly autostart?: boolean;
  /**
   * `switch` (default): the shadow builds every derived entry and the cutover frame switches
   * keys. `rewrite`: the shadow holds rows only, and the cutover frame of a table with
   * full-text, vector or relation sections rewrites every row (earlier versions' way, kept to
   * measure one against the other: tools/bench/migrations).
   */
  readonly cutover?: 'switch' | 'rewrite';
  /**
   * Build derived-only changes (indexes, full-text fields, relations added or dropped) in place
   * (default true); false copies the rows into a shadow as for any other change (apps/api's
   * `DB_MIGRATION_IN_PLACE=off`, kept to measure the two against each other).
   */
  readonly inPlace?: boolean;
}

export interface Page<T> {
  readonly items: T[];
  readonly next: string | null;
}

export interface MoveOptions {
  readonly actor: string;
  readonly idempotency?: IdempotencyRecord;
  readonly trigger?: Trigger;
}

const DEFAULT_THROTTLE: Throttle = { max_rows_per_s: 50_000, batch_size: 1000, slice_ms: DEFAULT_SLICE_MS };
const THROTTLE_KEYS = ['max_rows_per_s', 'batch_size', 'slice_ms'] as const;

/** A submitted throttle with its defaults; every field is checked (an unknown one is refused, named). */
export function throttleOf(t: Partial<Throttle> | undefined): Throttle {
  if (t === undefined || t === null) return DEFAULT_THROTTLE;
  if (typeof t !== 'object' || Array.isArray(t)) throw new DbError('validation_failed', 'throttle must be an object {max_rows_per_s?, batch_size?, slice_ms?}', { key: 'throttle' });
  for (const k of Object.keys(t)) {
    if (!(THROTTLE_KEYS as readonly string[]).includes(k)) throw new DbError('validation_failed', `unknown throttle field "${k}" (known: ${THROTTLE_KEYS.join(', ')})`, { key: `throttle.${k}` });
  }
  const given = Object.fromEntries(Object.entries(t).filter(([, v]) => v !== undefined));
  const out = { ...DEFAULT_THROTTLE, ...given } as Throttle;
  for (const k of ['max_rows_per_s', 'batch_size'] as const) {
    if (!Number.isInteger(out[k]) || out[k] < 1) throw new DbError('validation_failed', `throttle.${k} must be a positive integer`, { key: `throttle.${k}` });
  }
  const slice = out.slice_ms;
  if (typeof slice !== 'number' || !Number.isFinite(slice) || slice < 0.5 || slice > 1000) {
    throw new DbError('validation_failed', 'throttle.slice_ms must be a number of milliseconds from 0.5 to 1000', { key: 'throttle.slice_ms' });
  }
  return out;
}

export class Migrations {
  private readonly records = new Map<string, MigrationRecord>();
  private chain: Promise<unknown> = Promise.resolve();
  private readonly waiters = new Map<string, Array<(r: MigrationRecord) => void>>();
  readonly runner: Runner;

  constructor(
    readonly store: TenantStore,
    readonly opts: MigrationsOptions = {},
  ) {
    this.runner = new Runner(this, { evaluate: opts.evaluate, reshapers: opts.reshapers });
  }

  /** Loads the stored migrations and resumes the unfinished ones (after a restart too). */
  async attach(): Promise<void> {
    for (const e of await this.store.catalogEntries('migration')) this.records.set(e.id, e.record as unknown as MigrationRecord);
    // Dual writes resume before anything else writes (the mirror is memory only).
    for (const r of this.records.values()) if (mirrored(r)) this.runner.mirror(r);
    if (this.opts.autostart !== false) for (const r of this.records.values()) this.runner.kick(r.id);
  }

  /** Reloads one migration's object from the store (frames applied as a follower, or by another writer). */
  async refresh(id: string): Promise<void> {
    const e = (await this.store.catalogEntries('migration')).find((x) => x.id === id);
    if (e) {
      this.records.set(id, e.record as unknown as MigrationRecord);
      this.runner.mirror(this.get(id));
    }
  }

  close(): Promise<void> {
    return this.runner.close();
  }

  /** Runs `fn` after every earlier move of this store's migrations (moves and batches never interleave). */
  serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(fn, fn);
    this.chain = run.catch(() => undefined);
    return run;
  }

  get(id: string): MigrationRecord {
    const r = this.records.get(id);
    if (!r) throw new DbError('not_found', `no migration "${id}"`, { migration: id });
    return r;
  }

  list(opts: { limit?: number; after?: string } = {}): Page<MigrationRecord> {
    const limit = Math.min(Math.max(opts.limit ?? 50, 1), 1000);
    const all = [...this.records.values()].sort((a, b) => (a.id < b.id ? 1 : -1)).filter((r) => opts.after === undefined || r.id < opts.after);
    const items = all.slice(0, limit);
    return { items, next: all.length > limit ? items[items.length - 1].id : null };
  }

  async audit(opts: { migration?: string; limit?: number; after?: string } = {}): Promise<Page<AuditEntry>> {
    const limit = Math.min(Math.max(opts.limit ?? 100, 1), 1000);
    const all = (await this.store.catalogEntries('migration_audit'))
      .map((e) => e.record as unknown as AuditEntry)
      .filter((a) => (opts.migration === undefined || a.migration === opts.migration) && (opts.after === undefined || a.id > opts.after))
      .sort((a, b) => (a.id < b.id ? -1 : 1));
    const items = all.slice(0, limit);
    return { items, next: all.length > limit ? items[items.length - 1].id : null };
  }

  stateCounts(): Record<MigrationState, number> {
    const out = { Pending: 0, Backfilling: 0, Paused: 0, ReadyToCutover: 0, Completed: 0, Aborted: 0, Failed: 0 };
    for (const r of this.records.values()) out[r.state]++;
    return out;
  }

  /** Resolves with the migration once it is Completed, Aborted or Failed. */
  waitFor(id: string): Promise<MigrationRecord> {
    const r = this.get(id);
    if (isFinal(r.state)) return Promise.resolve(r);
    return new Promise((resolve) => this.waiters.set(id, [...(this.waiters.get(id) ?? []), resolve]));
  }

  /**
   * Submits a migration. `internal.reshape` (never from a request body): the registered reshaper
   * that computes every row's new shape (the rows are then always copied into a shadow).
   */
  async submit(input: SubmitInput, actor: string, idempotency?: IdempotencyRecord, internal: { readonly reshape?: string } = {}): Promise<MigrationRecord> {
    if (!input || typeof input !== 'object') throw new DbError('validation_failed', 'a migration is {schema, manifest | operations, auto_cutover?, throttle?}');
    if (typeof input.schema !== 'string') throw new DbError('validation_failed', 'schema must be a schema id', { key: 'schema' });
    if ((input.manifest === undefined) === (input.operations === undefined)) throw new DbError('validation_failed', 'give exactly one of manifest (TOML text) or operations');
    if (input.auto_cutover !== undefined && typeof input.auto_cutover !== 'boolean') throw new DbError('validation_failed', 'auto_cutover must be a boolean', { key: 'auto_cutover' });
    const throttle = throttleOf(input.throttle);
    // A finished in-place migration of the table clears its index entries in the background: wait for it (a few frames).
    for (const end = Date.now() + 30_000; Date.now() < end && [...this.records.values()].some((r) => r.schema === input.schema && r.in_place && isFinal(r.state) && !r.cleaned); ) {
      await new Promise((res) => setTimeout(res, 20));
    }
    return this.serial(async () => {
      const toml = this.store.schemaToml(input.schema);
      const source = this.store.manifest(input.schema);
      if (toml === undefined || !source) throw new DbError('schema_not_found', `no schema is registered as "${input.schema}"`, { schema: input.schema });
      let target: { toml: string; plan: ReturnType<typeof planManifest> };
      if (input.manifest !== undefined) {
        if (typeof input.manifest !== 'string') throw new DbError('validation_failed', 'manifest must be TOML text', { key: 'manifest' });
        target = { toml: input.manifest, plan: planManifest(source, parseManifest(input.manifest)) };
      } else {
        const r = applyOperations(toml, input.operations as Operation[]);
        target = { toml: r.toml, plan: r.plan };
      }
      // An in-place migration clears index entries after it ends: the next one on the table waits for that.
      const busy = [...this.records.values()].find((r) => r.schema === input.schema && (!isFinal(r.state) || (r.in_place && !r.cleaned)));
      if (busy) throw new DbError('conflict', `migration ${busy.id} on ${input.schema} is ${busy.state}: one migration per table at a time`, { migration: busy.id });
      const id = newUlid();
      const reshaper = internal.reshape;
      if (reshaper !== undefined && !this.opts.reshapers?.[reshaper]) throw new DbError('internal_error', `no row reshaper "${reshaper}" is registered`);
      if (reshaper !== undefined) target.plan.steps.push(`every row reshaped by "${reshaper}" (rewrite)`);
      const rewrite = target.plan.rewrite || reshaper !== undefined || (this.opts.inPlace === false && !!target.plan.inPlace);
      if (rewrite && !target.plan.rewrite) target.plan.steps.push('in-place builds are off: the rows are copied into a shadow that builds them (rewrite)');
      const shadow = rewrite ? `${parseManifest(toml).table}${INTERNAL_TABLE_MARK}${id.toLowerCase()}` : null;
      const built = rewrite ? undefined : target.plan.inPlace;
      // Nothing is registered before an in-place cutover: the target is checked now (participants'
      // checks of full-text fields and relations included), in a dry run that writes nothing.
      if (built) await this.dryRun({ op: 'schema_put', toml: target.toml, prebuilt: true });
      const now = nowS();
      const rec: MigrationRecord = {
        id, schema: input.schema, state: 'Pending', plan: rewrite ? 'rewrite' : built ? 'in_place' : 'no_rewrite', steps: target.plan.steps,
        operations: input.operations ?? null, auto_cutover: input.auto_cutover ?? false, throttle,
        progress: { done: 0, total: 0, rate: 0, eta_s: null }, created_by: actor, created_at: now, updated_at: now, completed_at: null,
        reason: null, offending_keys: [], cleaned: !shadow && !built, target_toml: target.toml, shadow: null, mapping: target.plan.mapping,
        ...(built ? { in_place: built } : {}),
        ...(reshaper !== undefined ? { reshape: reshaper } : {}),
      };
      const extra: Change[] = [{ op: 'migration', migration: id, step: 'submit' }];
      let stored = rec;
      if (shadow) {
        // The shadow table: the new shape, validated row by row as it fills, building its derived
        // entries (indexes, postings, vector entries, edges) under its own keys for the cutover to switch to.
        const shadowToml =
          this.opts.cutover === 'rewrite'
            ? reshape(target.toml, { table: shadow, strip: ['fulltext', 'vector', 'relations', 'description', 'label'] })
            : shadowOf(target.toml, shadow);
        stored = { ...rec, shadow: parseManifest(shadowToml).id };
        extra.unshift({ op: 'schema_put', toml: shadowToml });
      } else parseManifest(target.toml);
      // Dual writes start with the submit frame: the mirror skips writes prepared before the shadow exists.
      // An in-place build's starts once that frame is durable (a refused submit leaves no entry behind):
      // a write before it has no entry to keep current, and its row is in the backfill's snapshot.
      if (!built) this.runner.mirror(stored);
      let out: MigrationRecord;
      try {
        out = await this.commitMove(stored, null, 'submit', { actor, idempotency }, extra);
      } catch (e) {
        if (mirrored(stored) && !built) this.store.setRowMirror(stored.schema, undefined);
        throw e;
      }
      if (built) this.runner.mirror(out);
      this.runner.kick(id);
      return out;
    });
  }

  /** A user's move (cutover, abort, pause, resume). */
  async request(id: string, trigger: 'cutover' | 'abort' | 'pause' | 'resume', opts: MoveOptions): Promise<MigrationRecord> {
    this.get(id);
    if (trigger === 'cutover') return this.runner.cutover(id, { ...opts, trigger: 'cutover' });
    return this.serial(async () => {
      const r = this.get(id);
      const to = move(id, r.state, trigger);
      const extra: Change[] = [];
      if (trigger === 'abort') extra.push({ op: 'migration', migration: id, step: 'abort' });
      const out = await this.commitMove({ ...r, state: to, ...(trigger === 'abort' ? { completed_at: nowS() } : {}) }, r.state, trigger, opts, extra);
      if (trigger === 'resume' || trigger === 'abort') this.runner.kick(id);
      return out;
    });
  }

  /**
   * Commits one move: the migration object, its audit entry and `extra` changes in one frame.
   * Call inside `serial`.
   */
  async commitMove(next: MigrationRecord, from: MigrationState | null, action: Trigger, opts: MoveOptions, extra: Change[] = [], route?: string): Promise<MigrationRecord> {
    const rec: MigrationRecord = { ...next, updated_at: nowS() };
    // The next position is read from the store, not remembered: after a failover the new
    // writer's log holds entries this process never wrote, and an entry is never overwritten.
    const seq = action === 'cleanup' ? 0 : (await this.store.catalogEntries('migration_audit')).length;
    const entry: AuditEntry | null =
      action === 'cleanup' ? null : { id: String(seq + 1).padStart(12, '0'), migration: rec.id, action, from, to: rec.state, actor: opts.actor, at: nowS() };
    const changes: Change[] = [...extra, { op: 'catalog', kind: 'migration', id: rec.id, record: rec as unknown as JsonValue }];
    if (entry) changes.push({ op: 'catalog', kind: 'migration_audit', id: entry.id, record: entry as unknown as JsonValue });
    await this.store.commit({
      changes,
      actor: opts.actor,
      route: route ?? `migration ${action}`,
      ...(opts.idempotency ? { idempotency: { ...opts.idempotency, render: () => ({ status: action === 'submit' ? 201 : 200, body: publicView(rec) }) } } : {}),
    });
    this.records.set(rec.id, rec);
    if ((rec.shadow || rec.in_place) && isFinal(rec.state)) this.runner.mirror(rec);
    this.opts.onState?.();
    if (isFinal(rec.state)) {
      for (const w of this.waiters.get(rec.id) ?? []) w(rec);
      this.waiters.delete(rec.id);
    }
    return rec;
  }

  /** Runs `change` in a commit that always fails after it, so nothing is written; throws its own refusal. */
  private async dryRun(change: Change): Promise<void> {
    try {
      await this.store.commit({ changes: [change, { op: 'delete', schema: '\u0000no-such-schema', pk: [] }] });
    } catch (e) {
      if (isDbError(e) && e.details.index === 1) return; // refused at the change that always fails
      if (isDbError(e)) {
        const { index: _i, ...details } = e.details as Record<string, JsonValue>;
        throw new DbError(e.code, e.message, details);
      }
      throw e;
    }
    throw new DbError('internal_error', 'a dry run committed');
  }

  /** Updates the in-memory object without a frame (progress between batches). */
  touch(rec: MigrationRecord): void {
    this.records.set(rec.id, rec);
  }
}

export const FENCED = FENCE_ROUTE;

export function publicView(r: MigrationRecord): JsonValue {
  const { target_toml: _t, mapping: _m, shadow: _s, in_place: _i, reshape: _r, ...rest } = r;
  return rest as unknown as JsonValue;
}
