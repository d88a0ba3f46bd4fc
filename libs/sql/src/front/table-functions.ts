/**
 * Table-valued functions in FROM: the multi-model plan nodes spelled in SQL.
 *
 *   fts_search('ns.t', 'field', 'query' | $n [, limit [, 'ranking']]) → fts_search (row columns, _score);
 *     ranking: 'bm25' (plain BM25: no RM3 feedback, no proximity), 'default' (the route's), or the
 *     route's options as `name=value` pairs: 'feedback=none proximity=bm25tp query_stopwords=auto'
 *   vector_topk('ns.t', $1 | '[1,2,3]', k [, 'metric'])       → vector_topk      (row columns, _distance)
 *   graph_expand('ns.t', 'rel', start [, min [, max [, 'direction']]]) → graph_expand (reached row columns, _node, _depth);
 *     on the right of an inner/cross join, `start` may name the left side's columns: one walk per left row
 *   graph_path('ns.t', 'rel', 'src', 'dst' [, max_depth])     → graph_path       (_step, _node, row columns)
 *   graph_dijkstra('ns.t', 'rel', 'src', 'dst' [, 'weight_field']) → graph_dijkstra (_step, _node, _cost, row columns)
 *   rrf((SELECT …), (SELECT …) [, …], 'key' [, k])            → fuse rrf         (first input's columns, _score, _rank_1…)
 *   fuse('weighted', (SELECT …), …, 'key')                     → fuse weighted
 */
import { DbError, stringifyJson } from '@mmdb/core';
import type { Affinity, Expr, FtsRanking, PlanNode } from '@mmdb/plan';
import type { AExpr, Select } from './ast';

export interface TvfTable { readonly id: string; readonly columns: ReadonlyArray<{ readonly name: string; readonly aff?: Affinity; readonly hidden?: boolean }> }

export interface TvfContext {
  table(name: string): TvfTable | undefined;
  /** The schema a relation's traversal reaches from `schema` in `direction`. */
  reached(schema: string, rel: string, direction: 'forward' | 'reverse' | 'both'): string;
  expr(e: AExpr): Expr;
  select(s: Select): { plan: PlanNode; names: string[]; affs: (Affinity | undefined)[] };
  /** On the right of a join: the left side, and a binder over its columns (LATERAL). */
  lateral?: { plan: PlanNode; expr(e: AExpr): Expr };
}

/** `lateral`: the plan already holds the join's left side (a graph_expand started per left row). */
export interface TvfResult { plan: PlanNode; cols: { name: string; aff?: Affinity }[]; lateral?: boolean }

const TVFS = new Set(['fts_search', 'vector_topk', 'graph_expand', 'graph_path', 'graph_dijkstra', 'rrf', 'fuse']);
export const isTableFunction = (name: string): boolean => TVFS.has(name.toLowerCase());

function bad(fn: string, msg: string): never {
  throw new DbError('validation_failed', `${fn}(): ${msg}`);
}

function str(fn: string, a: AExpr | undefined, what: string): string {
  if (!a || a.t !== 'lit' || typeof a.v !== 'string') bad(fn, `${what} must be a string literal`);
  return a.v as string;
}

function int(fn: string, a: AExpr | undefined, what: string, lo = 0, hi = Number.MAX_SAFE_INTEGER): number {
  if (!a || a.t !== 'lit' || typeof a.v !== 'bigint' || a.v < BigInt(lo) || a.v > BigInt(hi)) bad(fn, `${what} must be an integer literal from ${lo} to ${hi}`);
  return Number(a.v);
}

const RANKING_OPTIONS: Record<string, readonly string[]> = { feedback: ['none', 'rm3'], proximity: ['none', 'bm25tp'], query_stopwords: ['none', 'auto'] };

/**
 * fts_search's ranking argument: `'bm25'` is plain BM25 (no RM3 feedback, no proximity rescoring:
 * the cheapest ranking, what a fused query usually wants), `'default'` the route's ranking, else
 * the fts route's own options as `name=value` pairs (spaces, commas or `&` between them).
 */
export function rankingOf(fn: string, text: string): FtsRanking {
  const t = text.trim().toLowerCase();
  if (t === 'bm25') return { feedback: 'none', proximity: 'none' };
  if (t === 'default' || t === '') return {};
  const out: Record<string, string> = {};
  for (const part of t.split(/[\s,&]+/).filter(Boolean)) {
    const [name, value, ...rest] = part.split('=');
    const allowed = RANKING_OPTIONS[name];
    if (!allowed || value === undefined || rest.length || !allowed.includes(value)) {
      bad(fn, `the ranking is 'bm25', 'default' or name=value options (${Object.entries(RANKING_OPTIONS).map(([k, v]) => `${k}=${v.join('|')}`).join(', ')}); got '${part}'`);
    }
    out[name] = value;
  }
  return out as FtsRanking;
}

export function bindTableFunction(name: string, args: AExpr[], alias: string, cx: TvfContext): TvfResult {
  const fn = name.toLowerCase();
  const tableOf = (a: AExpr | undefined) => {
    const n = str(fn, a, 'the table');
    const t = cx.table(n);
    if (!t) throw new DbError('schema_not_found', `no such table: ${n}`, { schema: n });
    return t;
  };
  const rowCols = (t: TvfTable) => t.columns.filter((c) => !c.hidden).map((c) => ({ name: c.name, aff: c.aff }));
  switch (fn) {
    case 'fts_search': {
      const t = tableOf(args[0]);
      if (args.length > 5) bad(fn, 'too many arguments');
      const ranking = args[4] ? rankingOf(fn, str(fn, args[4], 'the ranking')) : undefined;
      const plan: PlanNode = {
        op: 'fts_search', schema: t.id, alias, field: str(fn, args[1], 'the field'), query: args[2]?.t === 'param' ? cx.expr(args[2]) : str(fn, args[2], 'the query'),
        ...(args[3] ? { limit: int(fn, args[3], 'limit', 1, 1000) } : {}), ...(ranking && Object.keys(ranking).length ? { ranking } : {}),
      };
      return { plan, cols: [...rowCols(t), { name: '_score', aff: 'real' }] };
    }
    case 'vector_topk': {
      const t = tableOf(args[0]);
      if (!args[1]) bad(fn, 'the query vector is required');
      const metric = args[3] ? str(fn, args[3], 'the metric') : undefined;
      if (metric && !['cosine', 'dot', 'l2', 'manhattan'].includes(metric)) bad(fn, 'metric must be one of cosine, dot, l2, manhattan');
      const plan: PlanNode = { op: 'vector_topk', schema: t.id, alias, vector: cx.expr(args[1]), k: int(fn, args[2], 'k', 0, 10_000), ...(metric ? { metric: metric as 'l2' } : {}) };
      return { plan, cols: [...rowCols(t), { name: '_distance', aff: 'real' }] };
    }
    case 'graph_expand': {
      const t = tableOf(args[0]);
      const rel = str(fn, args[1], 'the relation');
      if (!args[2]) bad(fn, 'the start node is required');
      const min = args[3] ? int(fn, args[3], 'min_depth', 0, 64) : 1;
      const max = args[4] ? (args[4].t === 'lit' && args[4].v === null ? null : int(fn, args[4], 'max_depth', min, 64)) : min;
      const direction = (args[5] ? str(fn, args[5], 'direction') : 'forward') as 'forward';
      if (!['forward', 'reverse', 'both'].includes(direction)) bad(fn, 'direction must be forward, reverse or both');
      const reached = cx.table(cx.reached(t.id, rel, direction))!;
      const cols = [...rowCols(reached), { name: '_node', aff: 'text' as const }, { name: '_depth', aff: 'integer' as const }];
      // a start naming the left side's columns walks once per left row (LATERAL)
      const start = cx.lateral ? cx.lateral.expr(args[2]) : null;
      if (start && cx.lateral && stringifyJson(start).includes('"kind":"col"')) {
        return { plan: { op: 'graph_expand', input: cx.lateral.plan, schema: t.id, rel, from: start, min_depth: min, max_depth: max, direction, alias }, cols, lateral: true };
      }
      const plan: PlanNode = { op: 'graph_expand', schema: t.id, rel, from: cx.expr(args[2]), min_depth: min, max_depth: max, direction, alias };
      return { plan, cols };
    }
    case 'graph_path': case 'graph_dijkstra': {
      const t = tableOf(args[0]);
      const rel = str(fn, args[1], 'the relation');
      if (!args[2] || !args[3]) bad(fn, 'src and dst are required');
      const reached = cx.table(cx.reached(t.id, rel, 'forward'))!;
      const plan: PlanNode = fn === 'graph_path'
        ? { op: 'graph_path', schema: t.id, rel, src: cx.expr(args[2]), dst: cx.expr(args[3]), alias, ...(args[4] ? { max_depth: int(fn, args[4], 'max_depth', 0, 64) } : {}) }
        : { op: 'graph_dijkstra', schema: t.id, rel, src: cx.expr(args[2]), dst: cx.expr(args[3]), alias, ...(args[4] ? { weight_field: str(fn, args[4], 'weight_field') } : {}) };
      const head = [{ name: '_step', aff: 'integer' as const }, { name: '_node', aff: 'text' as const }, ...(fn === 'graph_dijkstra' ? [{ name: '_cost', aff: 'real' as const }] : [])];
      return { plan, cols: [...head, ...rowCols(reached)] };
    }
    case 'rrf': case 'fuse': {
      const rest = [...args];
      let method: 'rrf' | 'weighted' = 'rrf';
      if (fn === 'fuse') {
        const m = str(fn, rest.shift(), 'the method');
        if (m !== 'rrf' && m !== 'weighted') bad(fn, 'the method must be rrf or weighted');
        method = m;
      }
      const inputs = [];
      while (rest.length && rest[0].t === 'subq') inputs.push(cx.select((rest.shift() as { select: Select }).select));
      if (inputs.length === 0) bad(fn, 'give the ranked inputs as (SELECT …) arguments');
      const key = str(fn, rest.shift(), 'the key column').split(',').map((s) => s.trim()).filter(Boolean);
      const k = rest.length ? int(fn, rest.shift(), 'k') : undefined;
      if (rest.length) bad(fn, 'too many arguments');
      const plan: PlanNode = { op: 'fuse', method, key, inputs: inputs.map((i) => i.plan), ...(k !== undefined ? { k } : {}) };
      const first = inputs[0];
      const cols = [...first.names.map((n, i) => ({ name: n, aff: first.affs[i] })), { name: '_score', aff: 'real' as const }, ...inputs.map((_, i) => ({ name: `_rank_${i + 1}`, aff: 'integer' as const }))];
      // fuse outputs plain names: renamed to alias.name like a derived table
      return { plan: { op: 'project', input: plan, columns: cols.map((c) => ({ name: `${alias}.${c.name}`, expr: { kind: 'col', name: c.name } })) }, cols };
    }
    default:
      throw new DbError('unsupported_sql', `no such table-valued function: ${name}`, { construct: name });
  }
}
