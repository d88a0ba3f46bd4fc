/** Walks of an optimized plan the executor needs: its storage leaves, whether it is small, its explain tree. */
import { children, forEachNode, subplans, type PlanNode } from '@mmdb/plan';
import type { ExecCtx } from '../exec/context';

/** Leaf rows up to which a small plan runs synchronously (querySmall). */
export const SMALL_ROWS = 4096;

/** Idle compiled trees kept per cached plan (concurrent runs beyond this compile their own). */
export const POOL_SIZE = 4;

/** Whether a plan is small (see querySmall): pk gets and pk ranges under per-row operators only. */
export function isSmall(plan: PlanNode): boolean {
  let ok = true;
  const walk = (n: PlanNode) => {
    if (!ok) return;
    if (n.op !== 'get' && n.op !== 'index_scan' && n.op !== 'filter' && n.op !== 'project' && n.op !== 'sort' && n.op !== 'limit' && n.op !== 'distinct' && n.op !== 'aggregate' && n.op !== 'values') { ok = false; return; }
    if (n.op === 'index_scan' && n.index !== 'primary' && n.top === undefined) { ok = false; return; }
    if (subplans(n).length) { ok = false; return; }
    for (const c of children(n)) walk(c);
  };
  walk(plan);
  return ok;
}

/** Nodes read before the operators run (storage and multi-model leaves, insert's key hint), subqueries included. */
export const PRELOADED = new Set<PlanNode['op']>(['scan', 'get', 'index_scan', 'insert', 'fts_search', 'vector_topk', 'graph_expand', 'graph_path', 'graph_dijkstra']);

export function leafNodes(plan: PlanNode): PlanNode[] {
  const out: PlanNode[] = [];
  forEachNode(plan, (n) => { if (PRELOADED.has(n.op)) out.push(n); });
  return out;
}

export function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}

/** A node's one-line explain detail: what it reads and how. */
function detailOf(n: PlanNode, ctx: ExecCtx): string | undefined {
  const strategy = ctx.strategies.get(n);
  switch (n.op) {
    case 'scan': case 'get': return n.schema;
    case 'index_scan': return `${n.schema} via ${n.index}${n.top !== undefined ? ` top ${n.top}${n.reverse ? ' reverse' : ''}` : ''}`;
    case 'join': return `${n.kind} ${n.strategy ?? 'nested_loop'}${strategy ? ` (${strategy})` : ''}`;
    case 'fts_search': return `${n.schema}.${n.field ?? (n.fields ?? []).map((f) => f.field).join('+')}${strategy ? ` ${strategy}` : ''}`;
    case 'vector_topk': return `${n.schema} k=${n.k}${strategy ? ` ${strategy}` : ''}`;
    case 'graph_expand': case 'graph_path': case 'graph_dijkstra': return `${n.schema} ${n.rel}${strategy ? ` ${strategy}` : ''}`;
    case 'fuse': return `${n.method}${strategy ? ` ${strategy}` : ''}`;
    default: return strategy;
  }
}

export function explainTree(plan: PlanNode, ctx: ExecCtx): unknown {
  const node = (n: PlanNode): unknown => {
    const st = ctx.stats.get(n);
    const detail = detailOf(n, ctx);
    return { op: n.op, ...(detail ? { detail } : {}), rows_out: st?.rows ?? 0, time_ms: round((st?.ms ?? 0) + (ctx.loadMs.get(n) ?? 0)), children: children(n).map(node) };
  };
  return node(plan);
}
