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
  /**
   * The same as `termPositions`, in flat form for encoding: the distinct terms in order of
   * first occurrence, their frequencies and their positions grouped by term. The typed
   * arrays are the analyzer's scratch, valid until its next call.
   */
  analyzeDoc(text: string): DocTerms;
}

/** A document's terms in indexing form (see `Analyzer.analyzeDoc`). */
export interface DocTerms {
  /** Number of tokens kept (the field length). */
  readonly length: number;
  /** Distinct terms, in order of first occurrence (a fresh array). */
  readonly terms: string[];
  /** tfs[i]: frequency of terms[i] (scratch: entries [0, terms.length)). */
  readonly tfs: Int32Array;
  /** Positions, ascending, of terms[0], then terms[1], … (scratch: Σ tfs entries). */
  readonly positions: Int32Array;
  /**
   * Fast path only (scratch): the analyzer's ids of `terms` and its pool of their UTF-8
   * bytes (term id t: `info[2t]` offset, `info[2t + 1]` length), so an encoder copies
   * compact bytes instead of reading each term string.
   */
  readonly ids?: Int32Array;
  readonly termPool?: { readonly bytes: Uint8Array; readonly info: Int32Array };
}

/** DocTerms of a `termPositions` result (the general path). */
function docTermsOf(r: { length: number; positions: Map<string, number[]> }): DocTerms {
  const terms = [...r.positions.keys()];
  const tfs = new Int32Array(terms.length);
  let total = 0;
  for (const ps of r.positions.values()) total += ps.length;
  const positions = new Int32Array(total);
  let i = 0;
  let k = 0;
  for (const ps of r.positions.values()) {
    tfs[i++] = ps.length;
    for (const p of ps) positions[k++] = p;
  }
  return { length: r.length, terms, tfs, positions };
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

  // ---- analyzeDoc: ASCII words interned by their char codes (no string per token) ----
  // The word table: open addressing, 8 ints per slot so that a token's lookup reads one
  // cache line: [hash, term id + 2 (0: empty, 1: stop word), length, start in pool (words
  // over 16 bytes), then the word's first 16 bytes packed little-endian].
  private slots = new Int32Array(8 << 12);
  private pool = new Uint8Array(1 << 14);
  private poolUsed = 0;
  private nWords = 0;
  private readonly termIds = new Map<string, number>();
  private termStr: string[] = [];
  // per-doc scratch
  private gen = 0;
  /** per term id: [2t] the doc (gen) it was last seen in, [2t + 1] its index in that doc */
  private seen = new Int32Array(2 * 1024);
  private localTerm = new Int32Array(256);
  private localTf = new Int32Array(256);
  private localOff = new Int32Array(256);
  private tokLocal = new Int32Array(1024);
  private tokPos = new Int32Array(1024);
  private outPos = new Int32Array(1024);

  /** UTF-8 bytes of every term id (DocTerms.termPool) */
  private termPool = { bytes: new Uint8Array(1 << 14), info: new Int32Array(2 * 1024), used: 0 };

  private resetIntern(): void {
    this.termPool.used = 0;
    this.slots = new Int32Array(8 << 12);
    this.poolUsed = 0;
    this.nWords = 0;
    this.termIds.clear();
    this.termStr = [];
  }

  /** Term id of the word b[start, end) (lowercase ASCII bytes) with hash h; -1 for a stop word. */
  private lookup(b: Buffer, start: number, end: number, h: number): number {
    const len = end - start;
    const slots = this.slots;
    const mask = (slots.length >> 3) - 1;
    probe: for (let i = slotOf(h, mask); ; i = (i + 1) & mask) {
      const at = i << 3;
      const e = slots[at + 1];
      if (e === 0) return this.insertWord(b, start, end, h, i);
      if (slots[at] !== h || slots[at + 2] !== len) continue;
      const inline = len < 16 ? len : 16;
      for (let j = 0; j < inline; j++)
        if (b[start + j] !== ((slots[at + 4 + (j >> 2)] >>> ((j & 3) << 3)) & 0xff)) continue probe;
      if (len > 16) {
        const pool = this.pool;
        const p = slots[at + 3] - start;
        for (let j = start + 16; j < end; j++) if (pool[p + j] !== b[j]) continue probe;
      }
      return e - 2;
    }
  }

  private insertWord(b: Buffer, start: number, end: number, h: number, slot: number): number {
    const word = b.toString('latin1', start, end);
    const t = this.stop.has(word) ? -1 : this.termId(this.stemming ? stem(word) : word);
    const len = end - start;
    const at = slot << 3;
    const slots = this.slots;
    slots[at] = h;
    slots[at + 1] = t + 2;
    slots[at + 2] = len;
    slots[at + 4] = slots[at + 5] = slots[at + 6] = slots[at + 7] = 0;
    for (let j = 0; j < len && j < 16; j++) slots[at + 4 + (j >> 2)] |= b[start + j] << ((j & 3) << 3);
    if (len > 16) {
      if (this.poolUsed + len > this.pool.length) {
        const x = new Uint8Array(Math.max(this.pool.length * 2, this.poolUsed + len));
        x.set(this.pool);
        this.pool = x;
      }
      const p = this.poolUsed;
      for (let j = 0; j < len; j++) this.pool[p + j] = b[start + j];
      this.poolUsed += len;
      slots[at + 3] = p;
    }
    if (++this.nWords * 2 > slots.length >> 3) this.rehash();
    return t;
  }

  private rehash(): void {
    const old = this.slots;
    const slots = new Int32Array(old.length * 2);
    const mask = (slots.length >> 3) - 1;
    for (let from = 0; from < old.length; from += 8) {
      if (old[from + 1] === 0) continue;
      let i = slotOf(old[from], mask);
      while (slots[(i << 3) + 1] !== 0) i = (i + 1) & mask;
      slots.set(old.subarray(from, from + 8), i << 3);
    }
    this.slots = slots;
  }

  private termId(term: string): number {
    let id = this.termIds.get(term);
    if (id === undefined) {
      id = this.termStr.length;
      this.termStr.push(term);
      this.termIds.set(term, id);
      const utf8 = Buffer.from(term, 'utf8');
      const tp = this.termPool;
      if (tp.used + utf8.length > tp.bytes.length) {
        const x = new Uint8Array(Math.max(tp.bytes.length * 2, tp.used + utf8.length));
        x.set(tp.bytes);
        tp.bytes = x;
      }
      if (2 * id + 1 >= tp.info.length) {
        const x = new Int32Array(tp.info.length * 2);
        x.set(tp.info);
        tp.info = x;
      }
      tp.bytes.set(utf8, tp.used);
      tp.info[2 * id] = tp.used;
      tp.info[2 * id + 1] = utf8.length;
      tp.used += utf8.length;
      if (2 * id >= this.seen.length) {
        const seen = new Int32Array(this.seen.length * 2);
        seen.set(this.seen);
        this.seen = seen;
      }
    }
    return id;
  }

  /** the text as bytes (ASCII check and scan buffer) */
  private bytes = Buffer.allocUnsafe(1 << 14);
  private aposBytes = Buffer.allocUnsafe(256);

  analyzeDoc(text: string): DocTerms {
    // (a text over ~300 KB gets a buffer of its own, not kept)
    if (this.bytes.length < text.length * 3 && text.length <= 1 << 18) this.bytes = Buffer.allocUnsafe(text.length * 3);
    const b = this.bytes.length >= text.length * 3 ? this.bytes : Buffer.allocUnsafe(text.length * 3);
    const n = b.write(text, 0, 'utf8');
    // fold() of ASCII text is its lowercase (done below, byte by byte); other text goes the general way
    if (n !== text.length) return docTermsOf(this.termPositions(text));
    if (this.nWords >= STEM_CACHE_MAX) this.resetIntern();
    const gen = ++this.gen;
    // the same tokens as termPositions' scan ([a-z0-9]+('[a-z]+)*) over the lowercased bytes
    let pos = -1;
    let length = 0;
    let count = 0;
    let ntok = 0;
    let i = 0;
    while (i < n) {
      let c = b[i];
      if (c >= 65 && c <= 90) c += 32;
      if (!((c >= 97 && c <= 122) || (c >= 48 && c <= 57))) {
        i++;
        continue;
      }
      b[i] = c;
      const start = i;
      let h = c;
      for (i++; i < n; i++) {
        c = b[i];
        if (c >= 65 && c <= 90) c += 32;
        if (!((c >= 97 && c <= 122) || (c >= 48 && c <= 57))) break;
        b[i] = c;
        h = (Math.imul(h, 31) + c) | 0;
      }
      let apos = false;
      while (i + 1 < n && b[i] === 39 && isLowerOrUpper(b[i + 1])) {
        apos = true;
        i += 2;
        while (i < n && isLowerOrUpper(b[i])) i++;
      }
      pos++;
      let t: number;
      if (apos) {
        let w = b.toString('latin1', start, i).toLowerCase();
        w = (w.endsWith("'s") ? w.slice(0, -2) : w).replace(/'/g, '');
        if (!w) continue;
        if (this.aposBytes.length < w.length) this.aposBytes = Buffer.allocUnsafe(w.length * 2);
        const ab = this.aposBytes;
        let wh = 0;
        for (let j = 0; j < w.length; j++) {
          const x = w.charCodeAt(j);
          ab[j] = x;
          wh = j === 0 ? x : (Math.imul(wh, 31) + x) | 0;
        }
        t = this.lookup(ab, 0, w.length, wh);
      } else t = this.lookup(b, start, i, h);
      if (t < 0) continue;
      length++;
      let l: number;
      const seen = this.seen;
      if (seen[2 * t] !== gen) {
        seen[2 * t] = gen;
        l = count++;
        seen[2 * t + 1] = l;
        if (l >= this.localTerm.length) this.growLocal();
        this.localTerm[l] = t;
        this.localTf[l] = 1;
      } else {
        l = seen[2 * t + 1];
        this.localTf[l]++;
      }
      if (ntok >= this.tokLocal.length) this.growTok();
      this.tokLocal[ntok] = l;
      this.tokPos[ntok] = pos;
      ntok++;
    }
    // positions grouped by term (a counting sort: stable, so ascending within each term)
    const terms: string[] = new Array(count);
    const off = this.localOff;
    let acc = 0;
    for (let l = 0; l < count; l++) {
      terms[l] = this.termStr[this.localTerm[l]];
      off[l] = acc;
      acc += this.localTf[l];
    }
    if (this.outPos.length < ntok) this.outPos = new Int32Array(this.tokLocal.length);
    const out = this.outPos;
    for (let k = 0; k < ntok; k++) out[off[this.tokLocal[k]]++] = this.tokPos[k];
    return { length, terms, tfs: this.localTf, positions: out, ids: this.localTerm, termPool: this.termPool };
  }

  private growLocal(): void {
    const g = (a: Int32Array) => {
      const b = new Int32Array(a.length * 2);
      b.set(a);
      return b;
    };
    this.localTerm = g(this.localTerm);
    this.localTf = g(this.localTf);
    this.localOff = new Int32Array(this.localTerm.length);
  }

  private growTok(): void {
    const g = (a: Int32Array) => {
      const b = new Int32Array(a.length * 2);
      b.set(a);
      return b;
    };
    this.tokLocal = g(this.tokLocal);
    this.tokPos = g(this.tokPos);
  }

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

/** A word hash's home slot: the polynomial hash of similar words (w1, w2, …) differs in its low bits by little, so it is mixed first (murmur3's finalizer) or linear probing would pile them into long runs. */
function slotOf(h: number, mask: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) & mask;
}

const isLower = (c: number): boolean => c >= 97 && c <= 122;
const isLowerOrUpper = (c: number): boolean => (c >= 97 && c <= 122) || (c >= 65 && c <= 90);
const isAlnum = (c: number): boolean => (c >= 97 && c <= 122) || (c >= 48 && c <= 57);

class KeywordAnalyzer implements Analyzer {
  readonly name = 'keyword';
  analyzeDoc(text: string): DocTerms {
    return docTermsOf(this.termPositions(text));
  }
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
