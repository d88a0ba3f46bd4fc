/** Bucket pipelines: sibling (avg/max/min/sum/stats/percentiles_bucket) and parent (derivative, cumulative_sum, moving_fn, bucket_sort, serial_diff). */
import { EsError, illegalArgument } from './errors';
import type { Json, JsonObject } from './mapping';
import { isObj, maxOf, minOf, tdigestQuantile } from './agg-util';

export const PARENT_PIPELINES = new Set(['derivative', 'cumulative_sum', 'moving_fn', 'moving_avg', 'bucket_sort', 'bucket_selector', 'bucket_script', 'serial_diff', 'cumulative_cardinality']);
export const SIBLING_PIPELINES = new Set(['avg_bucket', 'max_bucket', 'min_bucket', 'sum_bucket', 'stats_bucket', 'extended_stats_bucket', 'percentiles_bucket']);

function child(obj: JsonObject, name: string): Json | undefined {
  if (name in obj) return obj[name];
  const k = Object.keys(obj).find((x) => x.endsWith(`#${name}`));
  return k === undefined ? undefined : obj[k];
}

/** Resolves `sub>metric.prop`, `_count`, `_key`, `pct[99.0]` against one bucket; null when missing. */
export function resolvePath(bucket: JsonObject, path: string): Json {
  if (path === '_count') return bucket.doc_count ?? null;
  if (path === '_key') return bucket.key ?? null;
  const parts = path.split('>');
  let cur: Json | undefined = bucket;
  for (let i = 0; i < parts.length; i++) {
    let part = parts[i];
    let prop: string | undefined;
    const br = /^(.*)\[(.*)\]$/.exec(part);
    if (br) { part = br[1]; prop = br[2]; }
    else if (i === parts.length - 1 && part.includes('.')) {
      const dot = part.indexOf('.');
      prop = part.slice(dot + 1);
      part = part.slice(0, dot);
    }
    if (!isObj(cur)) return null;
    if (part === '_count') return cur.doc_count ?? null;
    cur = child(cur, part);
    if (cur === undefined) throw illegalArgument(`No aggregation found for path [${path}]`);
    if (i === parts.length - 1) {
      if (!isObj(cur)) return cur ?? null;
      if (prop !== undefined) {
        if (isObj(cur.values)) return (cur.values as JsonObject)[prop] ?? (cur.values as JsonObject)[`${prop}.0`] ?? null;
        if (prop === '_count') return cur.doc_count ?? null;
        return cur[prop] ?? null;
      }
      if ('value' in cur) return cur.value;
      if (isObj(cur.values) || 'count' in cur) {
        throw new EsError(400, 'illegal_argument_exception', `buckets_path must reference either a number value or a single value numeric metric aggregation, but [${part}] contains multiple values. Please specify which to use.`);
      }
      if ('buckets' in cur) throw new EsError(400, 'illegal_argument_exception', `buckets_path must reference either a number value or a single value numeric metric aggregation, got: [Object[]] at aggregation [${part}]`);
      return 'doc_count' in cur ? cur.doc_count : null;
    }
  }
  return null;
}

const bucketList = (r: JsonObject | undefined): JsonObject[] | null => {
  if (!r || r.buckets === undefined) return null;
  return Array.isArray(r.buckets) ? (r.buckets as JsonObject[]) : Object.entries(r.buckets as JsonObject).map(([k, b]) => ({ key: k, ...(b as JsonObject) }));
};

export function siblingPipeline(name: string, type: string, p: JsonObject, sibling: (n: string) => JsonObject | undefined): JsonObject {
  const path = p.buckets_path;
  if (typeof path !== 'string') throw illegalArgument(`[buckets_path] must be set for aggregation [${name}]`);
  const gt = path.indexOf('>');
  let head = gt < 0 ? path : path.slice(0, gt);
  let rest = gt < 0 ? '_count' : path.slice(gt + 1);
  // `histo.v`: a multi-bucket sibling and a metric of its buckets (Elasticsearch 7.8+)
  const dot = head.indexOf('.');
  if (gt < 0 && dot > 0 && !sibling(head) && sibling(head.slice(0, dot))) { rest = head.slice(dot + 1); head = head.slice(0, dot); }
  const buckets = bucketList(sibling(head));
  if (!buckets) throw new EsError(400, 'action_request_validation_exception', `Validation Failed: 1: The first aggregation in buckets_path must be a multi-bucket aggregation for aggregation [${name}] found :${sibling(head) ? 'a metric' : 'nothing'} for buckets path: ${path};`);
  const gapZero = p.gap_policy === 'insert_zeros';
  const vals: Array<{ key: Json; v: number }> = [];
  for (const b of buckets) {
    const v = resolvePath(b, rest);
    const n = v === null ? (gapZero ? 0 : NaN) : Number(v);
    if (Number.isNaN(n)) continue;
    vals.push({ key: b.key_as_string ?? b.key ?? null, v: n });
  }
  const xs = vals.map((x) => x.v);
  const sum = xs.reduce((a, b) => a + b, 0);
  switch (type) {
    case 'avg_bucket': return { value: xs.length ? sum / xs.length : null };
    case 'sum_bucket': return { value: sum };
    case 'max_bucket': case 'min_bucket': {
      if (!xs.length) return { value: null, keys: [] };
      const best = type === 'max_bucket' ? maxOf(xs) : minOf(xs);
      return { value: best, keys: vals.filter((x) => x.v === best).map((x) => String(x.key)) };
    }
    case 'stats_bucket': case 'extended_stats_bucket': {
      const n = xs.length;
      const r: JsonObject = { count: n, min: n ? minOf(xs) : null, max: n ? maxOf(xs) : null, avg: n ? sum / n : null, sum };
      if (type === 'extended_stats_bucket') {
        const sq = xs.reduce((a, b) => a + b * b, 0);
        const variance = n ? sq / n - (sum / n) ** 2 : null;
        Object.assign(r, { sum_of_squares: sq, variance, std_deviation: variance === null ? null : Math.sqrt(variance) });
      }
      return r;
    }
    default: {
      const percents = (Array.isArray(p.percents) ? p.percents : [1, 5, 25, 50, 75, 95, 99]).map(Number);
      const sorted = [...xs].sort((a, b) => a - b);
      const values: JsonObject = {};
      for (const q of percents) values[Number.isInteger(q) ? `${q}.0` : String(q)] = sorted.length ? sorted[Math.max(0, Math.ceil((q / 100) * sorted.length) - 1)] : null;
      return { values };
    }
  }
}

const MOVING = /^\s*MovingFunctions\.(\w+)\(\s*values\s*(?:,\s*([^)]*))?\)\s*;?\s*$/;

function movingFn(script: Json, values: number[]): number | null {
  const src = isObj(script) ? String(script.source ?? script.inline ?? '') : String(script);
  const m = MOVING.exec(src);
  if (!m) throw illegalArgument(`[moving_fn] scripts are not supported by this service except the built-in MovingFunctions (max, min, sum, unweightedAvg, linearWeightedAvg, stdDev, windowMax) called on values`);
  const xs = values.filter((x) => !Number.isNaN(x));
  const fn = m[1];
  if (!xs.length) return fn === 'sum' ? 0 : null;
  const sum = xs.reduce((a, b) => a + b, 0);
  switch (fn) {
    case 'max': case 'windowMax': return maxOf(xs);
    case 'min': case 'windowMin': return minOf(xs);
    case 'sum': return sum;
    case 'unweightedAvg': return sum / xs.length;
    case 'linearWeightedAvg': { let w = 0, s = 0; xs.forEach((x, i) => { s += x * (i + 1); w += i + 1; }); return s / w; }
    case 'stdDev': { const avg = Number(m[2] ? m[2].split(',')[0] : sum / xs.length); const mean = Number.isFinite(avg) ? avg : sum / xs.length; return Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / xs.length); }
    default: throw illegalArgument(`Unknown MovingFunctions function [${fn}]`);
  }
}

/** Applies a parent pipeline to the buckets of its parent multi-bucket aggregation. */
export function applyParentPipeline(name: string, type: string, p: JsonObject, buckets: JsonObject[], typedKeys: boolean, _owner: string): JsonObject[] {
  const key = (t: string) => (typedKeys ? `${t}#${name}` : name);
  const path = p.buckets_path;
  const gapZero = p.gap_policy === 'insert_zeros';
  const valueOf = (b: JsonObject): number => {
    if (typeof path !== 'string') return NaN;
    const v = resolvePath(b, path);
    return v === null ? (gapZero ? 0 : NaN) : Number(v);
  };
  switch (type) {
    case 'cumulative_sum': {
      let s = 0;
      return buckets.map((b) => { const v = valueOf(b); if (!Number.isNaN(v)) s += v; return { ...b, [key('simple_value')]: { value: s } }; });
    }
    case 'derivative': case 'serial_diff': {
      const lag = type === 'serial_diff' ? Number(p.lag ?? 1) : 1;
      const vals = buckets.map(valueOf);
      return buckets.map((b, i) => {
        if (i < lag) return b;
        const d = vals[i] - vals[i - lag];
        if (Number.isNaN(d)) return b;
        return { ...b, [key(type === 'derivative' ? 'derivative' : 'simple_value')]: { value: d } };
      });
    }
    case 'moving_fn': {
      const window = Number(p.window);
      if (!Number.isInteger(window) || window <= 0) throw illegalArgument('[window] must be a positive, non-zero integer.');
      const shift = Number(p.shift ?? 0);
      const vals = buckets.map(valueOf);
      return buckets.map((b, i) => {
        const end = i + shift;
        const start = Math.max(0, end - window);
        const v = movingFn(p.script ?? '', vals.slice(start, Math.max(start, Math.min(vals.length, end))));
        return { ...b, [key('simple_value')]: { value: v } };
      });
    }
    case 'bucket_sort': {
      const sorts = (Array.isArray(p.sort) ? p.sort : p.sort === undefined ? [] : [p.sort]).map((s) => {
        if (typeof s === 'string') return { path: s, desc: s !== '_key' };
        const [k] = Object.keys(s as JsonObject);
        const v = (s as JsonObject)[k];
        const ord = isObj(v) ? String(v.order ?? 'asc') : String(v);
        return { path: k, desc: ord === 'desc' };
      });
      let list = [...buckets];
      if (sorts.length) {
        list.sort((a, b) => {
          for (const s of sorts) {
            const av = resolvePath(a, s.path), bv = resolvePath(b, s.path);
            const c = typeof av === 'string' || typeof bv === 'string' ? String(av).localeCompare(String(bv)) : Number(av) - Number(bv);
            if (c) return s.desc ? -c : c;
          }
          return 0;
        });
      }
      const from = Number(p.from ?? 0);
      list = list.slice(from, p.size === undefined ? undefined : from + Number(p.size));
      return list;
    }
    default:
      throw illegalArgument(`[${type}] needs a script, and scripts are not supported by this service; use bucket_sort, or filter the buckets in the client`);
  }
}

export { tdigestQuantile };
