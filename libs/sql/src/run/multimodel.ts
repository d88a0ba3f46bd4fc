/**
 * Multi-model leaves (fts_search, vector_topk, graph_*): read before the operators run, through
 * the Sources port, in the same preload as the storage leaves and from the same snapshot (the
 * in-memory index reads start in the turn the snapshot was taken; rows come from the snapshot).
 */
import { DbError, stringifyJson, type JsonValue } from '@mmdb/core';
import { decodeRow, keyIdOf, rowKey, type PkTuple, type Snapshot } from '@mmdb/storage';
import type { Expr, NodeOf, PlanNode } from '@mmdb/plan';
import { DEFAULT_LIMIT, MAX_LIMIT, RANKING_DEFAULTS, type CollectStats, type SearchOptions } from '@mmdb/fts';
import { distance, filterExactMax, type VectorMetric } from '@mmdb/vector';
import { nodeOf, shortestPath, tupleOfNode } from '@mmdb/graph';
import { querySnapshot, type SqlTable } from '../catalog';
import type { ExecCtx } from '../exec/context';
import { ExprCompiler } from '../exec/expr';
import { vectorOfText } from '../exec/vector-functions';
import type { GraphLeaf } from '../exec/multimodel-leaf';
import { bfsPath, expandLeaf, graphEnds, graphLeafOf, type GraphLeafOf, type GraphNode } from './graph-leaf';
import { leafColumns } from '../exec/ops';
import { Scope } from '../exec/scope';
import { nextTurn, sliceMs } from '../exec/turns';
import { toJson, truthy, type Tuple } from '../values';
import { pkKeyOf, type CachedTable, type PkMap } from '../exec/table-cache';
import { ftsQueryOf } from './fts-query';
import { constantOf, readTable, toTuple, type LeafReader } from './leaves';
import { need, type Sources } from './sources';
import type { Txn } from './writer';

/** Rows fetched one by one from the snapshot up to this many keys; beyond, the table is read whole. */
const POINT_READS = 256;
/** Thrown inside `fts` / `vector` answering at the current LSN when a leaf cannot be (searchCurrent answers false). */
const NOT_CURRENT = Symbol('not current');

/** The leaves `searchCurrent` answers at the current LSN. */
export type SearchLeaf = NodeOf<'fts_search'> | NodeOf<'vector_topk'>;
/** Largest k a vector_topk may ask for. */
export const MAX_K = 10_000;

function bad(path: string, msg: string, code: 'validation_failed' | 'dim_mismatch' = 'validation_failed'): never {
  throw new DbError(code, `invalid plan at ${path}: ${msg}`, { path });
}

/** The `$n` indexes an expression reads (subquery plans included). */
function paramsOf(e: Expr): number[] {
  const out = new Set<number>();
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') {
      const o = v as Record<string, unknown>;
      if (o.kind === 'param' && typeof o.index === 'number') out.add(o.index);
      for (const x of Object.values(o)) if (x && typeof x === 'object') walk(x);
    }
  };
  walk(e);
  return [...out].sort((a, b) => a - b);
}

/** Filters whose passing rows are remembered (LRU by insertion; entries are per table LSN). */
const PASSING_MEMO = 8;

export class MultiModelReader {
  private readonly passing = new Map<string, { rows: Map<string, Tuple>; ids: string[]; labels?: ReadonlySet<number> }>();

  constructor(
    private readonly sources: Sources,
    private readonly table: (id: string) => SqlTable,
    private readonly leaves: LeafReader,
    private readonly implicitKind: (t: SqlTable) => 'vector' | 'fts' | undefined,
  ) {}

  async preload(nodes: readonly PlanNode[], snap: Snapshot, ctx: ExecCtx, txn: Txn | null): Promise<void> {
    // A leaf's explain time is the synchronous part of its call (an in-memory search: the HNSW
    // walk, the BM25 top-k) plus, when it awaits the store, the wait after every leaf was started.
    // Timing from the promise alone left out the synchronous part, which is most of a warm leaf,
    // and counted the other leaves' synchronous work in the first one's time.
    const jobs: Array<{ n: PlanNode; sync: number; p: Promise<void> }> = [];
    const timed = (n: PlanNode, run: () => Promise<void>) => {
      const t0 = performance.now();
      const p = run();
      jobs.push({ n, sync: performance.now() - t0, p });
    };
    for (const n of nodes) {
      switch (n.op) {
        case 'vector_topk': timed(n, () => this.vector(n, snap, ctx, txn)); break;
        case 'fts_search': timed(n, () => this.fts(n, snap, ctx, txn)); break;
        case 'graph_expand': timed(n, () => this.expand(n, snap, ctx, txn)); break;
        case 'graph_path': timed(n, () => this.path(n, snap, ctx, txn)); break;
        case 'graph_dijkstra': timed(n, () => this.dijkstra(n, snap, ctx, txn)); break;
        default: break;
      }
    }
    if (!ctx.explain) {
      // only explain reads the times: no callback per leaf otherwise
      await Promise.all(jobs.map((j) => j.p));
      return;
    }
    const started = performance.now();
    await Promise.all(jobs.map((j) => j.p.then(() => void ctx.loadMs.set(j.n, j.sync + (performance.now() - started)))));
  }

  /** A predicate over a leaf's row columns, compiled. */
  private predicate(e: Expr, ctx: ExecCtx, schema: string, alias: string | undefined): (r: Tuple) => boolean {
    const f = new ExprCompiler(ctx).compile(e, new Scope(leafColumns(ctx, schema, alias)));
    return (r) => truthy(f(r, null)) === true;
  }

  /** Per cached table's base pk map and field: rows by fts ordinal, filled as hits ask (null: not in the base). */
  private readonly byOrdinal = new WeakMap<object, Map<string, { ids: readonly string[]; rows: Array<Tuple | null> }>>();

  /**
   * A hit's row by its fts ordinal, for every-match searches (tens of thousands of hits): an array
   * per cached table and field, filled from the pk map on first use, so repeated searches at one
   * table LSN index an array instead of probing the pk map per hit. Ordinals are never reused and
   * the array holds the rows of the pk map's base (shared by the versions a table's writes patch
   * into the cache, table-patch.ts), so it stays right: a version's changed keys (its delta) are
   * looked up first. The index's ordinal array being replaced (an image loaded) starts a new one.
   * Undefined when the table has no such cache.
   */
  private ordRows(t: SqlTable, field: string, snap: Snapshot, txn: Txn | null, current = false): ((ord: number, id: string) => Tuple | undefined) | undefined {
    const pkMap = this.cachedByText(t, snap, txn, current);
    const ids = pkMap && this.sources.fts?.docIds?.(t.id, field);
    if (!pkMap || !ids) return undefined;
    const byPk = pkMap.base as ReadonlyMap<string, Tuple>;
    const delta = pkMap.delta as ReadonlyMap<string, Tuple | null> | null;
    let m = this.byOrdinal.get(byPk);
    if (!m) this.byOrdinal.set(byPk, (m = new Map()));
    let e = m.get(field);
    if (!e || e.ids !== ids) {
      // filled whole on first use: one pass over the ordinals, so the pk-map probes (the costly
      // part) come once per table LSN rather than in every search that meets new documents
      const rows = new Array<Tuple | null>(ids.length);
      for (let o = 0; o < ids.length; o++) rows[o] = ids[o] ? byPk.get(ids[o]) ?? null : null;
      m.set(field, (e = { ids, rows }));
    }
    const rows = e.rows;
    return (ord, id) => {
      const d = delta?.get(id);
      if (d !== undefined) return d ?? undefined;
      let r = rows[ord];
      // an ordinal added to the index after the array was filled
      if (r === undefined) rows[ord] = r = byPk.get(id) ?? null;
      return r ?? undefined;
    };
  }

  /**
   * For a table keyed by one `str` column whose rows the table cache holds at this snapshot: its pk
   * map, which a key text indexes as is (no per-key parse, no map of the hits); else undefined.
   */
  private cachedByText(t: SqlTable, snap: Snapshot, txn: Txn | null, current = false): PkMap | undefined {
    if (txn?.overlay.get(t.id)?.size || this.isImplicit(t) || this.implicitKind(t) === 'fts') return undefined;
    const pk = t.manifest.primary_key;
    if (pk.length !== 1 || t.manifest.columns.find((c) => c.name === pk[0])?.ty !== 'str') return undefined;
    return (current ? this.leaves.tables.current(t) : this.leaves.tables.lookup(snap, t))?.byPk;
  }

  /**
   * Answers search leaves (`fts_search`, `vector_topk`) from the store as it is now,
   * with no storage snapshot (as the table cache answers storage leaves, executor
   * `preloadCurrentSearch`): the full-text and vector indexes and the table cache follow the same
   * applied frames, so a search and its hits' rows taken while no frame is applied agree. A ranking
   * that reads documents' positions reads them through `lazy` (a snapshot taken on first use).
   * False when a leaf cannot be answered so (its table's rows are not in the cache by key text, a
   * metric other than the index's, a filter with a subquery) or when `unchanged` (no frame applied
   * since the caller's other leaves were read) fails once a leaf's hits and their rows are in hand:
   * the caller takes a snapshot. Checked there, once what the leaf read is in hand (its loop over
   * the hits is one synchronous turn: its slicing was reverted, libs/sql DESIGN.md).
   * Each leaf's explain time is its call's.
   */
  async searchCurrent(nodes: readonly SearchLeaf[], lazy: Snapshot, ctx: ExecCtx, unchanged: () => boolean): Promise<boolean> {
    try {
      for (const n of nodes) {
        const t0 = performance.now();
        if (n.op === 'fts_search') await this.fts(n, lazy, ctx, null, unchanged);
        else {
          await this.vector(n, lazy, ctx, null, true);
          if (!unchanged()) throw NOT_CURRENT;
        }
        if (ctx.explain) ctx.loadMs.set(n, performance.now() - t0);
      }
      return true;
    } catch (e) {
      if (e === NOT_CURRENT) return false;
      throw e;
    }
  }

  /**
   * The table cache's current entry of `t` for a filter evaluated at the current LSN, or
   * NOT_CURRENT: an implicit table, a table the cache does not hold now, or a filter with a
   * subquery (its own tables would be read from a snapshot).
   */
  private currentRows(t: SqlTable, filter: Expr): CachedTable {
    const e = this.isImplicit(t) || /"kind":"(exists|in_subquery|subquery)"/.test(stringifyJson(filter)) ? undefined : this.leaves.tables.current(t);
    if (!e) throw NOT_CURRENT;
    return e;
  }

  /** Rows of `t` by key text (vector id, doc id, graph node), from the snapshot. */
  private async rowsByKey(keys: readonly string[], t: SqlTable, snap: Snapshot, ctx: ExecCtx, txn: Txn | null): Promise<Map<string, Tuple>> {
    const out = new Map<string, Tuple>();
    if (this.implicitKind(t) === 'fts') {
      // a standalone full-text table's row is its doc id
      for (const k of keys) out.set(k, [k, 0n]);
      return out;
    }
    const overlaid = !!txn?.overlay.get(t.id)?.size;
    const cached = overlaid || this.isImplicit(t) ? undefined : this.leaves.tables.lookup(snap, t);
    if (cached) {
      // the table cache holds this snapshot's rows: its pk map answers without a store read
      for (const k of keys) {
        let pk: JsonValue[];
        try { pk = tupleOfNode(k, t.manifest); } catch { continue; }
        const r = cached.byPk.get(pkKeyOf(pk));
        if (r) out.set(k, r as Tuple);
      }
      return out;
    }
    if (keys.length > POINT_READS || overlaid || this.isImplicit(t)) {
      // only the wanted keys kept, and the loop gives the event loop back between slices: a whole
      // table's map (200,000 rows) was ~180 ms of one turn (a snapshot the table cache cannot answer)
      const want = new Set(keys);
      const rows = await this.leaves.allRows(snap, t, ctx, txn);
      let mark = performance.now();
      for (let i = 0; i < rows.length; i++) {
        const k = this.keyOf(t, rows[i]);
        if (want.has(k)) out.set(k, rows[i]);
        if ((i & 1023) === 1023 && performance.now() - mark > sliceMs(ctx)) {
          await nextTurn(ctx);
          ctx.check();
          mark = performance.now();
        }
      }
      return out;
    }
    // a table read by point reads twice at one LSN is loaded whole in the background (as pk gets do)
    this.leaves.tables.noteMiss(snap, t, () => querySnapshot(this.sources.store), (s) => readTable(s, t, () => undefined));
    // one multi-get for all the keys (one store round trip rather than one per hit)
    const found: Array<{ k: string; pk: PkTuple }> = [];
    for (const k of keys) {
      try { found.push({ k, pk: tupleOfNode(k, t.manifest) as PkTuple }); } catch { /* not a key of this table */ }
    }
    const vals = await snap.rawGetMany(found.map((f) => rowKey(keyIdOf(t.manifest), f.pk)));
    vals.forEach((v, i) => {
      if (v !== undefined) out.set(found[i].k, toTuple(t, decodeRow(t.id, found[i].pk, v)));
    });
    ctx.hold(out.size);
    return out;
  }

  /** Tuples holding only the key columns of each doc id (a `keys_only` leaf: no row is read). */
  private keyRows(keys: readonly string[], t: SqlTable): Map<string, Tuple> {
    const out = new Map<string, Tuple>();
    for (const k of keys) {
      let pk: JsonValue[];
      try { pk = tupleOfNode(k, t.manifest); } catch { continue; }
      const values: Record<string, JsonValue> = {};
      t.manifest.primary_key.forEach((c, i) => (values[c] = pk[i]));
      out.set(k, toTuple(t, { values, version: 0 }));
    }
    return out;
  }

  private isImplicit(t: SqlTable): boolean {
    return this.implicitKind(t) !== undefined;
  }

  private keyOf(t: SqlTable, r: Tuple): string {
    return nodeOf(t.pk.map((p) => toJson(r[t.manifest.columns.findIndex((c) => c.name === p)]) as JsonValue));
  }

  // ---- vector_topk ----

  private async vector(n: NodeOf<'vector_topk'>, snap: Snapshot, ctx: ExecCtx, txn: Txn | null, current = false): Promise<void> {
    const reader = need(this.sources.vector, 'vector');
    const t = this.table(n.schema);
    const vt = reader.table(t.id);
    const declared = t.manifest.vector?.column;
    if (n.column !== undefined && declared !== undefined && n.column !== declared) {
      throw new DbError('not_found', `column "${n.column}" of ${t.id} is not its vector column (${declared})`, { path: '$.column', column: n.column });
    }
    const q = queryVector(n.vector, ctx, vt.spec.dim);
    if (!Number.isInteger(n.k) || n.k < 0 || n.k > MAX_K) bad('$.k', `k must be an integer from 0 to ${MAX_K}`);
    // at the current LSN a filter reads the table cache's current entry (a subquery's tables would need a snapshot)
    const entry = current && n.filter ? this.currentRows(t, n.filter) : undefined;
    const metric = (n.metric ?? vt.spec.metric) as VectorMetric;
    let ids: string[] | undefined;
    let rows: Map<string, Tuple> | undefined;
    let memo: { labels?: ReadonlySet<number> } | undefined;
    if (n.filter) {
      // the rows passing a filter, remembered per (table state, filter, parameters): a repeated
      // filtered top-k (the same category, tenant, …) does not re-evaluate the whole table
      const stable = current || (snap.stable && !txn?.overlay.get(t.id)?.size);
      // keyed on the parameters the filter reads only: the query vector ($1 of `ORDER BY emb <-> $1`) changes every query
      const memoKey = stable ? `${t.id}\u0000${entry ? entry.lsn : snap.tableLsn(t.id)}\u0000${stringifyJson(n.filter)}\u0000${paramsOf(n.filter).map((i) => String(ctx.params[i - 1])).join('\u0001')}` : '';
      const hit = stable ? this.passing.get(memoKey) : undefined;
      if (hit) {
        rows = hit.rows;
        ids = hit.ids;
        memo = hit;
      } else {
        const pass = this.predicate(n.filter, ctx, n.schema, n.alias);
        rows = new Map();
        const all = entry ? entry.rows : await this.leaves.allRows(snap, t, ctx, txn);
        if (entry) ctx.hold(all.length); // as allRows holds them
        for (const r of all) if (pass(r)) rows.set(this.keyOf(t, r), r);
        ids = [...rows.keys()];
        // only a filter over this row alone (no function that may vary, no subquery over other tables)
        if (stable && !/"kind":"(call|exists|in_subquery|subquery)"/.test(stringifyJson(n.filter))) {
          if (this.passing.size >= PASSING_MEMO) this.passing.delete(this.passing.keys().next().value as string);
          const entry = { rows, ids } as { rows: Map<string, Tuple>; ids: string[]; labels?: ReadonlySet<number> };
          this.passing.set(memoKey, entry);
          memo = entry;
        }
      }
    }
    let hits: { id: string; distance: number }[];
    if (metric !== vt.spec.metric || (txn?.overlay.get(t.id)?.size ?? 0) > 0) {
      if (current) throw NOT_CURRENT; // an exact scan of the rows read from a snapshot
      // another metric than the index's (or uncommitted writes of this transaction): exact over the rows
      rows ??= new Map((await this.leaves.allRows(snap, t, ctx, txn)).map((r) => [this.keyOf(t, r), r]));
      const col = declared === undefined ? -1 : t.manifest.columns.findIndex((c) => c.name === declared);
      hits = [];
      const meta = n.metadata ? Object.entries(n.metadata) : null;
      for (const [id, r] of rows) {
        if (meta && !meta.every(([f, x]) => ((v) => v !== undefined && stringifyJson(v) === stringifyJson(x))(vt.metadataOf(id)?.[f]))) continue;
        const v = col >= 0 ? vectorValue(r[col]) : vt.vectorOf(id);
        if (v && v.length === q.length) hits.push({ id, distance: distance(metric, q, v) });
      }
      hits.sort((a, b) => a.distance - b.distance || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      hits = hits.slice(0, n.k);
      ctx.strategies.set(n, `exact scan (${metric}${metric !== vt.spec.metric ? `; the index is ${vt.spec.metric}` : ''}) over ${rows.size} rows`);
    } else {
      // a remembered filter keeps its entry labels too (same table LSN, same vectors)
      if (memo && ids && !memo.labels) memo.labels = vt.labelsOf(ids);
      const members = memo?.labels ? { labels: memo.labels } : ids ? { ids } : {};
      hits = n.k === 0 ? [] : vt.topk(q, { k: n.k, mode: n.mode ?? 'high_recall', ...members, ...(n.metadata ? { filter: n.metadata } : {}) });
      const kind = vt.kind;
      // an HNSW walk's ef grows with the table's calibration and the share of rows passing (libs/vector DESIGN.md)
      const ef = vt.efFor(n.k, n.mode ?? 'high_recall', ids ? ids.length / Math.max(1, vt.size) : 1);
      // a calibration running in the background shares the event loop (and may change the ef when it ends)
      const how = `${kind} index${ef === null ? '' : ` ef ${ef}${vt.calibrating() ? ' (calibrating)' : ''}`}`;
      ctx.strategies.set(n, ids
        ? `${kind === 'exact' || ids.length <= filterExactMax(vt.size) ? 'exact scan' : `${how} (exact fallback under k)`} of ${ids.length} passing rows (${metric})`
        : `${kind === 'exact' ? 'exact scan' : how} ${n.mode ?? 'high_recall'} (${metric})`);
    }
    // the table cache's pk map indexed by the id text when it holds this snapshot (no map of the hits)
    const cached = rows ?? this.cachedByText(t, snap, txn, current);
    if (current && !cached) throw NOT_CURRENT; // the rows would need a snapshot
    const found = cached ?? (await this.rowsByKey(hits.map((h) => h.id), t, snap, ctx, txn));
    const out: Tuple[] = [];
    for (const h of hits) {
      const r = found.get(h.id);
      if (r) out.push([...r, h.distance]);
    }
    ctx.leaves.set(n, out);
  }

  // ---- fts_search ----

  private async fts(n: NodeOf<'fts_search'>, snap: Snapshot, ctx: ExecCtx, txn: Txn | null, unchanged?: () => boolean): Promise<void> {
    const current = !!unchanged;
    const reader = need(this.sources.fts, 'full-text');
    const t = this.table(n.schema);
    const fields = n.fields ?? (n.field !== undefined ? [{ field: n.field }] : []);
    if (fields.length === 0) bad('$.field', 'fts_search needs field or fields');
    const q = ftsQueryOf(n, ctx);
    // limit null: every match (SQL's `col @@ query`), asked as the field's document count
    const every = n.limit === null;
    const docs = every ? Math.max(1, ...fields.map((f) => reader.fieldStats(t.id, f.field).docs)) : 0;
    const limit = every ? docs : n.limit ?? DEFAULT_LIMIT;
    if (!every && (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT)) bad('$.limit', `limit must be an integer from 1 to ${MAX_LIMIT}, or null`);
    const stats: CollectStats = { candidates: 0 };
    const opts: SearchOptions = {
      snapshot: snap,
      ...(every ? { unbounded: true, ordinals: true, ...(n.unordered ? { unordered: true } : {}) } : {}),
      ...(ctx.explain ? { stats } : {}),
      ...(n.ranking?.feedback ? { feedback: n.ranking.feedback } : {}),
      ...(n.ranking?.proximity ? { proximity: n.ranking.proximity } : {}),
      ...(n.ranking?.query_stopwords ? { queryStopwords: n.ranking.query_stopwords } : {}),
    };
    const pass = n.filter ? this.predicate(n.filter, ctx, n.schema, n.alias) : null;
    let want = pass && !every ? Math.min(MAX_LIMIT, limit * 4) : limit;
    for (;;) {
      let ranked: { doc_id: string; score: number; ord?: number }[];
      if (fields.length === 1 && (fields[0].boost ?? 1) === 1) ranked = await reader.search(t.id, fields[0].field, q, want, opts); // a fresh array, only read here
      else {
        const scores = new Map<string, number>();
        for (const f of fields) for (const d of await reader.search(t.id, f.field, q, want, opts)) scores.set(d.doc_id, (scores.get(d.doc_id) ?? 0) + d.score * (f.boost ?? 1));
        ranked = [...scores].map(([doc_id, score]) => ({ doc_id, score })).sort((a, b) => b.score - a.score || (a.doc_id < b.doc_id ? -1 : a.doc_id > b.doc_id ? 1 : 0));
      }
      const keysOnly = n.keys_only && !pass && !txn?.overlay.get(t.id)?.size && !this.isImplicit(t);
      const byOrd = every && !keysOnly && fields.length === 1 ? this.ordRows(t, fields[0].field, snap, txn, current) : undefined;
      const cached = !keysOnly && this.cachedByText(t, snap, txn, current);
      if (current && !keysOnly && !cached) throw NOT_CURRENT; // the rows would need a snapshot
      const row = cached || (keysOnly ? this.keyRows(ranked.map((d) => d.doc_id), t) : await this.rowsByKey(ranked.map((d) => d.doc_id), t, snap, ctx, txn));
      // the hits and the versions of their rows are in hand (immutable): one state of the store
      if (unchanged && !unchanged()) throw NOT_CURRENT;
      const out: Tuple[] = [];
      for (let i = 0; i < ranked.length; i++) {
        const d = ranked[i];
        const r = byOrd && d.ord !== undefined ? byOrd(d.ord, d.doc_id) : row.get(d.doc_id);
        // no_score (the optimizer saw nothing read `_score`): the row itself, no copy per hit
        if (r && (!pass || pass(r))) out.push(n.no_score ? r : [...r, d.score]);
      }
      if (!pass || every || out.length >= limit || ranked.length < want || want >= MAX_LIMIT) {
        const how = stats.taat ? `term-at-a-time${stats.taatPartial ? ' (partial)' : ''}` : stats.tierExits ? 'champion tiers' : 'document-at-a-time block-max';
        ctx.strategies.set(n, `bm25${rankingNote(opts)} ${every ? 'every match' : `top-${want}`} ${ctx.explain ? `${how}, ${stats.candidates} candidates, ${stats.skips ?? 0} skips` : ''}${pass ? ` filtered (${out.length} pass)` : ''}${keysOnly ? ' keys only' : ''}`.replace(/\s+$/, ''));
        ctx.leaves.set(n, out.slice(0, limit));
        return;
      }
      want = Math.min(MAX_LIMIT, want * 4);
    }
  }

  // ---- graph ----

  /** A table's row by node key text, from the table cache's pk map or one read of the table. */
  private async rowLookup(t: SqlTable, snap: Snapshot, ctx: ExecCtx, txn: Txn | null): Promise<(node: string) => Tuple | undefined> {
    const all = await this.leaves.allRows(snap, t, ctx, txn);
    // a one-text-key table's pk map takes the node key text as is
    const byText = this.cachedByText(t, snap, txn);
    if (byText) return (node) => byText.get(node);
    const cached = txn?.overlay.get(t.id)?.size ? undefined : this.leaves.tables.lookup(snap, t);
    if (cached && !this.isImplicit(t)) {
      // the table cache's pk map: no per-query index of the reached table
      return (node) => {
        let pk: JsonValue[];
        try { pk = tupleOfNode(node, t.manifest); } catch { return undefined; }
        return cached.byPk.get(pkKeyOf(pk)) as Tuple | undefined;
      };
    }
    const rows = new Map<string, Tuple>();
    for (const r of all) rows.set(this.keyOf(t, r), r);
    return (node) => rows.get(node);
  }

  /** Node key → whether its row (by `lookup`) passes `e` (a node naming no row does not), memoized per query. */
  private nodeFilter(e: Expr, lookup: (node: string) => Tuple | undefined, ctx: ExecCtx, schema: string, alias: string | undefined): (node: string) => boolean {
    const pass = this.predicate(e, ctx, schema, alias);
    const memo = new Map<string, boolean>();
    return (node) => {
      let v = memo.get(node);
      if (v === undefined) {
        const r = lookup(node);
        memo.set(node, (v = r !== undefined && pass(r)));
      }
      return v;
    };
  }

  /** A graph leaf's relation, adjacency and row lookups, read through the snapshot (the adjacency built on first use). */
  private async graphLeaf(n: GraphNode, snap: Snapshot, ctx: ExecCtx, txn: Txn | null): Promise<GraphLeafOf> {
    const g = need(this.sources.graph, 'graph');
    const { relation, adj } = await g.adjacency(n.schema, n.rel);
    const ends = graphEnds(n, relation.def);
    const lookup = n.row_columns !== false || n.filter ? await this.rowLookup(this.table(ends.reached), snap, ctx, txn) : undefined;
    const fromLookup = n.start_filter && !(ends.from === ends.reached && lookup) ? await this.rowLookup(this.table(ends.from), snap, ctx, txn) : lookup;
    return graphLeafOf(n, ends, adj, lookup, fromLookup, (e, look, schema) => this.nodeFilter(e, look, ctx, schema, n.alias));
  }

  /**
   * A graph_expand answered from the store as it is now, in this turn, with no storage snapshot:
   * when the relation's adjacency is built and the rows it needs are in the table cache at the
   * store's current table LSNs (the adjacency is live, so both are the store's present state).
   * False, with nothing set, when one of them is not: the caller takes the snapshot path.
   */
  expandCurrent(nodes: readonly PlanNode[], ctx: ExecCtx): boolean {
    const leaves: Array<[GraphNode, GraphLeaf]> = [];
    for (const n of nodes) {
      if (n.op !== 'graph_expand') return false;
      const built = this.sources.graph?.adjacencyNow(n.schema, n.rel);
      if (!built) return false;
      const ends = graphEnds(n, built.relation.def);
      const lookup = n.row_columns !== false || n.filter ? this.currentLookup(this.table(ends.reached)) : undefined;
      if ((n.row_columns !== false || n.filter) && !lookup) return false;
      const fromLookup = n.start_filter && !(ends.from === ends.reached && lookup) ? this.currentLookup(this.table(ends.from)) : lookup;
      if (n.start_filter && !fromLookup) return false;
      const leaf = graphLeafOf(n, ends, built.adj, lookup, fromLookup, (e, look, schema) => this.nodeFilter(e, look, ctx, schema, n.alias));
      leaves.push([n, expandLeaf(leaf)]);
    }
    for (const [n, leaf] of leaves) {
      ctx.aux.set(n, leaf);
      ctx.loadMs.set(n, 0);
    }
    return true;
  }

  /** Rows of a one-text-key table by key text from the table cache at the store's current LSN, or undefined. */
  private currentLookup(t: SqlTable): ((node: string) => Tuple | undefined) | undefined {
    if (this.isImplicit(t) || this.implicitKind(t)) return undefined;
    const pk = t.manifest.primary_key;
    if (pk.length !== 1 || t.manifest.columns.find((c) => c.name === pk[0])?.ty !== 'str') return undefined;
    const e = this.leaves.tables.current(t);
    if (!e) return undefined;
    const byPk = e.byPk as { get(k: string): Tuple | undefined };
    return (node) => byPk.get(node);
  }

  private async expand(n: NodeOf<'graph_expand'>, snap: Snapshot, ctx: ExecCtx, txn: Txn | null): Promise<void> {
    const min = n.min_depth ?? 1;
    const max = n.max_depth === undefined ? min : n.max_depth;
    if (!Number.isInteger(min) || min < 0) bad('$.min_depth', 'min_depth must be a non-negative integer');
    if (max !== null && (!Number.isInteger(max) || max < min)) bad('$.max_depth', 'max_depth must be an integer ≥ min_depth, or null');
    ctx.aux.set(n, expandLeaf(await this.graphLeaf(n, snap, ctx, txn)));
  }

  private async path(n: NodeOf<'graph_path'>, snap: Snapshot, ctx: ExecCtx, txn: Txn | null): Promise<void> {
    const max = n.max_depth ?? 64;
    if (!Number.isInteger(max) || max < 0 || max > 64) bad('$.max_depth', 'max_depth must be an integer from 0 to 64');
    const leaf = await this.graphLeaf(n, snap, ctx, txn);
    const src = keyText(constantOf(n.src, ctx), '$.src');
    const dst = keyText(constantOf(n.dst, ctx), '$.dst');
    const hidden = (leaf.start && !leaf.start(src)) || (leaf.visible && !leaf.visible(dst));
    const p = hidden ? null : leaf.forward ? shortestPath(leaf.adj, src, dst, max) : bfsPath(leaf.next, src, dst, max);
    ctx.aux.set(n, { schema: leaf.schema, next: leaf.next, row: leaf.row } satisfies GraphLeaf);
    ctx.strategies.set(n, `bfs ${n.direction ?? 'forward'} ≤ ${max} hops${leaf.visible ? ' over visible nodes' : ''}`);
    ctx.leaves.set(n, (p ?? []).map((node, i) => [BigInt(i), node, ...(leaf.row(node) ?? [])]));
  }

  private async dijkstra(n: NodeOf<'graph_dijkstra'>, snap: Snapshot, ctx: ExecCtx, txn: Txn | null): Promise<void> {
    const g = need(this.sources.graph, 'graph');
    const leaf = await this.graphLeaf(n, snap, ctx, txn);
    const src = keyText(constantOf(n.src, ctx), '$.src');
    const dst = keyText(constantOf(n.dst, ctx), '$.dst');
    const hidden = (leaf.start && !leaf.start(src)) || (leaf.visible && !leaf.visible(dst));
    const r = hidden ? { path: [] as string[], total_weight: null } : await g.dijkstra(n.schema, n.rel, src, dst, { weightField: n.weight_field, weights: n.weights, ...(leaf.visible ? { pass: leaf.visible } : {}) });
    ctx.aux.set(n, { schema: leaf.schema, next: leaf.next, row: leaf.row } satisfies GraphLeaf);
    ctx.strategies.set(n, leaf.visible ? 'dijkstra over visible nodes' : 'dijkstra');
    ctx.leaves.set(n, r.path.map((node, i) => [BigInt(i), node, r.total_weight, ...(leaf.row(node) ?? [])]));
  }
}

/** The ranking stages a search runs beyond BM25 (explain): the route's defaults unless the node says otherwise. */
function rankingNote(o: SearchOptions): string {
  const prox = (o.proximity ?? RANKING_DEFAULTS.proximity) !== 'none';
  const rm3 = (o.feedback ?? RANKING_DEFAULTS.feedback) !== 'none';
  return `${prox ? ' + proximity' : ''}${rm3 ? ' + rm3' : ''}`;
}

/** A graph node key from a value: text as is, integers as their decimal text. */
export function keyText(v: unknown, path: string): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'bigint' || typeof v === 'number') return String(v);
  return bad(path, 'expected a node key (text or integer)');
}

/** A stored vector column value (JSON array, or its text) as numbers; undefined when it is not one. */
function vectorValue(v: unknown): number[] | undefined {
  let a = v;
  if (typeof a === 'string') {
    try { a = JSON.parse(a); } catch { return undefined; }
  }
  return Array.isArray(a) && a.every((x) => typeof x === 'number') ? (a as number[]) : undefined;
}

/** The query vector of a vector_topk: a literal array, or a `$n` / text holding JSON or pgvector's `'[1,2,3]'`. */
export function queryVector(e: Expr, ctx: ExecCtx, dim: number): readonly number[] {
  let v: unknown = e.kind === 'lit' ? e.value : constantOf(e, ctx);
  if (typeof v === 'string') {
    // parsed once per statement: the sort above recomputing `emb <-> $1` finds this same text parsed
    const known = vectorOfText(v);
    if (known) v = known;
    else try { v = JSON.parse(v); } catch { bad('$.vector', 'the query vector must be an array of numbers (JSON, or pgvector text like \'[1,2,3]\')'); }
  }
  if (!Array.isArray(v) || v.length === 0 || v.some((x) => typeof x !== 'number' || !Number.isFinite(x))) {
    bad('$.vector', 'the query vector must be a non-empty array of finite numbers');
  }
  if (v.length !== dim) throw new DbError('dim_mismatch', `the query vector has ${v.length} dimensions; the table is locked to ${dim}`, { field: 'vector', path: '$.vector' });
  return v as readonly number[];
}
