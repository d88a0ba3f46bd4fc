/**
 * What the compiler knows about a store: its tables, columns, foreign keys and relations,
 * read from the manifests, plus what the data says about text columns (dates, categories).
 */
import type { ColumnDef, TableManifest } from '@mmdb/core';
import { AUX, nameWords, singular, STOP, verbLemma } from './words';

export interface ColInfo {
  readonly table: string;
  readonly name: string;
  readonly ty: ColumnDef['ty'];
  /** Words naming the column: its name split, minus a trailing "id" of a key column. */
  readonly words: readonly string[];
  readonly synonyms: readonly string[];
  readonly description?: string;
  /** An ISO date or date-time kept as text (seen in the data). */
  isDate: boolean;
  /** Few distinct values: its values name categories ("Frigate"). */
  isCategory: boolean;
  /** Part of a foreign key or the primary key. */
  readonly isKey: boolean;
  readonly required: boolean;
}

export interface FkLink {
  /** The table holding the key columns. */
  readonly child: string;
  readonly childCols: readonly string[];
  readonly parent: string;
  readonly parentCols: readonly string[];
}

/** A relation with the phrases the manifest (or its name) gives for each direction. */
export interface RelInfo {
  readonly name: string;
  readonly source: string;
  readonly target: string;
  /** Edge table (the relation is declared on it) or absent when source rows hold the target key. */
  readonly via?: string;
  readonly viaSourceCols?: readonly string[];
  readonly cols: readonly string[];
  /** Verbs (lemmas) whose grammatical subject is the source (`source`) or the target (`target`). */
  readonly verbs: ReadonlyArray<{ readonly lemma: string; readonly subject: 'source' | 'target' }>;
  /** Nouns naming the far end of a hop in a fixed direction ("captain" forward, "mentee" reverse). */
  readonly nouns: ReadonlyArray<{ readonly word: string; readonly dir: 'forward' | 'reverse' }>;
  readonly forward?: string;
  readonly reverse?: string;
}

export interface TableInfo {
  readonly id: string;
  readonly table: string;
  readonly manifest: TableManifest;
  readonly words: readonly string[];
  readonly label?: string;
  readonly pk: readonly string[];
  readonly cols: ReadonlyMap<string, ColInfo>;
  readonly fulltext: readonly string[];
}

export class SchemaModel {
  readonly tables = new Map<string, TableInfo>();
  readonly fks: FkLink[] = [];
  readonly relations: RelInfo[] = [];

  constructor(manifests: readonly TableManifest[]) {
    for (const m of manifests) this.tables.set(m.id, tableInfo(m));
    for (const m of manifests) {
      for (const fk of m.foreign_keys) {
        const parent = manifests.find((x) => x.id === fk.references);
        if (!parent) continue;
        this.fks.push({ child: m.id, childCols: fk.columns, parent: parent.id, parentCols: fk.ref_columns.length ? fk.ref_columns : parent.primary_key });
      }
      for (const r of m.relations) {
        if (!this.tables.has(r.source) || !this.tables.has(r.target)) continue;
        const via = r.source === m.id && !r.source_columns ? undefined : m.id;
        this.relations.push(relInfo(r.name, r.source, r.target, via, r.source_columns, r.columns, r.forward, r.reverse));
      }
    }
    // a relation stated by its key columns is also a join path, even without a declared foreign key
    for (const r of this.relations) {
      const holder = r.via ?? r.source;
      if (!this.fks.some((f) => f.child === holder && f.parent === r.target && same(f.childCols, r.cols))) {
        this.fks.push({ child: holder, childCols: r.cols, parent: r.target, parentCols: this.tables.get(r.target)!.pk });
      }
      if (r.via && r.viaSourceCols && !this.fks.some((f) => f.child === r.via && f.parent === r.source && same(f.childCols, r.viaSourceCols!))) {
        this.fks.push({ child: r.via, childCols: r.viaSourceCols, parent: r.source, parentCols: this.tables.get(r.source)!.pk });
      }
    }
  }

  table(id: string): TableInfo {
    const t = this.tables.get(id);
    if (!t) throw new Error(`nlq: no table ${id}`);
    return t;
  }

  col(table: string, name: string): ColInfo | undefined {
    return this.tables.get(table)?.cols.get(name);
  }

  /** The column an entity answer returns: the label, else a required text column that names things. */
  labelOf(table: string): string | undefined {
    const t = this.table(table);
    if (t.label) return t.label;
    // no label: a required text column that names things, else the first required text column
    const text = [...t.cols.values()].filter((c) => c.ty === 'str' && !c.isKey && !c.isDate);
    return (text.find((c) => c.words.includes('name') || c.words.includes('title')) ?? text.find((c) => c.required))?.name;
  }

  /** Foreign-key links touching a table. */
  linksOf(table: string): FkLink[] {
    return this.fks.filter((f) => f.child === table || f.parent === table);
  }
}

function same(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function tableInfo(m: TableManifest): TableInfo {
  const keyCols = new Set<string>([...m.primary_key, ...m.foreign_keys.flatMap((f) => f.columns), ...m.relations.flatMap((r) => [...r.columns, ...(r.source_columns ?? [])])]);
  const cols = new Map<string, ColInfo>();
  for (const c of m.columns) {
    let words = nameWords(c.name);
    if (words.length > 1 && (words[words.length - 1] === 'id' || words[words.length - 1] === 'ids')) words = words.slice(0, -1);
    const description = c.description && !c.description.startsWith('sql:') ? c.description : undefined;
    cols.set(c.name, {
      table: m.id, name: c.name, ty: c.ty, words, synonyms: (c.synonyms ?? []).map((s) => s.toLowerCase()), description,
      isDate: c.ty === 'timestamp', isCategory: false, isKey: keyCols.has(c.name), required: c.required,
    });
  }
  const words = nameWords(m.table).map(singular);
  return { id: m.id, table: m.table, manifest: m, words, label: m.label, pk: m.primary_key, cols, fulltext: m.fulltext.map((f) => f.field) };
}

/**
 * Reads the phrases of a relation. A phrase is `"<noun> -> <phrase>"`: "sailors they mentor"
 * gives the verb "mentor" whose subject ("they") is the start of the hop; "sailors who
 * crewed it" makes the phrase's own noun the subject; "their mentees" or "its captain"
 * is a noun for the far end. Without phrases, the relation's name is the verb ("mentors"), or
 * a passive ("built_by": the target is the subject of "build").
 */
function relInfo(
  name: string, source: string, target: string, via: string | undefined, viaSourceCols: readonly string[] | undefined,
  cols: readonly string[], forward?: string, reverse?: string,
): RelInfo {
  const verbs: Array<{ lemma: string; subject: 'source' | 'target' }> = [];
  const nouns: Array<{ word: string; dir: 'forward' | 'reverse' }> = [];
  const read = (phrase: string | undefined, dir: 'forward' | 'reverse') => {
    if (!phrase) return;
    const rhs = (phrase.includes('->') ? phrase.split('->')[1] : phrase).trim().toLowerCase();
    const w = rhs.split(/\s+/).filter(Boolean);
    const start = dir === 'forward' ? 'source' : 'target';
    const far = dir === 'forward' ? 'target' : 'source';
    const who = w.findIndex((x) => x === 'who' || x === 'that' || x === 'which');
    const they = w.findIndex((x) => x === 'they' || x === 'he' || x === 'she' || x === 'it');
    // the verb after a pronoun, past auxiliaries ("they are enrolled in", "who have written")
    const verbAfter = (k: number) => {
      let j = k + 1;
      while (j < w.length - 1 && AUX.has(w[j])) j++;
      return w[j];
    };
    if (w.length > 1 && w[1].endsWith('ing') && w[1].length > 4) {
      // "<far> reporting to them": the far end does it
      verbs.push({ lemma: verbLemma(w[1]), subject: far });
      nouns.push({ word: singular(w[0]), dir });
    } else if (who >= 0 && who + 1 < w.length) {
      // "<far> who <verb> it": the far end is the subject
      verbs.push({ lemma: verbLemma(verbAfter(who)), subject: far });
      nouns.push({ word: singular(w[0]), dir });
    } else if (they >= 0 && they + 1 < w.length) {
      // "<far> they <verb>": the start is the subject
      verbs.push({ lemma: verbLemma(verbAfter(they)), subject: start });
      if (they > 0) nouns.push({ word: singular(w[they - 1]), dir });
    } else {
      // "their mentees", "its captain": a noun for the far end
      const last = w[w.length - 1];
      if (last && !STOP.has(last) && !['them', 'him', 'her', 'us'].includes(last)) nouns.push({ word: singular(last), dir });
    }
  };
  read(forward, 'forward');
  read(reverse, 'reverse');
  const nw = nameWords(name);
  if (nw[nw.length - 1] === 'by' && nw.length > 1) verbs.push({ lemma: verbLemma(nw[0]), subject: 'target' });
  else if (nw.length === 1) verbs.push({ lemma: verbLemma(nw[0]), subject: 'source' });
  // "reports_to", "works_for", "located_in": a verb and its preposition, the source its subject
  else if (nw.length === 2 && ['to', 'for', 'in', 'at', 'on', 'with', 'from', 'into', 'under'].includes(nw[1])) verbs.push({ lemma: verbLemma(nw[0]), subject: 'source' });
  const uniq = verbs.filter((v, i) => verbs.findIndex((x) => x.lemma === v.lemma && x.subject === v.subject) === i);
  // the agent noun of each verb names its subjects: the "<agent>s of X" are those whose object X is
  for (const v of uniq) {
    const agent = v.lemma.endsWith('e') ? `${v.lemma}r` : `${v.lemma}er`;
    if (!nouns.some((n) => n.word === agent)) nouns.push({ word: agent, dir: v.subject === 'source' ? 'reverse' : 'forward' });
  }
  // generic nouns ("sailor", "ship") would clash with table names: keep only the relation's own words
  return { name, source, target, via, viaSourceCols, cols, verbs: uniq, nouns: nouns.filter((n, i) => nouns.findIndex((x) => x.word === n.word) === i), forward, reverse };
}
