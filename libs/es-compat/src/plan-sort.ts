/**
 * A page of hits sorted by fields, as plan nodes. A search (size > 0) whose query maps as for
 * the aggregate plans (absent, `match_all`, a bool of exact filters, or a `match` over
 * `fts_search(limit null)`: `plan-aggs.ts`) and whose `sort` names keyword, integer or double
 * and date fields (`asc`/`desc`, `missing` `_last`, `_first` or a value, `mode`, `unmapped_type`, `format`) compiles to
 *   `project(limit(sort(filter(I, predicate), [each field's value, nulls last or first, _seq_no]), from + size), [doc columns])`
 * and `aggregate(filter(I, predicate), [], [count(*)])` for the total. Ties are broken by
 * `_seq_no` as the full search breaks them (`sort.ts`). The values must be plain (one JSON value
 * of the field's type: an array sorts by its min or max in Elasticsearch, a string in a long
 * field is coerced), checked by the same cached plan as the aggregations; anything else takes
 * the full search over the view. A `collapse` on a field (no inner_hits) is
 *   `filter(window(I, [row_number() partitioned by the field's value, in the sort's order]), rn = 1)`
 * under the sort: the first document of each value, as the full search keeps it.
 */
import { aggregate, col, filter, limit, lit, project, sort, windowNode, type Expr, type PlanNode, type SortKey, type WindowCall } from '@mmdb/plan';
import { Doc, type IndexView } from './doc';
import type { Json, JsonObject } from './mapping';
import { queryValue } from './fields';
import type { IndexRef } from './indices';
import type { EsBackend } from './port';
import { COLS, toDocRow } from './state';
import { fieldKind, plainValues, queryInput, valueOf, type Kind, type MatchInput } from './plan-aggs';
import { multiInput } from './plan-any-value';
import { unnestField } from './plan-multi';
import { typedMulti } from './typed';

const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
/** Body keys a sorted page may carry. */
const KEYS = new Set(['query', 'from', 'size', 'sort', '_source', 'track_total_hits', 'version', 'seq_no_primary_term', 'timeout', 'stats', 'collapse', 'search_after']);
/** Field types a collapse reads (the full search reports the others). */
const COLLAPSIBLE = new Set(['keyword', 'long', 'integer', 'short', 'byte', 'double', 'float', 'half_float', 'scaled_float', 'date']);
/** The largest from + size answered by the plan (deeper pages take the full search). */
const MAX_WINDOW = 1000;

const MODES = new Set(['min', 'max', 'sum', 'avg', 'median']);

/**
 * The sort of a body as plain field sorts, or null when it names anything else. `missing` is
 * `_last`, `_first` or a value (sorted as the field's value, `queryValue`: sort.ts); `mode` is any
 * of sort.ts's (every document holds one value here: each mode gives that value; keywords take
 * min / max only); `unmapped_type` has no effect on a mapped field; `format` only prints.
 */
type SortSpec = { field: string; desc: boolean; first: boolean; missing?: unknown; numericMode: boolean; mode?: string };

function sortFields(v: unknown): SortSpec[] | null {
  const items = Array.isArray(v) ? v : [v];
  if (!items.length) return null;
  const out: SortSpec[] = [];
  for (const it of items) {
    if (typeof it === 'string') {
      if (it.includes(':') || it.includes(',') || (it.startsWith('_') && it !== '_doc' && it !== '_id')) return null;
      out.push({ field: it, desc: false, first: false, numericMode: false });
      continue;
    }
    if (!isObj(it) || Object.keys(it).length !== 1) return null;
    const [f] = Object.keys(it);
    if (f.startsWith('_') && f !== '_doc' && f !== '_id') return null;
    const o = it[f];
    const order = typeof o === 'string' ? o : isObj(o) && Object.keys(o).every((k) => ['order', 'missing', 'mode', 'unmapped_type', 'format'].includes(k)) ? (o.order ?? 'asc') : null;
    const missing = isObj(o) ? o.missing ?? '_last' : '_last';
    const mode = isObj(o) ? o.mode : undefined;
    if ((order !== 'asc' && order !== 'desc') || (mode !== undefined && !MODES.has(String(mode)))) return null;
    const literal = missing !== '_last' && missing !== '_first';
    if (literal && typeof missing !== 'string' && typeof missing !== 'number') return null;
    out.push({ field: f, desc: order === 'desc', first: missing === '_first', ...(literal ? { missing } : {}), numericMode: mode !== undefined && mode !== 'min' && mode !== 'max', ...(mode !== undefined ? { mode: String(mode) } : {}) });
  }
  return out;
}

/**
 * A field's sort value over the values a document holds (`mode` min or max, Elasticsearch's
 * default by order; sum, avg or median of a number field's): its one value, else `(select
 * min|max|sum|avg(v) from unnest(one row, the row's values))`, the median the mean of the middle
 * one or two by `row_number()` over the values ascending.
 */
function extreme(field: string, k: Kind, mode: string): Expr {
  const one: PlanNode = { op: 'values', columns: ['_one'], rows: [[lit(1)]] };
  const values = unnestField(one, field, k, false);
  const real: Expr = { kind: 'cast', arg: valueOf(field), to: 'real' };
  let pick: PlanNode;
  if (mode === 'median') {
    // the middle value (odd count) or the mean of the two middle ones: positions ⌊(n + 1) / 2⌋ and ⌊n / 2⌋ + 1 in ascending order
    const ranked = windowNode(values, [
      { name: '_rn', fn: 'row_number', args: [], partition: [], order: [{ expr: valueOf(field) }] },
      { name: '_n', fn: 'count', args: [], star: true, partition: [], order: [] },
    ]);
    const half = (e: Expr): Expr => ({ kind: 'cast', arg: { kind: 'binary', op: '*', left: e, right: lit(0.5) }, to: 'integer' });
    const lo = half({ kind: 'binary', op: '+', left: col('_n'), right: lit(1) });
    const hi: Expr = { kind: 'binary', op: '+', left: half(col('_n')), right: lit(1) };
    const middle: Expr = { kind: 'binary', op: 'or', left: { kind: 'binary', op: '=', left: col('_rn'), right: lo }, right: { kind: 'binary', op: '=', left: col('_rn'), right: hi } };
    pick = aggregate(filter(ranked, middle), [], [{ name: 'v', fn: 'avg', args: [real] }]);
  } else {
    const fn = mode === 'max' || mode === 'sum' || mode === 'avg' ? mode : 'min';
    // sum / avg: the values in document order, as sort.ts adds them (the unnest keeps the array's order)
    pick = aggregate(values, [], [{ name: 'v', fn, args: [fn === 'sum' || fn === 'avg' ? real : valueOf(field)] }]);
  }
  return { kind: 'case', whens: [{ when: { kind: 'is_null', arg: valueOf(field), not: true }, then: valueOf(field) }], else: { kind: 'subquery', plan: pick } };
}

/**
 * `search_after` as sort.ts `afterFilter` reads it: a document comes after the values when, at the
 * first sort key where it differs from them, it is past them in the key's direction; a document
 * reaching a key it has no value for (no `missing` value) does not. `OR_i (k_1 = v_1 ∧ … ∧ k_(i-1) =
 * v_(i-1) ∧ k_i is not null ∧ k_i > v_i (< descending))`. Null when a value is not of the key's
 * kind (the full search compares it as it does).
 */
function afterCond(ix: IndexView, specs: SortSpec[], keys: SortKey[], after: unknown[], fields: Map<string, Kind>): Expr | null {
  const bin = (op: string, left: Expr, right: Expr): Expr => ({ kind: 'binary', op, left, right } as Expr);
  const values: Expr[] = [];
  for (let i = 0; i < specs.length; i++) {
    const f = specs[i].field, y = after[i];
    const k = f === '_doc' ? 'integer' : f === '_id' ? 'keyword' : fields.get(f);
    // (a date of an index without typed columns sorts by its `_source` string: the full search compares it)
    if (!k || k === 'date' || (f !== '_doc' && f !== '_id' && ix.fields.get(f)?.type === 'boolean')) return null;
    const v = k === 'keyword' ? (typeof y === 'string' ? y : null) : typeof y === 'number' || (typeof y === 'string' && y.trim() !== '') ? Number(y) : null;
    if (v === null || (typeof v === 'number' && !Number.isFinite(v))) return null;
    values.push(lit(v));
  }
  let cond: Expr | null = null;
  for (let i = 0; i < specs.length; i++) {
    let term: Expr = bin('and', { kind: 'is_null', arg: keys[i].expr, not: true }, bin(specs[i].desc ? '<' : '>', keys[i].expr, values[i]));
    for (let j = i - 1; j >= 0; j--) term = bin('and', bin('=', keys[j].expr, values[j]), term);
    cond = cond ? bin('or', cond, term) : term;
  }
  return cond;
}

/** The sorted page's documents in order and the exact total, or null when the search does not have that shape. */
export async function sortedPage(backend: EsBackend, ref: IndexRef, ix: IndexView, lsn: number, b: JsonObject, match: MatchInput): Promise<{ docs: Doc[]; total: number; plan: JsonObject } | null> {
  if (ref.readOnly || b.sort === undefined || Object.keys(b).some((k) => !KEYS.has(k))) return null;
  const from = b.from === undefined ? 0 : b.from, size = b.size === undefined ? 10 : b.size;
  if (!Number.isInteger(from) || !Number.isInteger(size) || (from as number) < 0 || (size as number) < 1 || (from as number) + (size as number) > MAX_WINDOW) return null;
  const specs = sortFields(b.sort);
  if (!specs) return null;
  const queryFields = new Map<string, Kind>();
  let input = queryInput(ref, ix, b.query, queryFields, match);
  if (!input) return null;
  // the sort's (and collapse's) fields hold one value per document; the query's clauses on a multi-valued field match any value
  const fields = new Map<string, Kind>();
  // the sort's fields some documents hold several values of (held in `_mv`): min or max of them (`extreme`)
  const sortKeys = (multi: ReadonlySet<string>): SortKey[] | null => {
    const keys: SortKey[] = [];
    for (const s of specs) {
      // `_doc`: index order, the documents' `_seq_no`; `_id`: the id, compared as strings (as sort.ts reads them)
      if (s.field === '_doc' || s.field === '_id') { keys.push({ expr: col(s.field === '_doc' ? '_seq_no' : '_id'), desc: s.desc }); continue; }
      const k = fieldKind(ix, s.field, 'filter');
      // several values: min / max, and sum / avg of a number field's (`median` stays with sort.ts)
      const summed = s.mode === 'sum' || s.mode === 'avg' || s.mode === 'median';
      if (!k || (k === 'keyword' && s.numericMode) || (multi.has(s.field) && s.numericMode && !(summed && (k === 'integer' || k === 'number')))) return null;
      fields.set(s.field, k);
      let expr: Expr = multi.has(s.field) ? extreme(s.field, k, s.mode ?? (s.desc ? 'max' : 'min')) : valueOf(s.field);
      if (s.missing !== undefined) {
        // a document without a value sorts as the value `missing` gives (as sort.ts reads it)
        let m: Json;
        try {
          m = queryValue(ix.fields.get(s.field)!, s.missing as Json);
        } catch {
          return null; // the full search reports it
        }
        if (k === 'keyword' ? typeof m !== 'string' : typeof m !== 'number' || !Number.isFinite(m)) return null;
        expr = { kind: 'call', name: 'coalesce', args: [expr, lit(m)] };
      }
      keys.push({ expr, desc: s.desc, nulls: s.first ? 'first' : 'last' });
    }
    keys.push({ expr: col('_seq_no') });
    return keys;
  };
  let keys = sortKeys(new Set());
  if (!keys) return null;
  // `collapse` on a field: the first document of each value in the sort's order (documents without one: one group), the total uncollapsed
  let collapsed: WindowCall | null = null;
  if (b.collapse !== undefined) {
    const c = b.collapse;
    const cf = isObj(c) && Object.keys(c).length === 1 && typeof c.field === 'string' ? c.field : undefined;
    const k = cf === undefined ? null : fieldKind(ix, cf, 'filter');
    if (!cf || !k || k === 'date' || !COLLAPSIBLE.has(ix.fields.get(cf)!.type)) return null;
    fields.set(cf, k);
    collapsed = { name: '_rn', fn: 'row_number', args: [], partition: [valueOf(cf)], order: keys };
  }
  if (!(await plainValues(backend, ref, lsn, fields))) {
    const sorted = specs.map((x) => x.field).filter((f) => fields.has(f));
    const multi = ref.meta.mv && !collapsed ? await typedMulti(backend, ref, lsn, sorted.filter((f) => fields.get(f) !== 'date')) : null;
    if (!multi?.length) return null;
    keys = sortKeys(new Set(multi));
    if (!keys || !(await plainValues(backend, ref, lsn, new Map([...fields].filter(([f]) => !multi.includes(f)))))) return null;
  }
  if (!(await plainValues(backend, ref, lsn, queryFields))) {
    const aware = ref.meta.mv ? await multiInput(backend, ref, ix, lsn, b.query, match) : null;
    if (!aware) return null;
    input = aware;
  }
  let page: PlanNode = collapsed ? filter(windowNode(input, [collapsed]), { kind: 'binary', op: '=', left: col('_rn'), right: lit(1) }) : input;
  if (b.search_after !== undefined) {
    // the documents after the given sort values (the total stays the query's); anything else the full search reports
    const after = b.search_after;
    if (!Array.isArray(after) || after.length !== specs.length || from !== 0 || collapsed) return null;
    const cond = afterCond(ix, specs, keys!, after, fields);
    if (!cond) return null;
    page = filter(page, cond);
  }
  const [count] = await backend.read(aggregate(input, [], [{ name: 'total', fn: 'count', args: [], star: true }]));
  const plan = project(limit(sort(page, keys!), lit((from as number) + (size as number))), COLS.map((c) => ({ name: c, expr: col(c) })));
  const rows = await backend.read(plan);
  return { docs: rows.map((r) => new Doc(toDocRow(r), ix)), total: Number(count.total), plan: plan as unknown as JsonObject };
}
