/**
 * auto_date_histogram as plans (at any level, on a date field's typed column): `aggregate(filter(I, has a value), [], [min(t), max(t)])`, then
 * the rounding the aggregation code would take (agg-auto-date.ts `autoRounding`, shared), then
 * `aggregate(filter(I, has a value), [calendar_floor(unit, t, zone)], [count(*)])` (the executor's
 * `calendar_floor` is the aggregation code's `roundDown`); consecutive keys merged `inner` at a
 * time here, each bucket keyed by its first. A document holds one value (the plans' rule), so a
 * bucket's doc_count is the sum of its keys' counts. Sub-aggregations: a level of plans per bucket
 * over `filter(I, first key ≤ t < the next bucket's first key)`.
 */
import { aggregate, filter, lit, type Expr, type PlanNode } from '@mmdb/plan';
import { calendarFloor } from '@mmdb/core';
import type { Json, JsonObject } from './mapping';
import type { IndexView } from './doc';
import type { EsBackend } from './port';
import { fieldKind, typed, valueOf, type Kind } from './plan-aggs';
import { autoParams, autoRounding, emptyInterval } from './agg-auto-date';
import { valueSource } from './agg-util';
import { formatDate } from './dates';

const KEYS = new Set(['field', 'buckets', 'minimum_interval', 'format', 'time_zone']);

export interface AutoSpec {
  readonly v: Expr;
  readonly cond: Expr;
  readonly target: number;
  readonly zone: string | undefined;
  readonly start: number;
  readonly format: string | undefined;
}

/** The plan form of an auto_date_histogram, or null (the aggregation code answers, errors included). */
export function autoSpec(ix: IndexView, name: string, p: JsonObject, fields: Map<string, Kind>): AutoSpec | null {
  if (Object.keys(p).some((k) => !KEYS.has(k)) || typeof p.field !== 'string') return null;
  if (p.time_zone !== undefined && (typeof p.time_zone !== 'string' || calendarFloor(0, 'd', p.time_zone) === null)) return null;
  const k = fieldKind(ix, p.field, 'date');
  if (k !== 'time') return null;
  let params: ReturnType<typeof autoParams>;
  let format: string | undefined;
  try {
    params = autoParams(name, p);
    format = p.format !== undefined ? String(p.format) : valueSource([ix], p, name).format;
  } catch {
    return null;
  }
  fields.set(p.field, k);
  return { v: valueOf(p.field), cond: typed(p.field, k), ...params, format };
}

/** `sub`: a bucket's sub-aggregations over the rows passing its condition (plan-level.ts). */
export async function runAuto(backend: EsBackend, input: PlanNode, a: AutoSpec, sub?: (cond: Expr) => Promise<JsonObject>): Promise<JsonObject> {
  const rows = filter(input, a.cond);
  const [mm] = await backend.read(aggregate(rows, [], [{ name: 'mn', fn: 'min', args: [a.v] }, { name: 'mx', fn: 'max', args: [a.v] }]));
  if (mm.mn === null || mm.mn === undefined) return { buckets: [], interval: emptyInterval(a.start) };
  const { unit, abbrev, keys, inner } = autoRounding(Number(mm.mn), Number(mm.mx), a.target, a.start, a.zone);
  const key: Expr = { kind: 'call', name: 'calendar_floor', args: [lit(unit), a.v, ...(a.zone !== undefined ? [lit(a.zone)] : [])] };
  const counts = await backend.read(aggregate(rows, [{ name: 'key', expr: key }], [{ name: 'doc_count', fn: 'count', args: [], star: true }]));
  const slot = new Map<number, number>();
  const buckets: JsonObject[] = [];
  keys.forEach((k, i) => {
    if (i % inner === 0) buckets.push({ key_as_string: formatDate(k, a.format, a.zone), key: k, doc_count: 0 });
    slot.set(k, buckets.length - 1);
  });
  for (const r of counts) {
    const b = buckets[slot.get(Number(r.key))!];
    b.doc_count = (b.doc_count as number) + Number(r.doc_count);
  }
  if (sub) {
    // bucket j holds the values from its first key to the next bucket's (the last: to the end)
    for (let j = 0; j < buckets.length; j++) {
      const from: Expr = { kind: 'binary', op: '>=', left: a.v, right: lit(buckets[j].key as number) };
      const next = keys[(j + 1) * inner];
      const cond: Expr = { kind: 'binary', op: 'and', left: a.cond, right: next === undefined ? from : { kind: 'binary', op: 'and', left: from, right: { kind: 'binary', op: '<', left: a.v, right: lit(next) } } };
      Object.assign(buckets[j], await sub(cond));
    }
  }
  return { buckets: buckets as Json, interval: `${inner}${abbrev}` };
}
