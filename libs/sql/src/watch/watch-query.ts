/**
 * A watch subscription's query, compiled once: which table it follows and what a burst of
 * committed frames changes in its result. Each changed row of that table runs through the
 * executor's own operators (the plan's filter and projection, compiled by `overRows`, watch/over-rows.ts)
 * twice, as it was before (the frame's `old` image) and after, so matching costs work per
 * changed row, never a re-run of the query; an aggregate keeps its groups and updates the ones
 * the changed rows touch (aggregate-state.ts). This is the one place event rows are filtered:
 * row-level security applies here as it applies to a query's scans.
 */
import { DbError, stringifyJson, type JsonValue, type Row } from '@mmdb/core';
import type { PlanNode, ScanNode } from '@mmdb/plan';
import type { CommittedFrame, LoggedChange, Snapshot } from '@mmdb/storage';
import type { SqlEngine } from '../engine';
import { outputNames } from '../optimizer/util';
import { applyPolicy, NO_POLICY, type Policy } from '../run/sources';
import { overRows, type RowsEvaluator } from './over-rows';
import { paramValue, toTuple } from '../engine';
import { objectRows } from '../format';
import { outputKinds, type OutKind } from '../column-codec';
import { toJson, tupleKey, type Tuple, type Value } from '../values';
import { AggregateState } from './aggregate-state';
import { watchShape, type AggregateShape, type WatchShape } from './shape';
import { intern } from './pool';

/** What a subscription is subscribed by: SQL text or a JSON plan tree, with the values of its `$n`. */
export type WatchSource = ({ readonly sql: string } | { readonly plan: PlanNode }) & { readonly params?: readonly unknown[] };

/** One changed row of a query's result (RethinkDB changefeed semantics: a row that stops matching is a delete). */
export interface WatchChange {
  readonly schema: string;
  /** The row's primary key (an aggregate: the group's values). */
  readonly key: JsonValue[];
  readonly op: 'insert' | 'update' | 'delete';
  /** The row as the query projects it, before (update, delete). Null when the log has no before image. */
  readonly old?: Record<string, unknown> | null;
  /** … and after (insert, update). */
  readonly new?: Record<string, unknown>;
}

/**
 * The subscriber's Policy port (row-level security, masks), as a query of that user runs with it
 * (`QueryOptions.policy` / `policyKey`): matching runs the plan with its filters and masks at the
 * leaf, and the snapshot runs under it, so one row filter serves both.
 */
export interface WatchPolicy {
  readonly policy: Policy;
  /** The plan-cache key of plans prepared under it (the user and catalogue version). */
  readonly key: string;
}

const NO_LEAVES: ReadonlyMap<PlanNode, Tuple[]> = new Map();

type RowChange = Extract<LoggedChange, { op: 'put' | 'delete' }>;

export class WatchQuery {
  /** The table the subscription follows. */
  readonly schema: string;
  readonly names: readonly string[];
  /**
   * What events and snapshots carry: the output columns but the executor's hidden ones
   * (`#version:<alias>`, which a plan source's table leaf has), with their output kinds
   * (json, vector, bool) so values are canonical as /sql answers them.
   */
  private visible: number[] = [];
  private outNames: string[] = [];
  private outKinds: OutKind[] = [];

  private output(plan: PlanNode, table: (id: string) => ReturnType<SqlEngine['tableOf']>): void {
    const kinds = outputKinds(plan, this.names, table);
    this.visible = this.names.map((n, i) => (n.startsWith('#') ? -1 : i)).filter((i) => i >= 0);
    this.outNames = this.visible.map((i) => this.names[i]);
    this.outKinds = this.visible.map((i) => kinds[i]);
  }

  private pick(t: Tuple): Tuple {
    return this.visible.map((i) => t[i]);
  }

  private objects(rows: readonly Tuple[]): Record<string, unknown>[] {
    return objectRows(this.outNames, rows.map((t) => this.pick(t)), this.outKinds);
  }
  readonly kind: WatchShape['kind'];
  /** The followed table's manifest it was compiled against (a registration again makes another). */
  readonly manifest: unknown;
  /** Row evaluations run for matching (each changed row, before and after): the matching work. */
  evaluations = 0;
  /** Row changes of the followed table seen by `match` (the matching input). */
  rowChanges = 0;
  private readonly leaf: ScanNode;
  /** The leaf's one row per evaluation (one map for all of them). */
  private readonly leafRows = new Map<PlanNode, Tuple[]>();
  private readonly rows: RowsEvaluator;
  /** The values of the query's `$n`. */
  private readonly params: Value[];
  private readonly agg: { readonly shape: AggregateShape; readonly inner: PlanNode; readonly top: RowsEvaluator; state: AggregateState } | null = null;

  private constructor(
    private readonly engine: SqlEngine,
    private readonly source: WatchSource,
    private readonly plan: PlanNode,
    names: readonly string[],
    shape: WatchShape,
    private readonly policy: WatchPolicy | undefined,
  ) {
    this.schema = engine.tableOf(shape.leaf.schema).id;
    this.manifest = engine.store.manifest(this.schema);
    this.leaf = shape.leaf;
    this.kind = shape.kind;
    this.params = (source.params ?? []).map(paramValue);
    const np = this.params.length;
    const table = (id: string) => engine.tableOf(id);
    if (shape.kind === 'rows') {
      this.rows = overRows(table, shape.plan, names, np);
      this.names = this.rows.names;
      this.output(plan, table);
      return;
    }
    const a = shape.aggregate;
    // the aggregate's inputs: group values, then one argument per aggregate (NULL for count(*))
    const inner: PlanNode = {
      op: 'project',
      input: a.input,
      columns: [
        ...a.group.map((g, i) => ({ name: `g${i}`, expr: g.expr })),
        ...a.aggregates.map((c, i) => ({ name: `a${i}`, expr: c.args[0] ?? { kind: 'lit' as const, value: null } })),
      ],
    };
    this.rows = overRows(table, inner, [], np);
    // what sits above the aggregate (HAVING, projection), run over one group's output row fed
    // as the parameters (after the query's own) of a one-row VALUES node named like the
    // aggregate's output columns
    const outCols = [...a.group.map((g) => g.name), ...a.aggregates.map((c) => c.name)];
    const groupRow: PlanNode = { op: 'values', columns: outCols, rows: [outCols.map((_, i) => ({ kind: 'param' as const, index: np + i + 1 }))] };
    let top: PlanNode = groupRow;
    for (let i = shape.top.length - 1; i >= 0; i--) if (shape.top[i].op !== 'sort') top = { ...shape.top[i], input: top } as PlanNode;
    const topEval = overRows(table, top, names, np + outCols.length);
    this.names = topEval.names;
    this.output(plan, table);
    this.agg = { shape, inner, top: topEval, state: new AggregateState(a.aggregates, a.group.length) };
  }

  /**
   * Compiles a subscription (bad SQL or plan: the usual 400, before any stream opens). `policy`:
   * the subscriber's (a restricted user's), else the engine's own. A row query compiled alike
   * before (same source and parameters, policy key and table manifest) and still held is
   * returned instead of a copy (watch/pool.ts): its subscribers share one match per burst.
   */
  static compile(engine: SqlEngine, source: WatchSource, policy?: WatchPolicy): WatchQuery {
    const isSql = 'sql' in source;
    const { plan, names } = isSql ? engine.bindSelect(source.sql) : { plan: source.plan, names: [] as string[] };
    // matching runs the plan with the Policy port's filters and masks at its leaf, placed by the
    // executor's own applyPolicy (events carry only rows, and values, the query would answer);
    // the snapshot runs it through runPlan, which places them the same way
    const policied = policy ? applyPolicy(plan, policy.policy, (n) => outputNames(n, engine.exec.optCatalog())) : engine.withPolicy(plan);
    const shape = watchShape(policied, isSql ? 'unsupported_sql' : 'validation_failed', (s) => engine.tableOf(s).pk);
    const q = new WatchQuery(engine, source, plan, names, shape, policy);
    // a row query holds no state: subscribers compiled alike share it (watch/pool.ts); a policy
    // without a plan-cache key names no user, so its queries are never taken for another's
    if (q.kind !== 'rows' || (policy && !policy.key)) return q;
    return intern(engine, stringifyJson([source, policy?.key ?? null]), q);
  }

  /** The same subscription compiled again (after its table's manifest changed); `policy`: a new one (the user's policies changed). */
  recompile(policy: WatchPolicy | undefined = this.policy): WatchQuery {
    return WatchQuery.compile(this.engine, this.source, policy);
  }

  /** True when a frame registers or drops the followed table (its rows and columns may have changed: resnapshot). */
  schemaChanged(frame: CommittedFrame): boolean {
    for (const c of frame.changes) if ((c.op === 'schema_put' || c.op === 'schema_drop') && c.schema === this.schema) return true;
    return false;
  }

  /**
   * The query's result at a storage snapshot the caller took (and releases), as row objects.
   * An aggregate subscription also (re)builds its groups from it: call this before `match`.
   */
  async snapshot(snap: Snapshot): Promise<Record<string, unknown>[]> {
    const params = this.source.params as unknown[] | undefined;
    const under = this.policy ? { policy: this.policy.policy, policyKey: this.policy.key } : {};
    const r = await this.engine.runPlan(this.plan, { snapshot: snap, params, ...under });
    if (!this.agg) return this.objects(r.rows);
    // the result as a query answers it (order included), and the groups from the same snapshot:
    // the inputs' plan already holds the policy's filters and masks (placed at compile)
    const inputs = await this.engine.runPlan(this.agg.inner, { snapshot: snap, params, policy: NO_POLICY });
    const fresh = new AggregateState(this.agg.shape.aggregate.aggregates, this.agg.shape.aggregate.group.length);
    for (const t of inputs.rows) fresh.apply(t, 1);
    this.agg.state = fresh;
    return this.objects(r.rows);
  }

  /** What a burst of frames (in LSN order) changes in the result. Changes to other tables cost one comparison each. */
  match(frames: readonly CommittedFrame[]): WatchChange[] {
    const out: WatchChange[] = [];
    if (this.agg) return this.matchAggregate(frames, out);
    for (const f of frames) {
      for (const c of f.changes) {
        if ((c.op !== 'put' && c.op !== 'delete') || c.schema !== this.schema) continue;
        this.rowChanges++;
        const ch = this.matchRow(c);
        if (ch) out.push(ch);
      }
    }
    return out;
  }

  /**
   * Takes an aggregate subscription's groups back from the snapshot they were built at (`snapshot`)
   * to an earlier position, so that `match` over the frames after it sends exactly the result rows
   * they changed: how an aggregate subscription resumes from the log. `frames`: the log's frames
   * after that position up to the snapshot's LSN, in batches in any order; each row change is
   * undone (its new image removed, its old one added back). Work: the rows those frames changed.
   * A frame without before images: resync_required. A row query holds no state (no-op).
   * `last`: the final batch (groups left with no rows are then dropped; between batches a group
   * may be empty with contributions still to undo).
   */
  rewind(frames: readonly CommittedFrame[], last: boolean): void {
    if (!this.agg) return;
    const { state } = this.agg;
    for (const f of frames) {
      for (const c of f.changes) {
        if ((c.op !== 'put' && c.op !== 'delete') || c.schema !== this.schema) continue;
        const { old, now, oldKnown } = this.images(c);
        if (!oldKnown) throw new DbError('resync_required', 'the log has no before image for a row change: the aggregate must be rebuilt', { reason: 'before_image' });
        for (const t of now) state.apply(t, -1);
        for (const t of old!) state.apply(t, 1);
      }
    }
    if (last) state.pruneAll();
  }

  /** The result rows of one table row as it was or is (0 or 1 for a row query). */
  private eval(values: Row, version: number): Tuple[] {
    this.evaluations++;
    const t = toTuple(this.engine.tableOf(this.schema), { values, version });
    this.leafRows.set(this.leaf, [t]);
    return this.rows.run(this.leafRows, this.params);
  }

  private images(c: RowChange): { old: Tuple[] | null; now: Tuple[]; oldKnown: boolean } {
    if (c.op === 'delete') return { old: c.old ? this.eval(c.old, 0) : null, now: [], oldKnown: !!c.old };
    const now = this.eval(c.values, c.version);
    if (c.old) return { old: this.eval(c.old, c.version - 1), now, oldKnown: true };
    // an insert (version 1), or a frame logged before row changes carried their before image
    return { old: c.version === 1 ? [] : null, now, oldKnown: c.version === 1 };
  }

  private matchRow(c: RowChange): WatchChange | null {
    const { old, now, oldKnown } = this.images(c);
    const key = c.pk;
    const obj = (t: Tuple) => this.objects([t])[0];
    if (!oldKnown) {
      // no before image: say what the row is now (or that it is gone) without its old value
      return now.length ? { schema: this.schema, key, op: 'update', old: null, new: obj(now[0]) } : { schema: this.schema, key, op: 'delete', old: null };
    }
    const was = old!.length ? old![0] : null;
    const is = now.length ? now[0] : null;
    if (!was && !is) return null;
    if (!was) return { schema: this.schema, key, op: 'insert', new: obj(is!) };
    if (!is) return { schema: this.schema, key, op: 'delete', old: obj(was) };
    if (tupleKey(this.pick(was)) === tupleKey(this.pick(is))) return null; // the projected row did not change
    return { schema: this.schema, key, op: 'update', old: obj(was), new: obj(is) };
  }

  private matchAggregate(frames: readonly CommittedFrame[], out: WatchChange[]): WatchChange[] {
    const { state, top } = this.agg!;
    const width = this.agg!.shape.aggregate.group.length;
    const before = new Map<string, { key: Tuple; was: Tuple | null }>();
    const topRow = (k: string): Tuple | null => {
      const g = state.output(k);
      if (!g) return null;
      const r = top.run(NO_LEAVES, this.params.length ? [...this.params, ...g] : g);
      return r.length ? r[0] : null;
    };
    const touch = (t: Tuple, sign: 1 | -1) => {
      const key = t.slice(0, width);
      const k = tupleKey(key);
      if (!before.has(k)) before.set(k, { key, was: topRow(k) });
      state.apply(t, sign);
    };
    for (const f of frames) {
      for (const c of f.changes) {
        if ((c.op !== 'put' && c.op !== 'delete') || c.schema !== this.schema) continue;
        this.rowChanges++;
        const { old, now, oldKnown } = this.images(c);
        if (!oldKnown) throw new DbError('resync_required', 'the log has no before image for a row change: the aggregate must be rebuilt', { reason: 'before_image' });
        for (const t of old!) touch(t, -1);
        for (const t of now) touch(t, 1);
      }
    }
    for (const [k, { key: gk, was }] of before) {
      const is = topRow(k);
      state.prune(k);
      const key = gk.map(toJson);
      const obj = (t: Tuple) => this.objects([t])[0];
      if (!was && !is) continue;
      if (!was) out.push({ schema: this.schema, key, op: 'insert', new: obj(is!) });
      else if (!is) out.push({ schema: this.schema, key, op: 'delete', old: obj(was) });
      else if (tupleKey(this.pick(was)) !== tupleKey(this.pick(is))) out.push({ schema: this.schema, key, op: 'update', old: obj(was), new: obj(is) });
    }
    return out;
  }

  /** Groups an aggregate subscription holds (0 for a row query). */
  get groups(): number {
    return this.agg ? this.agg.state.size : 0;
  }
}
