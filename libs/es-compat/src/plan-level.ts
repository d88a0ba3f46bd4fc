/**
 * One level of an aggregation tree as plans (`plan-aggs.ts` runs the top one). `compileLevel`
 * maps every aggregation of the level (or answers null, before any plan runs); `runLevel` reads
 * `aggregate(I, [], [count(*), the metrics' and conditional counts' calls])` once, then one grouped
 * node per terms / histogram aggregation (plan-terms.ts, plan-buckets.ts). A filter, filters,
 * range, date_range or missing aggregation with sub-aggregations runs its sub-level once per bucket over
 * `filter(I, the bucket's condition)`, and so does a terms aggregation whose sub-aggregations its
 * grouped and window nodes do not take (per shown bucket: `filter(I, key = the bucket's key)`); a
 * histogram's metric and single-pass bucket sub-aggregations are calls of its grouped node, any
 * other sub-aggregations a level per bucket over the rows whose key is the bucket's; a
 * top-level `global` runs its level over `scan` (the whole index; through a filtered alias, the alias's documents).
 */
import { aggregate, col, distinct, filter, limit, lit, project, scan, sort, type AggregateCall, type Expr, type PlanNode } from '@mmdb/plan';
import type { Json, JsonObject } from './mapping';
import type { IndexRef } from './indices';
import type { IndexView } from './doc';
import type { EsBackend } from './port';
import { aggBody, bucketCount, countAgg, type CountAgg } from './plan-buckets';
import { seriesBuckets, seriesSpec, type Series } from './plan-series';
import { childSeries, childTerms, keyOf, rareSpec, termsAlone, termsBucket, termsGroups, termsSpec, withZeroBuckets, type TermsSpec } from './plan-terms';
import type { Kind, MatchInput } from './plan-aggs';
import { metric, METRICS, type Metric } from './plan-metrics';
import { compositeSpec, runComposite, type CompositeSpec } from './plan-composite';
import { autoSpec, runAuto, type AutoSpec } from './plan-auto-date';
import { DOC_KEY } from './plan-multi';
import { runSig, sigSpec, type SigSpec } from './plan-significant';

const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
const COUNTED = new Set(['filter', 'filters', 'range', 'date_range', 'ip_range', 'missing', 'adjacency_matrix']);

interface Want { readonly name: string; readonly auto?: AutoSpec; readonly sig?: SigSpec; readonly composite?: CompositeSpec; readonly global?: PlanNode; readonly metric?: Metric; readonly counted?: CountAgg; readonly sub?: Level; readonly terms?: TermsSpec; readonly series?: Series }
export interface Level { readonly wants: Want[]; readonly calls: AggregateCall[] }

/** `global`: the documents a top-level `global` aggregation reads (`scan`, or an alias's filter: its documents); null: none maps. */
export function compileLevel(ix: IndexView, spec: JsonObject, fields: Map<string, Kind>, match: MatchInput | undefined, global: PlanNode | null = null, prefix = '', depth = 0): Level | null {
  const calls: AggregateCall[] = [{ name: 'total', fn: 'count', args: [], star: true }];
  const wants: Want[] = [];
  for (const [name, body] of Object.entries(spec)) {
    const a = aggBody(body);
    if (!a) return null;
    const { type, p, sub: subSpec } = a;
    const id = `${prefix}${wants.length + 1}`;
    if (subSpec !== undefined && (!isObj(subSpec) || (type !== 'terms' && type !== 'rare_terms' && type !== 'global' && type !== 'histogram' && type !== 'date_histogram' && type !== 'auto_date_histogram' && type !== 'significant_terms' && type !== 'composite' && !COUNTED.has(type)))) return null;
    if (type === 'composite') {
      // at the top only (under a bucket aggregation the aggregation code reports it)
      const c = depth === 0 ? compositeSpec(ix, p, subSpec, fields, (x) => bucketSubs(ix, x, `b${id}`, fields, match)) : null;
      if (!c) return null;
      wants.push({ name, composite: c });
      continue;
    }
    if (type === 'global') {
      // every document of the index, whatever the query
      const sub = global && depth === 0 && !Object.keys(p).length ? compileLevel(ix, isObj(subSpec) ? subSpec : {}, fields, match, null, `${id}_`, depth + 1) : null;
      if (!sub) return null;
      wants.push({ name, global: global!, sub });
    } else if (COUNTED.has(type)) {
      // one conditional count per bucket in the level's node; sub-aggregations: a level per bucket
      const m = countAgg(ix, type, p, `c${id}`, fields, match);
      const sub = isObj(subSpec) && depth < 4 ? compileLevel(ix, subSpec, fields, match, null, `${id}_`, depth + 1) : undefined;
      if (!m || sub === null) return null;
      wants.push({ name, counted: m, ...(sub ? { sub } : {}) });
      calls.push(...m.calls);
    } else if (type === 'rare_terms') {
      const t = rareSpec(ix, name, p, subSpec, fields, match);
      if (!t) return null;
      wants.push({ name, terms: t });
    } else if (type === 'terms') {
      let t = termsSpec(ix, name, p, subSpec, fields, match);
      let sub: Level | null | undefined;
      if (!t && isObj(subSpec) && depth < 4) {
        // sub-aggregations the grouped and window nodes do not take (terms under terms under terms, histograms with
        // sub-aggregations, …): the terms' buckets from its grouped node, then a level of plans per shown bucket over its rows
        t = termsSpec(ix, name, p, undefined, fields, match);
        sub = t && compileLevel(ix, subSpec, fields, match, null, `${id}_`, depth + 1);
      }
      if (!t || sub === null) return null;
      wants.push({ name, terms: t, ...(sub ? { sub } : {}) });
      calls.push({ name: `n_${id}`, fn: 'count', args: [{ kind: 'case', whens: [{ when: t.rowCond, then: lit(1) }] }] });
    } else if (type === 'date_histogram' || type === 'histogram') {
      const series = seriesSpec(ix, type, p, fields);
      let subs = isObj(subSpec) ? bucketSubs(ix, subSpec, `b${id}`, fields, match) : [];
      // sub-aggregations its grouped node does not take (terms, histograms, …): a level of plans per bucket over its rows
      const sub = series && !subs && isObj(subSpec) && depth < 4 ? compileLevel(ix, subSpec, fields, match, null, `${id}_`, depth + 1) : undefined;
      if (sub) subs = [];
      if (!series || !subs || sub === null) return null;
      // an order path names a metric sub-aggregation of this histogram
      const named = subs;
      if (series.order?.some((o) => o.key !== '_key' && o.key !== '_count' && !named.some((x) => x.name === o.key.split('.')[0] && !('conds' in x.m)))) return null;
      wants.push({ name, series: subs.length ? { ...series, subs } : series, ...(sub ? { sub } : {}) });
    } else if (type === 'significant_terms') {
      // the background is the index: at the top, where `global` reads it
      const sig = depth === 0 ? sigSpec(ix, name, p, fields, global, match) : null;
      const sub = isObj(subSpec) ? compileLevel(ix, subSpec, fields, match, null, `${id}_`, depth + 1) : undefined;
      if (!sig || sub === null || (subSpec !== undefined && !sub)) return null;
      wants.push({ name, sig, ...(sub ? { sub } : {}) });
    } else if (type === 'auto_date_histogram') {
      // sub-aggregations: a level per bucket over the rows of its keys
      const auto = autoSpec(ix, name, p, fields);
      const sub = isObj(subSpec) && depth < 4 ? compileLevel(ix, subSpec, fields, match, null, `${id}_`, depth + 1) : undefined;
      if (!auto || sub === null || (subSpec !== undefined && !sub)) return null;
      wants.push({ name, auto, ...(sub ? { sub } : {}) });
    } else if (METRICS.has(type)) {
      const m = metric(ix, type, p, `m${id}`, fields);
      if (!m) return null;
      wants.push({ name, metric: m });
      calls.push(...m.calls);
    } else return null;
  }
  return { wants, calls };
}

/** The level's aggregations over `input`, the buckets they hold (search.max_buckets) and the number of input rows. */
export async function runLevel(backend: EsBackend, ref: IndexRef, input: PlanNode, level: Level, prefix = ''): Promise<{ aggregations: JsonObject; buckets: number; total: number }> {
  // one terms aggregation alone: one plan over the input, the totals as window sums over its groups
  const only = level.wants.length === 1 ? level.wants[0].terms : undefined;
  const alone = only ? await termsAlone(backend, input, only) : null;
  const [row] = alone ? [{ total: alone.total, [`n_${prefix}1`]: alone.values }] : await backend.read(aggregate(input, [], level.calls));
  const aggregations: JsonObject = {};
  let buckets = 0;
  for (let i = 1; i <= level.wants.length; i++) {
    const w = level.wants[i - 1];
    if (w.composite) aggregations[w.name] = await runComposite(backend, input, w.composite);
    else if (w.auto) aggregations[w.name] = await runAuto(backend, input, w.auto, w.sub && (async (cond) => (await runLevel(backend, ref, filter(input, cond), w.sub!, `${prefix}${i}_`)).aggregations));
    else if (w.sig) aggregations[w.name] = await runSig(backend, input, w.sig, w.sub && (async (cond) => (await runLevel(backend, ref, filter(input, cond), w.sub!, `${prefix}${i}_`)).aggregations));
    else if (w.global) {
      const r = await runLevel(backend, ref, w.global, w.sub!, `${prefix}${i}_`);
      buckets += r.buckets;
      aggregations[w.name] = { doc_count: r.total, ...r.aggregations };
    } else if (w.series) {
      const subCalls = (w.series.subs ?? []).flatMap((x) => x.m.calls);
      const valued = filter(input, w.series.cond);
      const grouped = w.series.perDoc
        ? aggregate(distinct(project(valued, [{ name: '_doc', expr: DOC_KEY }, { name: 'key', expr: w.series.key }])), [{ name: 'key', expr: col('key') }], [{ name: 'doc_count', fn: 'count', args: [], star: true }])
        : aggregate(valued, [{ name: 'key', expr: w.series.key }], [{ name: 'doc_count', fn: 'count', args: [], star: true }, ...subCalls]);
      const rows = await backend.read(sort(grouped, [{ expr: col('key') }]));
      aggregations[w.name] = seriesBuckets(w.series, new Map(rows.map((r) => [Number(r.key), Number(r.doc_count)])), subCalls.length ? rows : undefined);
      if (w.sub) {
        // each bucket's rows: a value whose key (the grouped node's own expression) is the bucket's (its buckets are counted below)
        const bs = (aggregations[w.name] as JsonObject).buckets;
        for (const b of (Array.isArray(bs) ? bs : Object.values(bs as JsonObject)) as JsonObject[]) {
          const cond: Expr = { kind: 'binary', op: 'and', left: w.series.cond, right: { kind: 'binary', op: '=', left: w.series.key, right: lit(b.key as Json) } };
          Object.assign(b, (await runLevel(backend, ref, filter(input, cond), w.sub, `${prefix}${i}_`)).aggregations);
        }
      }
    } else if (w.terms) {
      const t = w.terms;
      aggregations[w.name] = await terms(backend, ref, input, t, Number(row[`n_${prefix}${i}`]), alone?.rows);
      if (w.sub) {
        for (const b of (aggregations[w.name] as { buckets: JsonObject[] }).buckets) {
          const cond: Expr = { kind: 'binary', op: 'and', left: t.rowCond, right: { kind: 'binary', op: '=', left: t.key, right: lit(b.key as Json) } };
          // (its buckets are counted with the terms' answer below)
          Object.assign(b, (await runLevel(backend, ref, filter(input, cond), w.sub, `${prefix}${i}_`)).aggregations);
        }
      }
    } else if (w.counted) {
      const extras: JsonObject[] = [];
      if (w.sub) {
        for (const cond of w.counted.conds) {
          const r = await runLevel(backend, ref, filter(input, cond), w.sub, `${prefix}${i}_`);
          buckets += r.buckets;
          extras.push(r.aggregations);
        }
      }
      aggregations[w.name] = w.counted.value(row, extras);
    } else aggregations[w.name] = w.metric!.value(row);
    buckets += bucketCount(aggregations[w.name]);
  }
  return { aggregations, buckets, total: Number(row.total) };
}

/** A terms aggregation: its top buckets, their children, and the count of the others (`values`: the rows holding a key). */
async function terms(backend: EsBackend, ref: IndexRef, input: PlanNode, t: TermsSpec, values: number, read?: Array<Record<string, unknown>>): Promise<JsonObject> {
  const grouped = t.minDoc === 0 ? withZeroBuckets(termsGroups(input, t), t.universe ?? scan(ref.table.id), t, input) : termsGroups(input, t);
  const rows = read ?? (await backend.read(limit(sort(grouped, t.order), lit(t.size))));
  // rare_terms answers its buckets alone (no error bound, no other count), as Elasticsearch's InternalRareTerms
  if (t.rare !== undefined) return { buckets: rows.map((r) => termsBucket(t, r)) };
  const shown = rows.reduce((s, r) => s + Number(r.doc_count), 0);
  const all = t.minDoc > 1 ? Number((await backend.read(aggregate(grouped, [], [{ name: 'n', fn: 'total', args: [col('doc_count')] }])))[0].n ?? 0) : values;
  const keys = rows.map((r) => keyOf(t, r.key));
  const children = t.child ? await childTerms(backend, input, t, t.child, keys) : null;
  const series = await Promise.all(t.series.map((x) => childSeries(backend, input, t, x.s, keys)));
  const bucket = (r: Record<string, unknown>): JsonObject => {
    const b = termsBucket(t, r);
    const k = JSON.stringify(keyOf(t, r.key));
    if (t.child) b[t.child.name] = children!.get(k) ?? { doc_count_error_upper_bound: 0, sum_other_doc_count: 0, buckets: [] };
    t.series.forEach((x, j) => (b[x.name] = series[j].get(k)!));
    return b;
  };
  return { doc_count_error_upper_bound: 0, sum_other_doc_count: all - shown, buckets: rows.map(bucket) };
}

/**
 * The sub-aggregations of a histogram's buckets that are calls of its grouped node: metrics and
 * single-pass bucket aggregations (filter, filters, range, date_range, missing) without their own
 * sub-aggregations; null when any is something else.
 */
function bucketSubs(ix: IndexView, spec: JsonObject, prefix: string, fields: Map<string, Kind>, match: MatchInput | undefined): Array<{ name: string; m: Metric | CountAgg }> | null {
  const out: Array<{ name: string; m: Metric | CountAgg }> = [];
  for (const [name, body] of Object.entries(spec)) {
    const a = aggBody(body);
    if (!a || a.sub !== undefined) return null;
    const id = `${prefix}_${out.length + 1}`;
    const m = METRICS.has(a.type) ? metric(ix, a.type, a.p, id, fields) : COUNTED.has(a.type) ? countAgg(ix, a.type, a.p, id, fields, match) : null;
    if (!m) return null;
    out.push({ name, m });
  }
  return out;
}
