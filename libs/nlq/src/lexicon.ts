/**
 * The lexicon: every phrase the store's manifests and data give a meaning to. Table names
 * (singular and plural), column names and synonyms, relation verbs and nouns, and the values
 * of text columns that identify things (display-column values, low-cardinality categories).
 */
import type { Lexed } from './lex';
import type { ColInfo, RelInfo, SchemaModel } from './schema';
import { singular, STOP, verbLemma } from './words';

export interface ValueHit { readonly table: string; readonly column: string; readonly value: string }

/**
 * Distinct values of a table's text columns, read in one pass: per column its values, or null
 * when it has more than `limit` (too many to be names).
 */
export type ValueSource = (table: string, columns: readonly string[], limit: number) => Promise<Map<string, string[] | null>>;

/** How many distinct values make a column a category (beside the label column). */
export const CATEGORY_LIMIT = 64;
/** How many label values the lexicon keeps per table. */
export const LABEL_LIMIT = 200_000;

/** Splits text into word tokens the way questions are split (lowercased). */
export function tokenize(s: string): string[] {
  return (s.match(/[A-Za-z0-9]+(?:['’][A-Za-z]+)*(?:[-.][A-Za-z0-9]+)*/g) ?? []).map((t) => t.toLowerCase().replace(/’/g, "'"));
}

export class Lexicon {
  /** lowercase token phrase → values it names */
  readonly values = new Map<string, ValueHit[]>();
  /** word → keys of the multi-word values holding it (for a part of a name: "Harbour" of "Harbour Office") */
  private readonly partOf = new Map<string, Set<string>>();
  maxValueTokens = 1;
  /** Recent questions lexed against this lexicon (per day: relative dates move with the clock). */
  private readonly memo = new Map<string, Lexed>();
  constructor(readonly schema: SchemaModel) {}

  /** The lexed form of a question, from the memo when the same text was asked today. */
  lexed(nl: string, day: string, make: () => Lexed): Lexed {
    const key = `${day}|${nl}`;
    let l = this.memo.get(key);
    if (l) {
      this.memo.delete(key);
    } else {
      l = make();
      if (this.memo.size >= 1000) this.memo.delete(this.memo.keys().next().value as string);
    }
    this.memo.set(key, l);
    return l;
  }

  static async build(schema: SchemaModel, source: ValueSource): Promise<Lexicon> {
    const lx = new Lexicon(schema);
    for (const t of schema.tables.values()) {
      const label = schema.labelOf(t.id);
      const textCols = [...t.cols.values()].filter((c) => c.ty === 'str' && !c.isKey);
      if (!textCols.length) continue;
      const read = await source(t.id, textCols.map((c) => c.name), LABEL_LIMIT);
      for (const c of textCols) {
        const isLabel = c.name === label;
        const vals = read.get(c.name);
        if (!vals || vals.length === 0) continue;
        const dates = vals.filter((v) => /^\d{4}-\d{2}-\d{2}/.test(v)).length;
        if (dates >= vals.length * 0.9) {
          c.isDate = true;
          continue;
        }
        if (!isLabel && (t.fulltext.includes(c.name) || vals.length > CATEGORY_LIMIT)) continue;
        if (!isLabel) c.isCategory = true;
        for (const v of vals) lx.addValue(t.id, c.name, v);
      }
    }
    return lx;
  }

  private addValue(table: string, column: string, value: string): void {
    if (value.length > 80 || /[.!?]$/.test(value)) return; // sentences are text to search, not names
    const toks = tokenize(value);
    if (toks.length === 0 || toks.length > 8) return;
    const key = toks.join(' ');
    const list = this.values.get(key) ?? [];
    if (!list.some((h) => h.table === table && h.column === column)) list.push({ table, column, value });
    this.values.set(key, list);
    if (toks.length > 1) for (const t of toks) (this.partOf.get(t) ?? this.partOf.set(t, new Set()).get(t)!).add(key);
    this.maxValueTokens = Math.max(this.maxValueTokens, toks.length);
  }

  /** Tables a word names ("ships", "ship"). */
  tablesFor(word: string): string[] {
    const s = singular(word);
    const out: string[] = [];
    for (const t of this.schema.tables.values()) {
      const tw = t.words[t.words.length - 1];
      if (t.words.length === 1 && (tw === s || tw === word)) out.push(t.id);
    }
    return out;
  }

  /** Multi-word table names ("order items") at position i: [table, tokens used]. */
  tableAt(toks: readonly string[], i: number): [string, number] | undefined {
    for (const t of this.schema.tables.values()) {
      const n = t.words.length;
      if (n < 2 || i + n > toks.length) continue;
      if (t.words.every((w, k) => singular(toks[i + k]) === w)) return [t.id, n];
    }
    const one = this.tablesFor(toks[i]);
    return one.length === 1 ? [one[0], 1] : undefined;
  }

  /** Columns named at position i (longest phrase first): [columns, tokens used]. */
  columnsAt(toks: readonly string[], i: number): [ColInfo[], number] | undefined {
    for (let n = Math.min(3, toks.length - i); n >= 1; n--) {
      const phrase = toks.slice(i, i + n).map(singular);
      const hits: ColInfo[] = [];
      for (const t of this.schema.tables.values()) {
        for (const c of t.cols.values()) {
          if (c.isKey && c.ty !== 'str') continue;
          const names = [c.words.map(singular), ...c.synonyms.map((s) => s.split(/\s+/).map(singular))];
          if (names.some((w) => w.length === n && w.every((x, k) => x === phrase[k]))) hits.push(c);
        }
      }
      if (hits.length) return [hits, n];
    }
    // last: a content word of exactly one column's description ("weight in grams" names it by "grams")
    const w = singular(toks[i]);
    if (w.length > 3 && !STOP.has(w) && !this.tablesFor(toks[i]).length) {
      const byDesc = [...this.schema.tables.values()].flatMap((t) => [...t.cols.values()]).filter((c) => c.description && tokenize(c.description).map(singular).includes(w));
      if (byDesc.length === 1) return [byDesc, 1];
    }
    return undefined;
  }

  /** A value named at position i (longest first): [hits, tokens used]. */
  valueAt(toks: readonly string[], i: number): [ValueHit[], number] | undefined {
    for (let n = Math.min(this.maxValueTokens, toks.length - i); n >= 1; n--) {
      const key = toks.slice(i, i + n).join(' ');
      const last = toks[i + n - 1];
      const hits = this.values.get(key) ?? (key.endsWith("'s") ? this.values.get(key.slice(0, -2)) : undefined)
        ?? (singular(last) !== last ? this.values.get([...toks.slice(i, i + n - 1), singular(last)].join(' ')) : undefined);
      if (hits) return [hits, n];
    }
    return undefined;
  }

  /**
   * A part of exactly one multi-word name ("Le Guin" of "Ursula K. Le Guin"): the longest run of
   * words from i (at most 4) that all belong to one and the same value. Undefined when ambiguous.
   */
  partialAt(toks: readonly string[], i: number, accept: (n: number) => boolean): [ValueHit[], number] | undefined {
    for (let n = Math.min(4, toks.length - i); n >= 1; n--) {
      if (!accept(n)) continue;
      let keys: Set<string> | undefined;
      for (const t of toks.slice(i, i + n)) {
        const k = this.partOf.get(t);
        keys = k ? new Set([...(keys ?? k)].filter((x) => k.has(x))) : new Set();
        if (!keys.size) break;
      }
      if (keys?.size === 1) {
        const key = [...keys][0];
        // the words must be contiguous in the name
        if (` ${key} `.includes(` ${toks.slice(i, i + n).join(' ')} `)) return [this.values.get(key)!, n];
      }
    }
    return undefined;
  }

  /** Relations a verb form names, with which end is its subject. */
  relVerbs(word: string): Array<{ rel: RelInfo; subject: 'source' | 'target' }> {
    const lemma = verbLemma(word);
    const out: Array<{ rel: RelInfo; subject: 'source' | 'target' }> = [];
    for (const r of this.schema.relations) for (const v of r.verbs) if (v.lemma === lemma || v.lemma === word) out.push({ rel: r, subject: v.subject });
    return out;
  }

  /** Relations a noun names ("mentees": the sources of a reverse hop). Table words are not relation nouns. */
  relNouns(word: string): Array<{ rel: RelInfo; dir: 'forward' | 'reverse' }> {
    const s = singular(word);
    if (this.tablesFor(word).length) return [];
    const out: Array<{ rel: RelInfo; dir: 'forward' | 'reverse' }> = [];
    for (const r of this.schema.relations) for (const n of r.nouns) if (n.word === s) out.push({ rel: r, dir: n.dir });
    return out;
  }

  /** A relation named by its own name used as a noun ("the mentors", "mentor connections"). */
  relByName(word: string): RelInfo[] {
    const s = singular(word);
    return this.schema.relations.filter((r) => r.name === word || singular(r.name) === s || r.name.split('_')[0] === s);
  }
}
