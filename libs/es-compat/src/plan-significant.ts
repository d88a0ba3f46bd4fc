/**
 * significant_terms as plans (a top-level aggregation on a keyword or integer field, the
 * background the whole index or its documents `background_filter` matches; sub-aggregations a level per shown bucket over its key's rows): the subset's size `count(I)`, its keys
 * `aggregate(filter(I, has a value), [key], [count(*)])`, the background's size `count(scan)` and
 * the counts of the keys that may be shown `aggregate(filter(scan, key in …), [key], [count(*)])`;
 * the heuristic scores them here with the aggregation code's own function (agg-significant.ts
 * `significantBuckets`). Not here (the aggregation code answers):
 * `include` / `exclude` as regular expressions or partitions, `missing`, `format`, a script heuristic, significant_text, other field types, below the top.
 */
import { aggregate, filter, lit, type Expr, type PlanNode } from '@mmdb/plan';
import type { Json, JsonObject } from './mapping';
import type { IndexView } from './doc';
import type { EsBackend } from './port';
import { fieldKind, filterExpr, valueOf, type Kind, type MatchInput } from './plan-aggs';
import { heuristicOf, significantBuckets } from './agg-significant';
import { valueSource, type ValueSource } from './agg-util';

const KEYS = new Set(['field', 'size', 'shard_size', 'min_doc_count', 'shard_min_doc_count', 'execution_hint', 'jlh', 'mutual_information', 'chi_square', 'gnd', 'percentage', 'include', 'exclude', 'background_filter']);
const count = { name: 'n', fn: 'count', args: [], star: true } as const;

/** `keep`: the keys `include` / `exclude` lists keep (a condition on the value). */
export interface SigSpec { readonly v: Expr; readonly p: JsonObject; readonly vs: ValueSource; readonly background: PlanNode; readonly minDoc: number; readonly keep: Expr }

export function sigSpec(ix: IndexView, name: string, p: JsonObject, fields: Map<string, Kind>, index: PlanNode | null, match?: MatchInput): SigSpec | null {
  if (!index || index.op !== 'scan' || typeof p.field !== 'string' || Object.keys(p).some((k) => !KEYS.has(k))) return null;
  // `background_filter`: the index's documents its query matches (any query text-plan.ts maps)
  const bf = p.background_filter === undefined ? null : filterExpr(ix, p.background_filter, fields, match);
  if (p.background_filter !== undefined && !bf) return null;
  const background = bf ? filter(index, bf) : index;
  const f = ix.fields.get(p.field);
  const k = fieldKind(ix, p.field, 'terms');
  if (!f || (k !== 'keyword' && k !== 'integer') || f.type === 'boolean') return null;
  const minDoc = Number(p.min_doc_count ?? 3);
  if (!Number.isFinite(minDoc) || !Number.isFinite(Number(p.size ?? 10))) return null;
  let vs: ValueSource;
  try {
    heuristicOf(p);
    vs = valueSource([ix], p, name);
  } catch {
    return null; // the aggregation code reports it
  }
  // include / exclude as lists of keys of the field's kind (regular expressions and partitions: the aggregation code)
  const v = valueOf(p.field);
  const ok = (x: unknown): boolean => (k === 'keyword' ? typeof x === 'string' : typeof x === 'number' && Number.isInteger(x));
  let keep: Expr = { kind: 'is_null', arg: v, not: true };
  for (const [list, not] of [[p.include, false], [p.exclude, true]] as const) {
    if (list === undefined) continue;
    if (!Array.isArray(list) || !list.every(ok)) return null;
    if (!list.length) { if (!not) keep = lit(false); continue; }
    keep = { kind: 'binary', op: 'and', left: keep, right: { kind: 'in_list', arg: v, list: list.map((x) => lit(x as Json)), ...(not ? { not: true } : {}) } };
  }
  fields.set(p.field, k);
  return { v, p, vs, background, minDoc, keep };
}

/** `sub`: a shown bucket's sub-aggregations over the rows passing its condition (plan-level.ts). */
export async function runSig(backend: EsBackend, input: PlanNode, s: SigSpec, sub?: (cond: Expr) => Promise<JsonObject>): Promise<JsonObject> {
  const keyOf = (v: unknown): string => JSON.stringify(typeof v === 'bigint' ? Number(v) : v);
  const [subset0] = await backend.read(aggregate(input, [], [count]));
  const fgRows = await backend.read(aggregate(filter(input, s.keep), [{ name: 'key', expr: s.v }], [count]));
  const [bgAll] = await backend.read(aggregate(s.background, [], [count]));
  const fg = new Map(fgRows.map((r) => [keyOf(r.key), Number(r.n)]));
  const shown = fgRows.filter((r) => Number(r.n) >= s.minDoc).map((r) => r.key);
  const bg = new Map<string, number>();
  if (shown.length) {
    const inList: Expr = { kind: 'in_list', arg: s.v, list: shown.map((x) => lit((typeof x === 'bigint' ? Number(x) : x) as Json)) };
    for (const r of await backend.read(aggregate(filter(s.background, inList), [{ name: 'key', expr: s.v }], [count]))) bg.set(keyOf(r.key), Number(r.n));
  }
  const subset = Number(subset0.n), bgSize = Number(bgAll.n);
  const buckets = significantBuckets(fg, (k) => bg.get(k), subset, bgSize, s.p, s.vs).map((x) => x.b);
  if (sub) for (const b of buckets) Object.assign(b, await sub({ kind: 'binary', op: '=', left: s.v, right: lit(b.key as Json) }));
  return { doc_count: subset, bg_count: bgSize, buckets: buckets as Json };
}
