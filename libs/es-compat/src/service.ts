/**
 * The ES 7.x REST surface of one tenant: routes a request (method, path after the `/es`
 * prefix, query, parsed body) to its API and answers `{status, body, headers}` with
 * Elasticsearch's bodies and error shapes.
 */
import { DbError, isDbError, stringifyJson } from '@mmdb/core';
import { EsError, illegalArgument, parsingError } from './errors';
import { flatten, validateMappings, mergeMappings, type Json, type JsonObject } from './mapping';
import { analyze, chainName, isAnalyzer } from './analysis';
import { checkAnalysis, indexAnalyzer, resolveAnalyzer } from './fields';
import { flatSettings, fullSettings, nestSettings, type IndexMeta } from './indices';
import type { EsBackend } from './port';
import { EsTenant, aliasDef } from './tenant';
import type { EsRequest, EsResponse, Params } from './types';
import { bulk, deleteDoc, getDoc, indexDoc, mget, updateDoc } from './doc-api';
import { byQuery, clearScroll, closePit, count, msearch, openPit, reindex, scroll, search, taskResult } from './search-api';
import { applyFilterPath } from './filter-path';
import { asDoubles } from './numbers';

export const ES_VERSION = '7.14.2';
const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
const ok = (body: unknown, status = 200): EsResponse => ({ status, body });
const ACK = { acknowledged: true };
/** Bodies that carry documents (index, create, update, bulk) keep exact numbers; every other body's numbers are doubles (numbers.ts). */
const DOC_BODY = /^\/(?:[^/_][^/]*\/(?:_doc|_create|_update)(?:\/|$)|(?:[^/]+\/)?_bulk(?:\/|$))/;

export class EsService {
  readonly tenant: EsTenant;
  constructor(backend: EsBackend, private readonly tenantId = 'mmdb') {
    this.tenant = new EsTenant(backend);
  }

  /** Answers one request; never throws an EsError (it becomes the error body). */
  async handle(req: EsRequest): Promise<EsResponse> {
    let r: EsResponse;
    try {
      r = await this.route(DOC_BODY.test(req.path) ? req : { ...req, body: asDoubles(req.body) });
    } catch (e) {
      const es = e instanceof EsError ? e : isDbError(e) ? fromDbError(e) : null;
      if (!es) throw e;
      r = { status: es.status, body: es.body() };
    }
    const headers = { 'x-elastic-product': 'Elasticsearch', ...(r.headers ?? {}) };
    if (req.method === 'HEAD') return { status: r.status, headers };
    const body = req.query.filter_path ? applyFilterPath(r.body, req.query.filter_path) : r.body;
    return { status: r.status, body, headers };
  }

  private async route(req: EsRequest): Promise<EsResponse> {
    const seg = req.path.split('/').filter(Boolean).map((s) => decodeURIComponent(s));
    const m = req.method === 'HEAD' ? 'HEAD' : req.method.toUpperCase();
    const q = req.query;
    const body = req.body;
    const t = this.tenant;
    const [a, b, c] = seg;
    if (!seg.length) {
      if (m === 'GET' || m === 'HEAD') return ok(this.info());
      return badMethod(m, '/');
    }
    // cluster-level and multi-index APIs
    if (a.startsWith('_')) {
      switch (a) {
        case '_bulk': return bulk(t, undefined, ndjson(body), q);
        case '_search':
          if (b === 'scroll') return m === 'DELETE' ? clearScroll(t, c, body) : scroll(t, c, body, q);
          return search(t, undefined, body, q);
        case '_msearch': return msearch(t, undefined, ndjson(body), q);
        case '_count': return count(t, undefined, body, q);
        case '_mget': return mget(t, undefined, body, q);
        case '_pit': return m === 'DELETE' ? closePit(t, body) : badMethod(m, '/_pit');
        case '_refresh': case '_flush': case '_forcemerge': return ok({ _shards: this.shards() });
        case '_mapping': return this.getMapping(undefined, q);
        case '_settings': return m === 'PUT' ? this.putSettings(undefined, body) : this.getSettings(undefined, b, q);
        case '_alias': case '_aliases':
          if (a === '_aliases' && (m === 'POST' || m === 'PUT')) return this.aliasActions(body);
          return this.getAliases(undefined, b, m, q);
        case '_stats': return this.stats(undefined);
        case '_analyze': return this.analyzeApi(undefined, body);
        case '_field_caps': return this.fieldCaps(undefined, q);
        case '_cluster': return this.cluster(b, m, body, seg[2], q);
        case '_nodes': return ok({ _nodes: { total: 1, successful: 1, failed: 0 }, cluster_name: 'mmdb', nodes: { mmdb: { name: 'mmdb', version: ES_VERSION, roles: ['data', 'master', 'ingest'] } } });
        case '_cat': return this.cat(b, q);
        case '_template': return this.template(m, b, body);
        case '_index_template': case '_component_template': return this.template(m, b, body);
        case '_tasks': return b ? taskResult(t, b) : ok({ nodes: {} });
        case '_all': return this.indexRoutes(m, '_all', seg.slice(1), req);
        case '_doc': break;
        case '_xpack': return ok({ build: {}, features: {}, tagline: 'You know, for X' });
        case '_license': return ok({ license: { status: 'active', type: 'basic' } });
        case '_ingest': return ok({});
        case '_scripts': throw illegalArgument('stored scripts are not supported by this service');
        case '_reindex': return reindex(t, body, q);
        default: break;
      }
      throw new EsError(400, 'invalid_index_name_exception', `Invalid index name [${a}], must not start with '_'.`, { index_uuid: '_na_', index: a });
    }
    return this.indexRoutes(m, a, seg.slice(1), req);
  }

  private async indexRoutes(m: string, index: string, rest: string[], req: EsRequest): Promise<EsResponse> {
    const t = this.tenant;
    const q = req.query;
    const body = req.body;
    const [b, c] = rest;
    if (b === undefined) {
      switch (m) {
        case 'PUT': case 'POST': return this.createIndex(index, body);
        case 'HEAD': return { status: this.exists(index, q) ? 200 : 404 };
        case 'GET': return this.getIndex(index, q);
        case 'DELETE': return this.deleteIndex(index, q);
      }
      return badMethod(m, `/${index}`);
    }
    switch (b) {
      case '_doc': case '_create': {
        if (b === '_create') {
          if (c === undefined) throw illegalArgument('an id is required for _create');
          return indexDoc(t, index, c, body, q, true);
        }
        if (c === undefined) {
          if (m === 'POST') return indexDoc(t, index, undefined, body, q);
          return badMethod(m, `/${index}/_doc`);
        }
        switch (m) {
          case 'PUT': case 'POST': return indexDoc(t, index, c, body, q);
          case 'GET': return getDoc(t, index, c, q, 'get');
          case 'HEAD': return getDoc(t, index, c, q, 'exists');
          case 'DELETE': return deleteDoc(t, index, c, q);
        }
        return badMethod(m, `/${index}/_doc/${c}`);
      }
      case '_source': return getDoc(t, index, c ?? '', m === 'HEAD' ? { ...q, _exists_source: 'true' } : q, m === 'HEAD' ? 'exists' : 'source');
      case '_update': return updateDoc(t, index, c ?? '', body, q);
      case '_bulk': return bulk(t, index, ndjson(body), q);
      case '_mget': return mget(t, index, body, q);
      case '_search': return search(t, index, body, q);
      case '_msearch': return msearch(t, index, ndjson(body), q);
      case '_count': return count(t, index, body, q);
      case '_pit': return openPit(t, index, q);
      case '_delete_by_query': return byQuery(t, { kind: 'delete', index, body, q });
      case '_update_by_query': return byQuery(t, { kind: 'update', index, body, q });
      case '_refresh': case '_flush': case '_forcemerge': case '_cache': {
        const rs = t.resolve(index, q);
        return ok({ _shards: this.shards(rs.length) });
      }
      case '_mapping': case '_mappings':
        if (m === 'PUT' || m === 'POST') return this.putMapping(index, body);
        return this.getMapping(index, q);
      case '_settings':
        if (m === 'PUT') return this.putSettings(index, body);
        return this.getSettings(index, c, q);
      case '_alias': case '_aliases':
        if (m === 'PUT' || m === 'POST') return this.putAlias(index, c, body);
        if (m === 'DELETE') return this.deleteAlias(index, c);
        return this.getAliases(index, c, m, q);
      case '_stats': return this.stats(index);
      case '_field_caps': return this.fieldCaps(index, q);
      case '_open': case '_close': t.resolve(index, q); return ok({ acknowledged: true, shards_acknowledged: true, indices: {} });
      case '_explain': throw illegalArgument('_explain is not supported by this service; use explain=true on _search');
      case '_termvectors': throw illegalArgument('_termvectors is not supported by this service');
      case '_analyze': return this.analyzeApi(index, body);
      case '_rollover': case '_shrink': case '_split': case '_clone': throw illegalArgument(`[${b}] is not supported: this service has one shard per index`);
    }
    throw new EsError(400, 'illegal_argument_exception', `no handler found for uri [/${[index, ...rest].join('/')}] and method [${m}]`);
  }

  info(): JsonObject {
    return {
      name: 'mmdb', cluster_name: 'mmdb', cluster_uuid: 'mmdb-' + this.tenantId.toLowerCase(),
      version: { number: ES_VERSION, build_flavor: 'default', build_type: 'tar', build_hash: '66b55ebfa59c92c15db3f69a335d500018b3331e', build_date: '2021-09-16T22:03:16.290624862Z', build_snapshot: false, lucene_version: '8.9.0', minimum_wire_compatibility_version: '6.8.0', minimum_index_compatibility_version: '6.0.0-beta1' },
      tagline: 'You Know, for Search',
    };
  }

  private shards(n = 1): JsonObject {
    return { total: n * 2, successful: n, failed: 0 };
  }

  private exists(index: string, q: Params): boolean {
    try {
      return this.tenant.resolve(index, q).length > 0;
    } catch (e) {
      if (e instanceof EsError && e.status === 404) return false;
      throw e;
    }
  }

  private async createIndex(index: string, body: unknown): Promise<EsResponse> {
    const b = body === undefined || body === null || body === '' ? {} : body;
    if (!isObj(b)) throw parsingError('request body must be an object');
    const r = await this.tenant.createIndex(index, b);
    return ok({ acknowledged: true, shards_acknowledged: true, index: r.meta.es_index });
  }

  private async deleteIndex(index: string, q: Params): Promise<EsResponse> {
    const rs = this.tenant.resolve(index, q);
    if (index.includes('*') || index === '_all') {
      if (!rs.length) return ok(ACK);
    }
    for (const r of rs) {
      if (r.ref.meta.es_index !== index && !index.includes('*') && index !== '_all' && !index.split(',').includes(r.ref.meta.es_index)) {
        throw new EsError(400, 'illegal_argument_exception', `The provided expression [${index}] matches an alias, specify the corresponding concrete indices instead.`);
      }
      await this.tenant.deleteIndex(r.ref);
    }
    return ok(ACK);
  }

  private describe(meta: IndexMeta): JsonObject {
    return { aliases: meta.aliases, mappings: meta.mappings, settings: nestSettings(fullSettings(meta)) };
  }

  private getIndex(index: string, q: Params): EsResponse {
    const out: JsonObject = {};
    for (const r of this.tenant.resolve(index, q)) out[r.ref.meta.es_index] = this.describe(r.ref.meta);
    return ok(out);
  }

  private getMapping(index: string | undefined, q: Params): EsResponse {
    const out: JsonObject = {};
    for (const r of this.tenant.resolve(index, q)) out[r.ref.meta.es_index] = { mappings: r.ref.meta.mappings };
    return ok(out);
  }

  private async putMapping(index: string, body: unknown): Promise<EsResponse> {
    if (!isObj(body)) throw parsingError('request body is required');
    const add = validateMappings(body);
    const rs = this.tenant.resolve(index);
    for (const r of rs) {
      if (r.ref.readOnly) throw illegalArgument(`[${r.ref.meta.es_index}] is a registered table; change its manifest through /schemas`);
      mergeMappings(r.ref.meta.mappings, add);
      checkAnalysis(r.ref.meta.settings, add);
    }
    for (const r of rs) await this.tenant.updateMeta(r.ref, (meta) => ({ ...meta, mappings: mergeMappings(meta.mappings, add) }));
    return ok(ACK);
  }

  private getSettings(index: string | undefined, name: string | undefined, q: Params): EsResponse {
    const out: JsonObject = {};
    for (const r of this.tenant.resolve(index, q)) {
      let flat = fullSettings(r.ref.meta);
      if (name) {
        const rx = new RegExp(`^${name.split(',').map((n) => n.replace(/\./g, '\\.').replace(/\*/g, '.*')).join('|')}$`);
        flat = Object.fromEntries(Object.entries(flat).filter(([k]) => rx.test(k)));
      }
      out[r.ref.meta.es_index] = { settings: q.flat_settings === 'true' ? flat as JsonObject : nestSettings(flat) };
    }
    return ok(out);
  }

  private async putSettings(index: string | undefined, body: unknown): Promise<EsResponse> {
    const b = isObj(body) && isObj(body.settings) ? body.settings : body;
    const flat = flatSettings(b);
    for (const k of Object.keys(flat)) {
      if (['index.number_of_shards', 'index.uuid', 'index.version.created', 'index.creation_date', 'index.provided_name'].includes(k)) {
        throw illegalArgument(`Can't update non dynamic settings [[${k}]] for open indices [[${index}]]`);
      }
    }
    for (const r of this.tenant.resolve(index)) {
      await this.tenant.updateMeta(r.ref, (meta) => {
        const s = { ...meta.settings } as Record<string, Json>;
        for (const [k, v] of Object.entries(flat)) if (v === null) delete s[k]; else s[k] = v;
        return { ...meta, settings: s };
      });
    }
    return ok(ACK);
  }

  private async putAlias(index: string, name: string | undefined, body: unknown): Promise<EsResponse> {
    if (!name) throw illegalArgument('alias name is required');
    const def = isObj(body) ? body : {};
    for (const r of this.tenant.resolve(index)) {
      if (r.ref.meta.es_index === name) throw new EsError(400, 'invalid_alias_name_exception', `Invalid alias name [${name}]: an index or data stream exists with the same name as the alias`);
      await this.tenant.updateMeta(r.ref, (meta) => ({ ...meta, aliases: { ...meta.aliases, [name]: aliasDef(def) } }));
    }
    return ok(ACK);
  }

  private async deleteAlias(index: string, name: string | undefined): Promise<EsResponse> {
    let removed = 0;
    const names = (name ?? '').split(',');
    for (const r of this.tenant.resolve(index)) {
      const keep = Object.fromEntries(Object.entries(r.ref.meta.aliases).filter(([a]) => !names.some((n) => n === '_all' || n === '*' || wild(n).test(a))));
      if (Object.keys(keep).length !== Object.keys(r.ref.meta.aliases).length) {
        removed++;
        await this.tenant.updateMeta(r.ref, (meta) => ({ ...meta, aliases: keep }));
      }
    }
    if (!removed) throw new EsError(404, 'aliases_not_found_exception', `aliases [${name}] missing`, { 'resource.type': 'aliases', 'resource.id': name ?? '' });
    return ok(ACK);
  }

  private getAliases(index: string | undefined, name: string | undefined, m: string, q: Params): EsResponse {
    const out: JsonObject = {};
    let found = 0;
    const pats = name ? name.split(',').map(wild) : null;
    for (const r of this.tenant.resolve(index, q)) {
      const als: JsonObject = {};
      for (const [a, def] of Object.entries(r.ref.meta.aliases)) if (!pats || pats.some((p) => p.test(a))) { als[a] = def; found++; }
      if (!pats || Object.keys(als).length) out[r.ref.meta.es_index] = { aliases: als };
    }
    if (m === 'HEAD') return { status: found || !name ? (found ? 200 : 404) : 404 };
    if (name && !found) return { status: 404, body: { error: `alias [${name}] missing`, status: 404 } };
    return ok(out);
  }

  private async aliasActions(body: unknown): Promise<EsResponse> {
    if (!isObj(body) || !Array.isArray(body.actions)) throw new EsError(400, 'action_request_validation_exception', 'Validation Failed: 1: no actions specified;');
    for (const act of body.actions as JsonObject[]) {
      const [kind] = Object.keys(act);
      const p = act[kind] as JsonObject;
      const indices = p.indices !== undefined ? (p.indices as Json[]).map(String) : [String(p.index)];
      const aliases = p.aliases !== undefined ? (p.aliases as Json[]).map(String) : p.alias !== undefined ? [String(p.alias)] : [];
      for (const ix of indices) {
        if (kind === 'add') for (const a of aliases) {
          const def: JsonObject = {};
          for (const k of ['filter', 'routing', 'index_routing', 'search_routing', 'is_write_index', 'is_hidden']) if (p[k] !== undefined) def[k] = p[k];
          await this.putAlias(ix, a, def);
        } else if (kind === 'remove') await this.deleteAlias(ix, aliases.join(','));
        else if (kind === 'remove_index') for (const r of this.tenant.resolve(ix)) await this.tenant.deleteIndex(r.ref);
        else throw parsingError(`[aliases] unknown action [${kind}]`);
      }
    }
    return ok(ACK);
  }

  private async stats(index: string | undefined): Promise<EsResponse> {
    const indices: JsonObject = {};
    let total = 0;
    let shardsTotal = 0;
    let shardsOk = 0;
    const rc = { hit: 0, miss: 0 };
    for (const r of this.tenant.resolve(index)) {
      const v = await this.tenant.state.view(r.ref);
      total += v.docs.length;
      const c = this.tenant.counter(r.ref);
      rc.hit += c.hit;
      rc.miss += c.miss;
      const fd = [...(v.ordinals?.values() ?? [])].reduce((s, o) => s + o.bytes, 0);
      const prim = { docs: { count: v.docs.length, deleted: 0 }, store: { size_in_bytes: 0 }, indexing: { index_total: 0 }, get: { total: c.get }, fielddata: { memory_size_in_bytes: fd, evictions: 0 }, request_cache: { memory_size_in_bytes: 0, evictions: 0, hit_count: c.hit, miss_count: c.miss } };
      indices[r.ref.meta.es_index] = { uuid: r.ref.meta.uuid, primaries: prim, total: prim };
      const s = r.ref.meta.settings as Record<string, Json>;
      const n = Number(s['index.number_of_shards'] ?? 1);
      shardsTotal += n * (1 + Number(s['index.number_of_replicas'] ?? 1));
      shardsOk += n;
    }
    const all = { docs: { count: total, deleted: 0 }, fielddata: { memory_size_in_bytes: 0, evictions: 0 }, request_cache: { memory_size_in_bytes: 0, evictions: 0, hit_count: rc.hit, miss_count: rc.miss } };
    return ok({ _shards: { total: shardsTotal, successful: shardsOk, failed: 0 }, _all: { primaries: all, total: all }, indices });
  }

  /** _analyze: the tokens of `text` with an analyzer, or a field's analyzer of an index. */
  private async analyzeApi(index: string | undefined, body: unknown): Promise<EsResponse> {
    if (!isObj(body) || body.text === undefined) throw new EsError(400, 'action_request_validation_exception', 'Validation Failed: 1: text is missing;');
    let analyzer = body.analyzer === undefined ? 'standard' : String(body.analyzer);
    if (index !== undefined) {
      const view = await this.tenant.state.view(this.tenant.requireIndex(index));
      const f = body.field !== undefined ? view.fields.get(String(body.field)) : undefined;
      analyzer = f ? indexAnalyzer(view, f) : resolveAnalyzer(view, body.analyzer === undefined ? undefined : String(body.analyzer));
    } else if (!isAnalyzer(analyzer)) throw illegalArgument(`failed to find global analyzer [${analyzer}]`);
    // an ad-hoc chain: tokenizer (keyword without one), filters, char filters, each a name or a definition
    if (body.tokenizer !== undefined || body.filter !== undefined || body.char_filter !== undefined) {
      const list = (v: unknown) => (v === undefined ? [] : Array.isArray(v) ? v : [v]) as Array<string | JsonObject>;
      analyzer = chainName({ char_filter: list(body.char_filter), tokenizer: (body.tokenizer as string | JsonObject | undefined) ?? 'keyword', filter: list(body.filter) });
    }
    const texts = Array.isArray(body.text) ? body.text.map(String) : [String(body.text)];
    const tokens: Json[] = [];
    let base = 0, offset = 0;
    for (const text of texts) {
      let last = -1;
      for (const tk of analyze(text, analyzer)) {
        tokens.push({ token: tk.term, start_offset: offset + tk.start, end_offset: offset + tk.end, type: analyzer === 'keyword' ? 'word' : /^\d+$/.test(tk.term) ? '<NUM>' : '<ALPHANUM>', position: base + tk.pos });
        last = base + tk.pos;
      }
      base = (last >= 0 ? last : base) + 101;
      offset += text.length + 1;
    }
    return ok({ tokens });
  }

  /** _field_caps: per field name and type, whether it is searchable and aggregatable, and in which indices. */
  private fieldCaps(index: string | undefined, q: Params): EsResponse {
    const rs = this.tenant.resolve(index, q);
    const pats = (q.fields ?? '*').split(',').map(wild);
    const caps = new Map<string, Map<string, string[]>>();
    for (const r of rs) {
      for (const f of flatten(r.ref.meta.mappings).values()) {
        if (!pats.some((p) => p.test(f.path))) continue;
        const byType = caps.get(f.path) ?? new Map<string, string[]>();
        caps.set(f.path, byType);
        const list = byType.get(f.type) ?? [];
        list.push(r.ref.meta.es_index);
        byType.set(f.type, list);
      }
    }
    const stored = ['geo_point', 'geo_shape', 'ip', 'binary', 'object'];
    const fields: JsonObject = {};
    for (const [name, byType] of caps) {
      const entry: JsonObject = {};
      for (const [type, indices] of byType) {
        const searchable = !stored.includes(type);
        const aggregatable = type !== 'text' && type !== 'object' && type !== 'binary';
        entry[type] = { type, searchable, aggregatable, ...(byType.size > 1 ? { indices } : {}) };
      }
      fields[name] = entry;
    }
    return ok({ indices: rs.map((r) => r.ref.meta.es_index), fields });
  }

  private cluster(sub: string | undefined, m: string, body: unknown, target?: string, q: Params = {}): EsResponse {
    if (sub === 'health') {
      let refs = this.tenant.refs();
      if (target !== undefined) {
        try {
          refs = this.tenant.resolve(target, q).map((r) => r.ref);
        } catch (e) {
          if (!(e instanceof EsError) || e.status !== 404) throw e;
          return { status: 408, body: { cluster_name: 'mmdb', status: 'red', timed_out: true, number_of_nodes: 1, number_of_data_nodes: 1, active_primary_shards: 0, active_shards: 0, relocating_shards: 0, initializing_shards: 0, unassigned_shards: 0, delayed_unassigned_shards: 0, number_of_pending_tasks: 0, number_of_in_flight_fetch: 0, task_max_waiting_in_queue_millis: 0, active_shards_percent_as_number: 100.0 } };
        }
      }
      const shardsOf = (r: (typeof refs)[number]) => Number((r.meta.settings as Record<string, Json>)['index.number_of_shards'] ?? 1);
      const n = refs.reduce((s, r) => s + shardsOf(r), 0);
      const out: JsonObject = { cluster_name: 'mmdb', status: 'green', timed_out: false, number_of_nodes: 1, number_of_data_nodes: 1, active_primary_shards: n, active_shards: n, relocating_shards: 0, initializing_shards: 0, unassigned_shards: 0, delayed_unassigned_shards: 0, number_of_pending_tasks: 0, number_of_in_flight_fetch: 0, task_max_waiting_in_queue_millis: 0, active_shards_percent_as_number: 100.0 };
      if (q.level === 'indices' || q.level === 'shards') {
        const indices: JsonObject = {};
        for (const r of refs) {
          const s = shardsOf(r);
          const ix: JsonObject = { status: 'green', number_of_shards: s, number_of_replicas: Number((r.meta.settings as Record<string, Json>)['index.number_of_replicas'] ?? 1), active_primary_shards: s, active_shards: s, relocating_shards: 0, initializing_shards: 0, unassigned_shards: 0 };
          if (q.level === 'shards') ix.shards = Object.fromEntries(Array.from({ length: s }, (_, i) => [String(i), { status: 'green', primary_active: true, active_shards: 1, relocating_shards: 0, initializing_shards: 0, unassigned_shards: 0 }]));
          indices[r.meta.es_index] = ix;
        }
        out.indices = indices;
      }
      return ok(out);
    }
    if (sub === 'settings') {
      if (m === 'PUT') {
        for (const part of ['persistent', 'transient']) {
          const flat: Record<string, Json> = {};
          const walk = (v: Json, prefix: string) => { if (isObj(v)) for (const [k, x] of Object.entries(v)) walk(x, prefix ? `${prefix}.${k}` : k); else flat[prefix] = v; };
          if (isObj(body) && isObj(body[part])) walk(body[part] as Json, '');
          for (const [k, v] of Object.entries(flat)) if (v === null) this.tenant.clusterSettings.delete(k); else this.tenant.clusterSettings.set(k, v);
        }
        return ok({ acknowledged: true, persistent: isObj(body) ? body.persistent ?? {} : {}, transient: isObj(body) ? body.transient ?? {} : {} });
      }
      return ok({ persistent: {}, transient: Object.fromEntries(this.tenant.clusterSettings) });
    }
    if (sub === 'state') return ok({ cluster_name: 'mmdb', metadata: { indices: {} } });
    return ok({ cluster_name: 'mmdb' });
  }

  private async cat(sub: string | undefined, q: Params): Promise<EsResponse> {
    if (sub === 'indices') {
      const rows: JsonObject[] = [];
      for (const r of this.tenant.refs()) {
        const v = await this.tenant.state.view(r);
        rows.push({ health: 'green', status: 'open', index: r.meta.es_index, uuid: r.meta.uuid, pri: '1', rep: '0', 'docs.count': String(v.docs.length), 'docs.deleted': '0' });
      }
      return ok(q.format === 'json' ? rows : rows.map((x) => Object.values(x).join(' ')).join('\n') + '\n');
    }
    return ok(q.format === 'json' ? [] : '');
  }

  private template(m: string, name: string | undefined, body: unknown): EsResponse {
    const ts = this.tenant.templates;
    if (m === 'PUT' || m === 'POST') {
      if (!name || !isObj(body)) throw parsingError('template name and body are required');
      ts.set(name, body);
      return ok(ACK);
    }
    if (m === 'DELETE') {
      if (!name || !ts.delete(name)) throw new EsError(404, 'index_template_missing_exception', `index_template [${name}] missing`);
      return ok(ACK);
    }
    const out: JsonObject = {};
    for (const [k, v] of ts) if (!name || wild(name).test(k)) out[k] = v;
    if (m === 'HEAD') return { status: Object.keys(out).length ? 200 : 404 };
    return ok(out, name && !Object.keys(out).length ? 404 : 200);
  }
}

/** A database refusal (storage, executor) in Elasticsearch's error shape, with the nearest ES type. */
function fromDbError(e: DbError): EsError {
  const TYPES: Record<number, string> = { 400: 'illegal_argument_exception', 404: 'resource_not_found_exception', 409: 'version_conflict_engine_exception', 429: 'es_rejected_execution_exception', 503: 'unavailable_shards_exception' };
  return new EsError(e.status, TYPES[e.status] ?? 'exception', e.message, { mmdb_code: e.code });
}

function wild(p: string): RegExp {
  return new RegExp(`^${p.split('*').map((x) => x.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
}

function badMethod(m: string, path: string): EsResponse {
  return { status: 405, body: { error: `Incorrect HTTP method for uri [${path}] and method [${m}], allowed: [GET, HEAD]`, status: 405 } };
}

function ndjson(body: unknown): string {
  if (typeof body === 'string') return body;
  if (Buffer.isBuffer(body)) return body.toString('utf8');
  if (Array.isArray(body)) return body.map((x) => (typeof x === 'string' ? x : stringifyJson(x))).join('\n') + '\n';
  if (isObj(body)) return stringifyJson(body) + '\n';
  return '';
}

