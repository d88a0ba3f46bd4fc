/**
 * Aggregations over the documents a search matched: bucket aggregations with sub-aggregations
 * at any depth, metrics, and the bucket pipelines (parent and sibling).
 */
import { EsError, illegalArgument } from './errors';
import type { Doc, IndexView } from './doc';
import type { Json, JsonObject } from './mapping';
import { badAgg, isObj, numbers, asString, valueSource, minOf, maxOf, kahanSum, KahanSum, statsOf, extendedStatsOf, madOf, percentilesOf } from './agg-util';
import { bucketAgg, BUCKET_TYPES } from './agg-buckets';
import { applyParentPipeline, siblingPipeline, PARENT_PIPELINES, SIBLING_PIPELINES } from './agg-pipelines';
import { scriptRefused, type Scorer } from './query';

export interface AggCtx {
  readonly ixs: IndexView[];
  /** Every document of the searched indices (for `global`). */
  readonly allDocs: Doc[];
  readonly typedKeys: boolean;
  /** Compiles a query for filter/filters aggs, per index. */
  readonly filter: (q: unknown) => (d: Doc) => boolean;
  readonly topHits: (docs: Doc[], spec: JsonObject, name: string) => JsonObject;
  readonly score: (d: Doc) => number;
  /** Max buckets in one response (search.max_buckets). */
  readonly maxBuckets: number;
  buckets: number;
  /** Types of the bucket aggregations enclosing the one being computed. */
  parents?: string[];
}

const METRICS = new Set(['avg', 'sum', 'min', 'max', 'stats', 'extended_stats', 'value_count', 'cardinality', 'percentiles', 'percentile_ranks', 'top_hits', 'median_absolute_deviation', 'weighted_avg', 'scripted_metric', 'geo_bounds', 'geo_centroid', 'boxplot', 'string_stats', 't_test', 'rate', 'matrix_stats']);

/** Parses one aggregation entry → [type, params, subaggs, meta]. */
export function parseEntry(name: string, body: unknown): { type: string; p: JsonObject; subs?: JsonObject; meta?: Json } {
  if (!isObj(body)) throw badAgg(`Expected [START_OBJECT] under [${name}], but got a [VALUE_STRING] in [${name}]`);
  let type: string | undefined;
  let subs: JsonObject | undefined;
  let meta: Json | undefined;
  for (const [k, v] of Object.entries(body)) {
    if (k === 'aggs' || k === 'aggregations') {
      if (!isObj(v)) throw badAgg(`Expected [START_OBJECT] under [${k}], but got a [VALUE_STRING] in [${name}]`);
      subs = v;
    } else if (k === 'meta') meta = v;
    else {
      if (type !== undefined) throw badAgg(`Found two aggregation type definitions in [${name}]: [${type}] and [${k}]`);
      type = k;
    }
  }
  if (type === undefined) throw badAgg(`Missing definition for aggregation [${name}]`);
  const known = BUCKET_TYPES.has(type) || METRICS.has(type) || PARENT_PIPELINES.has(type) || SIBLING_PIPELINES.has(type);
  if (!known) throw new EsError(400, 'parsing_exception', `Unknown aggregation type [${type}] did you mean [${closest(type)}]?`, { line: 1, col: 1, caused_by: { type: 'named_object_not_found_exception', reason: `[1:1] unknown field [${type}]` } });
  const p = body[type];
  if (!isObj(p)) throw badAgg(`Expected [START_OBJECT] under [${type}], but got a [${Array.isArray(p) ? 'START_ARRAY' : 'VALUE_STRING'}] in [${name}]`);
  if (type === 'moving_fn') {
    const w = Number(p.window);
    if (!Number.isInteger(w) || w <= 0) throw illegalArgument('[window] must be a positive, non-zero integer.');
  }
  if (subs && (METRICS.has(type) && type !== 'top_hits')) {
    throw new EsError(400, 'aggregation_initialization_exception', `Aggregator [${name}] of type [${type}] cannot accept sub-aggregations`);
  }
  return { type, p, subs, meta };
}

function closest(t: string): string {
  const all = [...BUCKET_TYPES, ...METRICS];
  return all.find((x) => x.startsWith(t.slice(0, 3))) ?? 'terms';
}

/** Typed key prefix (typed_keys=true) of a result. */
export function typedName(type: string, p: JsonObject, result: JsonObject, vsKind?: string): string {
  switch (type) {
    case 'terms': return vsKind === 'number' ? (result._double ? 'dterms' : 'lterms') : vsKind === 'date' || vsKind === 'boolean' ? 'lterms' : result._unmapped ? 'umterms' : 'sterms';
    case 'percentiles': return p.hdr !== undefined ? 'hdr_percentiles' : 'tdigest_percentiles';
    case 'significant_terms': return vsKind === 'number' ? 'siglterms' : 'sigsterms';
    case 'significant_text': return 'sigsterms';
    case 'percentile_ranks': return p.hdr !== undefined ? 'hdr_percentile_ranks' : 'tdigest_percentile_ranks';
    case 'avg_bucket': case 'sum_bucket': case 'cumulative_sum': case 'moving_fn': case 'bucket_script': case 'serial_diff': return 'simple_value';
    case 'max_bucket': case 'min_bucket': return 'bucket_metric_value';
    case 'stats_bucket': return 'stats_bucket';
    case 'extended_stats_bucket': return 'extended_stats_bucket';
    case 'median_absolute_deviation': return 'median_absolute_deviation';
    default: return type;
  }
}

/** Runs every aggregation of `spec` over `docs`. Parent pipelines are skipped here (their parent applies them). */
export function runAggs(spec: JsonObject, docs: Doc[], ctx: AggCtx): JsonObject {
  const out: JsonObject = {};
  const entries = Object.entries(spec).map(([name, body]) => ({ name, ...parseEntry(name, body) }));
  const results = new Map<string, { type: string; r: JsonObject; p: JsonObject }>();
  for (const e of entries) {
    if (PARENT_PIPELINES.has(e.type) || SIBLING_PIPELINES.has(e.type)) continue;
    const r = runOne(e.name, e.type, e.p, e.subs, docs, ctx);
    if (e.meta !== undefined) r.meta = e.meta;
    results.set(e.name, { type: e.type, r, p: e.p });
  }
  for (const e of entries) {
    if (!SIBLING_PIPELINES.has(e.type)) continue;
    const r = siblingPipeline(e.name, e.type, e.p, (name) => results.get(name)?.r);
    if (e.meta !== undefined) r.meta = e.meta;
    results.set(e.name, { type: e.type, r, p: e.p });
  }
  for (const e of entries) {
    const got = results.get(e.name);
    if (!got) continue;
    const vsKind = got.r._kind as string | undefined;
    const key = ctx.typedKeys ? `${typedName(got.type, got.p, got.r, vsKind)}#${e.name}` : e.name;
    const clean: JsonObject = {};
    for (const [k, v] of Object.entries(got.r)) if (!k.startsWith('_')) clean[k] = v;
    out[key] = clean;
  }
  return out;
}

/** The parent-pipeline entries of a sub-aggregation spec, applied by a multi-bucket agg to its buckets. */
export function parentPipelines(subs: JsonObject | undefined): Array<{ name: string; type: string; p: JsonObject }> {
  if (!subs) return [];
  return Object.entries(subs).map(([name, body]) => ({ name, ...parseEntry(name, body) })).filter((e) => PARENT_PIPELINES.has(e.type));
}

/** Sub-aggregations of each bucket, then the parent pipelines over the bucket list. */
export function finishBuckets(buckets: Array<{ b: JsonObject; docs: Doc[] }>, subs: JsonObject | undefined, ctx: AggCtx, owner: string): JsonObject[] {
  ctx.buckets += buckets.length;
  if (ctx.buckets > ctx.maxBuckets) {
    throw new EsError(400, 'too_many_buckets_exception', `Trying to create too many buckets. Must be less than or equal to: [${ctx.maxBuckets}] but was [${ctx.buckets}]. This limit can be set by changing the [search.max_buckets] cluster level setting.`, { max_buckets: ctx.maxBuckets });
  }
  const parents = (ctx.parents ??= []);
  parents.push(owner);
  let out: JsonObject[];
  try {
    out = buckets.map(({ b, docs }) => (subs ? { ...b, ...runAggs(subs, docs, ctx) } : b));
  } finally {
    parents.pop();
  }
  let list = out;
  for (const pp of parentPipelines(subs)) list = applyParentPipeline(pp.name, pp.type, pp.p, list, ctx.typedKeys, owner);
  return list;
}

function runOne(name: string, type: string, p: JsonObject, subs: JsonObject | undefined, docs: Doc[], ctx: AggCtx): JsonObject {
  if (BUCKET_TYPES.has(type)) return bucketAgg(name, type, p, subs, docs, ctx);
  if (type === 'top_hits') return { hits: ctx.topHits(docs, p, name) as Json };
  if (type === 'scripted_metric') throw scriptRefused('scripted_metric');
  if (!['avg', 'sum', 'min', 'max', 'stats', 'extended_stats', 'value_count', 'cardinality', 'percentiles', 'percentile_ranks', 'median_absolute_deviation', 'weighted_avg'].includes(type)) {
    throw illegalArgument(`aggregation [${type}] is not supported by this service`);
  }
  if (type === 'weighted_avg') {
    const vv = valueSource(ctx.ixs, p.value as JsonObject, name), ww = valueSource(ctx.ixs, p.weight as JsonObject, name);
    // each value of a document counts with the document's one weight, as Elasticsearch adds them
    const s = new KahanSum(), w = new KahanSum();
    for (const d of docs) {
      const v = numbers(vv, [d]), x = numbers(ww, [d]);
      if (!v.length || !x.length) continue;
      if (x.length > 1) throw new EsError(500, 'aggregation_execution_exception', 'Encountered more than one weight for a single document. Use a script to combine multiple weights-per-doc into a single value.');
      for (const y of v) { s.add(y * x[0]); w.add(x[0]); }
    }
    return { value: w.value ? s.value / w.value : null };
  }
  if (type === 'cardinality' && p.precision_threshold !== undefined && !(Number(p.precision_threshold) >= 0)) {
    throw illegalArgument(`[precisionThreshold] must be greater than or equal to 0. Found [${String(p.precision_threshold)}] in [${name}]`);
  }
  if (type === 'value_count' || type === 'cardinality') {
    const vs = valueSource(ctx.ixs, p, name);
    let n = 0;
    const set = new Set<string>();
    for (const d of docs) for (const v of vs.values(d)) { n++; set.add(JSON.stringify(v)); }
    return { value: type === 'value_count' ? n : set.size };
  }
  const vs = valueSource(ctx.ixs, p, name);
  if (vs.kind === 'string' && type !== 'value_count') {
    throw illegalArgument(`Field [${vs.field?.path}] of type [${vs.field?.type}] is not supported for aggregation [${type}]`);
  }
  const xs = numbers(vs, docs);
  const sum = kahanSum(xs);
  const withStr = (r: JsonObject, keys: string[]): JsonObject => {
    for (const k of keys) {
      const v = r[k];
      if (typeof v === 'number' && (vs.kind === 'date' || vs.format !== undefined)) r[`${k}_as_string`] = asString(vs, v) ?? null;
    }
    return r;
  };
  switch (type) {
    case 'avg': return withStr({ value: xs.length ? sum / xs.length : null }, ['value']);
    case 'sum': return withStr({ value: sum }, ['value']);
    case 'min': return withStr({ value: xs.length ? minOf(xs) : null }, ['value']);
    case 'max': return withStr({ value: xs.length ? maxOf(xs) : null }, ['value']);
    case 'stats': return withStr(statsOf(xs.length, minOf(xs), maxOf(xs), sum), ['min', 'max', 'avg', 'sum']);
    case 'extended_stats': {
      const sigma = p.sigma === undefined ? 2 : Number(p.sigma);
      if (Number.isNaN(sigma)) throw new EsError(400, 'x_content_parse_exception', `[1:1] [extended_stats] failed to parse field [sigma]`);
      if (sigma < 0) throw illegalArgument(`[sigma] must be greater than or equal to 0. Found [${jd(sigma)}] in [${name}]`);
      return withStr(extendedStatsOf(xs.length, minOf(xs), maxOf(xs), sum, kahanSum(xs, (x) => x * x), sigma), ['min', 'max', 'avg', 'sum']);
    }
    case 'median_absolute_deviation': {
      if (p.compression !== undefined && !(Number(p.compression) > 0)) throw illegalArgument(`[compression] must be greater than 0. Found [${jd(Number(p.compression))}] in [${name}]`);
      return { value: madOf([...xs].sort((a, b) => a - b)) };
    }
    case 'percentile_ranks': {
      const values = (Array.isArray(p.values) ? p.values : []).map(Number);
      if (!values.length) throw illegalArgument(`[values] must not be empty: [${name}]`);
      const sorted = [...xs].sort((a, b) => a - b);
      const keyed = p.keyed !== false;
      const entries = values.map((v) => ({ key: v, value: sorted.length ? (100 * sorted.filter((x) => x <= v).length) / sorted.length : null }));
      return keyed ? { values: Object.fromEntries(entries.map((e) => [String(fmtKey(e.key)), e.value])) } : { values: entries as unknown as Json };
    }
    default: {
      if (p.percents === null || (p.percents !== undefined && !Array.isArray(p.percents))) throw badAgg(`[percents] must be an array in [${name}]`);
      const percents = p.percents === undefined ? [1, 5, 25, 50, 75, 95, 99] : (p.percents as Json[]).map(Number);
      if (percents.some((x) => Number.isNaN(x))) throw badAgg(`[percents] must hold numbers in [${name}]`);
      if (isObj(p.hdr) && p.hdr.number_of_significant_value_digits === null) throw badAgg(`[number_of_significant_value_digits] must be a number in [${name}]`);
      if (Array.isArray(p.percents) && !percents.length) throw illegalArgument(`[percents] must not be empty: [${name}]`);
      if (p.hdr !== undefined && p.tdigest !== undefined) throw illegalArgument(`Cannot set [hdr] and [tdigest] at the same time`);
      const hdr = isObj(p.hdr) ? p.hdr : undefined;
      const digits = hdr?.number_of_significant_value_digits === undefined ? 3 : Number(hdr.number_of_significant_value_digits);
      if (hdr && (digits < 0 || digits > 5)) throw illegalArgument(`[numberOfSignificantValueDigits] must be between 0 and 5`);
      if (isObj(p.tdigest) && p.tdigest.compression !== undefined && Number(p.tdigest.compression) < 0) throw illegalArgument(`[compression] must be greater than or equal to 0. Found [${jd(Number(p.tdigest.compression))}] in [${name}]`);
      return percentilesOf([...xs].sort((a, b) => a - b), percents, hdr ? digits : undefined, p.keyed !== false, vs.kind === 'date' ? (v) => asString(vs, v) : undefined);
    }
  }
}

/** A double as Java prints it (1.0, -1.0, 0.5). */
const jd = (n: number): string => (Number.isInteger(n) ? `${n}.0` : String(n));

const fmtKey = (k: number): string => (Number.isInteger(k) ? `${k}.0` : String(k));

export type { Scorer };
