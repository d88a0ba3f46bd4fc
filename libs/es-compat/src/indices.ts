/** Index metadata: names, the manifest an index is stored as, settings, aliases, and index expressions. */
import * as crypto from 'crypto';
import { EsError, indexNotFound } from './errors';
import type { Json, JsonObject } from './mapping';
import { flatten } from './mapping';
import { MULTI, MV, columnLayout, storedTy, valueColumns } from './columns';
import type { EsTable } from './port';

export const ES_NAMESPACE = 'es';
export const VERSION_CREATED = '7140299';

/** What the manifest's description holds for an index. */
export interface IndexMeta {
  readonly es_index: string;
  readonly uuid: string;
  readonly created: number;
  readonly settings: JsonObject;
  readonly mappings: JsonObject;
  readonly aliases: JsonObject;
  /** Text field path → the str column holding its text for the fts postings. */
  readonly text: Record<string, string>;
  /**
   * Typed field path → its typed column (columns.ts). Absent in an index made before typed
   * columns: its next mapping change or write adds them (and backfills the rows holding values).
   */
  readonly values?: Record<string, string>;
  /** The table has the `_mv` column (columns.ts `MV`; indices made since it exists). */
  readonly mv?: boolean;
}

export interface IndexRef { readonly meta: IndexMeta; readonly table: EsTable; readonly readOnly?: boolean }

const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

export function validateIndexName(name: string): void {
  const bad = (why: string) => new EsError(400, 'invalid_index_name_exception', `Invalid index name [${name}], ${why}`, { 'index_uuid': '_na_', index: name });
  if (name !== name.toLowerCase()) throw bad('must be lowercase');
  if (/[\\/*?"<>| ,#:]/.test(name)) throw bad('must not contain the following characters [ , ", *, \\, <, |, ,, >, /, ?]');
  if (/^[_\-+]/.test(name)) throw bad("must not start with '_', '-', or '+'");
  if (name === '.' || name === '..') throw bad("must not be '.' or '..'");
  if (Buffer.byteLength(name) > 255) throw bad('index name is too long, (' + Buffer.byteLength(name) + ' > 255)');
}

/** The table name of an index: a sanitized prefix plus a hash of the exact name. */
export function tableName(index: string): string {
  const clean = index.replace(/[^a-z0-9_]/g, '_').slice(0, 40);
  const h = crypto.createHash('sha1').update(index).digest('hex').slice(0, 8);
  return `i_${clean}_${h}`;
}

export function parseMeta(t: EsTable): IndexMeta | undefined {
  if (!t.id.startsWith(`${ES_NAMESPACE}.`) || !t.description) return undefined;
  try {
    const m = JSON.parse(t.description) as IndexMeta;
    return typeof m.es_index === 'string' ? m : undefined;
  } catch {
    return undefined;
  }
}

const q = (s: string) => JSON.stringify(s);

const FTS_ANALYZER: Record<string, string> = { standard: 'standard', simple: 'simple', whitespace: 'simple', keyword: 'keyword', english: 'english', stop: 'standard' };

/** The TOML manifest of an index: `_id` key, `_source` verbatim, versions, one str column per text field (in the fts postings). */
export function manifestToml(meta: IndexMeta): string {
  const lines = [
    `namespace = ${q(ES_NAMESPACE)}`, `table = ${q(tableName(meta.es_index))}`, `primary_key = ["_id"]`, `description = ${q(JSON.stringify(meta))}`, '',
    '[[columns]]', 'name = "_id"', 'ty = "str"', 'required = true', '',
    '[[columns]]', 'name = "_source"', 'ty = "json"', '',
    '[[columns]]', 'name = "_version"', 'ty = "i64"', '',
    '[[columns]]', 'name = "_seq_no"', 'ty = "i64"', '',
    '[[columns]]', 'name = "_primary_term"', 'ty = "i64"', '',
    '[[columns]]', 'name = "_routing"', 'ty = "str"', '',
  ];
  const fields = flatten(meta.mappings);
  for (const [path, col] of Object.entries(meta.text)) lines.push('[[columns]]', `name = ${q(col)}`, 'ty = "str"', `description = ${q(path)}`, '');
  if (meta.values) {
    lines.push('[[columns]]', `name = ${q(MULTI)}`, 'ty = "str"', 'description = "typed columns left null: the value is not one plain value"', '');
    if (meta.mv) lines.push('[[columns]]', `name = ${q(MV)}`, 'ty = "json"', 'description = "the values of typed fields holding several: {column: [values]}"', '');
    for (const [path, col, ty] of columnLayout(meta.mappings, meta.values)) lines.push('[[columns]]', `name = ${q(col)}`, `ty = ${q(storedTy(ty))}`, `description = ${q(path)}`, '');
  }
  for (const [path, col] of Object.entries(meta.text)) {
    const an = String(fields.get(path)?.def.analyzer ?? 'standard');
    // Elasticsearch's standard, simple, whitespace and keyword analyzers drop no word: neither do these postings
    const keepAll = an !== 'stop' && an !== 'english' && FTS_ANALYZER[an] !== undefined;
    lines.push('[[fulltext]]', `field = ${q(col)}`, `analyzer = ${q(FTS_ANALYZER[an] ?? 'standard')}`, ...(keepAll ? ['stopwords = []'] : []), '');
  }
  return lines.join('\n');
}

/** The metadata with a column for every text and typed field (new fields get new columns; existing names stay). */
export function withColumns(meta: IndexMeta): IndexMeta {
  return { ...meta, text: textColumns(meta.mappings, meta.text), values: valueColumns(meta.mappings, meta.values ?? {}) };
}

/** The fields of `next` that have a typed column `prev` lacks (their values in stored rows need a backfill). */
export function addedColumns(prev: IndexMeta, next: IndexMeta): string[] {
  return Object.keys(next.values ?? {}).filter((p) => !prev.values?.[p]);
}

/** Assigns a str column to every text field not yet given one. Returns the (possibly new) map. */
export function textColumns(mappings: JsonObject, cur: Record<string, string>): Record<string, string> {
  const out = { ...cur };
  let n = Object.keys(out).length;
  for (const f of flatten(mappings).values()) {
    if (f.type !== 'text' || f.parent || out[f.path]) continue;
    out[f.path] = `t${++n}_${f.path.replace(/[^A-Za-z0-9_]/g, '_').slice(0, 30)}`;
  }
  return out;
}

/** Flattens `{index: {number_of_shards: 1}}` and `{"index.x": 1}` into `index.`-prefixed keys. */
export function flatSettings(s: unknown): Record<string, Json> {
  const out: Record<string, Json> = {};
  const walk = (v: Json, prefix: string) => {
    if (isObj(v)) for (const [k, x] of Object.entries(v)) walk(x, prefix ? `${prefix}.${k}` : k);
    else out[prefix] = v;
  };
  if (isObj(s)) walk(s, '');
  const norm: Record<string, Json> = {};
  for (const [k, v] of Object.entries(out)) norm[k.startsWith('index.') ? k : `index.${k}`] = v;
  return norm;
}

/** Nested settings with string leaves, as get_settings prints them. */
export function nestSettings(flat: Record<string, Json>): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(flat)) {
    const parts = k.split('.');
    let cur = out;
    for (const p of parts.slice(0, -1)) cur = (cur[p] = isObj(cur[p]) ? cur[p] : {}) as JsonObject;
    cur[parts[parts.length - 1]] = Array.isArray(v) ? v.map((x) => String(x)) : v === null ? null : String(v);
  }
  return out;
}

/** The full settings of an index (defaults, identity, the user's). */
export function fullSettings(meta: IndexMeta): Record<string, Json> {
  return {
    'index.number_of_shards': '1', 'index.number_of_replicas': '1', ...meta.settings as Record<string, Json>,
    'index.uuid': meta.uuid, 'index.version.created': VERSION_CREATED, 'index.provided_name': meta.es_index, 'index.creation_date': String(meta.created),
  } as Record<string, Json>;
}

export interface Resolved { readonly ref: IndexRef; readonly filter?: Json }

function wildcardRx(p: string): RegExp {
  return new RegExp(`^${p.split('*').map((x) => x.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
}

/**
 * Resolves an index expression (`a,b`, `logs-*`, `_all`, aliases, `-excluded`) to indices.
 * A missing concrete name is index_not_found unless `ignoreUnavailable`.
 */
export function resolveIndices(expr: string | undefined, refs: IndexRef[], opts: { ignoreUnavailable?: boolean; allowNoIndices?: boolean } = {}): Resolved[] {
  const parts = expr === undefined || expr === '' || expr === '_all' ? ['*'] : expr.split(',').filter(Boolean);
  const out = new Map<string, Resolved>();
  const byName = new Map(refs.map((r) => [r.meta.es_index, r]));
  for (const raw of parts) {
    const exclude = raw.startsWith('-') && out.size > 0;
    const p = exclude ? raw.slice(1) : raw;
    const hits: Resolved[] = [];
    if (p === '_all' || p.includes('*')) {
      const rx = wildcardRx(p === '_all' ? '*' : p);
      for (const r of refs) {
        if (rx.test(r.meta.es_index)) hits.push({ ref: r });
        for (const [alias, def] of Object.entries(r.meta.aliases)) if (rx.test(alias)) hits.push({ ref: r, filter: isObj(def) ? def.filter : undefined });
      }
    } else {
      const r = byName.get(p);
      if (r) hits.push({ ref: r });
      else {
        for (const x of refs) if (p in x.meta.aliases) {
          const def = x.meta.aliases[p];
          hits.push({ ref: x, filter: isObj(def) ? def.filter : undefined });
        }
        if (!hits.length && !opts.ignoreUnavailable) throw indexNotFound(p);
      }
    }
    for (const h of hits) {
      if (exclude) out.delete(h.ref.meta.es_index);
      else if (!out.has(h.ref.meta.es_index) || h.filter === undefined) out.set(h.ref.meta.es_index, h);
    }
  }
  if (!out.size && opts.allowNoIndices === false) throw indexNotFound(expr ?? '_all');
  return [...out.values()];
}
