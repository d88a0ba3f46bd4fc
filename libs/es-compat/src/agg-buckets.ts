/** Bucket aggregations: terms, filter(s), range, date_range, histogram, date_histogram, missing, global, composite, adjacency_matrix. */
import { EsError, illegalArgument } from './errors';
import { significantAgg } from './agg-significant';
import { autoDateHistogram } from './agg-auto-date';
import { globalOrdinals, type Doc } from './doc';
import type { Json, JsonObject } from './mapping';
import { INDEX_FIELD, badAgg, bucketKeyString, decimalFormat, isObj, valueSource, type ValueSource } from './agg-util';
import { finishBuckets, type AggCtx } from './aggs';
import { addUnit, formatDate, parseDateMath, roundDown, zoneOffset } from './dates';
import { resolvePath } from './agg-pipelines';
import { bigToIp, cidr, ipToBig } from './ip';

export const BUCKET_TYPES = new Set(['terms', 'filters', 'filter', 'range', 'date_range', 'histogram', 'date_histogram', 'missing', 'global', 'composite', 'adjacency_matrix', 'sampler', 'nested', 'reverse_nested', 'significant_terms', 'significant_text', 'rare_terms', 'auto_date_histogram', 'ip_range', 'geohash_grid', 'geotile_grid', 'variable_width_histogram', 'multi_terms']);

type B = { b: JsonObject; docs: Doc[] };

export function bucketAgg(name: string, type: string, p: JsonObject, subs: JsonObject | undefined, docs: Doc[], ctx: AggCtx): JsonObject {
  switch (type) {
    case 'terms': case 'rare_terms': return terms(name, type, p, subs, docs, ctx);
    case 'significant_terms': case 'significant_text': return significantAgg(name, type, p, subs, docs, ctx, { keyOf, includeExclude });
    case 'filter': {
      const f = ctx.filter(p);
      const ds = docs.filter(f);
      return finishOne({ doc_count: ds.length }, ds, subs, ctx, name);
    }
    case 'missing': {
      const vs = valueSource(ctx.ixs, withoutMissing(p), name);
      const ds = docs.filter((d) => vs.values(d).length === 0);
      return finishOne({ doc_count: ds.length }, ds, subs, ctx, name);
    }
    case 'global': return finishOne({ doc_count: ctx.allDocs.length }, ctx.allDocs, subs, ctx, name);
    case 'sampler': return finishOne({ doc_count: docs.length }, docs, subs, ctx, name);
    case 'filters': return filters(name, p, subs, docs, ctx);
    case 'adjacency_matrix': return adjacency(name, p, subs, docs, ctx);
    case 'range': case 'date_range': case 'ip_range': return ranges(name, type, p, subs, docs, ctx);
    case 'histogram': return histogram(name, p, subs, docs, ctx);
    case 'date_histogram': return dateHistogram(name, p, subs, docs, ctx);
    case 'auto_date_histogram': return autoDateHistogram(name, p, subs, docs, ctx);
    case 'composite':
      if (ctx.parents?.length) throw illegalArgument(`[composite] aggregation cannot be used with a parent aggregation of type: [${ctx.parents[ctx.parents.length - 1]}]`);
      return composite(name, p, subs, docs, ctx);
    default:
      throw illegalArgument(`aggregation [${type}] is not supported by this service${type === 'nested' || type === 'reverse_nested' ? ' (no nested field type)' : type.startsWith('geo') ? ' (geo fields are kept in _source but not indexed)' : ''}`);
  }
}

function finishOne(b: JsonObject, ds: Doc[], subs: JsonObject | undefined, ctx: AggCtx, owner: string): JsonObject {
  return finishBuckets([{ b, docs: ds }], subs, ctx, owner)[0];
}

function keyOf(vs: ValueSource, v: Json): Json {
  if (vs.kind === 'boolean') return v ? 1 : 0;
  return v;
}

function compareKeys(a: Json, b: Json): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  const x = String(a), y = String(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

type Order = Array<{ key: string; desc: boolean }>;

export function parseOrder(o: Json | undefined, dflt: Order): Order {
  if (o === undefined) return dflt;
  const list = Array.isArray(o) ? o : [o];
  return list.map((x) => {
    if (!isObj(x)) throw badAgg('[order] must be an object');
    const [k] = Object.keys(x);
    const dir = String(x[k]).toLowerCase();
    if (dir !== 'asc' && dir !== 'desc') throw badAgg(`Unknown terms order direction [${dir}]`);
    return { key: k === '_term' || k === '_time' ? '_key' : k, desc: dir === 'desc' };
  });
}

export function sortBuckets(list: Array<{ b: JsonObject; docs: Doc[]; key: Json }>, order: Order, computed: (x: { b: JsonObject; docs: Doc[] }) => JsonObject): void {
  const vals = new Map<object, JsonObject>();
  const get = (x: { b: JsonObject; docs: Doc[] }) => {
    let v = vals.get(x);
    if (!v) { v = computed(x); vals.set(x, v); }
    return v;
  };
  const full = [...order];
  if (!full.some((o) => o.key === '_key')) full.push({ key: '_key', desc: false });
  list.sort((a, b) => {
    for (const o of full) {
      let c: number;
      if (o.key === '_count') c = (a.b.doc_count as number) - (b.b.doc_count as number);
      else if (o.key === '_key') c = compareKeys(a.key, b.key);
      else {
        const av = resolvePath(get(a), o.key), bv = resolvePath(get(b), o.key);
        c = (av === null ? -Infinity : Number(av)) - (bv === null ? -Infinity : Number(bv));
        if (Number.isNaN(c)) c = 0;
      }
      if (c !== 0) return o.desc ? -c : c;
    }
    return 0;
  });
}

/** Which bucket keys a terms aggregation's include / exclude keep (lists, regular expressions, partitions); also plan-terms.ts. */
export function includeExclude(p: JsonObject, vs: ValueSource, name: string): (k: Json) => boolean {
  const norm = (v: Json): string => {
    if (vs.kind === 'date') return String(parseDateMath(v, vs.format));
    if (vs.kind === 'number') return String(Number(v));
    if (vs.kind === 'boolean') return String(v === true || v === 'true' || v === 1 ? 1 : 0);
    return String(v);
  };
  const mk = (spec: Json | undefined, dflt: boolean): ((k: Json) => boolean) => {
    if (spec === undefined) return () => dflt;
    if (Array.isArray(spec)) { const s = new Set(spec.map(norm)); return (k) => s.has(String(k)); }
    if (isObj(spec)) {
      if (spec.partition !== undefined) {
        const n = Number(spec.num_partitions), part = Number(spec.partition);
        return (k) => partitionOf(k, n) === part;
      }
      return () => dflt;
    }
    if ((vs.kind !== 'string' && vs.kind !== 'other') || vs.field?.type === 'ip') {
      throw new EsError(500, 'aggregation_execution_exception', `Aggregation [${name}] cannot support regular expression style include/exclude settings as they can only be applied to string fields. Use an array of values for include/exclude clauses`);
    }
    const rx = new RegExp(`^(?:${String(spec)})$`);
    return (k) => rx.test(String(k));
  };
  const inc = mk(p.include, true), exc = mk(p.exclude, false);
  return (k) => inc(k) && !exc(k);
}

/** Elasticsearch's term partition: murmur3_x86_32 (seed 31) of the UTF-8 bytes for strings, BitMixer.mix64 for numbers. */
export function partitionOf(k: Json, n: number): number {
  if (typeof k === 'number') {
    const M = (1n << 64n) - 1n;
    let z = BigInt.asUintN(64, BigInt(Math.trunc(k)));
    z = ((z ^ (z >> 32n)) * 0x4cd6944c5cc20b6dn) & M;
    z = ((z ^ (z >> 29n)) * 0xfc12c5b19d3259e9n) & M;
    z = z ^ (z >> 32n);
    const signed = BigInt.asIntN(64, z);
    const m = BigInt(n);
    return Number(((signed % m) + m) % m);
  }
  const h = murmur3(Buffer.from(String(k), 'utf8'), 31);
  return ((h % n) + n) % n;
}

function murmur3(data: Buffer, seed: number): number {
  const c1 = 0xcc9e2d51, c2 = 0x1b873593;
  let h1 = seed | 0;
  const len = data.length;
  const roundedEnd = len & ~3;
  for (let i = 0; i < roundedEnd; i += 4) {
    let k1 = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24);
    k1 = Math.imul(k1, c1); k1 = (k1 << 15) | (k1 >>> 17); k1 = Math.imul(k1, c2);
    h1 ^= k1; h1 = (h1 << 13) | (h1 >>> 19); h1 = (Math.imul(h1, 5) + 0xe6546b64) | 0;
  }
  const rest = len & 3;
  if (rest) {
    let k1 = 0;
    if (rest === 3) k1 = (data[roundedEnd + 2] & 0xff) << 16;
    if (rest >= 2) k1 |= (data[roundedEnd + 1] & 0xff) << 8;
    k1 |= data[roundedEnd] & 0xff;
    k1 = Math.imul(k1, c1); k1 = (k1 << 15) | (k1 >>> 17); k1 = Math.imul(k1, c2); h1 ^= k1;
  }
  h1 ^= len;
  h1 ^= h1 >>> 16; h1 = Math.imul(h1, 0x85ebca6b); h1 ^= h1 >>> 13; h1 = Math.imul(h1, 0xc2b2ae35); h1 ^= h1 >>> 16;
  return h1 | 0;
}

function terms(name: string, type: string, p: JsonObject, subs: JsonObject | undefined, docs: Doc[], ctx: AggCtx): JsonObject {
  const vs = valueSource(ctx.ixs, p, name);
  const size = p.size === undefined ? (type === 'rare_terms' ? 10000 : 10) : Number(p.size);
  if (size < 1 && type === 'terms') throw illegalArgument(`[size] must be greater than 0. Found [${size}] in [${name}]`);
  const minDoc = p.min_doc_count === undefined ? 1 : Number(p.min_doc_count);
  const ok = includeExclude(p, vs, name);
  const groups = new Map<string, { key: Json; docs: Doc[] }>();
  for (const d of docs) {
    const seen = new Set<string>();
    for (const v of vs.values(d)) {
      const key = keyOf(vs, v);
      const k = JSON.stringify(key);
      if (seen.has(k) || !ok(key)) continue;
      seen.add(k);
      let g = groups.get(k);
      if (!g) { g = { key, docs: [] }; groups.set(k, g); }
      g.docs.push(d);
    }
  }
  // keyword terms aggregations read the index's global ordinals (execution_hint "map" does not build them)
  const ordinals = vs.kind === 'string' && vs.field && vs.field !== INDEX_FIELD && p.execution_hint !== 'map' ? ctx.ixs.filter((ix) => ix.fields.get(vs.field!.path)?.type === vs.field!.type).map((ix) => globalOrdinals(ix, vs.field!.path)) : null;
  if (minDoc === 0) {
    if (ordinals) {
      for (const o of ordinals) for (const key of o.terms) {
        const k = JSON.stringify(key);
        if (!groups.has(k) && ok(key)) groups.set(k, { key, docs: [] });
      }
    } else for (const d of ctx.allDocs) for (const v of vs.values(d)) {
      const key = keyOf(vs, v);
      const k = JSON.stringify(key);
      if (!groups.has(k) && ok(key)) groups.set(k, { key, docs: [] });
    }
  }
  let list = [...groups.values()].filter((g) => g.docs.length >= minDoc).map((g) => {
    const b: JsonObject = { key: g.key };
    const ks = bucketKeyString(vs, g.key);
    if (ks !== undefined) b.key_as_string = ks;
    b.doc_count = g.docs.length;
    if (p.show_term_doc_count_error === true) b.doc_count_error_upper_bound = 0;
    return { b, docs: g.docs, key: g.key };
  });
  if (type === 'rare_terms') list = list.filter((x) => x.docs.length <= Number(p.max_doc_count ?? 1));
  const order = parseOrder(p.order, type === 'rare_terms' ? [{ key: '_count', desc: false }] : [{ key: '_count', desc: true }]);
  sortBuckets(list, order, (x) => (subs ? { ...x.b, ...subsFor(subs, x.docs, ctx) } : x.b));
  const kept = list.slice(0, size);
  const other = list.slice(size).reduce((s, x) => s + x.docs.length, 0);
  const buckets = finishBuckets(kept, subs, ctx, name);
  const dbl = vs.field && ['double', 'float', 'half_float', 'scaled_float'].includes(vs.field.type);
  const meta = { _kind: vs.field ? vs.kind : 'unmapped', _double: !!dbl, _unmapped: !vs.field };
  // rare_terms answers its buckets alone (no error bound, no other count), as Elasticsearch's InternalRareTerms
  if (type === 'rare_terms') return { buckets: buckets as Json, ...meta };
  return { doc_count_error_upper_bound: 0, sum_other_doc_count: other, buckets: buckets as Json, ...meta };
}

function subsFor(subs: JsonObject, docs: Doc[], ctx: AggCtx): JsonObject {
  const saved = ctx.buckets;
  const r = finishBuckets([{ b: {}, docs }], subs, ctx, '')[0];
  ctx.buckets = saved;
  return r;
}

function filters(name: string, p: JsonObject, subs: JsonObject | undefined, docs: Doc[], ctx: AggCtx): JsonObject {
  const spec = p.filters;
  if (spec === undefined || (isObj(spec) && !Object.keys(spec).length) || (Array.isArray(spec) && !spec.length)) throw illegalArgument(`[filters] cannot be empty.`);
  const keyed = isObj(spec);
  const entries: Array<[string, Json]> = keyed ? Object.entries(spec as JsonObject) : (spec as Json[]).map((q, i) => [String(i), q]);
  if (keyed) entries.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const matched = new Set<Doc>();
  const list: B[] = entries.map(([, q]) => {
    const f = ctx.filter(q);
    const ds = docs.filter(f);
    for (const d of ds) matched.add(d);
    return { b: { doc_count: ds.length }, docs: ds };
  });
  const otherOn = p.other_bucket === true || p.other_bucket_key !== undefined;
  if (otherOn) {
    const ds = docs.filter((d) => !matched.has(d));
    list.push({ b: { doc_count: ds.length }, docs: ds });
  }
  const done = finishBuckets(list, subs, ctx, name);
  if (keyed || p.keyed === true) {
    const out: JsonObject = {};
    entries.forEach(([k], i) => (out[k] = done[i]));
    if (otherOn) out[String(p.other_bucket_key ?? '_other_')] = done[done.length - 1];
    return { buckets: out };
  }
  return { buckets: done as Json };
}

function adjacency(name: string, p: JsonObject, subs: JsonObject | undefined, docs: Doc[], ctx: AggCtx): JsonObject {
  const spec = p.filters as JsonObject;
  if (!isObj(spec)) throw badAgg('[adjacency_matrix] needs [filters]');
  const sep = String(p.separator ?? '&');
  const names = Object.keys(spec).sort();
  const sets = names.map((n) => docs.filter(ctx.filter(spec[n])));
  const list: Array<B & { key: string }> = [];
  for (let i = 0; i < names.length; i++) {
    for (let j = i; j < names.length; j++) {
      const ds = i === j ? sets[i] : sets[i].filter((d) => sets[j].includes(d));
      if (ds.length) list.push({ key: i === j ? names[i] : `${names[i]}${sep}${names[j]}`, b: {}, docs: ds });
    }
  }
  list.sort((a, b) => (a.key < b.key ? -1 : 1));
  const done = finishBuckets(list.map((x) => ({ b: { key: x.key, doc_count: x.docs.length }, docs: x.docs })), subs, ctx, name);
  return { buckets: done as Json };
}

const javaDouble = (n: number): string => (Number.isInteger(n) ? `${n}.0` : String(n));

function ipRanges(name: string, p: JsonObject, subs: JsonObject | undefined, docs: Doc[], ctx: AggCtx, vs: ValueSource): JsonObject {
  const list = (p.ranges as JsonObject[]).map((r) => {
    let from: bigint | null = null, to: bigint | null = null;
    if (r.mask !== undefined) {
      const c = cidr(String(r.mask));
      if (!c) throw illegalArgument(`[${name}] invalid mask [${String(r.mask)}]`);
      [from, to] = c;
    } else {
      if (r.from !== undefined && r.from !== null) from = ipToBig(String(r.from));
      if (r.to !== undefined && r.to !== null) to = ipToBig(String(r.to));
    }
    const ds = docs.filter((d) => vs.values(d).some((v) => { const n = ipToBig(String(v)); return n !== null && (from === null || n >= from) && (to === null || n < to); }));
    const b: JsonObject = { key: r.key !== undefined ? String(r.key) : r.mask !== undefined ? String(r.mask) : `${from === null ? '*' : bigToIp(from)}-${to === null ? '*' : bigToIp(to)}` };
    if (from !== null) b.from = bigToIp(from);
    if (to !== null) b.to = bigToIp(to);
    b.doc_count = ds.length;
    return { b, docs: ds };
  });
  const done = finishBuckets(list, subs, ctx, name);
  if (p.keyed === true) {
    const out: JsonObject = {};
    done.forEach((b) => { const c = { ...b }; delete c.key; out[String(b.key)] = c; });
    return { buckets: out };
  }
  return { buckets: done as Json };
}

function ranges(name: string, type: string, p: JsonObject, subs: JsonObject | undefined, docs: Doc[], ctx: AggCtx): JsonObject {
  const vs = valueSource(ctx.ixs, p, name);
  const spec = p.ranges;
  if (!Array.isArray(spec) || !spec.length) throw illegalArgument(`No [ranges] specified for the [${name}] aggregation`);
  if (type === 'ip_range') return ipRanges(name, p, subs, docs, ctx, vs);
  const isDateAgg = type === 'date_range';
  const zone = p.time_zone as string | undefined;
  const fmt = p.format !== undefined ? String(p.format) : vs.format;
  const conv = (v: Json | undefined, up: boolean): number | null => {
    if (v === undefined || v === null) return null;
    if (isDateAgg || vs.kind === 'date') return parseDateMath(v, fmt ?? undefined, zone, up);
    const n = Number(v);
    if (!Number.isFinite(n)) throw new EsError(400, 'parsing_exception', `[${name}] range value [${String(v)}] is not a number`);
    return n;
  };
  const str = (n: number | null): string => (n === null ? '*' : isDateAgg || vs.kind === 'date' ? formatDate(n, fmt, zone) : javaDouble(n));
  const list: Array<B & { from: number | null; to: number | null }> = (spec as JsonObject[]).map((r) => {
    const from = conv(r.from, false), to = conv(r.to, false);
    const ds = docs.filter((d) => vs.values(d).some((v) => { const n = Number(v); return (from === null || n >= from) && (to === null || n < to); }));
    const b: JsonObject = { key: r.key !== undefined ? String(r.key) : `${str(from)}-${str(to)}` };
    if (from !== null) { b.from = from; if (isDateAgg || vs.kind === 'date') b.from_as_string = str(from); }
    if (to !== null) { b.to = to; if (isDateAgg || vs.kind === 'date') b.to_as_string = str(to); }
    b.doc_count = ds.length;
    return { b, docs: ds, from, to };
  });
  list.sort((x, y) => (x.from ?? -Infinity) - (y.from ?? -Infinity) || (x.to ?? Infinity) - (y.to ?? Infinity));
  const done = finishBuckets(list, subs, ctx, name);
  if (p.keyed === true) {
    const out: JsonObject = {};
    done.forEach((b) => { const k = String(b.key); const c = { ...b }; delete c.key; out[k] = c; });
    return { buckets: out };
  }
  return { buckets: done as Json };
}

function histogram(name: string, p: JsonObject, subs: JsonObject | undefined, docs: Doc[], ctx: AggCtx): JsonObject {
  const vs = valueSource(ctx.ixs, p, name);
  if (p.interval === undefined) throw illegalArgument(`[interval] must be >0 for histogram aggregation [${name}]`);
  const interval = Number(p.interval);
  if (!(interval > 0)) throw illegalArgument(`[interval] must be >0 for histogram aggregation [${name}]`);
  const offset = Number(p.offset ?? 0);
  const keyFn = (v: number) => Math.floor((v - offset) / interval) * interval + offset;
  const eb = isObj(p.extended_bounds) ? p.extended_bounds : undefined;
  return numericBuckets(name, p, subs, docs, ctx, vs, keyFn, (k) => k + interval, eb ? [Number(eb.min), Number(eb.max)] : undefined, (k) => (vs.kind === 'date' ? formatDate(k, vs.format) : p.format !== undefined ? decimalFormat(k, String(p.format)) : undefined));
}

const CAL: Record<string, string> = { minute: 'm', '1m': 'm', hour: 'h', '1h': 'h', day: 'd', '1d': 'd', week: 'w', '1w': 'w', month: 'M', '1M': 'M', quarter: 'q', '1q': 'q', year: 'y', '1y': 'y', second: 's', '1s': 's' };

function dateHistogram(name: string, p: JsonObject, subs: JsonObject | undefined, docs: Doc[], ctx: AggCtx): JsonObject {
  const vs = valueSource(ctx.ixs, p, name);
  const zone = p.time_zone as string | undefined;
  const fmt = p.format !== undefined ? String(p.format) : vs.format;
  const spec = (p.calendar_interval ?? p.fixed_interval ?? p.interval) as string | undefined;
  if (spec === undefined) throw illegalArgument(`Invalid interval specified, must be non-null and non-empty`);
  if (p.calendar_interval !== undefined && p.fixed_interval !== undefined) throw illegalArgument('Cannot use [fixed_interval] with [calendar_interval] configuration option.');
  const offsetMs = p.offset === undefined ? 0 : parseDuration(String(p.offset));
  let keyFn: (t: number) => number;
  let next: (k: number) => number;
  const cal = CAL[String(spec)];
  if (cal && p.fixed_interval === undefined) {
    if (p.calendar_interval !== undefined && !CAL[String(spec)]) throw illegalArgument(`The supplied interval [${spec}] could not be parsed as a calendar interval.`);
    keyFn = (t) => roundDown(t - offsetMs, cal, zone) + offsetMs;
    next = (k) => addUnit(k - offsetMs, 1, cal, zone) + offsetMs;
  } else {
    if (p.calendar_interval !== undefined) throw illegalArgument(`The supplied interval [${spec}] could not be parsed as a calendar interval.`);
    const ms = parseDuration(String(spec));
    keyFn = (t) => {
      const off = zoneOffsetAt(zone, t);
      return Math.floor((t + off - offsetMs) / ms) * ms + offsetMs - off;
    };
    next = (k) => k + ms;
  }
  const eb = isObj(p.extended_bounds) ? p.extended_bounds : undefined;
  const bounds = eb ? [parseDateMath(eb.min, fmt, zone), parseDateMath(eb.max, fmt, zone)] as [number, number] : undefined;
  return numericBuckets(name, p, subs, docs, ctx, { ...vs, kind: 'date' }, keyFn, next, bounds, (k) => formatDate(k, fmt, zone));
}

function zoneOffsetAt(zone: string | undefined, t: number): number {
  return zone ? zoneOffset(zone, t) : 0;
}

export function parseDuration(s: string): number {
  const m = /^(-?\d+(?:\.\d+)?)(ms|s|m|h|d|w|M|y|q)?$/.exec(s.trim().replace(/^\+/, ''));
  if (!m) throw illegalArgument(`failed to parse setting [date_histogram.fixedInterval] with value [${s}] as a time value: unit is missing or unrecognized`);
  const u: Record<string, number> = { ms: 1, s: 1000, m: 60000, h: 3600000, d: 86400000, w: 604800000 };
  if (m[2] === undefined) return Number(m[1]);
  if (!(m[2] in u)) throw illegalArgument(`failed to parse setting [date_histogram.fixedInterval] with value [${s}] as a time value: unit is missing or unrecognized`);
  return Number(m[1]) * u[m[2]];
}

function numericBuckets(name: string, p: JsonObject, subs: JsonObject | undefined, docs: Doc[], ctx: AggCtx, vs: ValueSource,
  keyFn: (v: number) => number, next: (k: number) => number, bounds: [number, number] | undefined, keyStr: (k: number) => string | undefined): JsonObject {
  const minDoc = p.min_doc_count === undefined ? 0 : Number(p.min_doc_count);
  const groups = new Map<number, Doc[]>();
  for (const d of docs) {
    const seen = new Set<number>();
    for (const v of vs.values(d)) {
      const n = Number(v);
      if (!Number.isFinite(n)) continue;
      const k = keyFn(n);
      if (seen.has(k)) continue;
      seen.add(k);
      const g = groups.get(k);
      if (g) g.push(d); else groups.set(k, [d]);
    }
  }
  let keys = [...groups.keys()].sort((a, b) => a - b);
  if (minDoc === 0 && (keys.length || bounds)) {
    let lo = keys.length ? keys[0] : keyFn(bounds![0]);
    let hi = keys.length ? keys[keys.length - 1] : keyFn(bounds![1]);
    if (bounds) { lo = Math.min(lo, keyFn(bounds[0])); hi = Math.max(hi, keyFn(bounds[1])); }
    const all: number[] = [];
    for (let k = lo; k <= hi && all.length < 100000; k = next(k)) all.push(k);
    keys = all;
  }
  const list = keys.map((k) => {
    const ds = groups.get(k) ?? [];
    const b: JsonObject = { key: k };
    const ks = keyStr(k);
    if (ks !== undefined) b.key_as_string = ks;
    b.doc_count = ds.length;
    return { b, docs: ds, key: k as Json };
  }).filter((x) => x.docs.length >= minDoc);
  if (p.order !== undefined) sortBuckets(list, parseOrder(p.order, []), (x) => (subs ? { ...x.b, ...subsFor(subs, x.docs, ctx) } : x.b));
  const done = finishBuckets(list, subs, ctx, name);
  if (p.keyed === true) {
    const out: JsonObject = {};
    for (const b of done) out[String(b.key_as_string ?? javaDouble(Number(b.key)))] = b;
    return { buckets: out };
  }
  return { buckets: done as Json };
}

function composite(name: string, p: JsonObject, subs: JsonObject | undefined, docs: Doc[], ctx: AggCtx): JsonObject {
  const sources = p.sources;
  if (sources === undefined) throw new EsError(400, 'x_content_parse_exception', `[1:1] [composite] failed to parse: Required [sources]`);
  if (!Array.isArray(sources) || !sources.length) throw illegalArgument(`Composite [sources] cannot be null or empty`);
  const names = (sources as unknown[]).map((s) => (isObj(s) ? Object.keys(s)[0] : undefined));
  const dups = [...new Set(names.filter((n, i) => n !== undefined && names.indexOf(n) !== i))];
  if (dups.length) throw illegalArgument(`Composite source names must be unique, found duplicates: [${dups.join(', ')}]`);
  const size = Number(p.size ?? 10);
  if (size > ctx.maxBuckets) {
    throw new EsError(400, 'too_many_buckets_exception', `Trying to create too many buckets. Must be less than or equal to: [${ctx.maxBuckets}] but was [${size}]. This limit can be set by changing the [search.max_buckets] cluster level setting.`, { max_buckets: ctx.maxBuckets });
  }
  const srcs = (sources as JsonObject[]).map((s) => {
    const [sname] = Object.keys(s);
    const def = s[sname] as JsonObject;
    const [kind] = Object.keys(def);
    const sp = def[kind] as JsonObject;
    const vs = valueSource(ctx.ixs, withoutMissing(sp), name);
    const desc = String(sp.order ?? 'asc') === 'desc';
    let key: (v: Json) => Json = (v) => keyOf(vs, v);
    if (kind === 'histogram') { const iv = Number(sp.interval); key = (v) => Math.floor(Number(v) / iv) * iv; }
    if (kind === 'date_histogram') {
      const spec = String(sp.calendar_interval ?? sp.fixed_interval ?? sp.interval);
      const cal = CAL[spec];
      key = cal ? (v) => roundDown(Number(v), cal, sp.time_zone as string | undefined) : (v) => { const ms = parseDuration(spec); return Math.floor(Number(v) / ms) * ms; };
    }
    const fmt = kind === 'date_histogram' ? (sp.format as string | undefined) ?? vs.format : undefined;
    return { sname, vs, desc, key, missingBucket: sp.missing_bucket === true, fmt, isDate: kind === 'date_histogram' };
  });
  const groups = new Map<string, { key: Json[]; docs: Doc[] }>();
  for (const d of docs) {
    let combos: Json[][] = [[]];
    for (const s of srcs) {
      const vals = [...new Set(s.vs.values(d).map((v) => JSON.stringify(s.key(v))))].map((x) => JSON.parse(x) as Json);
      if (!vals.length) { if (!s.missingBucket) { combos = []; break; } vals.push(null); }
      combos = combos.flatMap((c) => vals.map((v) => [...c, v]));
    }
    for (const c of combos) {
      const k = JSON.stringify(c);
      const g = groups.get(k);
      if (g) g.docs.push(d); else groups.set(k, { key: c, docs: [d] });
    }
  }
  const cmp = (a: Json[], b: Json[]) => {
    for (let i = 0; i < srcs.length; i++) {
      const x = a[i], y = b[i];
      let c = x === null && y === null ? 0 : x === null ? -1 : y === null ? 1 : compareKeys(x, y);
      if (srcs[i].desc) c = -c;
      if (c) return c;
    }
    return 0;
  };
  let list = [...groups.values()].sort((a, b) => cmp(a.key, b.key));
  if (isObj(p.after)) {
    const after = srcs.map((s) => {
      const v = (p.after as JsonObject)[s.sname];
      return s.isDate && typeof v === 'string' ? parseDateMath(v, s.fmt) : v;
    });
    list = list.filter((g) => cmp(g.key, after) > 0);
  }
  const page = list.slice(0, size);
  const keyObj = (k: Json[]) => Object.fromEntries(srcs.map((s, i) => [s.sname, s.fmt && typeof k[i] === 'number' ? formatDate(k[i] as number, s.fmt) : s.vs.kind === 'boolean' && k[i] !== null ? Boolean(k[i]) : k[i]]));
  const done = finishBuckets(page.map((g) => ({ b: { key: keyObj(g.key), doc_count: g.docs.length }, docs: g.docs })), subs, ctx, name);
  const out: JsonObject = {};
  if (page.length) out.after_key = keyObj(page[page.length - 1].key);
  out.buckets = done as Json;
  return out;
}

function withoutMissing(p: JsonObject): JsonObject {
  const out = { ...p };
  delete out.missing;
  return out;
}
