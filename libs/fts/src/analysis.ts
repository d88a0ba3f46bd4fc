/**
 * Analysis: text → tokens (term + position). One analyzer per full-text field,
 * named in the manifest (`[[fulltext]] analyzer = "english"`).
 *
 * - `english` (default): Unicode word tokenization, lowercase, accent folding,
 *   English stop words, Porter2 (Snowball English) stemming.
 * - `standard`: the same without stemming.
 * - `simple`: tokenize, lowercase, fold accents; no stop words, no stemming.
 * - `keyword`: the whole text, lowercased and trimmed, is one term.
 *
 * Positions count every word, stop words included, so a phrase query analyzed the
 * same way keeps its gaps ("wing in a slipstream" matches only that exact run).
 *
 * @example
 *   const a = analyzerFor({ analyzer: 'english' });
 *   a.analyze('Flows past Wings'); // [{term:'flow',pos:0},{term:'past',pos:1},{term:'wing',pos:2}]
 */
import { DbError } from '@mmdb/core';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const porter2: (w: string) => string = require('wink-porter2-stemmer');

export interface Token {
  readonly term: string;
  readonly pos: number;
}

export interface Analyzer {
  readonly name: string;
  /** Tokens of a text, in position order. */
  analyze(text: string): Token[];
  /** Normalizes a prefix of a `prefix*` query: folded and lowercased, never stemmed. */
  normalizePrefix(prefix: string): string;
  /** The indexing form: every term's positions and the number of tokens (same result as `analyze`). */
  termPositions(text: string): { length: number; positions: Map<string, number[]> };
}

function groupTokens(tokens: Token[]): { length: number; positions: Map<string, number[]> } {
  const positions = new Map<string, number[]>();
  for (const t of tokens) {
    const ps = positions.get(t.term);
    if (ps) ps.push(t.pos);
    else positions.set(t.term, [t.pos]);
  }
  return { length: tokens.length, positions };
}

/** English stop words: Lucene's classic English set, question words and other function words (no content words). */
export const ENGLISH_STOPWORDS: readonly string[] = [
  'a', 'an', 'and', 'are', 'as', 'at', 'be', 'but', 'by', 'for', 'if', 'in', 'into', 'is', 'it', 'no', 'not', 'of',
  'on', 'or', 'such', 'that', 'the', 'their', 'then', 'there', 'these', 'they', 'this', 'to', 'was', 'will', 'with',
  'what', 'which', 'who', 'whom', 'how', 'when', 'where', 'why', 'can', 'could', 'do', 'does', 'did', 'has', 'have',
  'had', 'been', 'being', 'were', 'would', 'should', 'may', 'might', 'must', 'its', 'from', 'than', 'so', 'any',
  'some', 'other', 'also', 'about', 'we', 'our', 'us', 'i', 'me', 'my', 'you', 'your', 'he', 'she', 'him', 'her',
  'his', 'them', 'those', 'all', 'each', 'both', 'only', 'very', 'same', 'over', 'under', 'between', 'through',
  'one', 'after', 'before', 'while', 'up', 'down', 'out', 'off', 'again', 'further', 'once', 'here', 'more', 'most',
  'own', 'nor', 'too', 'just', 'now', 'am', 'having', 'doing', 'because', 'until', 'against', 'during', 'above',
  'below', 'ever',
  // further function words (common English stop lists)
  'also', 'although', 'always', 'among', 'amongst', 'another', 'anyhow', 'anyone', 'anything', 'anyway', 'anywhere', 'became',
  'become', 'becomes', 'becoming', 'beforehand', 'behind', 'beside', 'besides', 'beyond', 'cannot', 'done', 'either', 'else',
  'elsewhere', 'enough', 'etc', 'even', 'every', 'everyone', 'everything', 'everywhere', 'except', 'few', 'former', 'formerly',
  'hence', 'hereafter', 'hereby', 'herein', 'hereupon', 'hers', 'herself', 'himself', 'however', 'indeed', 'itself', 'latter',
  'latterly', 'least', 'less', 'many', 'meanwhile', 'mine', 'moreover', 'much', 'myself', 'namely', 'neither', 'never',
  'nevertheless', 'next', 'nobody', 'none', 'noone', 'nothing', 'nowhere', 'often', 'onto', 'others', 'otherwise', 'ours',
  'ourselves', 'per', 'perhaps', 'please', 'rather', 'seem', 'seemed', 'seeming', 'seems', 'several', 'since', 'still',
  'thence', 'thereafter', 'thereby', 'therefore', 'therein', 'thereupon', 'though', 'thus', 'together', 'toward', 'towards', 'upon',
  'via', 'whatever', 'whence', 'whenever', 'whereafter', 'whereas', 'whereby', 'wherein', 'whereupon', 'wherever', 'whether', 'whither',
  'whoever', 'whole', 'whose', 'within', 'without', 'yet', 'yours', 'yourself', 'yourselves',
];

/**
 * Query-side stop words: words of request phrasing that name the kind of answer wanted
 * rather than its subject ("what papers are available on…", "find documents
 * discussing…"), as in the query stop lists of TREC description topics. Dropped from a
 * query's bare optional words only (see `CompileOptions.queryStopTerms`), never indexed away.
 */
export const QUERY_STOPWORDS: readonly string[] = [
  'available', 'paper', 'papers', 'possible', 'exist', 'exists', 'existing', 'information', 'give', 'given', 'find', 'known',
  'literature', 'published', 'reference', 'references', 'report', 'reports', 'document', 'documents', 'describe', 'discuss',
  'concerning', 'regarding', 'relevant', 'interested', 'anyone', 'work', 'done', 'made',
];

/** QUERY_STOPWORDS as the analyzer's terms (stemmed like the field's words). */
export function queryStopTerms(a: Analyzer, words: readonly string[] = QUERY_STOPWORDS): Set<string> {
  const out = new Set<string>();
  for (const w of words) for (const t of a.analyze(w)) out.add(t.term);
  return out;
}

export const ANALYZER_NAMES = ['english', 'standard', 'simple', 'keyword'] as const;
export type AnalyzerName = (typeof ANALYZER_NAMES)[number];

const WORD = /[\p{L}\p{N}]+(?:['’][\p{L}]+)*/gu;
const ASCII_WORD = /[a-z0-9]+(?:'[a-z]+)*/g;
const MARKS = /\p{M}+/gu;

/** Lowercase and strip combining marks after NFD (é → e, ß stays ß, ﬁ → fi via NFKD). */
export function fold(s: string): string {
  const lower = s.toLowerCase();
  // ASCII fast path: nothing to fold.
  if (/^[\x00-\x7f]*$/.test(lower)) return lower;
  return lower.normalize('NFKD').replace(MARKS, '');
}

/** Unicode word tokens of a text (letters and digits; inner apostrophes kept then dropped). */
export function tokenize(text: string): Array<{ word: string; pos: number }> {
  const out: Array<{ word: string; pos: number }> = [];
  let pos = 0;
  for (const m of text.matchAll(WORD)) {
    out.push({ word: m[0], pos: pos++ });
  }
  return out;
}

const STEM_CACHE_MAX = 200_000;
const stemCache = new Map<string, string>();

function stem(word: string): string {
  const hit = stemCache.get(word);
  if (hit !== undefined) return hit;
  // Porter2 is defined on English letters; leave numbers and other scripts alone.
  const s = /^[a-z]+$/.test(word) ? porter2(word) : word;
  if (stemCache.size >= STEM_CACHE_MAX) stemCache.clear();
  stemCache.set(word, s);
  return s;
}

class WordAnalyzer implements Analyzer {
  constructor(
    readonly name: string,
    private readonly stop: ReadonlySet<string>,
    private readonly stemming: boolean,
  ) {}

  analyze(text: string): Token[] {
    const out: Token[] = [];
    const folded = fold(text);
      const re = /^[\x00-\x7f]*$/.test(folded) ? ASCII_WORD : WORD;
    re.lastIndex = 0;
    let pos = -1;
    for (let m = re.exec(folded); m; m = re.exec(folded)) {
      pos++;
      let w = m[0];
      if (w.includes("'") || w.includes('’')) {
        if (/['’]s$/.test(w)) w = w.slice(0, -2); // possessive: wing's → wing
        w = w.replace(/['’]/g, '');
      }
      if (!w || this.stop.has(w)) continue;
      out.push({ term: this.stemming ? stem(w) : w, pos });
    }
    return out;
  }

  normalizePrefix(prefix: string): string {
    return fold(prefix);
  }

  /** word (folded, ASCII) → term, or '' for a stop word: one lookup per token on the indexing path */
  private readonly memo = new Map<string, string>();

  termPositions(text: string): { length: number; positions: Map<string, number[]> } {
    const folded = fold(text);
    if (!/^[\x00-\x7f]*$/.test(folded)) return groupTokens(this.analyze(text));
    // ASCII: a hand-written scan with the same tokens as ASCII_WORD ([a-z0-9]+('[a-z]+)*),
    // without a match object per token
    const positions = new Map<string, number[]>();
    const n = folded.length;
    let pos = -1;
    let length = 0;
    let i = 0;
    while (i < n) {
      if (!isAlnum(folded.charCodeAt(i))) {
        i++;
        continue;
      }
      const start = i++;
      while (i < n && isAlnum(folded.charCodeAt(i))) i++;
      let apos = false;
      while (i + 1 < n && folded.charCodeAt(i) === 39 && isLower(folded.charCodeAt(i + 1))) {
        apos = true;
        i += 2;
        while (i < n && isLower(folded.charCodeAt(i))) i++;
      }
      pos++;
      let w = folded.slice(start, i);
      if (apos) w = (w.endsWith("'s") ? w.slice(0, -2) : w).replace(/'/g, '');
      if (!w) continue;
      let term = this.memo.get(w);
      if (term === undefined) {
        term = this.stop.has(w) ? '' : this.stemming ? stem(w) : w;
        if (this.memo.size >= STEM_CACHE_MAX) this.memo.clear();
        this.memo.set(w, term);
      }
      if (term === '') continue;
      length++;
      const ps = positions.get(term);
      if (ps) ps.push(pos);
      else positions.set(term, [pos]);
    }
    return { length, positions };
  }
}

const isLower = (c: number): boolean => c >= 97 && c <= 122;
const isAlnum = (c: number): boolean => (c >= 97 && c <= 122) || (c >= 48 && c <= 57);

class KeywordAnalyzer implements Analyzer {
  readonly name = 'keyword';
  termPositions(text: string): { length: number; positions: Map<string, number[]> } {
    return groupTokens(this.analyze(text));
  }
  analyze(text: string): Token[] {
    const t = fold(text.trim());
    return t ? [{ term: t, pos: 0 }] : [];
  }
  normalizePrefix(prefix: string): string {
    return fold(prefix);
  }
}

/** The analyzer for a field declaration; `stopwords` replaces the analyzer's list. */
export function analyzerFor(def: { analyzer?: string; stopwords?: readonly string[] }): Analyzer {
  const name = def.analyzer ?? 'english';
  const stop = (dflt: readonly string[]) => new Set((def.stopwords ?? dflt).map((w) => fold(w)));
  switch (name) {
    case 'english':
      return new WordAnalyzer(name, stop(ENGLISH_STOPWORDS), true);
    case 'standard':
      return new WordAnalyzer(name, stop(ENGLISH_STOPWORDS), false);
    case 'simple':
      return new WordAnalyzer(name, stop([]), false);
    case 'keyword':
      return new KeywordAnalyzer();
    default:
      throw new DbError('validation_failed', `unknown full-text analyzer "${name}" (known: ${ANALYZER_NAMES.join(', ')})`, {
        field: 'analyzer',
      });
  }
}
