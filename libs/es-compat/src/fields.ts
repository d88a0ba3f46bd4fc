/** Field resolution for queries: patterns (`title^2`, `name.*`), analyzers, and value normalization per type. */
import { EsError, illegalArgument } from './errors';
import { NUMERIC_TYPES, STORED_ONLY_TYPES, coerceNumber, valuesAt, type Field, type Json, type JsonObject } from './mapping';
import { DEFAULT_DATE_FORMAT, parseDateMath, parseNanos } from './dates';
import type { Doc, IndexView } from './doc';
import { analyze, chainName, isAnalyzer } from './analysis';

const TEXTUAL = new Set(['text', 'match_only_text', 'search_as_you_type']);
export const isText = (f: Field | undefined): boolean => !!f && TEXTUAL.has(f.type);
export const isKeyword = (f: Field | undefined): boolean => !!f && ['keyword', 'constant_keyword', 'wildcard', 'version'].includes(f.type);
export const isNumeric = (f: Field | undefined): boolean => !!f && NUMERIC_TYPES.has(f.type);
export const isDate = (f: Field | undefined): boolean => !!f && (f.type === 'date' || f.type === 'date_nanos');

/**
 * Resolves an analyzer name through the index's `analysis` settings: a built-in name, or a
 * `chain:` analyzer (analysis.ts) for a custom analyzer (its char filters, tokenizer and filters,
 * those the settings define resolved to their definitions) or a built-in type with parameters
 * (stopwords, pattern, language, stem_exclusion).
 */
export function resolveAnalyzer(ix: IndexView, name: string | undefined): string {
  if (!name) {
    const def = analysisOf(ix)?.analyzer as JsonObject | undefined;
    if (def && def.default) return resolveAnalyzer(ix, 'default');
    return 'standard';
  }
  const analysis = analysisOf(ix);
  const custom = (analysis?.analyzer as JsonObject | undefined)?.[name] as JsonObject | undefined;
  if (!custom) return name === 'default' ? 'standard' : name;
  const section = (kind: string) => (analysis?.[kind] as JsonObject | undefined) ?? {};
  const resolve = (kind: string, v: unknown): string | JsonObject => {
    const own = typeof v === 'string' ? (section(kind)[v] as JsonObject | undefined) : undefined;
    return own ?? (v as string | JsonObject);
  };
  const list = (v: unknown): unknown[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);
  const type = String(custom.type ?? 'custom');
  const stop = custom.stopwords === undefined ? [] : [{ type: 'stop', stopwords: custom.stopwords }];
  switch (type) {
    case 'custom':
      return chainName({
        char_filter: list(custom.char_filter).map((c) => resolve('char_filter', c)),
        tokenizer: resolve('tokenizer', custom.tokenizer ?? 'standard'),
        filter: list(custom.filter).map((f) => resolve('filter', f)),
      });
    case 'standard': case 'stop':
      if (custom.stopwords === undefined && custom.max_token_length === undefined) return type;
      return chainName({ char_filter: [], tokenizer: type === 'stop' ? 'lowercase' : { type: 'standard', max_token_length: custom.max_token_length ?? 255 }, filter: type === 'stop' ? [{ type: 'stop', stopwords: custom.stopwords ?? '_english_' }] : ['lowercase', ...stop] });
    case 'pattern':
      return chainName({ char_filter: [], tokenizer: { type: 'pattern', pattern: custom.pattern ?? '\\W+', flags: custom.flags ?? '' }, filter: [...(custom.lowercase === false ? [] : ['lowercase']), ...stop] });
    case 'english':
      if (custom.stopwords === undefined && custom.stem_exclusion === undefined) return 'english';
      return chainName({ char_filter: [], tokenizer: 'standard', filter: ['english_possessive_stemmer', 'lowercase', { type: 'stop', stopwords: custom.stopwords ?? '_english_' }, { type: 'keyword_marker', keywords: list(custom.stem_exclusion) }, 'porter_stem'] });
    case 'snowball':
      return chainName({ char_filter: [], tokenizer: 'standard', filter: ['lowercase', { type: 'stop', stopwords: custom.stopwords ?? '_english_' }, { type: 'snowball', language: custom.language ?? 'English' }] });
    case 'fingerprint': case 'simple': case 'whitespace': case 'keyword':
      return type;
    default:
      throw illegalArgument(`Unknown analyzer type [${type}] for [${name}]`);
  }
}

/** The index's `analysis` settings, nested (an index keeps its settings flat: `index.analysis.analyzer.a.type`). */
function analysisOf(ix: Pick<IndexView, 'settings'>): JsonObject | undefined {
  const s = ix.settings as JsonObject;
  const nested = ((s.index as JsonObject | undefined)?.analysis ?? s.analysis) as JsonObject | undefined;
  if (nested) return nested;
  let cached = nestedAnalysis.get(s);
  if (cached === undefined) {
    const out: JsonObject = {};
    for (const [k, v] of Object.entries(s)) {
      if (!k.startsWith('index.analysis.')) continue;
      const parts = k.slice('index.analysis.'.length).split('.');
      let cur = out;
      for (const p of parts.slice(0, -1)) cur = (cur[p] = typeof cur[p] === 'object' && cur[p] !== null && !Array.isArray(cur[p]) ? cur[p] : {}) as JsonObject;
      cur[parts[parts.length - 1]] = v;
    }
    cached = Object.keys(out).length ? out : null;
    nestedAnalysis.set(s, cached);
  }
  return cached ?? undefined;
}

const nestedAnalysis = new WeakMap<JsonObject, JsonObject | null>();

/** Refuses an index whose analysis settings name what Elasticsearch would not build (an unknown tokenizer, filter or type). */
export function checkAnalysis(settings: JsonObject, mappings?: JsonObject): void {
  const analyzers = (analysisOf({ settings })?.analyzer as JsonObject | undefined) ?? {};
  const ix = { settings } as unknown as IndexView;
  for (const name of Object.keys(analyzers)) analyze('probe text', resolveAnalyzer(ix, name));
  // a text field naming an analyzer neither built in nor defined by the index
  const walk = (props: unknown, prefix: string) => {
    if (typeof props !== 'object' || props === null) return;
    for (const [k, d] of Object.entries(props as JsonObject)) {
      if (typeof d !== 'object' || d === null || Array.isArray(d)) continue;
      const def = d as JsonObject;
      for (const key of ['analyzer', 'search_analyzer', 'search_quote_analyzer']) {
        const a = def[key];
        if (typeof a === 'string' && !isAnalyzer(a) && analyzers[a] === undefined) {
          throw new EsError(400, 'mapper_parsing_exception', `analyzer [${a}] has not been configured in mappings`, { caused_by: { type: 'illegal_argument_exception', reason: `analyzer [${a}] has not been configured in mappings` } });
        }
      }
      walk(def.properties, `${prefix}${k}.`);
      walk(def.fields, `${prefix}${k}.`);
    }
  };
  walk(mappings?.properties, '');
}

/** The analyzer a query on `f` uses (explicit, then search_analyzer, analyzer, index default). */
export function searchAnalyzer(ix: IndexView, f: Field, explicit?: unknown): string {
  if (explicit !== undefined) return resolveAnalyzer(ix, String(explicit));
  if (!isText(f)) return 'keyword';
  return resolveAnalyzer(ix, (f.def.search_analyzer ?? f.def.analyzer) as string | undefined);
}

/** The analyzer documents of `f` were indexed with. */
export function indexAnalyzer(ix: IndexView, f: Field): string {
  if (!isText(f)) return 'keyword';
  return resolveAnalyzer(ix, f.def.analyzer as string | undefined);
}

/** Expands `name.*`, `*` and `title^2` into concrete fields with boosts. */
export function expandFields(ix: IndexView, specs: string[], textOnly = false): Array<{ field: Field; boost: number }> {
  const out: Array<{ field: Field; boost: number }> = [];
  for (const spec of specs) {
    const [pat, b] = spec.split('^');
    const boost = b === undefined ? 1 : Number(b);
    if (pat.includes('*')) {
      const rx = new RegExp(`^${pat.split('*').map((x) => x.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
      for (const f of ix.fields.values()) {
        if (!rx.test(f.path) || f.type === 'object') continue;
        if (pat === '*' || textOnly) {
          // `*` covers the fields a term can match: text, keyword, and (leniently) others
          if (!isText(f) && !isKeyword(f) && !(pat !== '*' && !textOnly)) continue;
        }
        out.push({ field: f, boost });
      }
    } else {
      const f = ix.fields.get(pat);
      if (f && f.type !== 'object') out.push({ field: f, boost });
    }
  }
  return out;
}

const INTEGER_TYPES = new Set(['long', 'integer', 'short', 'byte']);

/** The query value in the stored form of field `f` (numbers, epoch ms, normalized keyword). */
export function queryValue(f: Field, v: unknown, opts: { format?: string; zone?: string; roundUp?: boolean; exact?: boolean } = {}): Json {
  if ((STORED_ONLY_TYPES as readonly string[]).includes(f.type)) throw notIndexed(f);
  if (isNumeric(f)) {
    if (typeof v === 'string' && (v.trim() === '' || !Number.isFinite(Number(v)))) {
      throw new EsError(400, 'query_shard_exception', `failed to create query: For input string: "${v}"`, { index: undefined, caused_by: { type: 'number_format_exception', reason: `For input string: "${v}"` } });
    }
    const x = typeof v === 'string' ? Number(v) : v;
    const n = coerceNumber({ ...f, type: f.type === 'scaled_float' ? 'double' : f.type }, x as Json, '') ?? null;
    // `exact` (term and range bounds): an integer field's value keeps its fraction, as Elasticsearch compares it (a term 2.5 on
    // a long matches nothing; a range from 2.5 starts at 3), rather than truncated as a document's value is
    return opts.exact && n !== null && typeof x === 'number' && INTEGER_TYPES.has(f.type) ? x : n;
  }
  if (isDate(f)) return parseDateMath(v, opts.format ?? String(f.def.format ?? DEFAULT_DATE_FORMAT), opts.zone, opts.roundUp, Date.now(), f.def.locale === undefined ? undefined : String(f.def.locale));
  if (f.type === 'boolean') {
    if (v === true || v === 'true') return true;
    if (v === false || v === 'false' || v === '') return false;
    throw illegalArgument(`Can't parse boolean value [${String(v)}], expected [true] or [false]`);
  }
  if (isKeyword(f)) {
    const s = String(v);
    return f.def.normalizer === 'lowercase' ? s.toLowerCase() : s;
  }
  return String(v);
}

export function notIndexed(f: Field, query = 'this query'): EsError {
  return new EsError(400, 'illegal_argument_exception', `Field [${f.path}] of type [${f.type}] is kept in _source but not indexed by this service, so it does not support ${query}`);
}

/**
 * A date_nanos field's values as epoch nanoseconds, re-read from `_source` (the doc values hold
 * milliseconds); the doc values' milliseconds when the two disagree in number (null_value,
 * copy_to, ignore_malformed).
 */
export function nanosValues(d: Doc, f: Field): bigint[] {
  const ms = d.values(f.path);
  const fmt = String(f.def.format ?? DEFAULT_DATE_FORMAT);
  const ns = valuesAt(d.source, f.aliasOf ?? f.parent ?? f.path).filter((v) => v !== null).map((v) => parseNanos(v, fmt));
  if (ns.length === ms.length && ns.every((x) => x !== null)) return ns as bigint[];
  return ms.map((v) => BigInt(Math.trunc(Number(v))) * 1_000_000n);
}
