/**
 * The vector, full-text and graph routes as plans: each request is checked as the route always
 * checked it, compiled to one plan node, run on the engine's executor (so the policy, budgets,
 * cancellation, explain and metrics are the plan's), and its rows put back in the route's answer.
 */
import { DbError, parseJsonExact, type JsonValue } from '@mmdb/core';
import type { PlanNode } from '@mmdb/plan';
import type { Match, TopKRequest } from '@mmdb/vector';
import { MAX_LIMIT, type SearchOptions } from '@mmdb/fts';
import { checkReverse, nodeOf } from '@mmdb/graph';
import type { SqlEngine } from './engine';
import type { QueryOptions, SelectResult } from './run/executor';
import type { SqlTable } from './catalog';
import { pkPositions } from './run/leaves';
import { toJson, truthy, type Value } from './values';


function column(r: SelectResult, name: string): number {
  const i = r.names.findIndex((n) => n === name);
  if (i < 0) throw new DbError('internal_error', `route plan has no column ${name}`);
  return i;
}

/** A tuple of `t` (manifest column order) as the stored row object: typed JSON values, NULL columns (and `skip`) left out. */
export function rowObject(t: SqlTable, tuple: readonly Value[], skip?: string): Record<string, JsonValue> {
  const out: Record<string, JsonValue> = {};
  t.manifest.columns.forEach((c, i) => {
    const v = tuple[i];
    if (v === null || v === undefined || c.name === skip) return;
    if (c.ty === 'bool') out[c.name] = truthy(v) === true;
    else if ((c.ty === 'json' || c.ty === 'vector') && typeof v === 'string') {
      try { out[c.name] = parseJsonExact(v) as JsonValue; } catch { out[c.name] = v; }
    } else out[c.name] = toJson(v) as JsonValue;
  });
  return out;
}

function keyText(t: SqlTable, tuple: readonly Value[]): string {
  return nodeOf(t.pk.map((p) => toJson(tuple[t.manifest.columns.findIndex((c) => c.name === p)]) as JsonValue));
}

/** POST /vector/{table}/topk: {vector, k?, mode?, filter?, metric?} → [{id, distance, metadata}]. */
export async function vectorTopkRoute(engine: SqlEngine, table: string, body: unknown, opts: QueryOptions = {}): Promise<Match[]> {
  const reader = engine.exec.sources.vector;
  if (!reader) throw new DbError('not_found', `no vector table "${table}"`, { table });
  const { vector: q, k, mode, filter } = reader.checkTopK(table, body as TopKRequest);
  // the request's values are parameters: one cached plan serves every call of the same shape
  const plan: PlanNode = { op: 'vector_topk', schema: table, vector: P1, k, mode, ...(filter ? { metadata: filter } : {}) };
  const r = await engine.runPlan(plan, { ...opts, params: [[...q]] });
  const t = engine.exec.table(table);
  const d = column(r, '_distance');
  const implicit = engine.exec.implicit.kind(t) === 'vector';
  const vcol = t.manifest.vector?.column;
  return r.rows.map((row) => {
    let metadata: Record<string, JsonValue> | null;
    if (implicit) metadata = row[1] === null ? null : (parseJsonExact(row[1] as string) as Record<string, JsonValue>);
    // the row's columns but its vector (not parsed: the answer leaves it out)
    else metadata = rowObject(t, row, vcol);
    return { id: keyText(t, row), distance: row[d] as number, metadata } as Match;
  });
}

/** GET /fts/{table}/{field}?q&limit&… → [{doc_id, score}] (BM25, the route's ranking options). */
export async function ftsSearchRoute(
  engine: SqlEngine, table: string, field: string, q: string, limit: number,
  ranking: Pick<SearchOptions, 'feedback' | 'proximity' | 'queryStopwords'>, opts: QueryOptions = {},
): Promise<{ doc_id: string; score: number }[]> {
  const fts = engine.exec.sources.fts;
  if (!fts) throw new DbError('not_found', `no full-text table "${table}" with field "${field}"`, { table, field });
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw new DbError('validation_failed', `limit must be an integer from 1 to ${MAX_LIMIT}`, { field: 'limit' });
  // the route's own checks and errors come first (limit, q, unknown table/field), as they always did
  if (!engine.store.manifest(table) && !fts.standaloneFields(table).includes(field)) {
    await fts.search(table, field, q, limit, ranking);
    return [];
  }
  const plan: PlanNode = {
    op: 'fts_search', schema: table, field, query: P1, limit,
    ranking: { ...(ranking.feedback ? { feedback: ranking.feedback } : {}), ...(ranking.proximity ? { proximity: ranking.proximity } : {}), ...(ranking.queryStopwords ? { query_stopwords: ranking.queryStopwords } : {}) },
  };
  const r = await engine.runPlan(plan, { ...opts, params: [q] });
  const t = engine.exec.table(table);
  const s = column(r, '_score');
  return r.rows.map((row) => ({ doc_id: keyText(t, row), score: row[s] as number }));
}

async function nodes(engine: SqlEngine, plan: PlanNode, opts: QueryOptions, params: unknown[]): Promise<SelectResult> {
  return engine.runPlan(plan, { ...opts, params });
}

/** `$1` / `$2`: the routes pass their request's values as parameters, so repeated calls share one cached plan. */
const P1 = { kind: 'param', index: 1 } as const;
const P2 = { kind: 'param', index: 2 } as const;

/** GET /graph/{schema}/neighbors → distinct neighbour keys. */
export async function graphNeighborsRoute(engine: SqlEngine, schema: string, rel: string, node: string, opts: QueryOptions = {}): Promise<string[]> {
  const r = await nodes(engine, { op: 'graph_expand', schema, rel, from: P1, min_depth: 1, max_depth: 1, row_columns: false }, opts, [node]);
  const i = column(r, '_node');
  return r.rows.map((x) => x[i] as string);
}

/** GET /graph/{schema}/bfs → [{node, depth}] in visit order, the source first. */
export async function graphBfsRoute(engine: SqlEngine, schema: string, rel: string, src: string, depth: number, opts: QueryOptions = {}): Promise<{ node: string; depth: number }[]> {
  const r = await nodes(engine, { op: 'graph_expand', schema, rel, from: P1, min_depth: 0, max_depth: depth, row_columns: false }, opts, [src]);
  const n = column(r, '_node');
  const d = column(r, '_depth');
  return r.rows.map((x) => ({ node: x[n] as string, depth: Number(x[d]) }));
}

/** GET /graph/{schema}/path → {reachable, path}. */
export async function graphPathRoute(engine: SqlEngine, schema: string, rel: string, src: string, dst: string, maxDepth: number, opts: QueryOptions = {}): Promise<{ reachable: boolean; path: string[] }> {
  const r = await nodes(engine, { op: 'graph_path', schema, rel, src: P1, dst: P2, max_depth: maxDepth, row_columns: false }, opts, [src, dst]);
  const n = column(r, '_node');
  const path = r.rows.map((x) => x[n] as string);
  return { reachable: path.length > 0, path };
}

/** GET /graph/{schema}/dijkstra → {path, total_weight}. */
export async function graphDijkstraRoute(
  engine: SqlEngine, schema: string, rel: string, src: string, dst: string,
  o: { weightField?: string; weights?: Readonly<Record<string, number>> }, opts: QueryOptions = {},
): Promise<{ path: string[]; total_weight: number | null }> {
  const plan: PlanNode = { op: 'graph_dijkstra', schema, rel, src: P1, dst: P2, row_columns: false, ...(o.weightField ? { weight_field: o.weightField } : {}), ...(o.weights ? { weights: o.weights } : {}) };
  const r = await nodes(engine, plan, opts, [src, dst]);
  const n = column(r, '_node');
  const c = column(r, '_cost');
  const path = r.rows.map((x) => x[n] as string);
  return { path, total_weight: path.length ? (r.rows[0][c] as number) : null };
}

/** GET /graph/{schema}/reverse → rows of the relation's source table pointing at pk (not on a self-relation). */
export async function graphReverseRoute(engine: SqlEngine, schema: string, rel: string, pk: string, opts: QueryOptions = {}): Promise<Record<string, JsonValue>[]> {
  const graph = engine.exec.sources.graph;
  if (!graph) throw new DbError('not_found', `relation "${rel}" is not declared`, { rel });
  const relation = graph.resolve(schema, rel);
  checkReverse(relation, rel);
  const r = await nodes(engine, { op: 'graph_expand', schema, rel, from: P1, direction: 'reverse', min_depth: 1, max_depth: 1 }, opts, [pk]);
  const t = engine.exec.table(relation.def.source);
  const width = t.manifest.columns.length;
  const pkIdx = pkPositions(t);
  // a source key naming no row has NULL row columns: it is left out, as the route always did
  return r.rows.filter((x) => pkIdx.every((i) => x[i] !== null)).map((x) => rowObject(t, x.slice(0, width)));
}
