/** Search APIs: _search, _count, scroll, point in time, _msearch, _delete_by_query, _update_by_query. */
import * as crypto from 'crypto';
import { EsError, illegalArgument, parsingError, searchPhase, validation } from './errors';
import type { Json, JsonObject } from './mapping';
import type { EsTenant } from './tenant';
import { checkSearchType, mergeParams, prepareSearch, searchResponse, terminateAfterOf, type Prepared, type SearchEnv } from './search';
import { topK, type TopK } from './topk';
import { firstMatches } from './plan-first';
import { textPlans } from './text-plan';
import { planAggs, planCount } from './plan-aggs';
import { planAggsIndices, type IndexPart } from './plan-indices';
import { sortedPage } from './plan-sort';
import { writeBatch, type WriteOp } from './writes';
import { filterSource, sourceSpec } from './source-filter';
import type { EsResponse, Params } from './types';
import type { IndexView } from './doc';
import type { IndexRef } from './indices';
import { candidates } from './candidates';
import { retrieve } from './retrieval';
import { resolveTermsLookups } from './query';

const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
/** Query parameters a top-k or aggregate plan answers as the full search does (any other takes the full search). */
/** The `q` parameter and its options: folded into the body's query (a query_string) before the plans see it. */
const Q_PARAMS = ['q', 'df', 'default_operator', 'analyzer', 'lenient', 'analyze_wildcard'];
const PLAN_PARAMS = new Set([...Q_PARAMS, 'size', 'from', 'track_total_hits', 'rest_total_hits_as_int', 'typed_keys', 'request_cache', 'timeout', 'filter_path', 'pretty', 'human', 'error_trace', 'allow_no_indices', 'ignore_unavailable', 'expand_wildcards', 'preference', 'search_type', 'ccs_minimize_roundtrips', 'allow_partial_search_results', 'version', 'seq_no_primary_term', '_source', '_source_includes', '_source_excludes']);
const ENV: SearchEnv = { maxBuckets: 65535, maxResultWindow: 10000 };

/** One copy of each shard is active: asking for more times out as Elasticsearch does (503). */
export function activeShards(q: Params, index: string): void {
  const w = q.wait_for_active_shards;
  if (w === undefined || w === '1' || w === '0' || w === 'all') return;
  const n = Number(w);
  if (Number.isInteger(n) && n > 1) {
    throw new EsError(503, 'unavailable_shards_exception', `[${index}][0] Not enough active copies to meet shard count of [${n}] (have 1, needed ${n}). Timeout: [${q.timeout ?? '1m'}]`);
  }
}

export function keepAliveMs(s: string | undefined): number {
  if (!s) return 60000;
  const m = /^(\d+)(ms|s|m|h|d)?$/.exec(s);
  if (!m) throw illegalArgument(`failed to parse setting [keep_alive] with value [${s}] as a time value: unit is missing or unrecognized`);
  const u: Record<string, number> = { ms: 1, s: 1000, m: 60000, h: 3600000, d: 86400000 };
  return Number(m[1]) * (m[2] ? u[m[2]] : 1);
}

/** Errors raised while searching answer as search_phase_execution_exception (as a one-shard search does). */
function wrap<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof EsError && ['query_shard_exception', 'illegal_argument_exception', 'number_format_exception', 'parse_exception', 'too_many_buckets_exception'].includes(e.type) && e.status === 400) {
      if (e.type === 'illegal_argument_exception' && /^Result window|search_after|\[from\]|\[size\]|Sort must|`from`/.test(e.reason)) throw e;
      throw searchPhase(e);
    }
    throw e;
  }
}

async function wrapAsync<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    return wrap(() => { throw e; });
  }
}

function gc(t: EsTenant): void {
  const now = Date.now();
  for (const [k, s] of t.scrolls) if (s.expires < now) t.scrolls.delete(k);
  for (const [k, p] of t.pits) if (p.expires < now) t.pits.delete(k);
}

export async function search(t: EsTenant, index: string | undefined, body: unknown, q: Params): Promise<EsResponse> {
  gc(t);
  checkSearchType(q);
  const t0 = Date.now();
  const b: JsonObject = body === undefined || body === null || body === '' ? {} : isObj(body) ? body : (() => { throw parsingError('request body must be an object'); })();
  let views: IndexView[];
  let refs: IndexRef[] | null = null;
  let pitId: string | undefined;
  let plain = false;
  let aliasFilter: Json | undefined;
  let filtersAll = false;
  let filters: Array<Json | undefined> = [];
  if (isObj(b.pit)) {
    if (index !== undefined) throw new EsError(400, 'action_request_validation_exception', 'Validation Failed: 1: [indices] cannot be used with point in time;');
    pitId = String(b.pit.id);
    const pit = t.pits.get(pitId);
    if (!pit) throw new EsError(404, 'search_context_missing_exception', `No search context found for id [${pitId}]`);
    if (b.pit.keep_alive !== undefined) pit.expires = Date.now() + keepAliveMs(String(b.pit.keep_alive));
    views = pit.views;
  } else {
    const rs = t.resolve(index, q);
    views = await t.views(rs);
    refs = rs.map((r) => r.ref);
    plain = rs.length === 1;
    aliasFilter = rs[0]?.filter;
    filtersAll = rs.some((r) => r.filter !== undefined);
    filters = rs.map((r) => r.filter);
    // the shard request cache: size-0 searches are cached per index until the index changes
    const size = q.size !== undefined ? Number(q.size) : b.size;
    if (size === 0 && q.request_cache !== 'false' && q.scroll === undefined) {
      for (const r of rs) {
        const c = t.counter(r.ref);
        const key = `${await t.backend.tableLsn(r.ref.table.id)}|${JSON.stringify(b)}|${JSON.stringify(q)}`;
        if (c.keys.has(key)) c.hit++;
        else { c.miss++; c.keys.add(key); }
      }
    }
  }
  await preloadLookups(t, b);
  const body2 = { ...b };
  delete body2.pit;
  const lookupFn = (ix: string, id: string) => lookup(t, views, ix, id);
  const planned = plain && Object.keys(q).every((k) => PLAN_PARAMS.has(k));
  // a relevance page of a match query: the top-k plan (topk.ts); a page sorted by fields: sort and limit nodes (plan-sort.ts)
  // an alias's filter is one more filter clause of the query for the plans that read matches only (not the top-k page's scores)
  // (they read the whole index's view: its field statistics decide what the fts nodes answer exactly)
  // the plans read terms lookups as the values they name (resolved here, as the scorer resolves them)
  const resolved = (x: JsonObject): JsonObject => (planned ? (resolveTermsLookups(x, lookupFn, views[0].name) as JsonObject) : x);
  // several indices (no alias filter): the aggregations over the union of each index's matches (plan-indices.ts)
  if (refs && refs.length > 1 && !filtersAll && q.scroll === undefined && Object.keys(q).every((k) => PLAN_PARAMS.has(k))) {
    const multi = await planAggsOfIndices(t, refs, views, resolveTermsLookups(body2, lookupFn, views[0].name) as JsonObject, q);
    if (multi) return { status: 200, body: searchResponse(multi, [], Date.now() - t0) };
  }
  let filtered = resolved(aliasFilter === undefined ? body2 : { ...body2, query: withFilter(body2.query, aliasFilter) });
  const whole = planned && aliasFilter !== undefined ? await t.state.view(refs![0]) : views[0];
  // aggregations beside a page of hits: the aggregate plans over the query's matches, the hits found as without them
  const beside = planned && q.scroll === undefined ? await besideHits(t, refs![0], whole, filtered, q, aliasFilter) : null;
  if (beside) {
    delete body2.aggs;
    delete body2.aggregations;
    filtered = resolved(aliasFilter === undefined ? body2 : { ...body2, query: withFilter(body2.query, aliasFilter) });
  }
  const several = !planned && refs && refs.length > 1 && q.scroll === undefined && Object.keys(q).every((k) => PLAN_PARAMS.has(k));
  const top = planned
    // (through a filtered alias: the alias's filter one more filter clause, scored over the whole index, as a shard scores it)
    ? (await topKOf(t, refs![0], whole, aliasFilter === undefined ? body2 : { ...body2, query: withFilter(body2.query, aliasFilter) }, q, lookupFn)) ?? (await sortedOf(t, refs![0], whole, filtered, q)) ?? (await firstOf(t, refs![0], whole, filtered, q))
    : several ? (await topKOfIndices(t, refs!, views, body2, q, lookupFn, filters)) ?? (await sortedOfIndices(t, refs!, views, body2, q, filters)) : null;
  // aggregations that map to aggregate nodes (plan-aggs.ts)
  const aggPlan = planned && !top && !beside ? await planAggsOf(t, refs![0], whole, filtered, q, aliasFilter) : null;
  if (aggPlan) return { status: 200, body: searchResponse(aggPlan, [], Date.now() - t0) };
  // text terms are retrieved through fts_search plans (not for a point in time: its documents are frozen)
  const retrieval = top ? undefined : refs ? await retrieve(t.backend, views.map((v, i) => ({ view: v, ref: refs![i] })), (ix, r) => candidates(ix, body2.query, r)) : undefined;
  const env: SearchEnv = { ...ENV, maxBuckets: Number(t.clusterSettings.get('search.max_buckets') ?? ENV.maxBuckets), lookup: lookupFn, retrieval, ...(top ? { topK: top } : {}) };
  const p = wrap(() => prepareSearch(views, body2, q, env));
  if (q.scroll !== undefined) {
    if (b.search_after !== undefined) throw new EsError(400, 'action_request_validation_exception', 'Validation Failed: 1: using [search_after] is not allowed in a scroll context;');
    const id = crypto.randomBytes(24).toString('base64url');
    const ctx = { prepared: p, hits: p.hits, pos: p.size, size: p.size, expires: Date.now() + keepAliveMs(q.scroll) };
    t.scrolls.set(id, ctx);
    return { status: 200, body: searchResponse(p, p.hits.slice(0, p.size), Date.now() - t0, { _scroll_id: id }) };
  }
  const page = p.hits.slice(p.from, p.from + p.size);
  return { status: 200, body: searchResponse(beside ? { ...p, aggregations: beside } : p, page, Date.now() - t0, pitId ? { pit_id: pitId } : {}) };
}

/** Body keys that do not change which documents aggregations read (post_filter applies to the hits only). */
const BESIDE = new Set(['query', 'aggs', 'aggregations', 'size', 'from', 'sort', '_source', 'highlight', 'post_filter', 'track_total_hits', 'track_scores', 'version', 'seq_no_primary_term', 'stored_fields', 'docvalue_fields', 'explain', 'timeout', 'stats', 'suggest', 'search_after', 'fields']);
/** Query parameters of the page (the aggregations' plans read the query's only). */
const PAGE_PARAMS = ['size', 'from', 'sort', '_source', '_source_includes', '_source_excludes', 'version', 'seq_no_primary_term', 'track_total_hits', 'track_scores', 'stored_fields', 'docvalue_fields', 'explain', 'filter_path'];

/**
 * The aggregations of a search that also asks for hits, as aggregate plans (plan-aggs.ts) over the
 * query's matches, or null when the search asks for no hits, holds a key that changes the
 * documents the aggregations read (`min_score`, `terminate_after`, `collapse`, …), or the
 * aggregations do not map.
 */
async function besideHits(t: EsTenant, ref: IndexRef, view: IndexView, body: JsonObject, q: Params, aliasFilter: Json | undefined): Promise<JsonObject | null> {
  const spec = body.aggs ?? body.aggregations;
  const size = q.size !== undefined ? Number(q.size) : body.size === undefined ? 10 : body.size;
  if (spec === undefined || size === 0 || (body.aggs !== undefined && body.aggregations !== undefined) || Object.keys(body).some((k) => !BESIDE.has(k))) return null;
  const q2: Params = { ...q };
  for (const k of PAGE_PARAMS) delete q2[k];
  const only: JsonObject = { ...(body.query !== undefined ? { query: body.query } : {}), aggs: spec, size: 0 };
  const p = await planAggsOf(t, ref, view, only, q2, aliasFilter);
  return p?.aggregations ?? null;
}

async function topKOf(t: EsTenant, ref: IndexRef, view: IndexView, body: JsonObject, q: Params, lookupFn: (ix: string, id: string) => JsonObject | undefined): Promise<TopK | null> {
  let merged: JsonObject;
  try {
    merged = mergeParams(body, q);
  } catch {
    return null; // the full search reports the error
  }
  if (q.rest_total_hits_as_int === 'true' && merged.track_total_hits === undefined) merged.track_total_hits = true;
  // the view's LSN (the count plan's typed-column check) only when a total needs the count plan
  return wrapAsync(() => topK(t.backend, ref, view, merged, lookupFn, async () => (await t.state.cached(ref)).lsn));
}

/**
 * A relevance page of several indices (each one shard, no alias filter): each index's top-k plans
 * (topk.ts) for its best from + size, merged by score (search.ts orders ties by index name, then
 * as each index ordered them; `indices_boost` scales each index's scores there), the total their
 * sum; an index through a filtered alias with its filter as one more clause; null when one index's
 * page is not a plan.
 */
async function topKOfIndices(t: EsTenant, refs: IndexRef[], views: IndexView[], body: JsonObject, q: Params, lookupFn: (ix: string, id: string) => JsonObject | undefined, filters: Array<Json | undefined>): Promise<TopK | null> {
  const docs: TopK['docs'] = [];
  let total = 0;
  const plans: JsonObject[] = [];
  // indices_boost multiplies an index's scores (search.ts): its own best hits stay its best
  // (min_score compares the boosted score: the view's code answers both together)
  if (body.indices_boost !== undefined && body.min_score !== undefined) return null;
  const each = { ...body };
  delete each.indices_boost;
  for (let i = 0; i < refs.length; i++) {
    // through a filtered alias: its filter one more clause, over the whole index (as for one index)
    const f = filters[i];
    const r = await topKOf(t, refs[i], f === undefined ? views[i] : await t.state.view(refs[i]), f === undefined ? each : { ...each, query: withFilter(each.query, f) }, q, lookupFn);
    if (!r) return null;
    docs.push(...r.docs);
    total += r.total;
    plans.push(r.plan);
  }
  return { docs, total, plan: { plans } as unknown as JsonObject };
}

/**
 * A page of several indices sorted by fields: each index's sorted page plans (plan-sort.ts) for
 * its first from + size, whose union search.ts sorts as it sorts every hit (the best from + size of
 * all are among them); the total their sum. Not with `collapse` (a group spans indices).
 */
async function sortedOfIndices(t: EsTenant, refs: IndexRef[], views: IndexView[], body: JsonObject, q: Params, filters: Array<Json | undefined>): Promise<TopK | null> {
  if (body.collapse !== undefined || body.sort === undefined) return null;
  const docs: TopK['docs'] = [];
  let total = 0;
  const plans: JsonObject[] = [];
  for (let i = 0; i < refs.length; i++) {
    const f = filters[i];
    const r = await sortedOf(t, refs[i], f === undefined ? views[i] : await t.state.view(refs[i]), f === undefined ? body : { ...body, query: withFilter(body.query, f) }, q);
    if (!r) return null;
    docs.push(...r.docs);
    total += r.total;
    plans.push(r.plan);
  }
  return { docs, total, plan: { plans } as unknown as JsonObject };
}

/** The body with the query parameters folded in and the view's LSN, for the sorted-page and aggregate plans; null when the parameters do not fold (the full search reports it). */
async function planInput(t: EsTenant, ref: IndexRef, body: JsonObject, q: Params): Promise<{ merged: JsonObject; lsn: number } | null> {
  let merged: JsonObject;
  try {
    merged = mergeParams(body, q);
  } catch {
    return null;
  }
  return { merged, lsn: (await t.state.cached(ref)).lsn };
}

/** A page of the first `terminate_after` matches (plan-first.ts). */
async function firstOf(t: EsTenant, ref: IndexRef, view: IndexView, body: JsonObject, q: Params): Promise<SearchEnv['topK'] | null> {
  const p = q.scroll === undefined && body.terminate_after !== undefined ? await planInput(t, ref, body, q) : null;
  return p && wrapAsync(() => firstMatches(t.backend, ref, view, p.lsn, p.merged, textPlans(ref, view)));
}

async function sortedOf(t: EsTenant, ref: IndexRef, view: IndexView, body: JsonObject, q: Params): Promise<TopK | null> {
  const p = q.scroll === undefined ? await planInput(t, ref, body, q) : null;
  return p && wrapAsync(() => sortedPage(t.backend, ref, view, p.lsn, p.merged, textPlans(ref, view)));
}

async function planAggsOf(t: EsTenant, ref: IndexRef, view: IndexView, body: JsonObject, q: Params, aliasFilter: Json | undefined): Promise<Prepared | null> {
  const p = await planInput(t, ref, body, q);
  return p && wrapAsync(() => planAggs(t.backend, ref, view, p.lsn, p.merged, q, Number(t.clusterSettings.get('search.max_buckets') ?? ENV.maxBuckets), textPlans(ref, view), aliasFilter));
}

async function planAggsOfIndices(t: EsTenant, refs: IndexRef[], views: IndexView[], body: JsonObject, q: Params): Promise<Prepared | null> {
  const parts: IndexPart[] = [];
  let merged: JsonObject | undefined;
  for (let i = 0; i < refs.length; i++) {
    const p = await planInput(t, refs[i], body, q);
    if (!p) return null;
    merged = p.merged;
    parts.push({ ref: refs[i], ix: views[i], lsn: p.lsn, match: textPlans(refs[i], views[i]) });
  }
  return wrapAsync(() => planAggsIndices(t.backend, parts, merged!, q, Number(t.clusterSettings.get('search.max_buckets') ?? ENV.maxBuckets)));
}

function lookup(t: EsTenant, views: IndexView[], ix: string, id: string): JsonObject | undefined {
  const v = views.find((x) => x.name === ix) ?? t.lookupViews.get(ix);
  if (v) return v.docs.find((d) => d.id === id)?.source;
  return undefined;
}

/** Loads the indices terms-lookup queries name (a missing one is index_not_found, as in Elasticsearch). */
async function preloadLookups(t: EsTenant, body: unknown): Promise<void> {
  const names = new Set<string>();
  const walk = (v: unknown) => {
    if (Array.isArray(v)) return v.forEach(walk);
    if (!isObj(v)) return;
    for (const [k, x] of Object.entries(v)) {
      if (k === 'terms' && isObj(x)) for (const spec of Object.values(x)) if (isObj(spec) && spec.id !== undefined && spec.path !== undefined && spec.index !== undefined) names.add(String(spec.index));
      walk(x);
    }
  };
  walk(body);
  for (const n of names) {
    const rs = t.resolve(n);
    const [v] = await t.views(rs);
    if (v) t.lookupViews.set(n, v);
    for (const r of rs) t.counter(r.ref).get++;
  }
}

export async function scroll(t: EsTenant, idParam: string | undefined, body: unknown, q: Params): Promise<EsResponse> {
  gc(t);
  const b = isObj(body) ? body : {};
  const id = idParam ?? (b.scroll_id as string | undefined) ?? q.scroll_id;
  if (!id) throw validation(['scrollId is missing']);
  const ctx = t.scrolls.get(String(id));
  if (!ctx) throw new EsError(404, 'search_phase_execution_exception', 'all shards failed', { phase: 'query', grouped: true, failed_shards: [], caused_by: { type: 'search_context_missing_exception', reason: `No search context found for id [${id}]` } });
  const keep = (b.scroll as string | undefined) ?? q.scroll;
  if (keep) ctx.expires = Date.now() + keepAliveMs(keep);
  const page = ctx.hits.slice(ctx.pos, ctx.pos + ctx.size);
  ctx.pos += ctx.size;
  return { status: 200, body: searchResponse(ctx.prepared, page, 0, { _scroll_id: String(id) }) };
}

export function clearScroll(t: EsTenant, idParam: string | undefined, body: unknown): EsResponse {
  const b = isObj(body) ? body : {};
  let ids: string[] = idParam ? idParam.split(',') : Array.isArray(b.scroll_id) ? b.scroll_id.map(String) : b.scroll_id !== undefined ? [String(b.scroll_id)] : [];
  if (ids.includes('_all')) ids = [...t.scrolls.keys()];
  if (!ids.length) throw validation(['no scroll ids specified']);
  let n = 0;
  for (const id of ids) if (t.scrolls.delete(id)) n++;
  return { status: n ? 200 : 404, body: { succeeded: true, num_freed: n } };
}

export async function openPit(t: EsTenant, index: string, q: Params): Promise<EsResponse> {
  if (q.keep_alive === undefined) throw validation(['[keep_alive] is not specified']);
  const rs = t.resolve(index, q);
  const views = await t.views(rs);
  // a point in time keeps the documents as they are now (the views are immutable snapshots)
  const frozen = views.map((v) => ({ ...v, docs: [...v.docs], stats: new Map() }));
  const id = crypto.randomBytes(24).toString('base64url');
  t.pits.set(id, { views: frozen, expires: Date.now() + keepAliveMs(q.keep_alive), indices: rs.map((r) => r.ref.meta.es_index) });
  return { status: 200, body: { id } };
}

export function closePit(t: EsTenant, body: unknown): EsResponse {
  const id = isObj(body) ? String(body.id ?? '') : '';
  const ok = t.pits.delete(id);
  return { status: ok ? 200 : 404, body: { succeeded: ok, num_freed: ok ? 1 : 0 } };
}

/** A query with an alias's filter as one more filter clause (no query: the filter alone). */
const withFilter = (query: unknown, f: Json): Json => ({ bool: { ...(query !== undefined ? { must: [query as Json] } : {}), filter: [f] } });

export async function count(t: EsTenant, index: string | undefined, body: unknown, q: Params): Promise<EsResponse> {
  const b = isObj(body) ? body : {};
  for (const k of Object.keys(b)) if (k !== 'query') throw parsingError(`request does not support [${k}]`);
  const rs = t.resolve(index, q);
  const views = await t.views(rs);
  const qp: Params = {};
  for (const k of ['q', 'df', 'default_operator', 'analyzer', 'lenient', 'analyze_wildcard', 'min_score', 'terminate_after']) if (q[k] !== undefined) qp[k] = q[k];
  // a query the plans answer exactly: one aggregate count per index (plan-aggs.ts)
  let base: unknown = b.query;
  try {
    if (qp.q !== undefined) base = mergeParams({}, qp).query;
  } catch {
    base = undefined; // the full count reports the error
  }
  // terminate_after: each index (one shard) counts at most that many matches, as a plan too
  const cap = wrap(() => terminateAfterOf(qp.terminate_after));
  let terminated = false;
  if (Object.keys(qp).every((k) => Q_PARAMS.includes(k) || k === 'terminate_after') && (qp.q === undefined || base !== undefined) && rs.length) {
    let n: number | null = 0;
    for (let i = 0; i < rs.length && n !== null; i++) {
      const ref = rs[i].ref;
      // terms lookups as the values they name, as the full count reads them
      const whole = base === undefined ? undefined : resolveTermsLookups(base as Json, (ix, id) => lookup(t, views, ix, id), views[i].name);
      const query = rs[i].filter === undefined ? whole : withFilter(whole, rs[i].filter!);
      const view = rs[i].filter === undefined ? views[i] : await t.state.view(ref);
      const c = await wrapAsync(async () => planCount(t.backend, ref, view, (await t.state.cached(ref)).lsn, query, textPlans(ref, view)));
      if (cap !== null && c !== null && c > cap) terminated = true;
      n = c === null ? null : n + (cap === null ? c : Math.min(c, cap));
    }
    if (n !== null) return { status: 200, body: { count: n, ...(cap !== null ? { terminated_early: terminated } : {}), _shards: { total: views.length, successful: views.length, skipped: 0, failed: 0 } } };
  }
  const retrieval = await retrieve(t.backend, views.map((v, i) => ({ view: v, ref: rs[i].ref })), (ix, r) => candidates(ix, b.query, r));
  const p = wrap(() => prepareSearch(views, { ...(b.query !== undefined ? { query: b.query } : {}), size: 0, track_total_hits: true }, qp, { ...ENV, lookup: (ix, id) => lookup(t, views, ix, id), retrieval }));
  return { status: 200, body: { count: p.total, ...(p.terminatedEarly !== undefined ? { terminated_early: p.terminatedEarly } : {}), _shards: { total: views.length, successful: views.length, skipped: 0, failed: 0 } } };
}

export async function msearch(t: EsTenant, index: string | undefined, text: string, q: Params): Promise<EsResponse> {
  const t0 = Date.now();
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  const responses: Json[] = [];
  if (!lines.length) throw validation(['no requests added']);
  for (let i = 0; i < lines.length; i += 2) {
    let header: JsonObject;
    let body: JsonObject;
    try {
      header = JSON.parse(lines[i]) as JsonObject;
      body = lines[i + 1] === undefined ? {} : (JSON.parse(lines[i + 1]) as JsonObject);
    } catch {
      throw illegalArgument(`Failed to parse msearch request line ${i + 1}`);
    }
    const hq: Params = { ...q };
    for (const k of ['search_type', 'preference', 'routing', 'request_cache', 'allow_partial_search_results', 'ignore_unavailable', 'allow_no_indices', 'expand_wildcards']) if (header[k] !== undefined) hq[k] = String(header[k]);
    const ix = header.index === undefined ? index : Array.isArray(header.index) ? header.index.join(',') : String(header.index);
    try {
      const r = await search(t, ix, body, hq);
      responses.push({ ...(r.body as JsonObject), status: 200 });
    } catch (e) {
      if (!(e instanceof EsError)) throw e;
      responses.push(e.body() as Json);
    }
  }
  return { status: 200, body: { took: Date.now() - t0, responses } };
}

/**
 * _reindex within the tenant: the documents a search of the source selects are written to the
 * destination index with their ids (op_type index or create), in one write batch.
 */
export async function reindex(t: EsTenant, body: unknown, q: Params): Promise<EsResponse> {
  const t0 = Date.now();
  if (!isObj(body) || !isObj(body.source) || !isObj(body.dest)) throw validation(['source and dest are required']);
  if (body.script !== undefined) throw illegalArgument('[_reindex] scripts are not supported by this service; reindex without a script');
  if (body.source.remote !== undefined) throw illegalArgument('[_reindex] from a remote cluster is not supported by this service');
  const src = body.source;
  const destName = String(body.dest.index);
  const opType = String(body.dest.op_type ?? 'index');
  const index = Array.isArray(src.index) ? src.index.join(',') : String(src.index);
  const maxDocs = body.max_docs !== undefined ? Number(body.max_docs) : body.size !== undefined ? Number(body.size) : q.max_docs !== undefined ? Number(q.max_docs) : undefined;
  const conflicts = String(body.conflicts ?? q.conflicts ?? 'abort');
  const views = await t.views(t.resolve(index, q));
  const p = wrap(() => prepareSearch(views, { ...(src.query !== undefined ? { query: src.query } : {}), ...(src.sort !== undefined ? { sort: src.sort } : {}), ...(src._source !== undefined ? { _source: src._source } : {}), size: 0, track_total_hits: true }, { scroll: '1m' }, ENV));
  const hits = maxDocs === undefined ? p.hits : p.hits.slice(0, maxDocs);
  const dest = await t.writeRef(destName);
  const spec = src._source === undefined ? undefined : sourceSpec(src._source);
  const ops: WriteOp[] = hits.map((h) => ({ action: opType === 'create' ? 'create' : 'index', ref: dest, id: h.doc.id, source: filterSource(h.doc.source, spec) ?? {}, routing: h.doc.row._routing ?? undefined }));
  const results = ops.length ? await writeBatch(t.state, ops) : [];
  let created = 0, updated = 0, conflictsN = 0;
  const failures: Json[] = [];
  results.forEach((r, i) => {
    if (r.status === 201) created++;
    else if (r.status === 200) updated++;
    else if (r.status === 409) {
      conflictsN++;
      if (conflicts === 'abort') failures.push({ index: destName, type: '_doc', id: ops[i].id, cause: r.body.error as Json, status: 409 });
    } else failures.push({ index: destName, type: '_doc', id: ops[i].id, cause: r.body.error as Json, status: r.status });
  });
  const out: JsonObject = { took: Date.now() - t0, timed_out: false, total: hits.length, updated, created, deleted: 0, batches: hits.length ? 1 : 0, version_conflicts: conflictsN, noops: 0, retries: { bulk: 0, search: 0 }, throttled_millis: 0, requests_per_second: -1, throttled_until_millis: 0, failures };
  return { status: failures.length ? 409 : 200, body: out };
}

interface ByQuery { kind: 'delete' | 'update'; index: string; body: unknown; q: Params }

const tasks = new WeakMap<EsTenant, Map<string, JsonObject>>();

export function taskResult(t: EsTenant, id: string): EsResponse {
  const r = tasks.get(t)?.get(id);
  if (!r) throw new EsError(404, 'resource_not_found_exception', `task [${id}] isn't running and hasn't stored its results`);
  return { status: 200, body: r };
}

/** _delete_by_query / _update_by_query. An unbounded whole-index delete (no query or match_all, no max_docs) is refused. */
export async function byQuery(t: EsTenant, req: ByQuery): Promise<EsResponse> {
  const t0 = Date.now();
  const { q } = req;
  const b: JsonObject = isObj(req.body) ? { ...req.body } : {};
  if (q.stored_fields !== undefined || b.stored_fields !== undefined) throw validation(['stored_fields is not supported in this context']);
  if (req.kind === 'delete' && b.query === undefined && q.q === undefined) throw validation(['query is missing']);
  if (b.script !== undefined) throw illegalArgument('[_update_by_query] scripts are not supported by this service; use _update_by_query without a script (re-index in place) or update documents with a partial doc through _bulk');
  const conflicts = q.conflicts ?? (b.conflicts as string | undefined) ?? 'abort';
  if (!['abort', 'proceed'].includes(conflicts)) throw validation([`conflicts may only be "proceed" or "abort" but was [${conflicts}]`]);
  const sizeQ = q.size !== undefined ? Number(q.size) : b.size !== undefined ? Number(b.size) : undefined;
  const maxQ = q.max_docs !== undefined ? Number(q.max_docs) : b.max_docs !== undefined ? Number(b.max_docs) : undefined;
  if (maxQ !== undefined && sizeQ !== undefined && maxQ !== sizeQ) throw illegalArgument(`[max_docs] set to two different values [${sizeQ}] and [${maxQ}]`);
  const maxDocs = maxQ ?? sizeQ;
  if (maxDocs !== undefined && maxDocs < 0) throw illegalArgument(`[max_docs] parameter cannot be negative, found [${maxDocs}]`);
  if (q.scroll_size !== undefined && !/^-?\d+$/.test(q.scroll_size)) throw illegalArgument(`Failed to parse int parameter [scroll_size] with value [${q.scroll_size}]`);
  if (q.requests_per_second !== undefined) {
    const r = Number(q.requests_per_second);
    if (!(r > 0 || r === -1)) throw validation(['[requests_per_second] must be a float greater than 0. Use -1 to disable throttling.']);
  }
  if (q.slices !== undefined && q.slices !== 'auto' && !(Number.isInteger(Number(q.slices)) && Number(q.slices) >= 1)) throw illegalArgument(`[slices] must be a positive integer or the string "auto", but was [${q.slices}]`);
  let shardErr: EsError | null = null;
  try { activeShards(q, req.index); } catch (e) { if (e instanceof EsError) shardErr = e; else throw e; }
  if (shardErr) {
    const views0 = await t.views(t.resolve(req.index, q));
    const first = views0.flatMap((v) => v.docs)[0];
    const failures = first ? [{ index: first.index.name, type: '_doc', id: first.id, cause: { type: shardErr.type, reason: `${shardErr.reason}, request: [BulkShardRequest [[${first.index.name}][0]] containing [1] requests]` }, status: 503 }] : [];
    return { status: 503, body: { took: Date.now() - t0, timed_out: false, total: first ? 1 : 0, deleted: 0, batches: 1, version_conflicts: 0, noops: 0, retries: { bulk: 0, search: 0 }, throttled_millis: 0, requests_per_second: -1, throttled_until_millis: 0, failures } };
  }
  // "every document": no query, match_all, `*` / `*:*` query strings, or a bool / constant_score of only those
  const matchAll = (x: unknown): boolean => {
    if (x === undefined) return true;
    if (!isObj(x) || Object.keys(x).length !== 1) return false;
    const [k] = Object.keys(x);
    const v = x[k];
    if (k === 'match_all') return true;
    if (k === 'query_string' || k === 'simple_query_string') return isObj(v) && ['*', '*:*'].includes(String(v.query).trim());
    if (k === 'constant_score') return isObj(v) && matchAll(v.filter);
    if (k === 'bool' && isObj(v)) {
      const list = (c: unknown) => (c === undefined ? [] : Array.isArray(c) ? c : [c]);
      const must = [...list(v.must), ...list(v.filter)];
      return list(v.should).length === 0 && list(v.must_not).length === 0 && must.every(matchAll);
    }
    return false;
  };
  const qAll = q.q !== undefined && ['*', '*:*'].includes(q.q.trim());
  if (req.kind === 'delete' && maxDocs === undefined && (q.q === undefined ? matchAll(b.query) : qAll)) {
    throw illegalArgument(`refusing an unbounded delete_by_query on [${req.index}]: the query matches every document and no [max_docs] is set. This service refuses whole-index deletes by query; pass max_docs (e.g. ?max_docs=1000, repeated until "deleted" is 0) or delete the index with DELETE /${req.index} and create it again`);
  }
  const rs = t.resolve(req.index, q);
  const views = await t.views(rs);
  const sq: Params = {};
  for (const k of ['q', 'df', 'default_operator', 'analyzer', 'lenient', 'analyze_wildcard']) if (q[k] !== undefined) sq[k] = q[k];
  const p = wrap(() => prepareSearch(views, { ...(b.query !== undefined ? { query: b.query } : {}), ...(b.sort !== undefined ? { sort: b.sort } : {}), size: 0, track_total_hits: true }, { ...sq, scroll: '1m' }, ENV));
  let hits = p.hits;
  if (maxDocs !== undefined) hits = hits.slice(0, maxDocs);
  const refs = new Map(rs.map((r) => [r.ref.meta.es_index, r.ref]));
  const ops: WriteOp[] = hits.map((h) => {
    const ref = refs.get(h.doc.index.name)!;
    return req.kind === 'delete'
      ? { action: 'delete', ref, id: h.doc.id, ifSeqNo: h.doc.row._seq_no, ifPrimaryTerm: h.doc.row._primary_term }
      : { action: 'index', ref, id: h.doc.id, source: h.doc.source, ifSeqNo: h.doc.row._seq_no, ifPrimaryTerm: h.doc.row._primary_term, routing: h.doc.row._routing ?? undefined };
  });
  const results = ops.length ? await writeBatch(t.state, ops) : [];
  let done = 0;
  let conflictsN = 0;
  const failures: Json[] = [];
  results.forEach((r, i) => {
    if (r.status === 409) {
      conflictsN++;
      if (conflicts === 'abort') failures.push({ index: ops[i].ref.meta.es_index, type: '_doc', id: ops[i].id, cause: r.body.error as Json, status: 409 });
    } else if (r.status < 300) done++;
  });
  const out: JsonObject = {
    took: Date.now() - t0, timed_out: false, total: hits.length, [req.kind === 'delete' ? 'deleted' : 'updated']: done, batches: hits.length ? 1 : 0,
    version_conflicts: conflictsN, noops: 0, retries: { bulk: 0, search: 0 }, throttled_millis: 0, requests_per_second: -1, throttled_until_millis: 0, failures,
  };
  if (req.kind === 'update') out.deleted = 0;
  if (q.wait_for_completion === 'false') {
    const id = `mmdb:${crypto.randomInt(1, 2 ** 31)}`;
    let m = tasks.get(t);
    if (!m) { m = new Map(); tasks.set(t, m); }
    m.set(id, { completed: true, task: { node: 'mmdb', id: Number(id.split(':')[1]), type: 'transport', action: `indices:data/write/${req.kind}/byquery`, status: out, description: `${req.kind}-by-query [${req.index}]`, cancellable: true }, response: out });
    return { status: 200, body: { task: id } };
  }
  return { status: failures.length ? 409 : 200, body: out };
}

