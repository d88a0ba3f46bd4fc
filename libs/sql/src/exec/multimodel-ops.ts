/**
 * Operators of the multi-model nodes. Their leaves were read before the run (run/multimodel.ts):
 * fts_search and vector_topk rows are in `ctx.leaves`, a graph node's adjacency and reached rows
 * in `ctx.aux`. graph_expand walks per input row; fuse merges its inputs' rankings.
 */
import { DbError } from '@mmdb/core';
import type { NodeOf } from '@mmdb/plan';
import { toReal, type Tuple, type Value } from '../values';
import type { ExecCtx } from './context';
import type { GraphLeaf } from './multimodel-leaf';
import { drain, expr, leafAll, leafColumns, mk, qualify, slices, type C, type CompileFn, type Op } from './op-kit';
import type { ColInfo } from './scope';

export function ftsSearchOp(n: NodeOf<'fts_search'>, c: C): Op {
  const cols = [...leafColumns(c.ctx, n.schema, n.alias), { name: qualify(n.alias, '_score'), aff: 'real' as const }];
  return mk(n, cols, [], (ctx) => slices(ctx.leafRows(n), ctx), leafAll(n));
}

export function vectorTopkOp(n: NodeOf<'vector_topk'>, c: C): Op {
  const cols = [...leafColumns(c.ctx, n.schema, n.alias), { name: qualify(n.alias, '_distance'), aff: 'real' as const }];
  return mk(n, cols, [], (ctx) => slices(ctx.leafRows(n), ctx), leafAll(n));
}

function graphLeaf(ctx: ExecCtx, n: object): GraphLeaf {
  const g = ctx.aux.get(n as never) as GraphLeaf | undefined;
  if (!g) throw new DbError('internal_error', 'graph node ran before its leaf was read');
  return g;
}

export function graphPathOp(n: NodeOf<'graph_path'> | NodeOf<'graph_dijkstra'>, c: C): Op {
  const g = graphLeaf(c.ctx, n);
  const head: ColInfo[] = [{ name: qualify(n.alias, '_step'), aff: 'integer' }, { name: qualify(n.alias, '_node'), aff: 'text' }];
  if (n.op === 'graph_dijkstra') head.push({ name: qualify(n.alias, '_cost'), aff: 'real' });
  const rowCols = n.row_columns === false ? [] : leafColumns(c.ctx, g.schema, n.alias);
  const width = head.length + rowCols.length;
  // a node naming no row: NULL row columns
  const pad = (r: Tuple): Tuple => (r.length < width ? [...r, ...new Array<Value>(width - r.length).fill(null)] : r);
  return mk(n, [...head, ...rowCols], [], (ctx) => slices(ctx.leafRows(n).map(pad), ctx));
}

/** Node key text of a start value (text as is, integers in decimal); null for NULL. */
function startKey(v: Value): string | null {
  if (v === null) return null;
  if (typeof v === 'string') return v;
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number') return String(v);
  throw new DbError('validation_failed', 'graph_expand: "from" must give a node key (text or integer)', { path: '$.from' });
}

/** The depths most walks reach, as the engine's integers (one BigInt each, not one per row). */
const DEPTHS: readonly bigint[] = Array.from({ length: 64 }, (_, i) => BigInt(i));

export function graphExpandOp(n: NodeOf<'graph_expand'>, c: C, compile: CompileFn): Op {
  const input = n.input ? compile(n.input, c) : null;
  const inCols = input?.cols ?? [];
  const g0 = graphLeaf(c.ctx, n);
  const rowCols = n.row_columns === false ? [] : leafColumns(c.ctx, g0.schema, n.alias);
  const cols: ColInfo[] = [...inCols, ...rowCols, { name: qualify(n.alias, '_node'), aff: 'text' }, { name: qualify(n.alias, '_depth'), aff: 'integer' }];
  if (n.emit_path) cols.push({ name: qualify(n.alias, '_path'), aff: 'text' });
  const from = expr(c, inCols)(n.from);
  const min = n.min_depth ?? 1;
  const max = n.max_depth === undefined ? min : n.max_depth;
  const nulls: Value[] = new Array<Value>(rowCols.length).fill(null);
  const emitRow = (out: Tuple[], g: GraphLeaf, r: Tuple, node: string, depth: number, path: string | undefined): void => {
    // one array of the final width (no spreads: this runs per reached node)
    const row = g.row(node) ?? nulls;
    const t: Tuple = new Array<Value>(r.length + row.length + (path === undefined ? 2 : 3));
    let i = 0;
    for (let j = 0; j < r.length; j++) t[i++] = r[j];
    for (let j = 0; j < row.length; j++) t[i++] = row[j];
    t[i++] = node;
    t[i++] = depth < DEPTHS.length ? DEPTHS[depth] : BigInt(depth);
    if (path !== undefined) t[i] = path;
    out.push(t);
  };
  return mk(n, cols, input ? [input] : [], function* (ctx, up) {
    const g = graphLeaf(ctx, n);
    const batches: Iterable<Tuple[]> = input ? input.run(ctx, up) : [[[]]];
    let frontierSizes: number[] | null = ctx.explain ? [] : null;
    for (const b of batches) {
      ctx.check();
      const out: Tuple[] = [];
      for (const r of b) {
        const start = startKey(from(r, up));
        if (start === null || (g.start && !g.start(start))) continue;
        // each node once, at its least depth; the start counts as visited only from depth 0 (with
        // min_depth ≥ 1 a cycle back to it reaches it like any node, listed again, not walked again)
        const w = g.walk!(start, max ?? Infinity, min === 0, (d, size) => {
          ctx.visit(size);
          if (frontierSizes) frontierSizes[d - 1] = (frontierSizes[d - 1] ?? 0) + size;
          if ((d & 7) === 0) ctx.check();
        });
        if (!w) {
          // a start without edges reaches nothing; at min_depth 0 it is itself the answer
          if (min === 0) emitRow(out, g, r, start, 0, n.emit_path ? JSON.stringify([start]) : undefined);
          continue;
        }
        const names: (string | undefined)[] = n.emit_path ? new Array(w.length) : [];
        const nameOf = (k: number) => (n.emit_path ? (names[k] ??= w.name(k)) : w.name(k));
        const pathTo = (k: number): string => {
          const p: string[] = [];
          for (let x = k; x >= 0; x = w.vias[x]) p.push(nameOf(x));
          return JSON.stringify(p.reverse());
        };
        for (let k = min === 0 ? 0 : 1; k < w.length; k++) {
          const d = w.depths[k];
          if (d >= min) emitRow(out, g, r, nameOf(k), d, n.emit_path ? pathTo(k) : undefined);
        }
      }
      yield out;
    }
    if (frontierSizes) ctx.strategies.set(n, `bfs ${n.direction ?? 'forward'} depth ${min}..${max ?? '∞'}, frontiers [${frontierSizes.join(', ')}]`);
    frontierSizes = null;
  });
}

/** Index of a named column in an input's columns: exact (case-insensitive), else the one `x.name`. */
function findCol(cols: readonly ColInfo[], name: string, path: string): number {
  const lower = name.toLowerCase();
  let i = cols.findIndex((c) => c.name.toLowerCase() === lower);
  if (i < 0) {
    const hits = cols.map((c, j) => (c.name.toLowerCase().endsWith(`.${lower}`) ? j : -1)).filter((j) => j >= 0);
    if (hits.length === 1) i = hits[0];
  }
  if (i < 0) throw new DbError('not_found', `invalid plan at ${path}: no column "${name}" in the input`, { path, column: name });
  return i;
}

export function fuseOp(n: NodeOf<'fuse'>, c: C, compile: CompileFn): Op {
  const inputs = n.inputs.map((p) => compile(p, c));
  const first = inputs[0].cols;
  if (n.key.length === 0) throw new DbError('validation_failed', 'invalid plan at $.key: at least one key column', { path: '$.key' });
  const keyIdx = inputs.map((op, i) => n.key.map((k, j) => findCol(op.cols, k, `$.inputs[${i}] (key[${j}])`)));
  const k = n.k ?? 60;
  if (!(k >= 0)) throw new DbError('validation_failed', 'invalid plan at $.k: k must be ≥ 0', { path: '$.k' });
  if (n.weights && n.weights.length !== inputs.length) throw new DbError('validation_failed', `invalid plan at $.weights: one weight per input (${inputs.length})`, { path: '$.weights' });
  const scoreIdx = n.method === 'weighted' ? inputs.map((op, i) => {
    const name = n.scores?.[i];
    if (name) return { i: findCol(op.cols, name, `$.scores[${i}]`), neg: false };
    const s = op.cols.findIndex((x) => /(^|\.)_score$/.test(x.name));
    if (s >= 0) return { i: s, neg: false };
    const d = op.cols.findIndex((x) => /(^|\.)_distance$/.test(x.name));
    if (d >= 0) return { i: d, neg: true };
    throw new DbError('validation_failed', `invalid plan at $.scores[${i}]: input ${i} has no _score or _distance column; name its score column`, { path: `$.scores[${i}]` });
  }) : null;
  // where each output column comes from in each input (-1: NULL)
  const colMap = inputs.map((op) => first.map((fc) => op.cols.findIndex((x) => x.name.toLowerCase() === fc.name.toLowerCase())));
  const cols: ColInfo[] = [...first, { name: '_score', aff: 'real' }, ...inputs.map((_, i) => ({ name: `_rank_${i + 1}`, aff: 'integer' as const }))];
  const limit = n.limit;
  return mk(n, cols, inputs, function* (ctx, up) {
    type Entry = { row: Tuple; score: number; ranks: (number | null)[]; order: number };
    const byKey = new Map<string, Entry>();
    let seq = 0;
    let held = 0;
    inputs.forEach((op, i) => {
      const rows = drain(op, ctx, up);
      ctx.hold(rows.length);
      held += rows.length;
      const w = n.weights?.[i] ?? 1;
      let norm: ((x: number) => number) | null = null;
      if (scoreIdx) {
        const vals = rows.map((r) => toScore(r[scoreIdx[i].i], scoreIdx[i].neg));
        norm = normalizer(vals, n.normalization ?? 'min_max');
      }
      rows.forEach((r, rank) => {
        // one key column (the usual `id`): its text is the key, no array per row
        const ki = keyIdx[i];
        const key = ki.length === 1 ? keyText(r[ki[0]]) : JSON.stringify(ki.map((j) => keyText(r[j])));
        let e = byKey.get(key);
        if (!e) {
          e = { row: colMap[i].map((j) => (j < 0 ? null : r[j])), score: 0, ranks: inputs.map(() => null), order: seq++ };
          byKey.set(key, e);
        }
        if (e.ranks[i] !== null) return; // a key's first (best) row in an input counts
        e.ranks[i] = rank + 1;
        e.score += scoreIdx ? w * norm!(toScore(r[scoreIdx[i].i], scoreIdx[i].neg)) : w / (k + rank + 1);
      });
    });
    const all = [...byKey.values()].sort((a, b) => b.score - a.score || a.order - b.order);
    const kept = limit === undefined ? all : all.slice(0, Math.max(0, limit));
    ctx.release(held);
    yield* slices(kept.map((e) => [...e.row, e.score, ...e.ranks.map((x) => (x === null ? null : BigInt(x)))]), ctx);
  });
}

function keyText(v: Value): string {
  return typeof v === 'bigint' ? `i${v}` : typeof v === 'number' && Number.isInteger(v) ? `i${v}` : JSON.stringify(v);
}

function toScore(v: Value, neg: boolean): number {
  const x = v === null ? 0 : typeof v === 'number' ? v : typeof v === 'bigint' ? Number(v) : Number(toReal(v));
  return neg ? -x : x;
}

function normalizer(vals: number[], how: 'min_max' | 'z_score'): (x: number) => number {
  if (vals.length === 0) return () => 0;
  if (how === 'min_max') {
    const lo = Math.min(...vals);
    const hi = Math.max(...vals);
    return hi === lo ? () => 1 : (x) => (x - lo) / (hi - lo);
  }
  const mean = vals.reduce((a, b) => a + b, 0) / vals.length;
  const sd = Math.sqrt(vals.reduce((a, b) => a + (b - mean) ** 2, 0) / vals.length);
  return sd === 0 ? () => 0 : (x) => (x - mean) / sd;
}
