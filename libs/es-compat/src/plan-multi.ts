/**
 * Aggregations over fields of which documents hold several values (arrays), as plans. A row holds
 * such a field's values in its `_mv` column (columns.ts `MV`) and leaves the typed column null; the
 * `unnest` plan node (libs/plan) turns each row into one row per value, replacing the typed column,
 * so the level plans of plan-level.ts, written over one value per row, read every value:
 *   - `terms` / `rare_terms` on the field: `unnest(I, values, distinct)`: a document counts once per
 *     distinct key (Elasticsearch's doc_count), its metric sub-aggregations over other fields once per bucket;
 *   - the metrics on the field (`min`, `max`, `sum`, `avg`, `stats`, `extended_stats`, `value_count`,
 *     `cardinality`, `percentiles`, `percentile_ranks`, `median_absolute_deviation`): `unnest(I, values)`,
 *     every value counted, summed in index order then document order (as the aggregation code's Kahan sum).
 *   - `histogram`, `date_histogram` (no sub-aggregations): groups of distinct (document, key) pairs;
 *     `range`, `date_range` (no sub-aggregations): per range `count(distinct document)`: a document once per bucket.
 *   - `composite` (no sub-aggregations): one unnest per multi-valued source, doc_count `count(distinct document)`:
 *     a document once in each combination of its sources' values (`missing_bucket`: `outer`);
 *   - an aggregation reading the field in query clauses only (`filter`, `filters`, `adjacency_matrix`
 *     at any depth): its clauses match any value (plan-aggs.ts `anyValue`), over the query's rows.
 * Each top-level aggregation reading a multi-valued field is its own level over its own unnest; the
 * others share one level over the query's rows (which gives the total). A terms, filter, filters,
 * range or global aggregation whose sub-aggregations read a multi-valued field: its buckets, then
 * a level per bucket over the bucket's documents (plan-multi-subs.ts). Not here (the aggregation
 * code answers): other parents of such sub-aggregations, two multi-valued fields in one
 * aggregation's own keys, terms `min_doc_count: 0` with `missing` or sub-aggregations, date ranges with `missing` (a histogram's or range's `missing`: `unnest … outer`), `weighted_avg`.
 * `missing` on terms and metrics: `unnest … outer`, a document without a value one row holding null.
 */
import { aggregate, col, lit, scan, unnest, type AggregateCall, type Expr, type PlanNode } from '@mmdb/plan';
import type { JsonObject } from './mapping';
import type { IndexRef } from './indices';
import type { IndexView } from './doc';
import type { EsBackend } from './port';
import { MV, columnOf } from './columns';
import { typedMulti } from './typed';
import { aggBody } from './plan-buckets';
import { compileLevel, runLevel, type Level } from './plan-level';
import type { Kind, MatchInput } from './plan-aggs';
import { multiAware } from './plan-any-value';
import { bucketsThenSubs } from './plan-multi-subs';

const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
const PER_DOC = new Set(['terms', 'rare_terms']);
/** Bucket aggregations keyed by a function of the value: a document in a bucket once, whatever its values there. */
const BUCKETS = new Set(['histogram', 'date_histogram', 'range', 'date_range']);
const PER_VALUE = new Set(['min', 'max', 'sum', 'avg', 'stats', 'extended_stats', 'value_count', 'cardinality', 'percentiles', 'percentile_ranks', 'median_absolute_deviation']);

/**
 * A document's identity in the rows of one index or of the union of several (plan-indices.ts, where
 * `_id`s repeat and `_seq_no` is offset per index): the pair, so a row another surface wrote
 * without a `_seq_no` still counts.
 */
export const DOC_KEY: Expr = { kind: 'call', name: 'json_array', args: [col('_seq_no'), col('_id')] };

/** A field's values as JSON text: its one value as a one-element array, else the array `_mv` holds (null: none). */
export function valuesOf(path: string): Expr {
  const c = columnOf(path);
  return {
    kind: 'case',
    whens: [{ when: { kind: 'is_null', arg: col(c), not: true }, then: { kind: 'call', name: 'json_array', args: [col(c)] } }],
    else: { kind: 'call', name: 'json_extract', args: [col(MV), lit(`$.${c}`)] },
  };
}

/** One row per value of `path` (per distinct value with `distinct`; with `outer`, a document without one: a row holding null), the typed column holding it. */
export function unnestField(input: PlanNode, path: string, kind: Kind, distinct: boolean, outer = false): PlanNode {
  return unnest(input, valuesOf(path), columnOf(path), { ...(kind === 'number' ? { affinity: 'real' as const } : {}), distinct, outer });
}

type Plain = (fields: Map<string, Kind>) => Promise<boolean>;
/** The paths of which some document holds several values (held in `_mv`), or null when one is not plain nor held (typed.ts `typedMulti`). */
export type MultiOf = (paths: string[]) => Promise<string[] | null>;

/**
 * The aggregations of `spec` over `input` (the query's matches, plan-aggs.ts `multiInput`: its
 * clauses on multi-valued fields match any value) when some read a multi-valued field, or null
 * when one does not map here. `plain` checks fields that must hold one value per document
 * (plan-aggs.ts `plainValues`).
 */
export async function multiAggs(backend: EsBackend, ref: IndexRef, ix: IndexView, lsn: number, input: PlanNode, spec: JsonObject, match: MatchInput | undefined, global: PlanNode | null, plain: Plain, multiOf: MultiOf = (paths) => typedMulti(backend, ref, lsn, paths)): Promise<{ aggregations: JsonObject; buckets: number; total: number } | null> {
  if (!ref.meta.mv) return null;
  const plainSpec: JsonObject = {};
  const parts: Array<{ name: string; level: Level; input: PlanNode }> = [];
  const ready = new Map<string, { value: JsonObject; buckets: number }>();
  for (const [name, body] of Object.entries(spec)) {
    const fields = new Map<string, Kind>();
    const level = compileLevel(ix, { [name]: body }, fields, match, global);
    if (!level) return null;
    const typedPaths = [...fields].filter(([, k]) => k !== 'date').map(([f]) => f);
    const multi = await multiOf(typedPaths);
    if (!multi) return null;
    if (!multi.length) {
      if (!(await plain(fields))) return null;
      plainSpec[name] = body;
      continue;
    }
    if (!valueFields(body).some((f) => multi.includes(f))) {
      // the multi-valued fields are read by query clauses only (filter, filters, adjacency_matrix, at any depth): any value matches
      const aware = multiAware(multi);
      const l = compileLevel(ix, { [name]: body }, aware, match, global);
      if (!l || !(await plain(new Map([...aware].filter(([f]) => !multi.includes(f)))))) return null;
      parts.push({ name, level: l, input });
      continue;
    }
    const a = aggBody(body);
    if (a && isObj(a.sub) && (valueFields(a.sub).some((f) => multi.includes(f)) || (BUCKETS.has(a.type) && multi.includes(String(a.p.field))))) {
      // its sub-aggregations read every value of their bucket's documents, or it buckets a multi-valued field
      // (a document once per bucket) under sub-aggregations: a level per bucket (plan-multi-subs.ts)
      const r = await bucketsThenSubs(ix, input, name, body, multi, match, global, (inp, s, g) => multiAggs(backend, ref, ix, lsn, inp, s, match, g, plain, multiOf));
      if (!r) return null;
      ready.set(name, r);
      continue;
    }
    if (a?.type === 'composite') {
      // a document in each combination of its sources' values once: one unnest per multi-valued source, doc_count distinct documents (`DOC_KEY`)
      const [w] = level.wants;
      const sources = compositeFields(a.p);
      if (a.sub !== undefined || !w.composite || !sources || multi.some((f) => !sources.has(f))) return null;
      let rows = input;
      for (const f of multi) rows = unnestField(rows, f, fields.get(f)!, true, sources.get(f)!);
      parts.push({ name, level: { ...level, wants: [{ ...w, composite: { ...w.composite, perDoc: true } }] }, input: rows });
      continue;
    }
    if (!a || multi.length !== 1 || a.p.field !== multi[0] || a.p.script !== undefined) return null;
    // `missing`: a document without a value is one row holding null (the aggregation's own `coalesce` gives it the value)
    const outer = a.p.missing !== undefined;
    const path = multi[0];
    const kind = fields.get(path)!;
    if (BUCKETS.has(a.type)) {
      // `missing` (a histogram's): a document without a value is one row holding null, which the key's coalesce places
      if (outer && a.type !== 'histogram' && a.type !== 'range') return null;
      // a document counts once per bucket: distinct (document, key) pairs, distinct documents (`DOC_KEY`) per range
      const l = a.sub === undefined ? perDocBuckets(level) : null;
      if (!l) return null;
      parts.push({ name, level: l, input: unnestField(input, path, kind, false, outer) });
      continue;
    }
    const perDoc = PER_DOC.has(a.type);
    if (!perDoc && (!PER_VALUE.has(a.type) || a.sub !== undefined)) return null;
    let l = level;
    if (perDoc && Number(a.p.min_doc_count) === 0) {
      // the zero buckets are the keys of every document's values: the unnest of the whole index
      const [w] = level.wants;
      if (outer || !w?.terms || w.sub) return null;
      l = { ...level, wants: [{ ...w, terms: { ...w.terms, universe: unnestField(scan(ref.table.id), path, kind, true) } }] };
    }
    if (a.sub !== undefined) {
      // sub-aggregations read other fields, once per document and bucket
      const subFields = new Map<string, Kind>();
      if (!isObj(a.sub) || !compileLevel(ix, a.sub, subFields, match, null, 's', 1) || subFields.has(path)) return null;
      if (!(await plain(subFields))) return null;
    }
    parts.push({ name, level: l, input: unnestField(input, path, kind, perDoc, outer) });
  }
  const base = Object.keys(plainSpec).length ? compileLevel(ix, plainSpec, new Map(), match, global) : null;
  let total: number;
  let buckets = 0;
  const done: JsonObject = {};
  if (base) {
    const r = await runLevel(backend, ref, input, base);
    total = r.total;
    buckets += r.buckets;
    Object.assign(done, r.aggregations);
  } else {
    const [row] = await backend.read(aggregate(input, [], [{ name: 'n', fn: 'count', args: [], star: true }]));
    total = Number(row.n);
  }
  for (const p of parts) {
    const r = await runLevel(backend, ref, p.input, p.level);
    buckets += r.buckets;
    done[p.name] = r.aggregations[p.name];
  }
  for (const [name, r] of ready) {
    buckets += r.buckets;
    done[name] = r.value;
  }
  const aggregations: JsonObject = {};
  for (const name of Object.keys(spec)) aggregations[name] = done[name];
  return { aggregations, buckets, total };
}

/**
 * The level of one histogram or range aggregation (no sub-aggregations) over a row per value: the
 * histogram's groups over distinct (document, key) pairs, each range's count of distinct documents (`DOC_KEY`).
 */
function perDocBuckets(level: Level): Level | null {
  const [w] = level.wants;
  if (level.wants.length !== 1) return null;
  if (w.series) return { ...level, wants: [{ ...w, series: { ...w.series, perDoc: true } }] };
  if (!w.counted) return null;
  const counted = w.counted;
  const names = new Set(counted.calls.map((c) => c.name));
  const calls: AggregateCall[] = level.calls.filter((c) => !names.has(c.name));
  counted.conds.forEach((when, j) => calls.push({ name: counted.calls[j].name, fn: 'count', distinct: true, args: [{ kind: 'case', whens: [{ when, then: DOC_KEY }] }] }));
  return { wants: [w], calls };
}

/** The fields an aggregation spec reads as values (`field` keys at any depth, not an `exists` query's). */
function valueFields(spec: unknown, out: string[] = []): string[] {
  if (Array.isArray(spec)) for (const x of spec) valueFields(x, out);
  else if (isObj(spec)) {
    for (const [k, v] of Object.entries(spec)) {
      if (k === 'exists') continue;
      if (k === 'field' && typeof v === 'string') out.push(v);
      else valueFields(v, out);
    }
  }
  return out;
}

/** A composite's source fields and whether each has `missing_bucket` (its documents without a value kept), or null for another shape. */
function compositeFields(p: JsonObject): Map<string, boolean> | null {
  if (!Array.isArray(p.sources)) return null;
  const out = new Map<string, boolean>();
  for (const s of p.sources) {
    const body = isObj(s) ? Object.values(s)[0] : undefined;
    const inner = isObj(body) ? Object.values(body)[0] : undefined;
    if (!isObj(inner) || typeof inner.field !== 'string' || out.has(inner.field)) return null;
    out.set(inner.field, inner.missing_bucket === true);
  }
  return out;
}
