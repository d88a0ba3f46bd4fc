/**
 * `typed_keys=true` for aggregations answered by plans: each aggregation's name prefixed with its
 * result type (`sterms#tags`, `tdigest_percentiles#p`), at every depth, named as the aggregation
 * code names them (aggs.ts `typedName`, the one table of both paths). The plans answer mapped
 * fields only, so a terms aggregation's type follows its field's: keyword `sterms`, a
 * double/float `dterms`, a long, boolean or date `lterms`.
 */
import type { Json, JsonObject } from './mapping';
import type { IndexView } from './doc';
import { typedName } from './aggs';
import { aggBody } from './plan-buckets';
import { isDate, isNumeric } from './fields';

const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
const DOUBLES = new Set(['double', 'float', 'half_float', 'scaled_float']);
/** Aggregations holding their sub-aggregations in the answer itself (single-bucket). */
const SINGLE = new Set(['filter', 'missing', 'global']);

function kindOf(ix: IndexView, p: JsonObject): { kind: string; double: boolean } {
  const f = typeof p.field === 'string' ? ix.fields.get(p.field) : undefined;
  const kind = isDate(f) ? 'date' : isNumeric(f) ? 'number' : f?.type === 'boolean' ? 'boolean' : 'string';
  return { kind, double: !!f && DOUBLES.has(f.type) };
}

/** The aggregations of `spec` with typed keys, at every depth. */
export function withTypedKeys(ix: IndexView, spec: JsonObject, aggs: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const [name, body] of Object.entries(spec)) {
    const v = aggs[name];
    if (v === undefined) continue;
    const a = aggBody(body);
    if (!a) { out[name] = v; continue; }
    const { kind, double } = kindOf(ix, a.p);
    const key = `${typedName(a.type, a.p, { _double: double, _unmapped: false }, kind)}#${name}`;
    out[key] = isObj(a.sub) && isObj(v) ? withSubs(ix, a.type, a.sub, v) : v;
  }
  return out;
}

function withSubs(ix: IndexView, type: string, sub: JsonObject, v: JsonObject): JsonObject {
  const names = new Set(Object.keys(sub));
  const bucket = (b: Json): Json => {
    if (!isObj(b)) return b;
    const own: JsonObject = {};
    const subs: JsonObject = {};
    for (const [k, x] of Object.entries(b)) (names.has(k) ? subs : own)[k] = x;
    return { ...own, ...withTypedKeys(ix, sub, subs) };
  };
  if (SINGLE.has(type)) return bucket(v) as JsonObject;
  const bs = v.buckets;
  if (Array.isArray(bs)) return { ...v, buckets: bs.map(bucket) };
  if (isObj(bs)) return { ...v, buckets: Object.fromEntries(Object.entries(bs).map(([k, b]) => [k, bucket(b)])) };
  return v;
}
