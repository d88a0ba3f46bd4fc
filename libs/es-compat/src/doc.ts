/** A document as search sees it: its row (id, source, versions) and lazily derived field values and tokens. */
import { analyze, type Token } from './analysis';
import { docValues, type Field, type Json, type JsonObject } from './mapping';

export interface DocRow {
  readonly _id: string;
  readonly _source: JsonObject;
  readonly _version: number;
  readonly _seq_no: number;
  readonly _primary_term: number;
  readonly _routing?: string | null;
}

/** One searchable index: its name, mapped fields, analyzers and documents (one snapshot). */
export interface IndexView {
  readonly name: string;
  readonly uuid: string;
  readonly fields: Map<string, Field>;
  readonly settings: JsonObject;
  readonly docs: Doc[];
  readonly mappings: JsonObject;
  /** Field path → its typed column in the index's table (columns.ts); absent for read-only tables and older indices. */
  readonly columns?: Record<string, string>;
  /** The index's aliases (for indices_boost by alias). */
  readonly aliases?: JsonObject;
  /** Per-field BM25 statistics, computed on first use. */
  readonly stats: Map<string, FieldStats>;
  /** Global ordinals of keyword fields (sorted distinct terms), built by terms aggregations; cleared when documents change. */
  readonly ordinals?: Map<string, { terms: string[]; bytes: number }>;
}

/** The sorted distinct terms of a keyword field over the whole index (cached on the view). */
export function globalOrdinals(ix: IndexView, path: string): { terms: string[]; bytes: number } {
  let m = ix.ordinals;
  if (!m) { m = new Map(); (ix as { ordinals?: typeof m }).ordinals = m; }
  let o = m.get(path);
  if (!o) {
    const set = new Set<string>();
    for (const d of ix.docs) for (const v of d.values(path)) set.add(String(v));
    const terms = [...set].sort();
    o = { terms, bytes: terms.reduce((s, t) => s + 2 * t.length + 40, 0) };
    m.set(path, o);
  }
  return o;
}

/**
 * `maxLen`: the longest document of the field (Lucene's norms are exact below 24 tokens).
 * `asciiTokens`: every term is lowercase ASCII letters, digits and apostrophes, so the fts lib's
 * `standard` analyzer makes the same tokens (it splits on `.` and `_`, and folds accents).
 */
/** `multiValued`: a document holds several values of the field (Elasticsearch leaves 100 positions between them, our fts column joins them). */
export interface FieldStats { docCount: number; sumLen: number; df: Map<string, number>; maxLen: number; asciiTokens?: boolean; multiValued?: boolean }

/** The `_ignored` of a document with none (shared: one empty array, not one per document). */
const NONE: string[] = [];

export class Doc {
  private vals?: Map<string, Json[]>;
  constructor(readonly row: DocRow, readonly index: IndexView) {}

  get id(): string { return this.row._id; }
  get source(): JsonObject { return this.row._source; }

  private ign?: string[];

  /** Typed values of a mapped field (empty for unmapped fields). */
  values(path: string): Json[] {
    if (!this.vals) {
      const ign = new Set<string>();
      this.vals = docValues(this.index.fields, this.row._source, undefined, ign);
      this.ign = ign.size ? [...ign].sort() : NONE;
    }
    return this.vals.get(path) ?? [];
  }

  /** Fields whose values were ignored (ignore_malformed, ignore_above): the `_ignored` metadata field. */
  ignored(): string[] {
    this.values('');
    return this.ign!;
  }

  /**
   * Tokens per value of a text field, analyzed with the field's analyzer (not kept: `packed` keeps
   * what scoring needs). Does not keep the document's mapped values either when they were not
   * made yet: indexing every document for BM25 statistics would otherwise leave a Map and an
   * array per field on each.
   */
  tokens(path: string, analyzer: string): Token[][] {
    const vals = this.vals ? this.values(path) : docValues(this.index.fields, this.row._source).get(path) ?? [];
    return vals.map((v) => analyze(String(v), analyzer));
  }

  /**
   * Per field and analyzer, what search reads of this document (term frequencies, positions, the
   * norm's length), packed in one string (`pack`): one heap object a field, with no pointers to
   * trace, instead of a Map and an array a term. A view holds a Doc per document, so this is what
   * a 200,000-document index keeps alive: as Maps of arrays it was ~29 heap objects a document,
   * the largest part of the live objects every major GC marks (libs/es-compat DESIGN.md, "Memory
   * shape of the view"). The first field asked is kept in `ix1` (its path and analyzer beside it:
   * the caller's strings, no key made per document), others in `ixMore`.
   */
  private ix1Path?: string;
  private ix1An?: string;
  private ix1?: string;
  private ixMore?: Map<string, string>;

  private packed(path: string, analyzer: string): string {
    if (this.ix1Path === path && this.ix1An === analyzer) return this.ix1!;
    const key = `${path}\u0000${analyzer}`;
    let p = this.ixMore?.get(key);
    if (p === undefined) {
      p = pack(termIds(this.index), this.tokens(path, analyzer));
      if (this.ix1 === undefined) { this.ix1Path = path; this.ix1An = analyzer; this.ix1 = p; }
      else (this.ixMore ??= new Map()).set(key, p);
    }
    return p;
  }

  /** Terms with positions across values (values separated by a position gap of 100, as in Elasticsearch); made on each call, not kept. */
  positions(path: string, analyzer: string): Map<string, number[]> {
    const p = this.packed(path, analyzer);
    const dict = termIds(this.index).terms;
    const n = int(p, N_AT);
    const out = new Map<string, number[]>();
    let at = H + 2 * n;
    for (let i = 0; i < n; i++) {
      const end = H + 2 * n + int(p, H + n + i);
      const ps: number[] = [];
      for (; at < end; at++) ps.push(int(p, at));
      out.set(dict[int(p, H + i)], ps);
    }
    return out;
  }

  /** The positions of one term in a field (empty when absent; made on each call). */
  positionsOf(path: string, analyzer: string, term: string): number[] {
    const p = this.packed(path, analyzer);
    const id = termIds(this.index).ids.get(term);
    if (id === undefined) return [];
    const n = int(p, N_AT);
    const i = find(p, n, id);
    if (i < 0) return [];
    const out: number[] = [];
    for (let at = H + 2 * n + (i ? int(p, H + n + i - 1) : 0), end = H + 2 * n + int(p, H + n + i); at < end; at++) out.push(int(p, at));
    return out;
  }

  /** The distinct terms of a field (made on each call). */
  terms(path: string, analyzer: string): string[] {
    const p = this.packed(path, analyzer);
    const dict = termIds(this.index).terms;
    const n = int(p, N_AT);
    const out = new Array<string>(n);
    for (let i = 0; i < n; i++) out[i] = dict[int(p, H + i)];
    return out;
  }

  /** How often `term` occurs in a field (0 when absent). */
  freq(path: string, analyzer: string, term: string): number {
    const p = this.packed(path, analyzer);
    const id = termIds(this.index).ids.get(term);
    if (id === undefined) return 0;
    const n = int(p, N_AT);
    const i = find(p, n, id);
    return i < 0 ? 0 : int(p, H + n + i) - (i ? int(p, H + n + i - 1) : 0);
  }

  /** Whether a field holds `term`. */
  has(path: string, analyzer: string, term: string): boolean {
    return this.freq(path, analyzer, term) > 0;
  }

  /** How many values the field holds (a multi-valued field: more than one). */
  valueCount(path: string, analyzer: string): number {
    return int(this.packed(path, analyzer), 1);
  }

  /** The field's token count (the norm's length). */
  length(path: string, analyzer: string): number {
    return int(this.packed(path, analyzer), 0);
  }
}

/** A view's term dictionary (term ↔ id), shared by its documents' packed fields; it lives as long as the view. */
interface TermIds { readonly ids: Map<string, number>; readonly terms: string[] }
const dictionaries = new WeakMap<IndexView, TermIds>();

function termIds(ix: IndexView): TermIds {
  let d = dictionaries.get(ix);
  if (!d) dictionaries.set(ix, (d = { ids: new Map(), terms: [] }));
  return d;
}

/**
 * Packs a field's tokens (per value; values 101 positions apart) as the integers
 * `len, values, n, id_0 … id_n-1 (ascending), end_0 … end_n-1 (cumulative position counts), positions…`,
 * each as two UTF-16 code units (high, low 16 bits) of one string: a string is one heap object
 * with nothing inside for the GC to trace, where a typed array is three and an off-heap buffer.
 */
function pack(dict: TermIds, values: Token[][]): string {
  const byId = new Map<number, number[]>();
  let base = 0;
  let len = 0;
  for (const toks of values) {
    let last = -1;
    for (const t of toks) {
      const p = base + t.pos;
      last = p;
      len++;
      let id = dict.ids.get(t.term);
      if (id === undefined) { id = dict.terms.length; dict.ids.set(t.term, id); dict.terms.push(t.term); }
      const l = byId.get(id);
      if (l) l.push(p);
      else byId.set(id, [p]);
    }
    base = (last >= 0 ? last : base) + 101;
  }
  const ids = [...byId.keys()].sort((a, b) => a - b);
  const n = ids.length;
  const out = new Array<number>(H + 2 * n + len);
  out[0] = len;
  out[1] = values.length;
  out[N_AT] = n;
  let at = H + 2 * n;
  for (let i = 0; i < n; i++) {
    out[H + i] = ids[i];
    for (const x of byId.get(ids[i])!) out[at++] = x;
    out[H + n + i] = at - (H + 2 * n);
  }
  const units = new Array<number>(2 * out.length);
  for (let i = 0; i < out.length; i++) { units[2 * i] = out[i] >>> 16; units[2 * i + 1] = out[i] & 0xffff; }
  let str = '';
  for (let i = 0; i < units.length; i += 8192) str += String.fromCharCode(...units.slice(i, i + 8192));
  return str;
}

/** The packed header: the token count, the value count, the distinct term count (at N_AT). */
const H = 3;
const N_AT = 2;

/** The i-th integer of a packed field. */
function int(p: string, i: number): number {
  return (p.charCodeAt(2 * i) << 16) | p.charCodeAt(2 * i + 1);
}

/** Index of term id `id` among the `n` ascending ids of a packed field, or -1. */
function find(p: string, n: number, id: number): number {
  let lo = 0;
  let hi = n - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const v = int(p, H + mid);
    if (v === id) return mid;
    if (v < id) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}
