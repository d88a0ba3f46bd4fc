/**
 * A top-level `composite` aggregation as one plan (plan-level.ts runs it): sources `terms`
 * (keyword or number field), `histogram` (integer or double field, a numeric `interval`) and
 * `date_histogram` (a date's typed column; `calendar_interval` up to a week, in a `time_zone`
 * too, or `fixed_interval`), each with `order` and `missing_bucket`; `size`; `after`; metric and single-pass bucket
 * sub-aggregations (calls of the grouped node). The page is
 *   `limit(sort(filter(aggregate(filter(I, every source without missing_bucket has a value), [k0, k1, …], [count(*), the subs' calls]), after the `after` key), [k0, k1, … each asc nulls first / desc nulls last]), size)`,
 * the keys compared as the aggregation code compares them (numbers as numbers, strings by code unit).
 * Anything else (scripts, `missing`, `format` on a non-date source, a month's key): null, and the aggregation code answers.
 */
import { aggregate, col, filter, limit, lit, sort, type AggregateCall, type Expr, type PlanNode, type SortKey } from '@mmdb/plan';
import type { Json, JsonObject } from './mapping';
import type { IndexView } from './doc';
import type { EsBackend } from './port';
import { DOC_KEY } from './plan-multi';
import type { CountAgg } from './plan-buckets';
import type { Metric } from './plan-metrics';
import { fieldKind, typed, valueOf, type Kind } from './plan-aggs';
import { seriesSpec } from './plan-series';
import { timeKey, zonedKey } from './plan-dates';
import { zoneOffsetMs } from '@mmdb/core';
import { DEFAULT_DATE_FORMAT, formatDate, parseDateMath } from './dates';

const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
const bin = (op: 'and' | 'or' | '=' | '<' | '>', left: Expr, right: Expr): Expr => ({ kind: 'binary', op, left, right });
const isNull = (arg: Expr, not = false): Expr => ({ kind: 'is_null', arg, not });

interface Source {
  readonly name: string;
  readonly key: Expr;
  readonly has: Expr;
  readonly desc: boolean;
  readonly missingBucket: boolean;
  /** The key as the answer shows it (a date in its format). */
  readonly show: (v: unknown) => Json;
  /** An `after` value as a key, or undefined when it is not one of this source's. */
  readonly after: (v: unknown) => Json | undefined;
}

export interface CompositeSpec {
  readonly sources: Source[];
  readonly size: number;
  readonly after?: Json[];
  readonly subs: Array<{ name: string; m: Metric | CountAgg }>;
  /** The input holds a row per value (combination) of multi-valued sources (plan-multi.ts): doc_count counts distinct documents (`DOC_KEY`). */
  readonly perDoc?: boolean;
}

type Subs = (spec: JsonObject) => Array<{ name: string; m: Metric | CountAgg }> | null;

export function compositeSpec(ix: IndexView, p: JsonObject, subSpec: unknown, fields: Map<string, Kind>, subs: Subs): CompositeSpec | null {
  if (Object.keys(p).some((k) => !['sources', 'size', 'after'].includes(k)) || !Array.isArray(p.sources) || !p.sources.length) return null;
  const size = p.size === undefined ? 10 : p.size;
  if (!Number.isInteger(size) || (size as number) < 1) return null;
  const sources: Source[] = [];
  for (const s of p.sources) {
    const src = isObj(s) && Object.keys(s).length === 1 ? source(ix, Object.keys(s)[0], s[Object.keys(s)[0]], fields) : null;
    if (!src || sources.some((x) => x.name === src.name)) return null;
    sources.push(src);
  }
  let after: Json[] | undefined;
  if (p.after !== undefined) {
    if (!isObj(p.after) || Object.keys(p.after).length !== sources.length) return null;
    after = [];
    for (const s of sources) {
      const v = s.after((p.after as JsonObject)[s.name]);
      if (v === undefined) return null;
      after.push(v);
    }
  }
  const sub = isObj(subSpec) ? subs(subSpec) : [];
  if (!sub) return null;
  return { sources, size: size as number, ...(after ? { after } : {}), subs: sub };
}

function source(ix: IndexView, name: string, def: unknown, fields: Map<string, Kind>): Source | null {
  if (!isObj(def) || Object.keys(def).length !== 1) return null;
  const [kind] = Object.keys(def);
  const sp = def[kind];
  if (!isObj(sp) || typeof sp.field !== 'string') return null;
  const field = sp.field;
  const desc = sp.order === 'desc';
  if (sp.order !== undefined && sp.order !== 'asc' && !desc) return null;
  if (sp.missing_bucket !== undefined && typeof sp.missing_bucket !== 'boolean') return null;
  const common = ['field', 'order', 'missing_bucket'];
  const base = { name, desc, missingBucket: sp.missing_bucket === true };
  const num = (v: unknown): Json | undefined => (v === null || typeof v === 'number' ? (v as Json) : undefined);
  if (kind === 'terms') {
    const k = fieldKind(ix, field, 'terms');
    // (a boolean source's keys print as true / false and its `after` compares as the aggregation code's strings: it answers)
    if ((k !== 'keyword' && k !== 'integer' && k !== 'number') || ix.fields.get(field)!.type === 'boolean' || Object.keys(sp).some((x) => !common.includes(x))) return null;
    fields.set(field, k);
    return { ...base, key: valueOf(field), has: typed(field, k), show: (v) => (v === null || k === 'keyword' ? (v as Json) : Number(v)), after: k === 'keyword' ? (v) => (v === null || typeof v === 'string' ? (v as Json) : undefined) : num };
  }
  if (kind === 'histogram') {
    if (Object.keys(sp).some((x) => !common.includes(x) && x !== 'interval')) return null;
    const s = seriesSpec(ix, 'histogram', { field, interval: sp.interval as Json }, fields);
    if (!s) return null;
    return { ...base, key: s.key, has: s.cond, show: (v) => (v === null ? null : Number(v)), after: num };
  }
  if (kind === 'date_histogram') {
    if (Object.keys(sp).some((x) => !common.includes(x) && !['calendar_interval', 'fixed_interval', 'format', 'time_zone'].includes(x))) return null;
    if (fieldKind(ix, field, 'date') !== 'time' || (sp.format !== undefined && typeof sp.format !== 'string')) return null;
    const zone = sp.time_zone;
    if (zone !== undefined && (typeof zone !== 'string' || zoneOffsetMs(zone, 0) === null)) return null;
    // as the aggregation code: an interval naming a calendar unit (`1h` too) rounds down in the zone, another in UTC; keys printed in UTC
    const unit = zone !== undefined ? zonedKey(valueOf(field), sp.calendar_interval ?? sp.fixed_interval, undefined, 0, zone as string) : null;
    const tk = unit ?? timeKey(valueOf(field), sp.calendar_interval, sp.fixed_interval, 0);
    if (!tk) return null;
    fields.set(field, 'time');
    const format = (sp.format as string | undefined) ?? String(ix.fields.get(field)!.def.format ?? DEFAULT_DATE_FORMAT);
    const after = (v: unknown): Json | undefined => {
      if (v === null || typeof v === 'number') return v as Json;
      if (typeof v !== 'string') return undefined;
      try {
        const t = parseDateMath(v, format);
        return Number.isFinite(t) ? t : undefined;
      } catch {
        return undefined; // the aggregation code reports it
      }
    };
    return { ...base, key: tk.key, has: typed(field, 'time'), show: (v) => (v === null ? null : formatDate(Number(v), format)), after };
  }
  return null;
}

/** Rows after the `after` key in the sources' order (each source ascending with missing first, or descending with missing last). */
function afterCond(c: CompositeSpec): Expr | null {
  if (!c.after) return null;
  let out: Expr | null = null;
  c.sources.forEach((s, i) => {
    const k = col(`k${i}`), a = c.after![i];
    const gt: Expr = a === null ? (s.desc ? lit(false) : isNull(k, true)) : s.desc ? bin('or', bin('<', k, lit(a)), isNull(k)) : bin('>', k, lit(a));
    let term = gt;
    for (let j = i - 1; j >= 0; j--) {
      const b = c.after![j];
      term = bin('and', b === null ? isNull(col(`k${j}`)) : bin('=', col(`k${j}`), lit(b)), term);
    }
    out = out ? bin('or', out, term) : term;
  });
  return out;
}

export async function runComposite(backend: EsBackend, input: PlanNode, c: CompositeSpec): Promise<JsonObject> {
  const need = c.sources.filter((s) => !s.missingBucket).map((s) => s.has);
  const rows = need.length ? filter(input, need.reduce((l, r) => bin('and', l, r))) : input;
  const docCount: AggregateCall = c.perDoc ? { name: 'doc_count', fn: 'count', distinct: true, args: [DOC_KEY] } : { name: 'doc_count', fn: 'count', args: [], star: true };
  const calls: AggregateCall[] = [docCount, ...c.subs.flatMap((x) => x.m.calls)];
  let grouped: PlanNode = aggregate(rows, c.sources.map((s, i) => ({ name: `k${i}`, expr: s.key })), calls);
  const after = afterCond(c);
  if (after) grouped = filter(grouped, after);
  const keys: SortKey[] = c.sources.map((s, i) => ({ expr: col(`k${i}`), desc: s.desc, nulls: s.desc ? 'last' : 'first' }));
  const page = await backend.read(limit(sort(grouped, keys), lit(c.size)));
  const keyObj = (r: Record<string, unknown>): JsonObject => Object.fromEntries(c.sources.map((s, i) => [s.name, s.show(r[`k${i}`])]));
  const buckets = page.map((r): JsonObject => ({ key: keyObj(r), doc_count: Number(r.doc_count), ...Object.fromEntries(c.subs.map((x) => [x.name, x.m.value(r)])) }));
  return { ...(page.length ? { after_key: keyObj(page[page.length - 1]) } : {}), buckets };
}
