/** One tenant's ES surface: index registry over the manifests, the cached views, scrolls and point-in-time readers. */
import { checkAnalysis } from './fields';
import * as crypto from 'crypto';
import { EsError, alreadyExists, indexNotFound } from './errors';
import { validateMappings, type JsonObject } from './mapping';
import { DbError } from '@mmdb/core';
import { ES_NAMESPACE, addedColumns, flatSettings, manifestToml, parseMeta, resolveIndices, validateIndexName, withColumns, type IndexMeta, type IndexRef, type Resolved } from './indices';
import type { EsBackend, EsChange, EsTable } from './port';
import { backfill } from './writes';
import { EsState } from './state';
import type { IndexView } from './doc';
import { Doc } from './doc';
import type { Hit } from './sort';
import type { Prepared } from './search';
import { compile } from './query';

export interface ScrollCtx { prepared: Prepared; hits: Hit[]; pos: number; size: number; expires: number }
export interface PitCtx { views: IndexView[]; expires: number; indices: string[] }

const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** An alias definition as Elasticsearch stores it (`routing` expands to index and search routing). */
export function aliasDef(d: JsonObject): JsonObject {
  const out: JsonObject = {};
  if (d.filter !== undefined) out.filter = d.filter;
  const routing = d.routing !== undefined ? String(d.routing) : undefined;
  if (d.index_routing !== undefined || routing !== undefined) out.index_routing = String(d.index_routing ?? routing);
  if (d.search_routing !== undefined || routing !== undefined) out.search_routing = String(d.search_routing ?? routing);
  if (d.is_write_index !== undefined) out.is_write_index = d.is_write_index;
  if (d.is_hidden !== undefined) out.is_hidden = d.is_hidden;
  return out;
}

export class EsTenant {
  readonly state: EsState;
  readonly scrolls = new Map<string, ScrollCtx>();
  readonly pits = new Map<string, PitCtx>();
  readonly templates = new Map<string, JsonObject>();
  /** Cluster settings set through _cluster/settings (transient and persistent, flattened). */
  readonly clusterSettings = new Map<string, unknown>();
  /** Per-index counters reported by _stats (gets; the shard request cache of size-0 searches). */
  readonly counters = new Map<string, { get: number; hit: number; miss: number; keys: Set<string>; uuid: string }>();

  counter(ref: IndexRef): { get: number; hit: number; miss: number; keys: Set<string>; uuid: string } {
    let c = this.counters.get(ref.meta.es_index);
    if (!c || c.uuid !== ref.meta.uuid) {
      c = { get: 0, hit: 0, miss: 0, keys: new Set(), uuid: ref.meta.uuid };
      this.counters.set(ref.meta.es_index, c);
    }
    return c;
  }

  /** Views of indices named by terms-lookup queries, loaded before the search that needs them. */
  readonly lookupViews = new Map<string, IndexView>();
  /** Parsed index metadata per table object (the backend keeps one object per manifest version). */
  private readonly metaCache = new WeakMap<EsTable, IndexMeta | null>();

  constructor(readonly backend: EsBackend) {
    this.state = new EsState(backend);
  }

  /** ES indices of the tenant, and (read-only) every other registered table by its schema id. */
  refs(): IndexRef[] {
    const out: IndexRef[] = [];
    for (const t of this.backend.tables()) {
      let m = this.metaCache.get(t);
      if (m === undefined) {
        m = parseMeta(t) ?? null;
        this.metaCache.set(t, m);
      }
      if (m) out.push({ meta: m, table: t });
    }
    return out;
  }

  /** A plain registered table searched by its schema id (read-only), with a mapping from its columns. */
  tableRef(id: string): IndexRef | undefined {
    const t = this.backend.tables().find((x) => x.id === id && !x.id.startsWith(`${ES_NAMESPACE}.`));
    if (!t) return undefined;
    const props: JsonObject = {};
    const TY: Record<string, string> = { str: 'keyword', i64: 'long', f64: 'double', bool: 'boolean', timestamp: 'date', json: 'object' };
    for (const c of t.columns) {
      if (c.ty === 'vector') continue;
      props[c.name] = t.fulltext.includes(c.name) ? { type: 'text', fields: { keyword: { type: 'keyword', ignore_above: 256 } } } : { type: TY[c.ty] ?? 'keyword' };
      if (c.ty === 'json') props[c.name] = { type: 'object', enabled: false };
    }
    const meta: IndexMeta = { es_index: id, uuid: crypto.createHash('sha1').update(id).digest('base64url').slice(0, 22), created: 0, settings: {}, mappings: { dynamic: 'false', properties: props }, aliases: {}, text: {} };
    return { meta, table: t, readOnly: true };
  }

  ref(name: string): IndexRef | undefined {
    return this.refs().find((r) => r.meta.es_index === name);
  }

  /** Resolves an index expression; a schema id of a registered table resolves to it (read-only). */
  resolve(expr: string | undefined, q: Record<string, string | undefined> = {}): Resolved[] {
    const refs = this.refs();
    const extra: IndexRef[] = [];
    for (const part of (expr ?? '').split(',')) {
      if (part.includes('.') && !part.includes('*') && !refs.some((r) => r.meta.es_index === part)) {
        const t = this.tableRef(part);
        if (t) extra.push(t);
      }
    }
    return resolveIndices(expr, [...refs, ...extra], { ignoreUnavailable: q.ignore_unavailable === 'true', allowNoIndices: q.allow_no_indices === 'false' ? false : undefined });
  }

  /** The index a write goes to: a concrete index, an alias with one (or a write) index, or auto-created. */
  async writeRef(name: string): Promise<IndexRef> {
    const r = this.ref(name);
    if (r) return r;
    const viaAlias = this.refs().filter((x) => name in x.meta.aliases);
    if (viaAlias.length === 1) return viaAlias[0];
    if (viaAlias.length > 1) {
      const w = viaAlias.find((x) => isObj(x.meta.aliases[name]) && (x.meta.aliases[name] as JsonObject).is_write_index === true);
      if (w) return w;
      throw new EsError(400, 'illegal_argument_exception', `no write index is defined for alias [${name}]. The write index may be explicitly disabled using is_write_index=false or the alias points to multiple indices without one being designated as a write index`);
    }
    if (name.includes('.') && this.tableRef(name)) return this.tableRef(name)!;
    validateIndexName(name);
    return this.createIndex(name, {}, true);
  }

  /** Creates an index (manifest registered in one frame). */
  async createIndex(name: string, body: JsonObject, auto = false): Promise<IndexRef> {
    return this.state.exclusive(async () => {
      validateIndexName(name);
      const existing = this.ref(name);
      if (existing) {
        if (auto) return existing;
        throw alreadyExists(name, existing.meta.uuid);
      }
      if (this.refs().some((r) => name in r.meta.aliases)) {
        throw new EsError(400, 'invalid_index_name_exception', `Invalid index name [${name}], already exists as alias`, { index_uuid: '_na_', index: name });
      }
      const allowed = ['settings', 'mappings', 'aliases'];
      for (const k of Object.keys(body)) if (!allowed.includes(k)) throw new EsError(400, 'parse_exception', `unknown key [${k}] for create index`);
      const tpl = this.templateFor(name);
      const mappings = validateMappings(body.mappings ?? tpl?.mappings);
      const settings = flatSettings({ ...(isObj(tpl?.settings) ? tpl!.settings as JsonObject : {}), ...(isObj(body.settings) ? body.settings : {}) });
      checkAnalysis(settings, mappings);
      for (const [k, v] of Object.entries(settings)) {
        if (k === 'index.number_of_shards' && !(Number(v) >= 1)) throw new EsError(400, 'illegal_argument_exception', `Failed to parse value [${v}] for setting [index.number_of_shards] must be >= 1`);
      }
      const aliases: JsonObject = {};
      for (const [a, def] of Object.entries(isObj(body.aliases) ? body.aliases : isObj(tpl?.aliases) ? tpl!.aliases as JsonObject : {})) {
        if (a === name) throw new EsError(400, 'invalid_alias_name_exception', `Invalid alias name [${a}]: an index or data stream exists with the same name as the alias`);
        aliases[a] = aliasDef(isObj(def) ? def : {});
      }
      const meta: IndexMeta = withColumns({ es_index: name, uuid: crypto.randomBytes(16).toString('base64url').slice(0, 22), created: Date.now(), settings, mappings, aliases, text: {}, mv: true });
      await this.backend.commit([{ op: 'schema_put', toml: manifestToml(meta) }]);
      const r = this.ref(name);
      if (!r) throw new EsError(500, 'exception', `index [${name}] was not registered`);
      return r;
    });
  }

  private templateFor(name: string): JsonObject | undefined {
    let best: { order: number; t: JsonObject } | undefined;
    for (const t of this.templates.values()) {
      const pats = Array.isArray(t.index_patterns) ? t.index_patterns.map(String) : [String(t.index_patterns ?? '')];
      if (!pats.some((p) => new RegExp(`^${p.split('*').map((x) => x.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`).test(name))) continue;
      const order = Number(t.order ?? 0);
      if (!best || order >= best.order) best = { order, t };
    }
    return best?.t;
  }

  /**
   * Rewrites an index's metadata (mappings, settings, aliases) in one frame. Fields that get a
   * typed column (columns.ts) are backfilled in that frame: every stored document holding a value
   * of one is rewritten with its columns, checked against the row it read (a write through another
   * surface in between fails the commit, and it runs again on the committed rows). When stored
   * documents hold a new field and the backend runs migrations (`migrate`), the change is an online
   * migration instead (DESIGN.md "Mapping changes and the migrations mechanism"): its backfill
   * reshapes the rows in throttled frames with the index's writes going on, and this answers
   * once it completed.
   */
  async updateMeta(ref: IndexRef, fn: (m: IndexMeta) => IndexMeta): Promise<void> {
    const migrate = await this.state.exclusive(async () => {
      for (let attempt = 0; ; attempt++) {
        const cur = this.ref(ref.meta.es_index) ?? ref;
        const next = withColumns(fn(cur.meta));
        const added = addedColumns(cur.meta, next);
        const rows = added.length ? [...(await this.state.cached(cur)).byId.values()].map((d) => d.row) : [];
        const puts: EsChange[] = backfill(rows, next, added, () => false).map((b) => ({ op: 'put', schema: cur.table.id, row: b.row, expect: b.expect }));
        // Documents to rewrite: an online migration, outside the write lock (the index's writes go on, dual-written).
        if (puts.length && this.backend.migrate) return { id: cur.table.id, toml: manifestToml(next) };
        try {
          await this.backend.commit([{ op: 'schema_put', toml: manifestToml(next) }, ...puts]);
        } catch (e) {
          this.state.invalidate(cur.table.id);
          if (e instanceof DbError && e.code === 'write_conflict' && attempt < 8) continue;
          throw e;
        }
        this.state.invalidate(cur.table.id);
        return null;
      }
    });
    if (!migrate) return;
    try {
      await this.backend.migrate!(migrate.id, migrate.toml);
    } finally {
      this.state.invalidate(migrate.id);
    }
  }

  async deleteIndex(ref: IndexRef): Promise<void> {
    if (ref.readOnly) throw new EsError(400, 'illegal_argument_exception', `[${ref.meta.es_index}] is a registered table, not an index; drop it through /schemas`);
    await this.state.exclusive(async () => {
      await this.backend.drop(ref.table.id);
      this.state.forget(ref.table.id);
    });
  }

  /** Views of resolved indices (alias filters applied). */
  async views(rs: Resolved[]): Promise<IndexView[]> {
    const out: IndexView[] = [];
    for (const r of rs) {
      const v = await this.state.view(r.ref);
      if (r.filter === undefined) out.push(v);
      else {
        const f = compile({ ix: v }, r.filter);
        const fv: IndexView = { ...v, docs: [], stats: v.stats };
        (fv as { docs: Doc[] }).docs = v.docs.filter((d) => f(d) !== null);
        out.push(fv);
      }
    }
    return out;
  }

  /** Source of one document (terms lookup), from the cached view. */
  lookupSync(views: IndexView[]): (index: string, id: string) => JsonObject | undefined {
    return (index, id) => views.find((v) => v.name === index)?.docs.find((d) => d.id === id)?.source;
  }

  requireIndex(name: string): IndexRef {
    const r = this.ref(name) ?? this.tableRef(name);
    if (!r) throw indexNotFound(name);
    return r;
  }
}
