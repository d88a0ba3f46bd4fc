/**
 * Parses and validates a table manifest (grammar: ../MANIFEST.md). Every refusal is a
 * `validation_failed` DbError whose message names the key (e.g. `columns[2].ty`) and,
 * for TOML syntax errors, the line and column smol-toml reports.
 */
import { parse, TomlError } from 'smol-toml';
import {
  ColumnDef,
  CheckDef,
  DbError,
  ForeignKeyDef,
  FullTextDef,
  IndexDef,
  JsonValue,
  RelationDef,
  TableManifest,
  VectorDef,
  coerceValue,
  isColumnType,
  VECTOR_METRICS,
  VECTOR_INDEX_KINDS,
  VectorMetric,
  VectorIndexKind,
} from '@mmdb/core';

const NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;
const SCHEMA_ID_RE = /^[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*$/;

type Tbl = Record<string, unknown>;

function bad(key: string, why: string): never {
  throw new DbError('validation_failed', `manifest: ${key}: ${why}`, { key });
}

function allowOnly(t: Tbl, key: string, allowed: readonly string[]): void {
  for (const k of Object.keys(t)) if (!allowed.includes(k)) bad(key ? `${key}.${k}` : k, `unknown key (allowed: ${allowed.join(', ')})`);
}

function str(t: Tbl, key: string, path: string, required: true): string;
function str(t: Tbl, key: string, path: string, required: false): string | undefined;
function str(t: Tbl, key: string, path: string, required: boolean): string | undefined {
  const v = t[key];
  if (v === undefined) return required ? bad(path, 'is required') : undefined;
  if (typeof v !== 'string' || v.length === 0) bad(path, 'must be a non-empty string');
  return v;
}

/** An optional free-text string (may be empty). */
function text(t: Tbl, key: string, path: string): string | undefined {
  const v = t[key];
  if (v !== undefined && typeof v !== 'string') bad(path, 'must be a string');
  return v as string | undefined;
}

function name(t: Tbl, key: string, path: string): string {
  const v = str(t, key, path, true);
  if (!NAME_RE.test(v)) bad(path, `"${v}" is not a valid name (letters, digits, _; not starting with a digit)`);
  return v;
}

function bool(t: Tbl, key: string, path: string, dflt: boolean): boolean {
  const v = t[key];
  if (v === undefined) return dflt;
  if (typeof v !== 'boolean') bad(path, 'must be true or false');
  return v;
}

function num(t: Tbl, key: string, path: string, dflt: number, min: number, max: number, integer: boolean): number {
  const v = t[key];
  if (v === undefined) return dflt;
  if (typeof v !== 'number' || !Number.isFinite(v) || (integer && !Number.isInteger(v)) || v < min || v > max) {
    bad(path, `must be ${integer ? 'an integer' : 'a number'} in [${min}, ${max}]`);
  }
  return v;
}

function strList(t: Tbl, key: string, path: string, required: boolean): string[] | undefined {
  const v = t[key];
  if (v === undefined) return required ? bad(path, 'is required') : undefined;
  const arr = typeof v === 'string' ? [v] : v;
  if (!Array.isArray(arr) || arr.length === 0 || arr.some((x) => typeof x !== 'string' || x.length === 0)) {
    bad(path, 'must be a non-empty array of strings');
  }
  return arr as string[];
}

function tables(t: Tbl, key: string): Tbl[] {
  const v = t[key];
  if (v === undefined) return [];
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'object' || x === null || Array.isArray(x) || x instanceof Date)) {
    bad(key, `must be an array of tables ([[${key}]])`);
  }
  return v as Tbl[];
}

function tomlValue(v: unknown): unknown {
  return v instanceof Date ? v.toISOString() : v;
}

const TOP_KEYS = ['namespace', 'table', 'primary_key', 'columns', 'indexes', 'foreign_keys', 'checks', 'vector', 'fulltext', 'relations', 'hidden_rowid', 'description', 'label'];

/** Parses TOML text into a validated manifest, or throws `validation_failed`. */
export function parseManifest(toml: string): TableManifest {
  let doc: Tbl;
  try {
    // an integer beyond ±(2^53 − 1) (an i64 default) is a bigint, exact
    doc = parse(toml, { integersAsBigInt: 'asNeeded' }) as Tbl;
  } catch (e) {
    if (e instanceof TomlError) {
      const first = e.message.split('\n')[0];
      throw new DbError('validation_failed', `manifest: TOML syntax error at line ${e.line}, column ${e.column}: ${first}`, {
        line: e.line,
        column: e.column,
      });
    }
    throw new DbError('validation_failed', `manifest: ${(e as Error).message}`);
  }
  return validateManifest(doc);
}

/** Validates a manifest given as a plain object (the TOML document's shape). */
export function validateManifest(doc: Tbl): TableManifest {
  allowOnly(doc, '', TOP_KEYS);
  const namespace = name(doc, 'namespace', 'namespace');
  const table = name(doc, 'table', 'table');
  const description = text(doc, 'description', 'description');
  const label = str(doc, 'label', 'label', false);
  const hidden_rowid = bool(doc, 'hidden_rowid', 'hidden_rowid', false);

  const columns: ColumnDef[] = [];
  const colRows = tables(doc, 'columns');
  if (colRows.length === 0) bad('columns', 'at least one [[columns]] entry is required');
  colRows.forEach((c, i) => {
    const p = `columns[${i}]`;
    allowOnly(c, p, ['name', 'ty', 'required', 'default', 'dim', 'description', 'synonyms']);
    const cdesc = text(c, 'description', `${p}.description`);
    const synonyms = strList(c, 'synonyms', `${p}.synonyms`, false);
    const cname = name(c, 'name', `${p}.name`);
    if (columns.some((x) => x.name === cname)) bad(`${p}.name`, `duplicate column "${cname}"`);
    const ty = str(c, 'ty', `${p}.ty`, true);
    if (!isColumnType(ty)) bad(`${p}.ty`, `unknown type "${ty}" (str, i64, f64, bool, timestamp, json, vector)`);
    let dim: number | undefined;
    if (ty === 'vector') dim = num(c, 'dim', `${p}.dim`, NaN, 1, 65536, true);
    else if (c.dim !== undefined) bad(`${p}.dim`, 'only a vector column has a dimension');
    if (ty === 'vector' && Number.isNaN(dim)) bad(`${p}.dim`, 'is required for a vector column');
    const required = bool(c, 'required', `${p}.required`, false);
    let dflt: JsonValue | undefined;
    if (c.default !== undefined) {
      try {
        dflt = coerceValue(cname, ty, tomlValue(c.default), dim);
      } catch (e) {
        bad(`${p}.default`, (e as Error).message);
      }
    }
    columns.push({ name: cname, ty, required, ...(dflt !== undefined ? { default: dflt } : {}), ...(dim !== undefined ? { dim } : {}), ...(cdesc !== undefined ? { description: cdesc } : {}), ...(synonyms ? { synonyms } : {}) });
  });
  const col = (n: string, path: string): ColumnDef => columns.find((c) => c.name === n) ?? bad(path, `no column named "${n}"`);

  const primary_key = strList(doc, 'primary_key', 'primary_key', true)!;
  primary_key.forEach((k, i) => {
    const c = col(k, `primary_key[${i}]`);
    if (c.ty === 'json' || c.ty === 'vector') bad(`primary_key[${i}]`, `column "${k}" of type ${c.ty} cannot be part of a primary key`);
  });
  if (new Set(primary_key).size !== primary_key.length) bad('primary_key', 'names a column twice');

  const names = new Set<string>();
  const uniqueName = (n: string, path: string) => {
    if (names.has(n)) bad(path, `duplicate name "${n}"`);
    names.add(n);
  };

  const indexes: IndexDef[] = tables(doc, 'indexes').map((t, i) => {
    const p = `indexes[${i}]`;
    allowOnly(t, p, ['name', 'columns', 'unique']);
    const n = name(t, 'name', `${p}.name`);
    uniqueName(n, `${p}.name`);
    const cols = strList(t, 'columns', `${p}.columns`, true)!;
    cols.forEach((c, j) => {
      const def = col(c, `${p}.columns[${j}]`);
      if (def.ty === 'vector') bad(`${p}.columns[${j}]`, 'a vector column cannot be indexed here (use [vector])');
    });
    return { name: n, columns: cols, unique: bool(t, 'unique', `${p}.unique`, false) };
  });

  const foreign_keys: ForeignKeyDef[] = tables(doc, 'foreign_keys').map((t, i) => {
    const p = `foreign_keys[${i}]`;
    allowOnly(t, p, ['name', 'columns', 'references', 'ref_columns', 'on_delete']);
    const n = t.name === undefined ? `fk_${i}` : name(t, 'name', `${p}.name`);
    uniqueName(n, `${p}.name`);
    const cols = strList(t, 'columns', `${p}.columns`, true)!;
    cols.forEach((c, j) => col(c, `${p}.columns[${j}]`));
    const references = str(t, 'references', `${p}.references`, true);
    if (!SCHEMA_ID_RE.test(references)) bad(`${p}.references`, `"${references}" is not a schema id (namespace.table)`);
    const ref_columns = strList(t, 'ref_columns', `${p}.ref_columns`, false) ?? [];
    if (ref_columns.length && ref_columns.length !== cols.length) bad(`${p}.ref_columns`, 'must have as many columns as columns');
    const on_delete = (t.on_delete ?? 'restrict') as string;
    if (on_delete !== 'restrict' && on_delete !== 'ignore') bad(`${p}.on_delete`, 'must be "restrict" or "ignore"');
    return { name: n, columns: cols, references, ref_columns, on_delete };
  });

  const checks: CheckDef[] = tables(doc, 'checks').map((t, i) => {
    const p = `checks[${i}]`;
    allowOnly(t, p, ['name', 'expr']);
    const n = name(t, 'name', `${p}.name`);
    uniqueName(n, `${p}.name`);
    return { name: n, expr: str(t, 'expr', `${p}.expr`, true) };
  });

  let vector: VectorDef | undefined;
  if (doc.vector !== undefined) {
    const v = doc.vector as Tbl;
    if (typeof v !== 'object' || Array.isArray(v)) bad('vector', 'must be a table ([vector])');
    allowOnly(v, 'vector', ['column', 'dim', 'metric', 'index', 'params']);
    const column = str(v, 'column', 'vector.column', true);
    const c = col(column, 'vector.column');
    if (c.ty !== 'vector') bad('vector.column', `column "${column}" must have ty = "vector"`);
    const dim = num(v, 'dim', 'vector.dim', c.dim!, 1, 65536, true);
    if (dim !== c.dim) bad('vector.dim', `disagrees with columns "${column}" dim ${c.dim}`);
    const metric = (v.metric ?? 'cosine') as string;
    if (!(VECTOR_METRICS as readonly string[]).includes(metric)) bad('vector.metric', `unknown metric "${metric}" (${VECTOR_METRICS.join(', ')})`);
    const index = (v.index ?? 'auto') as string;
    if (!(VECTOR_INDEX_KINDS as readonly string[]).includes(index)) bad('vector.index', `unknown index kind "${index}" (${VECTOR_INDEX_KINDS.join(', ')})`);
    const params: Record<string, number> = {};
    if (v.params !== undefined) {
      if (typeof v.params !== 'object' || Array.isArray(v.params)) bad('vector.params', 'must be a table of numbers');
      for (const [k, x] of Object.entries(v.params as Tbl)) {
        if (typeof x !== 'number' || !Number.isFinite(x)) bad(`vector.params.${k}`, 'must be a number');
        params[k] = x;
      }
    }
    vector = { column, dim, metric: metric as VectorMetric, index: index as VectorIndexKind, params };
  }

  const fulltext: FullTextDef[] = tables(doc, 'fulltext').map((t, i) => {
    const p = `fulltext[${i}]`;
    allowOnly(t, p, ['field', 'analyzer', 'stopwords', 'k1', 'b']);
    const field = str(t, 'field', `${p}.field`, true);
    const c = col(field, `${p}.field`);
    if (c.ty !== 'str') bad(`${p}.field`, `column "${field}" must have ty = "str"`);
    const analyzer = str(t, 'analyzer', `${p}.analyzer`, false) ?? 'english';
    const stopwords = t.stopwords === undefined ? undefined : (t.stopwords as unknown[]);
    if (stopwords !== undefined && (!Array.isArray(stopwords) || stopwords.some((s) => typeof s !== 'string'))) {
      bad(`${p}.stopwords`, 'must be an array of strings');
    }
    return {
      field,
      analyzer,
      ...(stopwords ? { stopwords: stopwords as string[] } : {}),
      k1: num(t, 'k1', `${p}.k1`, 1.2, 0, 10, false),
      b: num(t, 'b', `${p}.b`, 0.75, 0, 1, false),
    };
  });
  const ftFields = new Set<string>();
  fulltext.forEach((f, i) => {
    if (ftFields.has(f.field)) bad(`fulltext[${i}].field`, `field "${f.field}" declared twice`);
    ftFields.add(f.field);
  });

  const id = `${namespace}.${table}`;
  const relations: RelationDef[] = tables(doc, 'relations').map((t, i) => {
    const p = `relations[${i}]`;
    allowOnly(t, p, ['name', 'target', 'columns', 'source', 'source_columns', 'weight', 'forward', 'reverse']);
    const forward = str(t, 'forward', `${p}.forward`, false);
    const reverse = str(t, 'reverse', `${p}.reverse`, false);
    const n = name(t, 'name', `${p}.name`);
    uniqueName(n, `${p}.name`);
    const target = str(t, 'target', `${p}.target`, true);
    if (!SCHEMA_ID_RE.test(target)) bad(`${p}.target`, `"${target}" is not a schema id (namespace.table)`);
    const cols = strList(t, 'columns', `${p}.columns`, true)!;
    cols.forEach((c, j) => col(c, `${p}.columns[${j}]`));
    const source = str(t, 'source', `${p}.source`, false);
    if (source !== undefined && !SCHEMA_ID_RE.test(source)) bad(`${p}.source`, `"${source}" is not a schema id (namespace.table)`);
    const source_columns = strList(t, 'source_columns', `${p}.source_columns`, false);
    if ((source === undefined) !== (source_columns === undefined)) {
      bad(`${p}.source_columns`, 'source and source_columns go together (the edge-table form)');
    }
    source_columns?.forEach((c, j) => col(c, `${p}.source_columns[${j}]`));
    const weight = str(t, 'weight', `${p}.weight`, false);
    if (weight !== undefined) {
      const w = col(weight, `${p}.weight`);
      if (w.ty !== 'f64' && w.ty !== 'i64') bad(`${p}.weight`, `column "${weight}" must be f64 or i64`);
    }
    return {
      name: n,
      source: source ?? id,
      target,
      columns: cols,
      ...(source_columns ? { source_columns } : {}),
      ...(weight ? { weight } : {}),
      ...(forward !== undefined ? { forward } : {}),
      ...(reverse !== undefined ? { reverse } : {}),
    };
  });

  if (label !== undefined) {
    const c = col(label, 'label');
    if (c.ty !== 'str') bad('label', `column "${label}" must have ty = "str"`);
  }
  return {
    namespace, table, id, primary_key, columns, indexes, foreign_keys, checks, ...(vector ? { vector } : {}), fulltext, relations,
    ...(hidden_rowid ? { hidden_rowid } : {}), ...(label !== undefined ? { label } : {}), ...(description !== undefined ? { description } : {}),
  };
}
