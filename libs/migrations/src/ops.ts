/**
 * Migration operations on a manifest's TOML document, and the plan they make. Operations edit
 * the parsed TOML (smol-toml) so that every section a manifest may hold round-trips untouched;
 * the result is validated by the storage manifest parser before anything is logged.
 */
import { parse, stringify } from 'smol-toml';
import { DbError, type JsonValue, type TableManifest } from '@mmdb/core';
import { parseManifest } from '@mmdb/storage';
import { indexDelta, type IndexDelta } from './in-place';

export type Operation =
  | { op: 'add_column'; name: string; ty: string; required?: boolean; default?: JsonValue; dim?: number; description?: string }
  | { op: 'drop_column'; name: string }
  | { op: 'rename_column'; from: string; to: string }
  | { op: 'change_type'; column: string; ty: string; using?: string; dim?: number }
  | { op: 'set_required' | 'drop_required' | 'drop_default'; column: string }
  | { op: 'set_default'; column: string; value: JsonValue }
  | { op: 'add_index'; name: string; columns: string[]; unique?: boolean }
  | { op: 'add_unique'; name: string; columns: string[] }
  | { op: 'add_foreign_key'; name: string; columns: string[]; references: string; ref_columns?: string[]; on_delete?: string }
  | { op: 'add_check'; name: string; expr: string }
  | { op: 'add_fulltext' | 'add_relation'; def: Record<string, JsonValue> }
  | { op: 'add_vector'; def: Record<string, JsonValue> }
  | { op: 'drop_index' | 'drop_unique' | 'drop_foreign_key' | 'drop_check' | 'drop_fulltext' | 'drop_relation'; name: string }
  | { op: 'drop_vector' };

export const OPERATION_KINDS = [
  'add_column', 'drop_column', 'rename_column', 'change_type', 'set_required', 'drop_required', 'set_default', 'drop_default',
  'add_index', 'add_unique', 'drop_index', 'drop_unique', 'add_foreign_key', 'drop_foreign_key', 'add_check', 'drop_check',
  'add_fulltext', 'drop_fulltext', 'add_vector', 'drop_vector', 'add_relation', 'drop_relation',
] as const;

/** How each target column is filled from a source row (rewrite migrations). */
export interface RowMapping {
  /** target column → source column it copies (absent: not copied, so the default applies). */
  readonly from: Record<string, string>;
  /** target column → SQL expression over the source row (`change_type … using`). */
  readonly using: Record<string, string>;
}

export interface Plan {
  /** True when every row is rewritten (and validated) before cutover. */
  readonly rewrite: boolean;
  /** Indexes built in place (no row copied; in-place.ts), when only indexes change. */
  readonly inPlace?: IndexDelta;
  /** One line per planned change, for the migration object. */
  readonly steps: string[];
  readonly mapping: RowMapping;
}

type Doc = Record<string, unknown> & { columns?: Array<Record<string, unknown>> };

function bad(msg: string, details: Record<string, JsonValue> = {}): never {
  throw new DbError('validation_failed', msg, details);
}

function list(doc: Doc, key: string): Array<Record<string, unknown>> {
  if (!Array.isArray(doc[key])) doc[key] = [];
  return doc[key] as Array<Record<string, unknown>>;
}

function column(doc: Doc, name: string): Record<string, unknown> {
  const c = list(doc, 'columns').find((x) => x.name === name);
  if (!c) bad(`no column "${name}"`, { column: name });
  return c;
}

function removeNamed(doc: Doc, key: string, name: string, what: string): void {
  const arr = list(doc, key);
  const i = arr.findIndex((x) => x.name === name || x.field === name);
  if (i < 0) bad(`no ${what} "${name}"`, { name });
  arr.splice(i, 1);
}

/** Applies operations to a manifest; returns the target TOML and the plan. */
export function applyOperations(toml: string, ops: readonly Operation[]): { toml: string; manifest: TableManifest; plan: Plan } {
  if (!Array.isArray(ops) || ops.length === 0) bad('operations must be a non-empty array');
  const doc = parse(toml) as Doc;
  const source = parseManifest(toml);
  const from: Record<string, string> = Object.fromEntries(source.columns.map((c) => [c.name, c.name]));
  const using: Record<string, string> = {};
  const steps: string[] = [];
  let rewrite = false;
  for (const [i, o] of ops.entries()) {
    if (!o || typeof o !== 'object' || !(OPERATION_KINDS as readonly string[]).includes((o as { op: string }).op)) {
      bad(`operations[${i}].op must be one of ${OPERATION_KINDS.join(', ')}`, { index: i });
    }
    switch (o.op) {
      case 'add_column': {
        if (list(doc, 'columns').some((c) => c.name === o.name)) bad(`column "${o.name}" already exists`, { column: o.name });
        const c: Record<string, unknown> = { name: o.name, ty: o.ty };
        if (o.required) c.required = true;
        if (o.default !== undefined) c.default = o.default;
        if (o.dim !== undefined) c.dim = o.dim;
        if (o.description !== undefined) c.description = o.description;
        list(doc, 'columns').push(c);
        // A required column without a default fails on every existing row: validate them all. With a
        // default, every existing row takes it (as SQL's ADD COLUMN … DEFAULT): the copy writes it.
        const fills = (o.required && o.default === undefined) || o.default !== undefined;
        if (fills) rewrite = true;
        steps.push(`add column ${o.name} ${o.ty}${o.required ? ' required' : ''}${o.default !== undefined ? ' with a default for every row' : ''} (${fills ? 'rewrite' : 'no rewrite'})`);
        break;
      }
      case 'drop_column':
        if (source.primary_key.includes(o.name)) bad(`column "${o.name}" is part of the primary key`, { column: o.name });
        removeNamed(doc, 'columns', o.name, 'column');
        delete from[o.name];
        delete using[o.name];
        rewrite = true;
        steps.push(`drop column ${o.name} (rewrite)`);
        break;
      case 'rename_column': {
        if (source.primary_key.includes(o.from)) bad(`column "${o.from}" is part of the primary key`, { column: o.from });
        if (list(doc, 'columns').some((c) => c.name === o.to)) bad(`column "${o.to}" already exists`, { column: o.to });
        column(doc, o.from).name = o.to;
        for (const idx of list(doc, 'indexes')) idx.columns = (idx.columns as string[]).map((c) => (c === o.from ? o.to : c));
        for (const fk of list(doc, 'foreign_keys')) fk.columns = (fk.columns as string[]).map((c) => (c === o.from ? o.to : c));
        if (from[o.from] !== undefined) from[o.to] = from[o.from];
        delete from[o.from];
        rewrite = true;
        steps.push(`rename column ${o.from} to ${o.to} (rewrite)`);
        break;
      }
      case 'change_type': {
        // A row's key is its primary key: a new type would be a new row (and a new key order).
        if (source.primary_key.includes(o.column)) bad(`column "${o.column}" is part of the primary key: its type cannot change`, { column: o.column });
        const c = column(doc, o.column);
        c.ty = o.ty;
        if (o.dim !== undefined) c.dim = o.dim;
        if (o.using !== undefined) {
          if (typeof o.using !== 'string' || !o.using.trim()) bad('change_type: using must be a SQL expression', { column: o.column });
          using[o.column] = o.using;
          delete from[o.column];
        }
        rewrite = true;
        steps.push(`change type of ${o.column} to ${o.ty}${o.using ? ` using ${o.using}` : ''} (rewrite)`);
        break;
      }
      case 'set_required':
        column(doc, o.column).required = true;
        rewrite = true;
        steps.push(`set ${o.column} required (rewrite: every row validated)`);
        break;
      case 'drop_required':
        delete column(doc, o.column).required;
        steps.push(`drop required on ${o.column} (no rewrite)`);
        break;
      case 'set_default':
        column(doc, o.column).default = o.value;
        steps.push(`set default of ${o.column} (no rewrite)`);
        break;
      case 'drop_default':
        delete column(doc, o.column).default;
        steps.push(`drop default of ${o.column} (no rewrite)`);
        break;
      case 'add_index':
      case 'add_unique':
        list(doc, 'indexes').push({ name: o.name, columns: o.columns, unique: o.op === 'add_unique' || !!o.unique });
        steps.push(`add ${o.op === 'add_unique' || ('unique' in o && o.unique) ? 'unique ' : ''}index ${o.name} (built during the backfill)`);
        break;
      case 'add_foreign_key':
        list(doc, 'foreign_keys').push({
          name: o.name, columns: o.columns, references: o.references,
          ...(o.ref_columns ? { ref_columns: o.ref_columns } : {}), ...(o.on_delete ? { on_delete: o.on_delete } : {}),
        });
        rewrite = true;
        steps.push(`add foreign key ${o.name} (rewrite: every row validated)`);
        break;
      case 'add_check':
        list(doc, 'checks').push({ name: o.name, expr: o.expr });
        rewrite = true;
        steps.push(`add check ${o.name} (rewrite: every row validated)`);
        break;
      case 'add_fulltext':
      case 'add_relation':
        list(doc, o.op === 'add_fulltext' ? 'fulltext' : 'relations').push(o.def);
        steps.push(`${o.op.replace('_', ' ')} (derived entries built during the backfill)`);
        break;
      case 'add_vector':
        doc.vector = o.def;
        steps.push('add vector declaration (derived entries built in the shadow during the backfill)');
        break;
      case 'drop_index':
      case 'drop_unique':
        removeNamed(doc, 'indexes', o.name, 'index');
        steps.push(`drop index ${o.name} (no row rewrite)`);
        break;
      case 'drop_foreign_key':
        removeNamed(doc, 'foreign_keys', o.name, 'foreign key');
        steps.push(`drop foreign key ${o.name} (no row rewrite)`);
        break;
      case 'drop_check':
        removeNamed(doc, 'checks', o.name, 'check');
        steps.push(`drop check ${o.name} (no rewrite)`);
        break;
      case 'drop_fulltext':
      case 'drop_relation':
        removeNamed(doc, o.op === 'drop_fulltext' ? 'fulltext' : 'relations', o.name, o.op === 'drop_fulltext' ? 'fulltext field' : 'relation');
        steps.push(`${o.op.replace('_', ' ')} ${o.name} (no row rewrite)`);
        break;
      case 'drop_vector':
        if (!doc.vector) bad('the table has no vector declaration');
        delete doc.vector;
        steps.push('drop vector declaration (no rewrite)');
        break;
    }
  }
  const out = stringify(doc);
  const manifest = parseManifest(out);
  const derived = derivedPlan(source, manifest, rewrite, steps);
  return { toml: out, manifest, plan: { rewrite: derived.rewrite, ...(derived.inPlace ? { inPlace: derived.inPlace } : {}), steps, mapping: { from, using } } };
}

/**
 * Derived entries that change are never built in the cutover frame: indexes alone are built in
 * place (in-place.ts), anything else in a shadow that the rows are copied into.
 */
function derivedPlan(source: TableManifest, target: TableManifest, rewrite: boolean, steps: string[]): { rewrite: boolean; inPlace?: IndexDelta } {
  if (rewrite || !derivedChanges(source, target)) return { rewrite };
  const inPlace = indexDelta(source, target);
  if (inPlace) {
    steps.push('indexes and full-text fields built in place during the backfill (no row copied); dropped ones cleared after the cutover');
    return { rewrite: false, inPlace };
  }
  steps.push('derived entries (a changed analyzer or index, vectors, relations) change: the rows are copied into a shadow that builds them (rewrite)');
  return { rewrite: true };
}

/**
 * Whether a table's derived entries (index entries, foreign keys' implicit indexes, postings,
 * vector entries and the vector index, edges) differ between two shapes. When they do, the
 * migration copies the rows into a shadow that builds the new ones during the backfill (dual
 * writes keep them current), so that the cutover frame only switches keys: building or
 * deleting them in the cutover frame would hold the table's writes for O(rows).
 */
export function derivedChanges(source: TableManifest, target: TableManifest): boolean {
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  const idx = (m: TableManifest) => [
    ...m.indexes.map((i) => [i.name, i.columns, i.unique]).sort(),
    ...m.foreign_keys.map((f) => [f.name, f.columns]).sort(),
  ];
  const fts = (m: TableManifest) => m.fulltext.map((f) => [f.field, f.analyzer, f.stopwords ?? null]).sort();
  const rels = (m: TableManifest) => m.relations.map((r) => ({ ...r, source: r.source === m.id ? '' : r.source, target: r.target === m.id ? '' : r.target }));
  // A vector entry's metadata holds the row's other columns.
  const cols = (m: TableManifest) => (m.vector ? m.columns.map((c) => [c.name, c.ty]) : []);
  return !same(idx(source), idx(target)) || !same(fts(source), fts(target)) || !same(source.vector ?? null, target.vector ?? null) || !same(rels(source), rels(target)) || !same(cols(source), cols(target));
}

/**
 * The shadow table of a migration: the target shape under another name, with every derived
 * section (so its indexes, postings, vector entries and edges are built as it fills), its
 * relations from (and to) the table itself pointing at the shadow, and without description and
 * label (other surfaces must not take it for a table of theirs).
 */
export function shadowToml(targetToml: string, shadowTable: string): string {
  const doc = parse(targetToml) as Doc;
  const target = parseManifest(targetToml);
  const self = target.id;
  const shadowId = `${target.namespace}.${shadowTable}`;
  for (const r of list(doc, 'relations')) {
    if (r.source === self) r.source = shadowId;
    if (r.target === self) r.target = shadowId;
  }
  if (!list(doc, 'relations').length) delete doc.relations;
  doc.table = shadowTable;
  delete doc.description;
  delete doc.label;
  return stringify(doc);
}

/** The plan of a whole target manifest against the registered one (POST /schemas, manifest submissions). */
export function planManifest(source: TableManifest, target: TableManifest): Plan {
  if (source.id !== target.id) bad(`the manifest is for ${target.id}, the migration for ${source.id}`);
  const steps: string[] = [];
  let rewrite = false;
  const from: Record<string, string> = {};
  const old = new Map(source.columns.map((c) => [c.name, c]));
  for (const c of target.columns) {
    const o = old.get(c.name);
    if (!o) {
      // Validated on every row (required, no default), or filled with its default on every row.
      if (c.required || c.default !== undefined) rewrite = true;
      steps.push(`add column ${c.name}${c.required || c.default !== undefined ? ' (rewrite)' : ''}`);
      continue;
    }
    from[c.name] = c.name;
    if ((o.ty !== c.ty || o.dim !== c.dim) && source.primary_key.includes(c.name)) bad(`column "${c.name}" is part of the primary key: its type cannot change`, { column: c.name });
    if (o.ty !== c.ty || o.dim !== c.dim) { rewrite = true; steps.push(`change type of ${c.name} to ${c.ty} (rewrite)`); }
    if (c.required && !o.required) { rewrite = true; steps.push(`set ${c.name} required (rewrite)`); }
  }
  for (const c of source.columns) if (!target.columns.some((x) => x.name === c.name)) { rewrite = true; steps.push(`drop column ${c.name} (rewrite)`); }
  const names = (xs: readonly { name: string }[]) => new Set(xs.map((x) => x.name));
  const oldChecks = names(source.checks);
  for (const c of target.checks) if (!oldChecks.has(c.name)) { rewrite = true; steps.push(`add check ${c.name} (rewrite)`); }
  const oldFks = names(source.foreign_keys);
  for (const f of target.foreign_keys) if (!oldFks.has(f.name)) { rewrite = true; steps.push(`add foreign key ${f.name} (rewrite)`); }
  if (!steps.length && !derivedChanges(source, target)) steps.push('no row or derived entry changes: the cutover frame registers the manifest');
  const derived = derivedPlan(source, target, rewrite, steps);
  return { rewrite: derived.rewrite, ...(derived.inPlace ? { inPlace: derived.inPlace } : {}), steps, mapping: { from, using: {} } };
}

/** A manifest TOML with its table renamed and some sections removed. */
export function reshape(toml: string, opts: { table?: string; strip: readonly string[] }): string {
  const doc = parse(toml) as Doc;
  if (opts.table) doc.table = opts.table;
  for (const k of opts.strip) delete doc[k];
  return stringify(doc);
}
