/**
 * Mappings: validation of `properties`, the flat field table (object paths, multi-fields),
 * dynamic mapping as Elasticsearch does it, and the per-document field values that queries,
 * sorts and aggregations read (copy_to and multi-fields included).
 */
import { stringifyJson } from '@mmdb/core';
import { EsError, mapperParsing } from './errors';
import { isAnalyzer } from './analysis';
import { DEFAULT_DATE_FORMAT, parseDate } from './dates';
import { ipToBig } from './ip';

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type JsonObject = { [k: string]: Json };

/** Types we index and query. */
export const INDEXED_TYPES = [
  'text', 'keyword', 'long', 'integer', 'short', 'byte', 'double', 'float', 'half_float', 'scaled_float', 'unsigned_long',
  'boolean', 'date', 'date_nanos', 'completion', 'constant_keyword', 'wildcard', 'search_as_you_type', 'token_count', 'version', 'match_only_text',
] as const;
/** Types accepted in a mapping and kept in `_source`, but not indexed (a query needing their index is refused). */
export const STORED_ONLY_TYPES = [
  'geo_point', 'geo_shape', 'ip', 'binary', 'shape', 'point', 'dense_vector', 'sparse_vector', 'rank_feature', 'rank_features',
  'integer_range', 'long_range', 'float_range', 'double_range', 'date_range', 'ip_range', 'percolator', 'join', 'flattened', 'histogram', 'alias',
] as const;
export const NUMERIC_TYPES = new Set(['long', 'integer', 'short', 'byte', 'double', 'float', 'half_float', 'scaled_float', 'unsigned_long', 'token_count']);
const INT_RANGES: Record<string, [number, number]> = {
  byte: [-128, 127], short: [-32768, 32767], integer: [-2147483648, 2147483647], long: [-9223372036854775808, 9223372036854775807],
};

export interface Field {
  readonly path: string;
  readonly type: string;
  readonly def: JsonObject;
  /** For a multi-field (`title.raw`), the parent field's path. */
  readonly parent?: string;
  /** For a field alias (`type: alias`), the path whose values it reads. */
  readonly aliasOf?: string;
}

const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Validates the `mappings` body of create/put_mapping; returns it normalized (typeless). */
export function validateMappings(m: unknown): JsonObject {
  if (m === undefined || m === null) return {};
  if (!isObj(m)) throw mapperParsing('Failed to parse mapping [_doc]: Root mapping definition has unsupported parameters');
  const root: JsonObject = m;
  if (isObj(root._doc) && Object.keys(root).length === 1) {
    throw new EsError(400, 'illegal_argument_exception', 'The mapping definition cannot be nested under a type [_doc] unless include_type_name is set to true.');
  }
  const allowed = new Set(['properties', 'dynamic', '_source', '_meta', 'date_detection', 'numeric_detection', 'dynamic_templates', '_routing', 'dynamic_date_formats', 'enabled', '_field_names', '_size']);
  const bad = Object.keys(root).filter((k) => !allowed.has(k));
  if (bad.length) {
    throw mapperParsing(`Root mapping definition has unsupported parameters:  ${bad.map((k) => `[${k} : ${JSON.stringify(root[k])}]`).join(' ')}`);
  }
  if (root.dynamic !== undefined && !['true', 'false', 'strict', 'runtime'].includes(String(root.dynamic))) {
    throw mapperParsing(`Could not convert [dynamic.dynamic] to boolean`);
  }
  if (root.properties !== undefined) {
    root.properties = expandDots(root.properties);
    validateProps(root.properties, '');
  }
  return root;
}

/** `"a.b": {type}` in properties means `a: {properties: {b: {type}}}`, as Elasticsearch reads it. */
function expandDots(props: Json): Json {
  if (!isObj(props)) return props;
  const out: JsonObject = {};
  for (const [name, def0] of Object.entries(props)) {
    let def = def0;
    if (isObj(def) && isObj(def.properties)) def = { ...def, properties: expandDots(def.properties) };
    const parts = name.split('.');
    if (parts.length === 1 || parts.some((p) => p === '')) { out[name] = def; continue; }
    let cur = out;
    for (const p of parts.slice(0, -1)) {
      const next = isObj(cur[p]) ? (cur[p] as JsonObject) : { properties: {} };
      if (!isObj(next.properties)) next.properties = {};
      cur[p] = next;
      cur = next.properties as JsonObject;
    }
    cur[parts[parts.length - 1]] = def;
  }
  return out;
}

function validateProps(props: Json, prefix: string): void {
  if (!isObj(props)) throw mapperParsing(`Expected map for property [properties] on field [${prefix || '_doc'}] but got a class java.lang.String`);
  for (const [name, def] of Object.entries(props)) {
    const path = prefix ? `${prefix}.${name}` : name;
    if (!isObj(def)) throw mapperParsing(`Expected map for property [fields] on field [${path}] but got a class java.lang.String`);
    if (name === '') throw new EsError(400, 'mapper_parsing_exception', 'name cannot be empty string', { caused_by: { type: 'illegal_argument_exception', reason: 'name cannot be empty string' } });
    const type = def.type === undefined ? (def.properties !== undefined ? 'object' : 'object') : String(def.type);
    if (type === 'nested') throw mapperParsing(`No handler for type [nested] declared on field [${path}]: nested documents are not supported by this service; use an object field`);
    if (type !== 'object' && !(INDEXED_TYPES as readonly string[]).includes(type) && !(STORED_ONLY_TYPES as readonly string[]).includes(type)) {
      throw mapperParsing(`No handler for type [${type}] declared on field [${path}]`);
    }
    for (const k of ['analyzer', 'search_analyzer']) {
      if (def[k] !== undefined && type === 'text' && !isAnalyzer(String(def[k]))) {
        // custom analyzers from the index settings are checked against the settings by the caller
        if (typeof def[k] !== 'string') throw mapperParsing(`analyzer on field [${path}] must be a string`);
      }
    }
    if (type === 'scaled_float' && def.scaling_factor === undefined) throw mapperParsing(`Field [scaling_factor] is required`);
    if (type === 'object' && def.properties !== undefined) validateProps(def.properties, path);
    if (def.fields !== undefined) {
      if (!isObj(def.fields)) throw mapperParsing(`Expected map for property [fields] on field [${path}]`);
      validateProps(def.fields, path);
    }
  }
}

const flatCache = new WeakMap<JsonObject, Map<string, Field>>();

/** The flat field table: `a.b` object paths and `a.raw` multi-fields (cached per mappings object). */
export function flatten(mappings: JsonObject): Map<string, Field> {
  const hit = flatCache.get(mappings);
  if (hit) return hit;
  const out = new Map<string, Field>();
  flatCache.set(mappings, out);
  const walk = (props: Json | undefined, prefix: string) => {
    if (!isObj(props)) return;
    for (const [name, d] of Object.entries(props)) {
      const def = d as JsonObject;
      const path = prefix ? `${prefix}.${name}` : name;
      const type = def.type === undefined ? 'object' : String(def.type);
      out.set(path, { path, type, def });
      if (type === 'object') walk(def.properties, path);
      if (isObj(def.fields)) {
        for (const [sub, sd] of Object.entries(def.fields)) {
          const sdef = sd as JsonObject;
          out.set(`${path}.${sub}`, { path: `${path}.${sub}`, type: String(sdef.type ?? 'object'), def: sdef, parent: path });
        }
      }
    }
  };
  walk(mappings.properties, '');
  // field aliases read their target's values with the target's type
  for (const f of [...out.values()]) {
    if (f.type !== 'alias') continue;
    const target = out.get(String(f.def.path));
    if (target && target.type !== 'alias' && target.type !== 'object') out.set(f.path, { ...target, path: f.path, aliasOf: target.parent ?? target.path, parent: undefined });
  }
  return out;
}

/** Every value at a dotted path of a source, arrays flattened (`{"a.b": 1}` and `{a: {b: 1}}` alike). */
export function valuesAt(src: Json, path: string): Json[] {
  const out: Json[] = [];
  const go = (v: Json, rest: string) => {
    if (v === null || v === undefined) return;
    if (Array.isArray(v)) {
      for (const x of v) go(x, rest);
      return;
    }
    if (rest === '') {
      out.push(v);
      return;
    }
    if (!isObj(v)) return;
    if (!rest.includes('.')) {
      // one name left: only that key can match (no allocation of the object's entries)
      if (Object.prototype.hasOwnProperty.call(v, rest)) go(v[rest], '');
      return;
    }
    for (const k in v) {
      if (!Object.prototype.hasOwnProperty.call(v, k)) continue;
      if (k === rest) go(v[k], '');
      else if (rest.startsWith(k) && rest.charCodeAt(k.length) === 46) go(v[k], rest.slice(k.length + 1));
    }
  };
  go(src, path);
  return out;
}

/** Cheap pre-check: true when some key of the document has no mapping yet (only then is the mapping copied). */
function mayAdd(node: JsonObject, obj: JsonObject): boolean {
  const props = isObj(node.properties) ? node.properties : {};
  for (const [k, v] of Object.entries(obj)) {
    if (k.includes('.')) return true;
    const def = props[k];
    if (!isObj(def)) { if (v !== null) return true; continue; }
    if ((def.type === undefined || def.type === 'object') && def.enabled !== false) {
      for (const x of Array.isArray(v) ? v : [v]) {
        if (isObj(x)) { if (mayAdd(def, x)) return true; }
        else if (x !== null) return true;
      }
    }
  }
  return false;
}

const DATE_DETECT = /^\d{4}[-/]\d{1,2}[-/]\d{1,2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;

/** The dynamic mapping of one new value (null when it adds nothing). */
function dynamicType(v: Json, dateDetection: boolean): JsonObject | null {
  if (v === null) return null;
  if (Array.isArray(v)) {
    const first = v.find((x) => x !== null);
    return first === undefined ? null : dynamicType(first, dateDetection);
  }
  switch (typeof v) {
    case 'boolean': return { type: 'boolean' };
    case 'number': return Number.isInteger(v) ? { type: 'long' } : { type: 'float' };
    case 'bigint': return (v as unknown as bigint) >= -(2n ** 63n) && (v as unknown as bigint) < 2n ** 63n ? { type: 'long' } : { type: 'float' };
    case 'string':
      if (dateDetection && DATE_DETECT.test(v) && parseDate(v.replace(/\//g, '-'), DEFAULT_DATE_FORMAT) !== null) return { type: 'date' };
      return { type: 'text', fields: { keyword: { type: 'keyword', ignore_above: 256 } } };
    default: return { properties: {} };
  }
}

/**
 * Applies dynamic mapping for a document. Returns the new mappings when fields were added
 * (null when unchanged). `dynamic: strict` refuses a new field; `false` ignores it.
 */
export function applyDynamic(mappings: JsonObject, src: JsonObject): JsonObject | null {
  if (!mayAdd(mappings, src)) return null;
  let changed = false;
  const root: JsonObject = JSON.parse(JSON.stringify(mappings));
  const dateDetection = root.date_detection !== false;
  const walk = (obj: JsonObject, node: JsonObject, prefix: string, dynamic: string) => {
    if (node.enabled === false) return;
    if (!isObj(node.properties)) node.properties = {};
    const props = node.properties as JsonObject;
    const dyn = node.dynamic !== undefined ? String(node.dynamic) : dynamic;
    for (const [rawKey, v] of Object.entries(obj)) {
      // a dotted key is an object path
      const parts = rawKey.split('.');
      if (parts.some((p) => p === '')) throw mapperParsing(`field name cannot be an empty string`);
      let cur = props;
      let curDyn = dyn;
      let path = prefix;
      for (let i = 0; i < parts.length; i++) {
        const k = parts[i];
        path = path ? `${path}.${k}` : k;
        const last = i === parts.length - 1;
        let def = cur[k] as JsonObject | undefined;
        if (!def) {
          if (curDyn === 'strict') {
            throw new EsError(400, 'strict_dynamic_mapping_exception', `mapping set to strict, dynamic introduction of [${k}] within [${path.includes('.') ? path.slice(0, path.lastIndexOf('.')) : '_doc'}] is not allowed`);
          }
          if (curDyn === 'false') break;
          const t = last ? dynamicType(v, dateDetection) : { properties: {} };
          if (!t) break;
          cur[k] = t;
          def = t;
          changed = true;
        }
        const type = def.type === undefined ? 'object' : String(def.type);
        if (!last) {
          if (type !== 'object') break;
          if (!isObj(def.properties)) def.properties = {};
          if (def.dynamic !== undefined) curDyn = String(def.dynamic);
          cur = def.properties as JsonObject;
          continue;
        }
        if (type === 'object' && def.enabled !== false) {
          const objs = (Array.isArray(v) ? v : [v]).filter(isObj);
          for (const o of objs) walk(o, def, path, curDyn);
          const bad = (Array.isArray(v) ? v : [v]).find((x) => x !== null && !isObj(x));
          if (bad !== undefined) {
            throw mapperParsing(`object mapping for [${path}] tried to parse field [${k}] as object, but found a concrete value`);
          }
        }
      }
    }
  };
  walk(src, root, '', root.dynamic !== undefined ? String(root.dynamic) : 'true');
  return changed ? root : null;
}

/** The number a numeric field's value means, or throws the mapper_parsing_exception Elasticsearch gives. */
export function coerceNumber(f: Field, v: Json, id: string): number | null {
  let n: number;
  if (typeof (v as unknown) === 'bigint') return coerceBig(f, v as unknown as bigint, id);
  if (typeof v === 'number') n = v;
  else if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v)) && f.def.coerce !== false) n = Number(v);
  else if (typeof v === 'boolean' || typeof v === 'string' || isObj(v)) throw malformed(f, v, id);
  else return null;
  const r = INT_RANGES[f.type];
  if (r) {
    if (n < r[0] || n > r[1]) throw malformed(f, v, id, `Value [${v}] is out of range for ${f.type === 'long' ? 'a long' : `an ${f.type}`}`);
    if (!Number.isInteger(n)) n = Math.trunc(n);
  }
  if (f.type === 'float' || f.type === 'half_float') n = Math.fround(n);
  if (f.type === 'scaled_float') n = Math.round(n * Number(f.def.scaling_factor)) / Number(f.def.scaling_factor);
  return n;
}

/** The exact range of the integer types for a bigint value (an integer beyond ±2^53, parsed exactly). */
const BIG_RANGES: Record<string, [bigint, bigint]> = { long: [-(2n ** 63n), 2n ** 63n - 1n], unsigned_long: [0n, 2n ** 64n - 1n] };

/**
 * A bigint in a numeric field: range-checked exactly (a `long` holds the signed 64-bit range);
 * its search/sort/aggregation value is the nearest double, while `_source` keeps every digit.
 */
function coerceBig(f: Field, v: bigint, id: string): number {
  const r = BIG_RANGES[f.type] ?? (INT_RANGES[f.type] ? [BigInt(INT_RANGES[f.type][0]), BigInt(INT_RANGES[f.type][1])] : undefined);
  if (r && (v < r[0] || v > r[1])) throw malformed(f, v as unknown as Json, id, `Value [${v}] is out of range for ${f.type === 'long' ? 'a long' : `an ${f.type}`}`);
  return coerceNumber(f, Number(v), id) as number;
}

export function malformed(f: Field, v: Json, id: string, cause?: string): EsError {
  const preview = typeof v === 'string' ? v : stringifyJson(v);
  return new EsError(400, 'mapper_parsing_exception', `failed to parse field [${f.path}] of type [${f.type}] in document with id '${id}'. Preview of field's value: '${preview}'`, cause ? { caused_by: { type: 'illegal_argument_exception', reason: cause } } : {});
}

/**
 * Typed values of a document per mapped field: numbers for numerics, epoch ms for dates, strings
 * for text/keyword (keyword normalized), booleans. Includes multi-fields and copy_to targets.
 * With `strictId`, a malformed value (not ignore_malformed) throws mapper_parsing_exception.
 */
export function docValues(fields: Map<string, Field>, src: Json, strictId?: string, ignored?: Set<string>): Map<string, Json[]> {
  ignoredSink = ignored ?? null;
  try {
    return docValuesInner(fields, src, strictId);
  } finally {
    ignoredSink = null;
  }
}

/** Where `typed` records fields whose value was ignored (ignore_malformed, ignore_above): the `_ignored` metadata field. */
let ignoredSink: Set<string> | null = null;

function docValuesInner(fields: Map<string, Field>, src: Json, strictId?: string): Map<string, Json[]> {
  const out = new Map<string, Json[]>();
  const add = (path: string, vals: Json[]) => {
    const cur = out.get(path);
    if (cur) for (const v of vals) cur.push(v);
    else out.set(path, [...vals]);
  };
  for (const f of fields.values()) {
    if (f.type === 'object') continue;
    if (f.type === 'alias') continue;
    let raw = valuesAt(src, f.aliasOf ?? f.parent ?? f.path);
    if (f.type === 'geo_point' && raw.length >= 2 && raw.every((x) => typeof x === 'number')) {
      const pairs: Json[] = [];
      for (let i = 0; i + 1 < raw.length; i += 2) pairs.push([raw[i], raw[i + 1]]);
      raw = pairs;
    }
    const vals: Json[] = [];
    for (let v of raw) {
      if (v === null) continue;
      if (f.def.null_value !== undefined && v === null) v = f.def.null_value;
      const t = typed(f, v, strictId);
      if (t !== undefined) vals.push(t);
    }
    if (f.def.null_value !== undefined && raw.length === 0 && valuesAt(src, f.parent ?? f.path).length === 0 && hasNull(src, f.parent ?? f.path)) {
      const t = typed(f, f.def.null_value, strictId);
      if (t !== undefined) vals.push(t);
    }
    if (vals.length) add(f.path, vals);
    const copy = f.def.copy_to;
    if (copy !== undefined && !f.parent && !f.aliasOf) {
      for (const target of Array.isArray(copy) ? copy : [copy]) {
        const tf = fields.get(String(target));
        if (!tf) continue;
        const tv = raw.map((v) => typed(tf, v, strictId)).filter((x): x is Json => x !== undefined);
        if (tv.length) add(tf.path, tv);
        for (const sub of fields.values()) if (sub.parent === tf.path) {
          const sv = raw.map((v) => typed(sub, v, strictId)).filter((x): x is Json => x !== undefined);
          if (sv.length) add(sub.path, sv);
        }
      }
    }
  }
  return out;
}

function hasNull(src: Json, path: string): boolean {
  if (!isObj(src)) return false;
  const parts = path.split('.');
  let cur: Json = src;
  for (const p of parts) {
    if (!isObj(cur) || !(p in cur)) return false;
    cur = cur[p];
  }
  return cur === null;
}

function typed(f: Field, v: Json, id?: string): Json | undefined {
  try {
    switch (f.type) {
      case 'text': case 'match_only_text': case 'search_as_you_type':
        return typeof v === 'object' && v !== null ? fail(f, v, id) : String(v);
      case 'keyword': case 'constant_keyword': case 'wildcard': case 'version': {
        if (typeof v === 'object' && v !== null) return fail(f, v, id);
        let s = String(v);
        if (f.def.ignore_above !== undefined && s.length > Number(f.def.ignore_above)) {
          ignoredSink?.add(f.path);
          return undefined;
        }
        if (f.def.normalizer === 'lowercase') s = s.toLowerCase();
        return s;
      }
      case 'boolean':
        if (typeof v === 'boolean') return v;
        if (v === 'true') return true;
        if (v === 'false' || v === '') return false;
        return fail(f, v, id);
      case 'date': case 'date_nanos': {
        let t = parseDate(v, String(f.def.format ?? DEFAULT_DATE_FORMAT), undefined, f.def.locale === undefined ? undefined : String(f.def.locale));
        if (t !== null && f.type === 'date_nanos' && (t < 0 || t > 9214646400000)) {
          if (id !== undefined && f.def.ignore_malformed !== true) {
            throw new EsError(400, 'mapper_parsing_exception', `failed to parse field [${f.path}] of type [date_nanos] in document with id '${id}'. Preview of field's value: '${String(v)}'`, { caused_by: { type: 'illegal_argument_exception', reason: `date[${String(v)}] is ${t < 0 ? 'before the epoch in 1970' : 'after 2262-04-11T23:47:16.854775807'} and cannot be stored in nanosecond resolution` } });
          }
          t = null;
        }
        if (t === null) {
          if (f.def.ignore_malformed === true) ignoredSink?.add(f.path);
          if (id !== undefined && f.def.ignore_malformed !== true) {
            throw new EsError(400, 'mapper_parsing_exception', `failed to parse field [${f.path}] of type [${f.type}] in document with id '${id}'. Preview of field's value: '${String(v)}'`, { caused_by: { type: 'illegal_argument_exception', reason: `failed to parse date field [${String(v)}] with format [${String(f.def.format ?? DEFAULT_DATE_FORMAT)}]` } });
          }
          return undefined;
        }
        return t;
      }
      case 'completion':
        if (isObj(v)) return v.input === undefined ? undefined : (v as Json);
        return String(v);
      case 'ip':
        if (typeof v !== 'string' || ipToBig(v) === null) return fail(f, v, id);
        return v;
      case 'token_count':
        return String(v).split(/\s+/).filter(Boolean).length;
      default:
        if (NUMERIC_TYPES.has(f.type)) {
          const n = coerceNumber(f, v, id ?? '');
          return n === null ? undefined : n;
        }
        // stored-only types: kept as given (exists queries and _source read them)
        return v;
    }
  } catch (e) {
    if (id !== undefined && f.def.ignore_malformed !== true) throw e;
    if (f.def.ignore_malformed === true) ignoredSink?.add(f.path);
    return undefined;
  }
}

function fail(f: Field, v: Json, id?: string): never {
  throw malformed(f, v, id ?? '');
}

/** Merges put_mapping properties into existing mappings; a type change is refused as Elasticsearch does. */
export function mergeMappings(cur: JsonObject, add: JsonObject): JsonObject {
  const out: JsonObject = JSON.parse(JSON.stringify(cur));
  for (const [k, v] of Object.entries(add)) {
    if (k !== 'properties') out[k] = v;
  }
  const mergeProps = (a: JsonObject, b: JsonObject, prefix: string) => {
    for (const [name, d] of Object.entries(b)) {
      const path = prefix ? `${prefix}.${name}` : name;
      const old = a[name] as JsonObject | undefined;
      const nd = d as JsonObject;
      if (!old) { a[name] = nd; continue; }
      const ot = String(old.type ?? 'object');
      const nt = String(nd.type ?? 'object');
      if (ot !== nt) throw new EsError(400, 'illegal_argument_exception', `mapper [${path}] cannot be changed from type [${ot}] to [${nt}]`);
      if (ot === 'object' && isObj(nd.properties)) {
        if (!isObj(old.properties)) old.properties = {};
        mergeProps(old.properties as JsonObject, nd.properties, path);
        for (const [k, v] of Object.entries(nd)) if (k !== 'properties') old[k] = v;
      } else {
        a[name] = { ...old, ...nd, ...(isObj(old.fields) || isObj(nd.fields) ? { fields: { ...(old.fields as JsonObject), ...(nd.fields as JsonObject) } } : {}) };
      }
    }
  };
  if (isObj(add.properties)) {
    if (!isObj(out.properties)) out.properties = {};
    mergeProps(out.properties as JsonObject, add.properties, '');
  }
  return out;
}
