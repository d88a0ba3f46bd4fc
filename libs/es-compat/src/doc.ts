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
      this.ign = [...ign].sort();
    }
    return this.vals.get(path) ?? [];
  }

  /** Fields whose values were ignored (ignore_malformed, ignore_above): the `_ignored` metadata field. */
  ignored(): string[] {
    this.values('');
    return this.ign!;
  }

  /** Tokens per value of a text field, analyzed with the field's analyzer (not kept: `indexed` keeps what scoring needs). */
  tokens(path: string, analyzer: string): Token[][] {
    return this.values(path).map((v) => analyze(String(v), analyzer));
  }

  /** Per field and analyzer: term → positions, and the token count (the norm's length). */
  private idx?: Map<string, Map<string, { pos: Map<string, number[]>; len: number }>>;

  private indexed(path: string, analyzer: string): { pos: Map<string, number[]>; len: number } {
    // made on first use: an index's view holds a Doc per document
    this.idx ??= new Map();
    let byAn = this.idx.get(path);
    if (!byAn) { byAn = new Map(); this.idx.set(path, byAn); }
    let e = byAn.get(analyzer);
    if (!e) {
      const pos = new Map<string, number[]>();
      let base = 0;
      let len = 0;
      for (const toks of this.tokens(path, analyzer)) {
        let last = -1;
        for (const t of toks) {
          const p = base + t.pos;
          last = p;
          len++;
          const l = pos.get(t.term);
          if (l) l.push(p);
          else pos.set(t.term, [p]);
        }
        base = (last >= 0 ? last : base) + 101;
      }
      e = { pos, len };
      byAn.set(analyzer, e);
    }
    return e;
  }

  /** Terms with positions across values (values separated by a position gap of 100, as in Elasticsearch). */
  positions(path: string, analyzer: string): Map<string, number[]> {
    return this.indexed(path, analyzer).pos;
  }

  length(path: string, analyzer: string): number {
    return this.indexed(path, analyzer).len;
  }
}
