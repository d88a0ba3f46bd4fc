/**
 * Sub-aggregations that read fields of which some document holds several values (plan-multi.ts
 * answers such fields at the top). A bucket aggregation's sub-aggregations read every value of the
 * documents in its bucket, so each bucket's sub-level is its own set of plans over those documents:
 *   1. the parent's buckets, without its sub-aggregations (`run`: plan-multi.ts `multiAggs`, so a
 *      parent on a multi-valued field groups as it does there);
 *   2. per bucket, the documents in it as a predicate over the row (any value matching, plan-any-value.ts):
 *      `terms` key k → `term: {field: k}`; `filter` / `filters` → their queries; `range` → `range:
 *      {field: {gte: from, lt: to}}`; `global` → every document of the index (its input);
 *   3. the sub-aggregations over `filter(I, predicate)`, again through `multiAggs` (so deeper levels,
 *      one-valued fields and several multi-valued fields in one level all work), merged into the bucket.
 * Null (the aggregation code answers) for other parents, a `missing`, an order by a
 * sub-aggregation (the buckets would need the sub-aggregations first), `other_bucket`, date ranges.
 */
import { filter, lit, type Expr, type PlanNode } from '@mmdb/plan';
import type { JsonObject } from './mapping';
import type { IndexView } from './doc';
import { aggBody } from './plan-buckets';
import { filterClause, filterExpr, type Kind, type MatchInput } from './plan-aggs';
import { anyValue, multiAware } from './plan-any-value';
import { compileLevel } from './plan-level';

const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

export type MultiResult = { aggregations: JsonObject; buckets: number; total: number };
/** Aggregations of `spec` over `input` (`global`: the top-level `global`'s documents, or null below the top). */
export type RunMulti = (input: PlanNode, spec: JsonObject, global: PlanNode | null) => Promise<MultiResult | null>;

/** One top-level aggregation `name` whose sub-aggregations read a field of `multi`, or null when its form is not one of the above. */
export async function bucketsThenSubs(ix: IndexView, input: PlanNode, name: string, body: unknown, multi: string[], match: MatchInput | undefined, global: PlanNode | null, run: RunMulti): Promise<{ value: JsonObject; buckets: number } | null> {
  const a = aggBody(body);
  if (!a || !isObj(a.sub)) return null;
  const sub = a.sub;
  const fields = () => multiAware(multi);
  if (a.type === 'global') {
    if (!global || Object.keys(a.p).length) return null;
    const r = await run(global, sub, null);
    return r && { value: { doc_count: r.total, ...r.aggregations }, buckets: r.buckets };
  }
  // the documents of each bucket of the parent's answer: a predicate, or null when one does not map
  let conds: (value: JsonObject) => Array<{ bucket: JsonObject; cond: Expr | null }> | null;
  if (a.type === 'terms') {
    const f = ix.fields.get(String(a.p.field));
    const order = a.p.order === undefined ? [] : Array.isArray(a.p.order) ? a.p.order : [a.p.order];
    if (!f || typeof a.p.field !== 'string' || a.p.missing !== undefined || a.p.script !== undefined) return null;
    if (order.some((o) => !isObj(o) || Object.keys(o).some((k) => k !== '_count' && k !== '_key'))) return null;
    const field = a.p.field;
    conds = (v) => (v.buckets as JsonObject[]).map((b) => ({ bucket: b, cond: filterClause(ix, { term: { [field]: f.type === 'boolean' ? b.key_as_string! : b.key! } }, fields()) }));
  } else if (a.type === 'filter') {
    conds = (v) => [{ bucket: v, cond: filterExpr(ix, a.p, fields(), match) }];
  } else if (a.type === 'filters') {
    if (a.p.other_bucket !== undefined || a.p.other_bucket_key !== undefined) return null;
    const named = isObj(a.p.filters);
    const entries: Array<[string, unknown]> = named ? Object.entries(a.p.filters as JsonObject) : Array.isArray(a.p.filters) ? a.p.filters.map((q, j) => [String(j), q]) : [];
    conds = (v) => {
      const bs = v.buckets;
      return entries.map(([k, q], j) => ({ bucket: (Array.isArray(bs) ? bs[j] : (bs as JsonObject)[k]) as JsonObject, cond: filterExpr(ix, q, fields(), match) }));
    };
  } else if (a.type === 'range') {
    const f = ix.fields.get(String(a.p.field));
    if (Object.keys(a.p).some((k) => k !== 'field' && k !== 'ranges' && k !== 'keyed') || typeof a.p.field !== 'string' || !f || f.type.startsWith('date')) return null;
    const field = a.p.field;
    conds = (v) => {
      const bs = Array.isArray(v.buckets) ? (v.buckets as JsonObject[]) : Object.values(v.buckets as JsonObject) as JsonObject[];
      return bs.map((b) => {
        const r: JsonObject = {};
        if (typeof b.from === 'number') r.gte = b.from;
        if (typeof b.to === 'number') r.lt = b.to;
        return { bucket: b, cond: Object.keys(r).length ? filterClause(ix, { range: { [field]: r } }, fields()) : filterClause(ix, { exists: { field } }, fields()) };
      });
    };
  } else if (a.type === 'histogram' || a.type === 'date_histogram') {
    // a bucket holds the documents one of whose values has its key: the level's own key expression (plan-series.ts), so both agree
    if (typeof a.p.field !== 'string' || a.p.missing !== undefined || a.p.script !== undefined) return null;
    const field = a.p.field;
    const probe = new Map<string, Kind>();
    const series = compileLevel(ix, { [name]: { [a.type]: a.p } }, probe, match, null)?.wants[0]?.series;
    const kind = probe.get(field);
    if (!series || !kind) return null;
    conds = (v) => {
      const bs = Array.isArray(v.buckets) ? (v.buckets as JsonObject[]) : Object.values(v.buckets as JsonObject) as JsonObject[];
      return bs.map((b) => {
        const e: Expr = { kind: 'binary', op: 'and', left: series.cond, right: { kind: 'binary', op: '=', left: series.key, right: lit(b.key as number) } };
        return { bucket: b, cond: multi.includes(field) ? anyValue(e, field, kind) : e };
      });
    };
  } else return null;
  const parent = { ...(body as JsonObject) };
  delete parent.aggs;
  delete parent.aggregations;
  const top = await run(input, { [name]: parent }, global);
  if (!top) return null;
  const value = top.aggregations[name] as JsonObject;
  const list = conds(value);
  if (!list || list.some((x) => !x.cond || !isObj(x.bucket))) return null;
  let buckets = top.buckets;
  for (const { bucket, cond } of list) {
    const r = await run(filter(input, cond!), sub, null);
    if (!r) return null;
    buckets += r.buckets;
    Object.assign(bucket, r.aggregations);
  }
  return { value, buckets };
}
