/**
 * Single-pass bucket aggregations as calls of an aggregate node: `filter`, `filters` (keyed, a
 * list, `other_bucket`), `adjacency_matrix` (each filter and pair), `range` and `missing` are one conditional count per bucket, so they run in
 * the metrics node at the top level and in the grouped node under a terms aggregation (one count
 * per parent bucket). The answer is shaped from the node's row (`plan-aggs.ts`). Histograms and
 * date histograms group by their key (plan-series.ts `seriesSpec`) at either level.
 */
import { lit, type AggregateCall, type Expr } from '@mmdb/plan';
import type { Json, JsonObject } from './mapping';
import type { IndexView } from './doc';
import { fieldKind, filterExpr, typed, valueOf, type Kind, type MatchInput, type Metric } from './plan-aggs';
import { DEFAULT_DATE_FORMAT, formatDate, parseDateMath } from './dates';
import { bigToIp, cidr, ipToBig } from './ip';
import { fieldColumn } from './columns';

const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
const and = (l: Expr, r: Expr): Expr => ({ kind: 'binary', op: 'and', left: l, right: r });
const countIf = (name: string, when: Expr): AggregateCall => ({ name, fn: 'count', args: [{ kind: 'case', whens: [{ when, then: lit(1) }] }] });
/** A number as Java prints a double (range keys, keyed histograms). */
export const javaDouble = (n: number): string => (Number.isInteger(n) ? `${n}.0` : String(n));

/**
 * A filter / filters / range / missing aggregation: its conditional counts, named `<prefix>_<j>`,
 * and each bucket's condition (`conds`, in the same order: a sub-aggregation of bucket j runs over
 * the rows passing `conds[j]`, its answer given to `value` as `extras[j]`); null when it does not map.
 */
export function countAgg(ix: IndexView, type: string, p: JsonObject, prefix: string, fields: Map<string, Kind>, match?: MatchInput): CountAgg | null {
  const whens: Expr[] = [];
  let shape: (counts: number[], extras: JsonObject[]) => JsonObject;
  if (type === 'filter' || type === 'filters') {
    const named = type === 'filters' && isObj(p.filters);
    const entries: Array<[string, unknown]> = type === 'filter' ? [['', p]] : named ? Object.entries(p.filters as JsonObject) : Array.isArray(p.filters) ? p.filters.map((q, j) => [String(j), q]) : [];
    if (!entries.length || (type === 'filters' && Object.keys(p).some((k) => !['filters', 'other_bucket', 'other_bucket_key', 'keyed'].includes(k)))) return null;
    if (p.other_bucket !== undefined && typeof p.other_bucket !== 'boolean') return null;
    if (p.keyed !== undefined && typeof p.keyed !== 'boolean') return null;
    if (named) entries.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    for (const [, q] of entries) {
      const e = filterExpr(ix, q, fields, match);
      if (!e) return null;
      whens.push(e);
    }
    // the other bucket: documents no filter matches (a NULL predicate is no match)
    const other = type === 'filters' && (p.other_bucket === true || p.other_bucket_key !== undefined) ? String(p.other_bucket_key ?? '_other_') : undefined;
    if (other !== undefined) whens.push(whens.map((c): Expr => ({ kind: 'case', whens: [{ when: c, then: lit(false) }], else: lit(true) })).reduce(and));
    const keys = named || p.keyed === true ? [...entries.map(([k]) => k), ...(other !== undefined ? [other] : [])] : undefined;
    shape = (counts, extras) => {
      const bs = counts.map((c, j) => ({ doc_count: c, ...extras[j] }));
      if (type === 'filter') return bs[0];
      return { buckets: keys ? Object.fromEntries(keys.map((k, j) => [k, bs[j]])) : bs };
    };
  } else if (type === 'adjacency_matrix') {
    // each filter and each pair of them (names sorted, `separator`): a conditional count; the non-empty ones by key
    if (!isObj(p.filters) || !Object.keys(p.filters).length || Object.keys(p).some((k) => k !== 'filters' && k !== 'separator') || (p.separator !== undefined && typeof p.separator !== 'string')) return null;
    const spec = p.filters as JsonObject;
    const names = Object.keys(spec).sort();
    const exprs: Expr[] = [];
    for (const n of names) {
      const e = filterExpr(ix, spec[n], fields, match);
      if (!e) return null;
      exprs.push(e);
    }
    const sep = (p.separator as string | undefined) ?? '&';
    const keys: string[] = [];
    for (let i = 0; i < names.length; i++) {
      for (let j = i; j < names.length; j++) {
        keys.push(i === j ? names[i] : `${names[i]}${sep}${names[j]}`);
        whens.push(i === j ? exprs[i] : and(exprs[i], exprs[j]));
      }
    }
    shape = (counts, extras) => {
      const list = keys.map((key, j) => ({ key, doc_count: counts[j], ...extras[j] })).filter((b) => b.doc_count > 0);
      list.sort((a, b) => (a.key < b.key ? -1 : 1));
      return { buckets: list };
    };
  } else if (type === 'missing') {
    const k = typeof p.field === 'string' && Object.keys(p).length === 1 ? fieldKind(ix, p.field, 'filter') : null;
    if (!k) return null;
    fields.set(p.field as string, k);
    whens.push({ kind: 'is_null', arg: valueOf(p.field as string) });
    shape = (counts, extras) => ({ doc_count: counts[0], ...extras[0] });
  } else if (type === 'range' || type === 'date_range') {
    // numbers; dates (a date field's column, epoch ms) with bounds parsed and printed as the aggregation code does
    const field = p.field;
    const k = typeof field === 'string' ? fieldKind(ix, field, 'filter') : null;
    const date = k === 'time';
    if ((type === 'date_range' && !date) || (k !== 'integer' && k !== 'number' && !date) || !Array.isArray(p.ranges) || !p.ranges.length) return null;
    if (Object.keys(p).some((x) => !['field', 'ranges', 'keyed', ...(date ? ['format', 'time_zone'] : ['missing'])].includes(x)) || (p.keyed !== undefined && typeof p.keyed !== 'boolean')) return null;
    // `missing` (numbers): a document without a value counts as that value
    if (p.missing !== undefined && (typeof p.missing !== 'number' || !Number.isFinite(p.missing))) return null;
    if ((p.format !== undefined && typeof p.format !== 'string') || (p.time_zone !== undefined && typeof p.time_zone !== 'string')) return null;
    const fmt = date ? (p.format as string | undefined) ?? String(ix.fields.get(field as string)!.def.format ?? DEFAULT_DATE_FORMAT) : undefined;
    const zone = p.time_zone as string | undefined;
    const ranges: Array<{ from: number | null; to: number | null; key?: string }> = [];
    for (const r of p.ranges) {
      const bound = (v: unknown): number | null | undefined => {
        if (v === undefined || v === null) return null;
        if (!date) return typeof v === 'number' ? v : undefined;
        if (typeof v !== 'number' && typeof v !== 'string') return undefined;
        try {
          const t = parseDateMath(v, fmt, zone, false);
          return Number.isFinite(t) ? t : undefined;
        } catch {
          return undefined; // the aggregation code reports it
        }
      };
      if (!isObj(r) || Object.keys(r).some((x) => !['from', 'to', 'key'].includes(x)) || (r.key !== undefined && typeof r.key !== 'string')) return null;
      const from = bound(r.from), to = bound(r.to);
      if (from === undefined || to === undefined) return null;
      ranges.push({ from, to, ...(r.key !== undefined ? { key: r.key as string } : {}) });
    }
    fields.set(field as string, k);
    const value: Expr = p.missing === undefined ? valueOf(field as string) : { kind: 'call', name: 'coalesce', args: [valueOf(field as string), lit(p.missing)] };
    for (const r of ranges) {
      let when = p.missing === undefined ? typed(field as string, k) : lit(true);
      if (r.from !== null) when = and(when, { kind: 'binary', op: '>=', left: value, right: lit(r.from) });
      if (r.to !== null) when = and(when, { kind: 'binary', op: '<', left: value, right: lit(r.to) });
      whens.push(when);
    }
    const str = (n: number | null): string => (n === null ? '*' : date ? formatDate(n, fmt, zone) : javaDouble(n));
    shape = (counts, extras) => {
      const list = ranges.map((r, j) => {
        const b: JsonObject = { key: r.key ?? `${str(r.from)}-${str(r.to)}` };
        if (r.from !== null) { b.from = r.from; if (date) b.from_as_string = str(r.from); }
        if (r.to !== null) { b.to = r.to; if (date) b.to_as_string = str(r.to); }
        b.doc_count = counts[j];
        Object.assign(b, extras[j]);
        return { b, from: r.from, to: r.to };
      });
      list.sort((x, y) => (x.from ?? -Infinity) - (y.from ?? -Infinity) || (x.to ?? Infinity) - (y.to ?? Infinity));
      if (p.keyed === true) return { buckets: Object.fromEntries(list.map(({ b }) => { const c = { ...b }; delete c.key; return [String(b.key), c]; })) };
      return { buckets: list.map((x) => x.b) };
    };
  } else if (type === 'ip_range') {
    const r = ipRanges(ix, p, fields);
    if (!r) return null;
    whens.push(...r.whens);
    shape = r.shape;
  } else return null;
  return {
    calls: whens.map((w, j) => countIf(`${prefix}_${j}`, w)),
    conds: whens,
    value: (row, extras = []) => shape(whens.map((_, j) => Number(row[`${prefix}_${j}`])), whens.map((_, j) => extras[j] ?? {})),
    orderBy: () => null,
  };
}

export interface CountAgg extends Metric {
  readonly conds: Expr[];
  readonly value: (row: Record<string, unknown>, extras?: JsonObject[]) => JsonObject;
}

/** One aggregation's body split into its type, its parameters and its sub-aggregations (`aggs`), or null when malformed. */
export function aggBody(body: unknown): { type: string; p: JsonObject; sub: unknown } | null {
  if (!isObj(body)) return null;
  const types = Object.keys(body).filter((k) => k !== 'aggs' && k !== 'aggregations');
  if (types.length !== 1 || Object.keys(body).length > 2) return null;
  const p = body[types[0]];
  return isObj(p) ? { type: types[0], p, sub: body.aggs ?? body.aggregations } : null;
}

/** The buckets of an aggregation's answer, at any depth (search.max_buckets counts them all). */
export function bucketCount(v: Json | undefined): number {
  if (!isObj(v)) return 0;
  let n = 0;
  const bs = v.buckets;
  const list = Array.isArray(bs) ? bs : isObj(bs) ? Object.values(bs) : [];
  n += list.length;
  for (const b of list) if (isObj(b)) for (const x of Object.values(b)) n += bucketCount(x);
  return n;
}

/**
 * `ip_range` over an ip field's column (32 hex digits of the 128-bit address: columns.ts `ipKey`,
 * so string order is address order): one conditional count per range, `from` inclusive and `to`
 * exclusive, a `mask` as its CIDR block, bounds parsed and printed as the aggregation code does
 * (ip.ts; a bound that is no address is open there too), ranges in the order given.
 */
function ipRanges(ix: IndexView, p: JsonObject, fields: Map<string, Kind>): { whens: Expr[]; shape: (counts: number[], extras: JsonObject[]) => JsonObject } | null {
  const field = p.field;
  const f = typeof field === 'string' ? ix.fields.get(field) : undefined;
  if (!f || f.type !== 'ip' || f.aliasOf !== undefined || f.def.index === false || f.def.doc_values === false || !fieldColumn(ix, field as string)) return null;
  if (Object.keys(p).some((x) => !['field', 'ranges', 'keyed'].includes(x)) || !Array.isArray(p.ranges) || !p.ranges.length || (p.keyed !== undefined && typeof p.keyed !== 'boolean')) return null;
  const ranges: Array<{ from: bigint | null; to: bigint | null; key: string }> = [];
  for (const r of p.ranges) {
    if (!isObj(r) || Object.keys(r).some((x) => !['from', 'to', 'key', 'mask'].includes(x))) return null;
    let from: bigint | null = null, to: bigint | null = null;
    if (r.mask !== undefined) {
      let c: [bigint, bigint] | null = null;
      try {
        c = cidr(String(r.mask));
      } catch {
        // a prefix past the address's bits
      }
      if (!c) return null; // the aggregation code reports it
      [from, to] = c;
    } else {
      if (r.from !== undefined && r.from !== null) from = ipToBig(String(r.from));
      if (r.to !== undefined && r.to !== null) to = ipToBig(String(r.to));
    }
    const key = r.key !== undefined ? String(r.key) : r.mask !== undefined ? String(r.mask) : `${from === null ? '*' : bigToIp(from)}-${to === null ? '*' : bigToIp(to)}`;
    ranges.push({ from, to, key });
  }
  const name = field as string;
  fields.set(name, 'keyword'); // a str column: the typed check covers it
  const hex = (n: bigint): Expr => lit(n.toString(16).padStart(32, '0'));
  const whens = ranges.map((r) => {
    let when: Expr = { kind: 'is_null', arg: valueOf(name), not: true };
    if (r.from !== null) when = and(when, { kind: 'binary', op: '>=', left: valueOf(name), right: hex(r.from) });
    // past the last address (a /0 block's end): no upper bound
    if (r.to !== null) when = r.to >= 1n << 128n ? when : and(when, { kind: 'binary', op: '<', left: valueOf(name), right: hex(r.to) });
    return when;
  });
  const shape = (counts: number[], extras: JsonObject[]): JsonObject => {
    const list = ranges.map((r, j) => {
      const b: JsonObject = { key: r.key };
      if (r.from !== null) b.from = bigToIp(r.from);
      if (r.to !== null) b.to = bigToIp(r.to);
      b.doc_count = counts[j];
      return Object.assign(b, extras[j]);
    });
    if (p.keyed === true) return { buckets: Object.fromEntries(list.map((b) => { const c = { ...b }; delete c.key; return [String(b.key), c]; })) };
    return { buckets: list };
  };
  return { whens, shape };
}
