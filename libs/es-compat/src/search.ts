/** A search request over index views: query, post_filter, sort, paging, hits, aggregations, suggest. */
import { EsError, illegalArgument, indexNotFound, parsingError } from './errors';
import type { Doc, IndexView } from './doc';
import type { Json, JsonObject } from './mapping';
import { compile, scriptRefused } from './query';
import { candidates } from './candidates';
import type { Retrieval } from './retrieval';
import { runAggs, type AggCtx } from './aggs';
import { runSuggest } from './suggest';
import { highlightDoc } from './highlight';
import { filterSource, sourceParams, sourceSpec, type SourceSpec } from './source-filter';
import { afterFilter, firstPerValue, parseSort, printSortValues, sortHits, type Hit, type SortSpec } from './sort';
import { formatDate, DEFAULT_DATE_FORMAT } from './dates';
import { skippedShards } from './can-match';
import { isDate, isKeyword, isNumeric, nanosValues } from './fields';
import { decimalFormat, maxOf } from './agg-util';

const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
type Params = Record<string, string | undefined>;

const BODY_KEYS = new Set(['query', 'from', 'size', 'sort', '_source', 'aggs', 'aggregations', 'post_filter', 'highlight', 'track_total_hits', 'min_score', 'explain', 'version', 'seq_no_primary_term', 'docvalue_fields', 'stored_fields', 'search_after', 'suggest', 'timeout', 'terminate_after', 'track_scores', 'collapse', 'rescore', 'script_fields', 'indices_boost', 'pit', 'profile', 'fields', 'runtime_mappings', 'ext', 'slice', 'stats']);

export interface SearchEnv {
  readonly lookup?: (index: string, id: string) => JsonObject | undefined;
  readonly maxBuckets: number;
  readonly maxResultWindow: number;
  readonly now?: number;
  /** Text lookups answered by fts_search plans (see retrieval.ts). */
  readonly retrieval?: Retrieval;
  /**
   * The hits of a top-k plan (topk.ts), in order, and the total: only these are scored and shaped;
   * `unordered`: the first `terminate_after` matches in index order (plan-first.ts), ranked here.
   */
  readonly topK?: { readonly docs: readonly Doc[]; readonly total: number; readonly unordered?: boolean; readonly terminatedEarly?: boolean };
}

/** A prepared search: every matching hit in order, and how to print one. */
export interface Prepared {
  readonly hits: Hit[];
  readonly total: number;
  readonly sort: SortSpec[];
  readonly from: number;
  readonly size: number;
  readonly format: (h: Hit) => JsonObject;
  readonly aggregations?: JsonObject;
  readonly suggest?: JsonObject;
  readonly maxScore: number | null;
  readonly trackTotal: boolean | number;
  readonly restInt: boolean;
  /** Shards searched (each index has its `number_of_shards`, all answered by this one node). */
  readonly indices: number;
  /** Shards the can-match phase skipped (can-match.ts). */
  readonly skipped?: number;
  readonly reducePhases?: number;
  /** With `terminate_after`: whether some shard stopped collecting at it (Elasticsearch's `terminated_early`). */
  readonly terminatedEarly?: boolean;
}

function num(v: unknown, name: string): number | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  const n = Number(v);
  if (!Number.isInteger(n)) throw parsingError(`[${name}] failed to parse field [${name}]`);
  return n;
}

/** Folds query-string parameters (q, from, size, sort, ...) into the body, as Elasticsearch does. */
export function mergeParams(body: JsonObject, q: Params): JsonObject {
  const b: JsonObject = { ...body };
  for (const k of Object.keys(b)) if (!BODY_KEYS.has(k)) throw parsingError(`Unknown key for a ${typeof b[k] === 'object' && b[k] !== null ? (Array.isArray(b[k]) ? 'START_ARRAY' : 'START_OBJECT') : 'VALUE_STRING'} in [${k}].`);
  if (q.q !== undefined) {
    b.query = { query_string: { query: q.q, ...(q.df ? { default_field: q.df } : {}), ...(q.default_operator ? { default_operator: q.default_operator } : {}), ...(q.analyzer ? { analyzer: q.analyzer } : {}), ...(q.lenient ? { lenient: q.lenient === 'true' } : {}), ...(q.analyze_wildcard ? { analyze_wildcard: q.analyze_wildcard === 'true' } : {}) } };
  }
  if (q.from !== undefined) b.from = num(q.from, 'from')!;
  if (q.size !== undefined) b.size = num(q.size, 'size')!;
  if (q.sort !== undefined) b.sort = q.sort;
  if (q.track_total_hits !== undefined) b.track_total_hits = q.track_total_hits === 'true' ? true : q.track_total_hits === 'false' ? false : Number(q.track_total_hits);
  if (q.version !== undefined) b.version = q.version === 'true';
  if (q.seq_no_primary_term !== undefined) b.seq_no_primary_term = q.seq_no_primary_term === 'true';
  if (q.explain !== undefined) b.explain = q.explain === 'true';
  if (q.track_scores !== undefined) b.track_scores = q.track_scores === 'true';
  if (q.stored_fields !== undefined) b.stored_fields = q.stored_fields.split(',');
  if (q.docvalue_fields !== undefined) b.docvalue_fields = q.docvalue_fields.split(',');
  if (q.terminate_after !== undefined) b.terminate_after = Number(q.terminate_after);
  if (q.min_score !== undefined) b.min_score = Number(q.min_score);
  const src = sourceParams(q);
  if (src) b._source = { includes: src.includes, excludes: src.excludes, ...(src.enabled ? {} : { _disabled: true }) } as JsonObject;
  return b;
}

/** search_type: the two the REST layer takes (one shard: both search alike); the others as Elasticsearch refuses them. */
export function checkSearchType(q: Params): void {
  if (q.pre_filter_shard_size !== undefined && !(Number(q.pre_filter_shard_size) >= 1)) throw illegalArgument('preFilterShardSize must be >= 1');
  const st = q.search_type;
  if (st === undefined || st === 'query_then_fetch' || st === 'dfs_query_then_fetch') return;
  throw illegalArgument(st === 'query_and_fetch' || st === 'dfs_query_and_fetch' ? `Unsupported search type [${st}]` : `No search type for [${st}]`);
}

export function prepareSearch(views: IndexView[], body: JsonObject, q: Params, env: SearchEnv): Prepared {
  const b = mergeParams(body, q);
  checkSearchType(q);
  const minSetting = (key: string, dflt: number) => (views.length ? Math.min(...views.map((v) => Number((v.settings as JsonObject)[key] ?? dflt))) : dflt);
  if (isObj(b.script_fields)) {
    const max = minSetting('index.max_script_fields', 32);
    const n = Object.keys(b.script_fields).length;
    if (n > max) throw illegalArgument(`Trying to retrieve too many script_fields. Must be less than or equal to: [${max}] but was [${n}]. This limit can be set by changing the [index.max_script_fields] index level setting.`);
  }
  if (b.script_fields !== undefined) throw scriptRefused('script_fields');
  const dvCount = (Array.isArray(b.docvalue_fields) ? b.docvalue_fields.length : 0);
  const maxDv = minSetting('index.max_docvalue_fields_search', 100);
  if (dvCount > maxDv) throw illegalArgument(`Trying to retrieve too many docvalue_fields. Must be less than or equal to: [${maxDv}] but was [${dvCount}]. This limit can be set by changing the [index.max_docvalue_fields_search] index level setting.`);
  if (typeof b.track_total_hits === 'number' && b.track_total_hits < -1) throw illegalArgument(`[track_total_hits] parameter must be positive or equals to -1, got ${b.track_total_hits}`);
  if (b.track_total_hits === -1) b.track_total_hits = true;
  if (q.batched_reduce_size !== undefined && Number(q.batched_reduce_size) < 2) {
    throw new EsError(400, 'action_request_validation_exception', 'Validation Failed: 1: batchedReduceSize must be >= 2;');
  }
  const from = b.from === undefined ? 0 : Number(b.from);
  const size = b.size === undefined ? 10 : Number(b.size);
  if (!Number.isInteger(from)) throw parsingError(`[from] failed to parse field [from]: [${String(b.from)}] is not an integer`);
  if (!Number.isInteger(size)) throw parsingError(`[size] failed to parse field [size]: [${String(b.size)}] is not an integer`);
  if (from < 0) throw illegalArgument(`[from] parameter cannot be negative, found [${from}]`);
  if (size < 0) throw illegalArgument(`[size] parameter cannot be negative, found [${size}]`);
  const restInt = q.rest_total_hits_as_int === 'true';
  const trackTotal: boolean | number = b.track_total_hits === undefined ? (restInt ? true : 10000) : (b.track_total_hits as boolean | number);
  if (restInt && trackTotal !== true && trackTotal !== false) {
    throw new EsError(400, 'action_request_validation_exception', `Validation Failed: 1: [rest_total_hits_as_int] cannot be used if the tracking of total hits is not accurate, got ${String(trackTotal)};`);
  }
  const window = views.length ? Math.min(...views.map((v) => maxWindow(v, env))) : env.maxResultWindow;
  if (q.scroll && size > window) {
    throw illegalArgument(`Batch size is too large, size must be less than or equal to: [${window}] but was [${size}]. Scroll batch sizes cost as much memory as result windows so they are controlled by the [index.max_result_window] index level setting.`);
  }
  const rescores = b.rescore === undefined ? [] : (Array.isArray(b.rescore) ? b.rescore : [b.rescore]) as JsonObject[];
  for (const r of rescores) {
    const ws = Number(r.window_size ?? 10);
    const maxRescore = minSetting('index.max_rescore_window', window);
    if (ws > maxRescore) throw illegalArgument(`Rescore window [${ws}] is too large. It must be less than [${maxRescore}]. This prevents allocating massive heaps for storing the results to be rescored. This limit can be set by changing the [index.max_rescore_window] index level setting.`);
  }
  if (!q.scroll && from + size > window) {
    throw illegalArgument(`Result window is too large, from + size must be less than or equal to: [${window}] but was [${from + size}]. See the scroll api for a more efficient way to request large data sets. This limit can be set by changing the [index.max_result_window] index level setting.`);
  }
  const sort = parseSort(b.sort);
  const typedKeys = q.typed_keys === 'true';
  const minScore = b.min_score === undefined ? null : Number(b.min_score);
  const terminateAfter = terminateAfterOf(b.terminate_after);
  let terminatedEarly = false;
  const all: Hit[] = [];
  const matched: Doc[] = [];
  const boosts = indicesBoost(b.indices_boost, views, (ix) => Object.keys((views.find((v) => v.name === ix)?.aliases ?? {})), q.ignore_unavailable === 'true');
  for (const ix of views) {
    const scorer = compile({ ix, lookup: env.lookup }, b.query);
    const post = b.post_filter === undefined ? null : compile({ ix, lookup: env.lookup }, b.post_filter);
    const boost = boosts.get(ix.name) ?? 1;
    const cand = env.topK ? null : candidates(ix, b.query, env.retrieval);
    // terminate_after: each shard (index) collects, in index order, at most that many documents
    // the min_score and post_filter accept (Elasticsearch's EarlyTerminatingCollector), then stops
    let collected = 0;
    // the top-k plans' hits of this index (several indices: search-api.ts topKOfIndices)
    // (by name: an index through a filtered alias is searched as its filtered view, its hits are the whole view's documents)
    const tops = env.topK && (views.length === 1 ? env.topK.docs : env.topK.docs.filter((x) => x.index.name === ix.name));
    for (const d of tops ?? (cand ? ix.docs.filter((x) => cand.has(x)) : ix.docs)) {
      let s = scorer(d);
      if (s === null) continue;
      s *= boost;
      if (minScore !== null && s < minScore) continue;
      const passes = !post || post(d) !== null;
      if (passes && terminateAfter !== null && ++collected > terminateAfter) {
        terminatedEarly = true;
        break;
      }
      matched.push(d);
      if (!passes) continue;
      all.push({ doc: d, score: s });
    }
  }
  // a plain relevance search needs only its page in order: select the best from+size, do not sort every hit
  const pageOnly = !sort.length && !q.scroll && b.search_after === undefined && b.collapse === undefined && !rescores.length && from + size <= 100;
  // the top-k hits are in order per index; several indices merge by score, then index name (a stable sort keeps each index's order)
  if (env.topK && !env.topK.unordered && !sort.length) { if (views.length > 1) all.sort((a, b) => b.score - a.score || (a.doc.index.name < b.doc.index.name ? -1 : a.doc.index.name > b.doc.index.name ? 1 : 0)); } else if (pageOnly) topInPlace(all, from + size);
  else sortHits(all, sort, views);
  if (rescores.length && !sort.length) rescore(all, rescores, env);
  let hits = all;
  if (b.search_after !== undefined) {
    if (!Array.isArray(b.search_after)) throw parsingError('[search_after] must be an array');
    if (!sort.length) throw illegalArgument('Sort must contain at least one field.');
    if (from > 0) throw illegalArgument('`from` parameter must be set to 0 when `search_after` is used.');
    hits = afterFilter(all, sort, b.search_after);
  }
  const uncollapsed = hits.length;
  if (b.collapse !== undefined) {
    if (!isObj(b.collapse) || b.collapse.field === undefined) throw parsingError('[collapse] needs a [field]');
    if (q.scroll !== undefined) throw new EsError(400, 'action_request_validation_exception', 'Validation Failed: 1: cannot use `collapse` in a scroll context;');
    if (b.search_after !== undefined) throw new EsError(400, 'action_request_validation_exception', 'Validation Failed: 1: cannot use `collapse` in conjunction with `search_after`;');
    if (rescores.length) throw new EsError(400, 'action_request_validation_exception', 'Validation Failed: 1: cannot use `collapse` in conjunction with `rescore`;');
    const cf = String(b.collapse.field);
    for (const v of views) {
      const f = v.fields.get(cf);
      if (f && !isKeyword(f) && !isNumeric(f) && !isDate(f)) throw illegalArgument(`unknown type for collapse field \`${cf}\`, only keywords and numbers are accepted`);
      if (!f) throw illegalArgument(`no mapping found for \`${cf}\` in order to collapse on`);
    }
  }
  if (isObj(b.collapse)) {
    const inner = b.collapse.inner_hits;
    for (const ih of Array.isArray(inner) ? inner : inner === undefined ? [] : [inner]) {
      if (isObj(ih) && isObj(ih.collapse) && (ih.collapse.inner_hits !== undefined || ih.collapse.collapse !== undefined)) {
        throw new EsError(400, 'parse_exception', 'collapse inside inner_hits cannot have inner_hits or another collapse');
      }
    }
    hits = firstPerValue(hits, String(b.collapse.field));
  }
  const scoreSorted = !sort.length || sort[0].field === '_score';
  const trackScores = b.track_scores === true || scoreSorted || sort.some((s) => s.field === '_score');
  // size 0 collects no top documents: Elasticsearch then reports no max_score
  let maxScore: number | null = null;
  if (trackScores && size > 0) for (const h of hits) if (maxScore === null || h.score > maxScore) maxScore = h.score;
  const srcSpec: SourceSpec | undefined = b._source === undefined ? undefined : isObj(b._source) && b._source._disabled ? { enabled: false, includes: [], excludes: [] } : sourceSpec(b._source);
  const storedNone = Array.isArray(b.stored_fields) ? b.stored_fields.includes('_none_') : b.stored_fields === '_none_';
  const storedList = b.stored_fields === undefined ? undefined : Array.isArray(b.stored_fields) ? b.stored_fields.map(String) : [String(b.stored_fields)];
  const format = (h: Hit): JsonObject => {
    const d = h.doc;
    const out: JsonObject = { _index: d.index.name, _type: '_doc' };
    if (!storedNone) out._id = d.id;
    if (b.version === true) out._version = d.row._version;
    if (b.seq_no_primary_term === true) { out._seq_no = d.row._seq_no; out._primary_term = d.row._primary_term; }
    out._score = trackScores ? h.score : null;
    if (d.row._routing) out._routing = d.row._routing;
    if (d.ignored().length) out._ignored = d.ignored();
    const wantSource = storedList === undefined || storedList.includes('_source') || b._source !== undefined;
    if (!storedNone && wantSource) {
      const src = filterSource(d.source, srcSpec);
      if (src !== undefined) out._source = src;
    }
    const fields = docvalueFields(d, b.docvalue_fields, b.fields);
    if (fields) out.fields = fields;
    if (isObj(b.collapse)) {
      const cf = String(b.collapse.field);
      const v = d.values(cf);
      out.fields = { ...((out.fields as JsonObject) ?? {}), [cf]: v.length ? [v[0]] : [] };
      const inner = b.collapse.inner_hits;
      const specs = (Array.isArray(inner) ? inner : inner === undefined ? [] : [inner]) as JsonObject[];
      if (specs.length) {
        const key = JSON.stringify(v[0] ?? null);
        const group = all.filter((x) => JSON.stringify(x.doc.values(cf)[0] ?? null) === key);
        const ih: JsonObject = {};
        for (const s of specs) {
          const g = group.map((x) => ({ ...x }));
          const isort = parseSort(s.sort);
          sortHits(g, isort, views);
          let list: Hit[] = g;
          const icf = isObj(s.collapse) ? String(s.collapse.field) : undefined;
          if (icf) list = firstPerValue(list, icf);
          const from = Number(s.from ?? 0), size = Number(s.size ?? 3);
          const page = list.slice(from, from + size).map((x) => {
            const o: JsonObject = { _index: x.doc.index.name, _type: '_doc', _id: x.doc.id };
            if (s.version === true) o._version = x.doc.row._version;
            if (s.seq_no_primary_term === true) { o._seq_no = x.doc.row._seq_no; o._primary_term = x.doc.row._primary_term; }
            o._score = isort.length ? null : x.score;
            const src = filterSource(x.doc.source, s._source === undefined ? undefined : sourceSpec(s._source));
            if (src !== undefined) o._source = src;
            if (icf) { const iv = x.doc.values(icf); o.fields = { [icf]: iv.length ? [iv[0]] : [] }; }
            if (isort.length) o.sort = printSortValues(x, isort);
            return o;
          });
          ih[String(s.name ?? cf)] = { hits: { total: restInt ? group.length : { value: group.length, relation: 'eq' }, max_score: isort.length || !group.length ? null : maxOf(group.map((x) => x.score)), hits: page as Json } };
        }
        out.inner_hits = ih;
      }
    }
    if (isObj(b.highlight)) {
      const hl = highlightDoc(d, b.highlight, b.query as Json);
      if (hl) out.highlight = hl;
    }
    if (sort.length) out.sort = printSortValues(h, sort);
    if (b.explain === true) out._explanation = { value: h.score, description: rescores.length ? 'rescored' : 'sum of:', details: [] };
    return out;
  };
  let aggregations: JsonObject | undefined;
  const aggSpec = b.aggs ?? b.aggregations;
  if (aggSpec !== undefined) {
    if (!isObj(aggSpec)) throw parsingError('Expected [START_OBJECT] under [aggs]');
    const allDocs = views.flatMap((v) => v.docs);
    const ctx: AggCtx = {
      ixs: views, allDocs, typedKeys, maxBuckets: env.maxBuckets, buckets: 0,
      filter: (fq) => {
        const per = new Map<IndexView, (d: Doc) => number | null>();
        return (d) => {
          let s = per.get(d.index);
          if (!s) { s = compile({ ix: d.index, lookup: env.lookup }, fq); per.set(d.index, s); }
          return s(d) !== null;
        };
      },
      score: () => 0,
      topHits: (docs, spec, name) => topHits(docs, spec, views, all, restInt, name),
    };
    aggregations = runAggs(aggSpec, matched, ctx);
  }
  const suggest = b.suggest === undefined ? undefined : runSuggest(b.suggest, { ixs: views, docs: views.flatMap((v) => v.docs), typedKeys, source: srcSpec });
  const shards = views.reduce((s, v) => s + Number((v.settings as JsonObject)['index.number_of_shards'] ?? 1), 0);
  const brs = q.batched_reduce_size === undefined ? undefined : Number(q.batched_reduce_size);
  const reducePhases = brs !== undefined && shards > brs ? Math.ceil((shards - 1) / (brs - 1)) : undefined;
  return { hits, total: env.topK ? env.topK.total : b.search_after !== undefined ? all.length : uncollapsed, sort, from, size, format, aggregations, suggest, maxScore, trackTotal, restInt, indices: shards, skipped: skippedShards(views, b, q), reducePhases, ...(terminateAfter !== null ? { terminatedEarly: env.topK?.terminatedEarly ?? terminatedEarly } : {}) };
}

const byRelevance = (a: Hit, b: Hit): number =>
  b.score - a.score || (a.doc.index.name < b.doc.index.name ? -1 : a.doc.index.name > b.doc.index.name ? 1 : a.doc.row._seq_no - b.doc.row._seq_no);

/** Moves the best `k` hits (score desc, then index order) to the front, in order; the rest follow unordered. */
function topInPlace(hits: Hit[], k: number): void {
  if (k <= 0 || hits.length <= k) { hits.sort(byRelevance); return; }
  const best: Hit[] = [];
  for (const h of hits) {
    if (best.length === k && byRelevance(h, best[k - 1]) >= 0) continue;
    let i = best.length - (best.length === k ? 1 : 0);
    if (best.length === k) best.pop();
    while (i > 0 && byRelevance(h, best[i - 1]) < 0) i--;
    best.splice(i, 0, h);
  }
  const chosen = new Set(best);
  const rest: Hit[] = [];
  for (const h of hits) if (!chosen.has(h)) rest.push(h);
  hits.length = 0;
  for (const h of best) hits.push(h);
  for (const h of rest) hits.push(h);
}

/** Query rescorer: the first window_size hits get query_weight·score ⊕ rescore_query_weight·rescore score. */
function rescore(hits: Hit[], specs: JsonObject[], env: SearchEnv): void {
  for (const r of specs) {
    const q = r.query as JsonObject | undefined;
    if (!isObj(q)) throw parsingError('[rescore] needs a [query]');
    const ws = Number(r.window_size ?? 10);
    const qw = Number(q.query_weight ?? 1), rw = Number(q.rescore_query_weight ?? 1);
    const mode = String(q.score_mode ?? 'total');
    const window = hits.slice(0, ws);
    const scorers = new Map<IndexView, (d: Doc) => number | null>();
    for (const h of window) {
      let s = scorers.get(h.doc.index);
      if (!s) { s = compile({ ix: h.doc.index, lookup: env.lookup }, q.rescore_query); scorers.set(h.doc.index, s); }
      const x = s(h.doc);
      const a = h.score * qw;
      if (x === null) { (h as { score: number }).score = a; continue; }
      const c = x * rw;
      (h as { score: number }).score = mode === 'multiply' ? a * c : mode === 'avg' ? (a + c) / 2 : mode === 'max' ? Math.max(a, c) : mode === 'min' ? Math.min(a, c) : a + c;
    }
    for (const h of hits.slice(ws)) (h as { score: number }).score = h.score * qw;
    window.sort((x, y) => y.score - x.score);
    hits.splice(0, window.length, ...window);
  }
}

function maxWindow(v: IndexView, env: SearchEnv): number {
  const s = v.settings as JsonObject;
  const w = (s.index as JsonObject | undefined)?.max_result_window ?? s['index.max_result_window'];
  return w === undefined ? env.maxResultWindow : Number(w);
}

/** indices_boost (object or ordered list; names, wildcards and aliases; the first match wins) → boost per index. */
function indicesBoost(v: Json | undefined, views: IndexView[], aliases: (index: string) => string[], ignoreUnavailable: boolean): Map<string, number> {
  const entries: Array<[string, number]> = [];
  if (Array.isArray(v)) for (const o of v) for (const [k, x] of Object.entries(o as JsonObject)) entries.push([k, Number(x)]);
  else if (isObj(v)) for (const [k, x] of Object.entries(v)) entries.push([k, Number(x)]);
  const m = new Map<string, number>();
  for (const ix of views) {
    const names = [ix.name, ...aliases(ix.name)];
    const hit = entries.find(([k]) => {
      const rx = new RegExp(`^${k.split('*').map((x) => x.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
      return names.some((n) => rx.test(n));
    });
    if (hit) m.set(ix.name, hit[1]);
  }
  // a concrete name (no wildcard) that is no index or alias fails the search, as Elasticsearch resolves it
  if (!ignoreUnavailable) {
    for (const [k] of entries) if (!k.includes('*') && !views.some((ix) => ix.name === k || aliases(ix.name).includes(k))) throw indexNotFound(k);
  }
  return m;
}

function docvalueFields(d: Doc, dv: Json | undefined, fieldsOpt: Json | undefined): JsonObject | undefined {
  const specs = [...(Array.isArray(dv) ? dv : []), ...(Array.isArray(fieldsOpt) ? fieldsOpt : [])];
  if (!specs.length) return undefined;
  const out: JsonObject = {};
  for (const s of specs) {
    const name = isObj(s) ? String(s.field) : String(s);
    const fmt = isObj(s) && s.format !== undefined ? String(s.format) : undefined;
    const pats = name.includes('*') ? [...d.index.fields.values()].filter((f) => new RegExp(`^${name.replace(/\./g, '\\.').replace(/\*/g, '.*')}$`).test(f.path)) : [d.index.fields.get(name)].filter((f) => f !== undefined);
    for (const f of pats) {
      if (!f || f.type === 'object') continue;
      const vals = d.values(f.path);
      if (!vals.length) continue;
      const dateFmt = fmt === 'use_field_mapping' ? undefined : fmt ?? (f.def.format as string | undefined) ?? DEFAULT_DATE_FORMAT;
      // date_nanos: the digits below the millisecond too
      const ns = f.type === 'date_nanos' ? nanosValues(d, f) : null;
      const shown = ns ? ns.map((n) => formatDate(Number(n / 1_000_000n), dateFmt, undefined, Number(n % 1_000_000n)))
        : isDate(f) ? vals.map((v) => formatDate(Number(v), dateFmt))
        : fmt !== undefined && fmt !== 'use_field_mapping' && typeof vals[0] === 'number' ? vals.map((v) => decimalFormat(Number(v), fmt)) : vals;
      // a field asked for again (another format) adds its values to the field's list, as Elasticsearch's fetch phase does
      const prev = out[f.path];
      out[f.path] = Array.isArray(prev) ? [...prev, ...shown] : shown;
    }
  }
  return Object.keys(out).length ? out : undefined;
}

function topHits(docs: Doc[], spec: JsonObject, views: IndexView[], scored: Hit[], restInt: boolean, name: string): JsonObject {
  const scores = new Map(scored.map((h) => [h.doc, h.score]));
  const hits: Hit[] = docs.map((d) => ({ doc: d, score: scores.get(d) ?? 1 }));
  const p = prepareFromHits(hits, spec, views);
  const from = Number(spec.from ?? 0), size = Number(spec.size ?? 3);
  const maxInner = views.length ? Math.min(...views.map((v) => Number((v.settings as JsonObject)['index.max_inner_result_window'] ?? 100))) : 100;
  if (from + size > maxInner) {
    throw illegalArgument(`Top hits result window is too large, the top hits aggregator [${name}]'s from + size must be less than or equal to: [${maxInner}] but was [${from + size}]. This limit can be set by changing the [index.max_inner_result_window] index level setting.`);
  }
  return {
    total: restInt ? hits.length : { value: hits.length, relation: 'eq' },
    max_score: p.maxScore,
    hits: p.hits.slice(from, from + size).map(p.format) as Json,
  };
}

function prepareFromHits(hits: Hit[], spec: JsonObject, views: IndexView[]): { hits: Hit[]; format: (h: Hit) => JsonObject; maxScore: number | null } {
  const sort = parseSort(spec.sort);
  sortHits(hits, sort, views);
  const src = spec._source === undefined ? undefined : sourceSpec(spec._source);
  const scoreSorted = !sort.length || sort[0].field === '_score';
  return {
    hits,
    maxScore: scoreSorted && hits.length ? maxOf(hits.map((h) => h.score)) : null,
    format: (h) => {
      const out: JsonObject = { _index: h.doc.index.name, _type: '_doc', _id: h.doc.id, _score: scoreSorted ? h.score : null };
      if (spec.version === true) out._version = h.doc.row._version;
      if (spec.seq_no_primary_term === true) { out._seq_no = h.doc.row._seq_no; out._primary_term = h.doc.row._primary_term; }
      const s = filterSource(h.doc.source, src);
      if (s !== undefined) out._source = s;
      const f = docvalueFields(h.doc, spec.docvalue_fields, undefined);
      if (f) out.fields = f;
      if (sort.length) out.sort = printSortValues(h, sort);
      return out;
    },
  };
}

/** `terminate_after`: null when absent or 0 (Elasticsearch's default, no limit); a negative one is refused as it refuses it. */
export function terminateAfterOf(v: unknown): number | null {
  if (v === undefined || v === null) return null;
  const n = Number(v);
  if (!Number.isInteger(n)) throw parsingError('[terminate_after] failed to parse field [terminate_after]');
  if (n < 0) throw illegalArgument('terminateAfter must be > 0');
  return n === 0 ? null : n;
}

/** The response body for one page of a prepared search. */
export function searchResponse(p: Prepared, page: Hit[], took: number, extra: JsonObject = {}): JsonObject {
  const hitsObj: JsonObject = {};
  if (p.restInt) hitsObj.total = p.trackTotal === false ? -1 : p.total;
  else if (p.trackTotal !== false) {
    const limit = p.trackTotal === true ? Infinity : Number(p.trackTotal);
    hitsObj.total = p.total > limit ? { value: limit, relation: 'gte' } : { value: p.total, relation: 'eq' };
  }
  hitsObj.max_score = p.maxScore;
  hitsObj.hits = page.map(p.format) as Json;
  const out: JsonObject = { ...extra, took, timed_out: false, ...(p.terminatedEarly !== undefined ? { terminated_early: p.terminatedEarly } : {}), _shards: { total: p.indices, successful: p.indices, skipped: p.skipped ?? 0, failed: 0 }, hits: hitsObj };
  if (p.reducePhases) out.num_reduce_phases = p.reducePhases;
  if (p.aggregations) out.aggregations = p.aggregations;
  if (p.suggest) out.suggest = p.suggest;
  return out;
}
