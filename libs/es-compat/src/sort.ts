/** Search sort: fields, _score, _doc, missing, mode, unmapped_type; and the `sort` values of hits. */
import { EsError, illegalArgument } from './errors';
import type { Doc, IndexView } from './doc';
import type { Json, JsonObject } from './mapping';
import { isDate, isNumeric, isText, nanosValues, queryValue } from './fields';
import { scriptRefused } from './query';

export interface SortSpec { readonly field: string; readonly desc: boolean; readonly missing: Json | '_last' | '_first'; readonly mode?: string; readonly unmappedType?: string; readonly format?: string }
export interface Hit { readonly doc: Doc; readonly score: number; sortValues?: Json[] }

const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Parses `sort` from a body (string, object or array) or the `sort=a:desc,b` parameter. */
export function parseSort(v: unknown): SortSpec[] {
  if (v === undefined || v === null) return [];
  const items = Array.isArray(v) ? v : typeof v === 'string' && !v.startsWith('{') ? v.split(',') : [v];
  const out: SortSpec[] = [];
  for (const it of items) {
    if (typeof it === 'string') {
      const [f, dir] = it.split(':');
      out.push({ field: f, desc: dir ? dir === 'desc' : f === '_score', missing: '_last' });
      continue;
    }
    if (!isObj(it)) throw new EsError(400, 'parsing_exception', 'malformed sort format, within the sort array, an object, or an actual string are allowed');
    for (const [f, o] of Object.entries(it)) {
      if (f === '_script') throw scriptRefused('_script sort');
      if (f === '_geo_distance') throw illegalArgument('[_geo_distance] sort is not supported: geo fields are kept in _source but not indexed by this service');
      if (typeof o === 'string') { out.push({ field: f, desc: o === 'desc', missing: '_last' }); continue; }
      const p = isObj(o) ? o : {};
      const order = p.order === undefined ? (f === '_score' ? 'desc' : 'asc') : String(p.order);
      if (order !== 'asc' && order !== 'desc') throw illegalArgument(`Unknown SortOrder [${order}]`);
      if (p.nested !== undefined || p.nested_path !== undefined) throw illegalArgument('nested sort is not supported: this service has no nested field type');
      out.push({ field: f, desc: order === 'desc', missing: (p.missing as Json) ?? '_last', mode: p.mode as string | undefined, unmappedType: p.unmapped_type as string | undefined, format: p.format as string | undefined });
    }
  }
  return out;
}

function fieldValue(h: Hit, s: SortSpec, ixs: IndexView[]): Json {
  const ix = h.doc.index;
  const f = ix.fields.get(s.field);
  if (!f || f.type === 'object') {
    if (!s.unmappedType && !ixs.some((x) => x.fields.has(s.field))) {
      throw new EsError(400, 'query_shard_exception', `No mapping found for [${s.field}] in order to sort on`, { index: ix.name, index_uuid: ix.uuid });
    }
    return null;
  }
  if (isText(f) && f.def.fielddata !== true) {
    throw illegalArgument(`Text fields are not optimised for operations that require per-document field data like aggregations and sorting, so these operations are disabled by default. Please use a keyword field instead. Alternatively, set fielddata=true on [${f.path}] in order to load field data by uninverting the inverted index. Note that this can use significant memory.`);
  }
  let vals = h.doc.values(f.path);
  if (f.type === 'boolean') vals = vals.map((v) => (v ? 1 : 0));
  if (!vals.length) return null;
  const mode = s.mode ?? (s.desc ? 'max' : 'min');
  // date_nanos sorts (and prints) its epoch nanoseconds, a long Elasticsearch compares as it compares a date's milliseconds
  if (f.type === 'date_nanos' && (mode === 'min' || mode === 'max')) {
    const ns = nanosValues(h.doc, f);
    return ns.reduce((a, b) => ((mode === 'min' ? b < a : b > a) ? b : a)) as unknown as Json;
  }
  const nums = vals.map(Number);
  switch (mode) {
    case 'min': return vals.reduce((a, b) => (cmp(b, a) < 0 ? b : a));
    case 'max': return vals.reduce((a, b) => (cmp(b, a) > 0 ? b : a));
    case 'sum': return nums.reduce((a, b) => a + b, 0);
    case 'avg': return nums.reduce((a, b) => a + b, 0) / nums.length;
    case 'median': { const x = [...nums].sort((a, b) => a - b); const m = x.length >> 1; return x.length % 2 ? x[m] : (x[m - 1] + x[m]) / 2; }
    default: throw illegalArgument(`Unknown MultiValueMode [${mode}]`);
  }
}

export function cmp(a: Json, b: Json): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  const x0 = a as unknown, y0 = b as unknown;
  if (typeof x0 === 'bigint' || typeof y0 === 'bigint') {
    // a date_nanos long beside a number: exact when the number is an integer
    if ((typeof x0 === 'number' && !Number.isInteger(x0)) || (typeof y0 === 'number' && !Number.isInteger(y0))) return Number(x0) - Number(y0);
    const bx = BigInt(x0 as bigint | number), by = BigInt(y0 as bigint | number);
    return bx < by ? -1 : bx > by ? 1 : 0;
  }
  const x = String(a), y = String(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Sorts hits in place and sets their `sortValues` (when the sort is not only _score). */
export function sortHits(hits: Hit[], specs: SortSpec[], ixs: IndexView[]): void {
  if (!specs.length) {
    hits.sort((a, b) => b.score - a.score || docOrder(a, b));
    return;
  }
  for (const h of hits) {
    h.sortValues = specs.map((s) => {
      if (s.field === '_score') return h.score;
      if (s.field === '_doc' || s.field === '_shard_doc') return h.doc.row._seq_no;
      if (s.field === '_id') return h.doc.id;
      if (s.field === '_index') return h.doc.index.name;
      if (s.field === '_seq_no') return h.doc.row._seq_no;
      const v = fieldValue(h, s, ixs);
      if (v === null && s.missing !== '_last' && s.missing !== '_first') {
        const f = h.doc.index.fields.get(s.field);
        return f ? queryValue(f, s.missing) : s.missing;
      }
      return v;
    });
  }
  hits.sort((a, b) => {
    for (let i = 0; i < specs.length; i++) {
      const s = specs[i];
      const x = a.sortValues![i], y = b.sortValues![i];
      if (x === null || y === null) {
        if (x === y) continue;
        const first = s.missing === '_first';
        return (x === null) === first ? -1 : 1;
      }
      const c = cmp(x, y);
      if (c) return s.desc ? -c : c;
    }
    return docOrder(a, b);
  });
}

const docOrder = (a: Hit, b: Hit): number => (a.doc.index.name < b.doc.index.name ? -1 : a.doc.index.name > b.doc.index.name ? 1 : a.doc.row._seq_no - b.doc.row._seq_no);

/** The `sort` array of a hit as Elasticsearch prints it (dates as epoch ms, booleans 0/1, missing as ±Long.MAX). */
export function printSortValues(h: Hit, specs: SortSpec[]): Json[] {
  return specs.map((s, i) => {
    const v = h.sortValues![i];
    if (v === null) {
      const f = h.doc.index.fields.get(s.field);
      if (!f || !(isNumeric(f) || isDate(f))) return null;
      // Elasticsearch's missing object: ±Infinity (printed quoted) for floating-point fields, ±Long.MAX for the rest (exact digits)
      const low = s.desc !== (s.missing === '_first');
      if (['double', 'float', 'half_float', 'scaled_float'].includes(f.type)) return low ? '-Infinity' : 'Infinity';
      return (low ? -9223372036854775808n : 9223372036854775807n) as unknown as Json;
    }
    return v;
  });
}

/** search_after: keeps hits strictly after `after` in the sort order. */
export function afterFilter(hits: Hit[], specs: SortSpec[], after: Json[]): Hit[] {
  if (after.length !== specs.length) {
    throw illegalArgument(`search_after has ${after.length} value(s) but sort has ${specs.length}.`);
  }
  return hits.filter((h) => {
    for (let i = 0; i < specs.length; i++) {
      const s = specs[i];
      let x = h.sortValues![i];
      let y = after[i];
      if (s.field === '_doc' || s.field === '_shard_doc' || s.field === '_score') { x = Number(x); y = Number(y); }
      else {
        const f = h.doc.index.fields.get(s.field);
        if (f && y !== null && (isNumeric(f) || isDate(f))) y = Number(y);
      }
      if (x === null) return false;
      const c = cmp(x, y);
      if (c) return s.desc ? c < 0 : c > 0;
    }
    return false;
  });
}

/** The first hit of each value of `field` (its first value; none: one group), in order: `collapse` (search.ts, topk-scored.ts). */
export function firstPerValue<H extends { doc: Doc }>(hits: H[], field: string): H[] {
  const seen = new Set<string>();
  return hits.filter((h) => {
    const v = h.doc.values(field);
    const k = v.length ? JSON.stringify(v[0]) : 'null';
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}
