/**
 * Analysis chains as Elasticsearch builds custom analyzers: character filters, then a tokenizer,
 * then token filters in order. Positions follow Lucene: a removed token (stop, length) leaves a
 * gap, grams and synonyms of a token share its position, a shingle sits at its first token's.
 *
 * Built here: char filters html_strip, mapping, pattern_replace; tokenizers standard, classic,
 * uax_url_email, whitespace, keyword, letter, lowercase, pattern, ngram, edge_ngram; token filters
 * lowercase, uppercase, asciifolding, stop, porter_stem, stemmer (english / porter: Porter;
 * porter2 and snowball English: Porter2; minimal_english; light_english, Lucene's KStem, is
 * approximated by the minimal stemmer; possessive_english), snowball, kstem (as light_english),
 * english_possessive_stemmer, keyword_marker, trim, unique, reverse, length, truncate, elision,
 * apostrophe, shingle, ngram, edge_ngram, synonym / synonym_graph (single-word rules: `a, b` and
 * `a => b`). Anything else is refused with Elasticsearch's error, naming it.
 */
import { illegalArgument } from './errors';
import { porterStem } from './porter';
import type { Token } from './analysis';

// Porter2 (the Snowball English stemmer), the same package libs/fts stems with
// eslint-disable-next-line @typescript-eslint/no-require-imports
const porter2: (w: string) => string = require('wink-porter2-stemmer');

type Def = string | Record<string, unknown>;
export interface ChainSpec { readonly tokenizer: Def; readonly filter: Def[]; readonly char_filter: Def[] }

export const ENGLISH_STOP = new Set(['a', 'an', 'and', 'are', 'as', 'at', 'be', 'but', 'by', 'for', 'if', 'in', 'into', 'is', 'it', 'no', 'not', 'of', 'on', 'or', 'such', 'that', 'the', 'their', 'then', 'there', 'these', 'they', 'this', 'to', 'was', 'will', 'with']);
export const STD = /[\p{L}\p{N}_]+(?:['.’][\p{L}\p{N}_]+)*/gu;

const typeOf = (d: Def): string => (typeof d === 'string' ? d : String(d.type ?? ''));
const opt = (d: Def, k: string): unknown => (typeof d === 'string' ? undefined : d[k]);

function words(text: string, rx: RegExp): Token[] {
  const out: Token[] = [];
  let pos = 0;
  for (const m of text.matchAll(rx)) out.push({ term: m[0], pos: pos++, start: m.index!, end: m.index! + m[0].length });
  return out;
}

function grams(term: string, min: number, max: number, edge: boolean): string[] {
  const out: string[] = [];
  const cps = [...term];
  for (let i = 0; i < (edge ? 1 : cps.length); i++) for (let n = min; n <= max && i + n <= cps.length; n++) out.push(cps.slice(i, i + n).join(''));
  return out;
}

function charFilter(text: string, d: Def): string {
  switch (typeOf(d)) {
    case 'html_strip': return text.replace(/<[^>]*>/g, (m) => (/^<\/?(p|div|br|li|h\d)\b/i.test(m) ? '\n' : '')).replace(/&amp;/g, '&').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;|&apos;/g, "'").replace(/&nbsp;/g, ' ');
    case 'mapping': {
      const rules = (Array.isArray(opt(d, 'mappings')) ? (opt(d, 'mappings') as unknown[]) : []).map(String).map((r) => r.split('=>').map((x) => x.trim()));
      let out = text;
      for (const [from, to] of rules.sort((a, b) => b[0].length - a[0].length)) if (from) out = out.split(from).join(to ?? '');
      return out;
    }
    case 'pattern_replace': return text.replace(new RegExp(String(opt(d, 'pattern') ?? ''), 'gu'), String(opt(d, 'replacement') ?? '')); // $1 refers to a group in both
    default: throw illegalArgument(`failed to find global char_filter under [${typeOf(d)}]`);
  }
}

function tokenize(text: string, d: Def): Token[] {
  switch (typeOf(d)) {
    case 'standard': case 'classic': case 'uax_url_email': {
      // a token longer than max_token_length is split at that length, as Lucene's StandardTokenizer does
      const max = Number(opt(d, 'max_token_length') ?? 255);
      const out: Token[] = [];
      for (const t of words(text, STD)) for (let o = 0; o < t.term.length; o += max) out.push({ term: t.term.slice(o, o + max), pos: out.length, start: t.start + o, end: Math.min(t.end, t.start + o + max) });
      return out;
    }
    case 'whitespace': return words(text, /\S+/gu);
    case 'keyword': return text === '' ? [] : [{ term: text, pos: 0, start: 0, end: text.length }];
    case 'letter': return words(text, /\p{L}+/gu);
    case 'lowercase': return words(text, /\p{L}+/gu).map((t) => ({ ...t, term: t.term.toLowerCase() }));
    case 'pattern': {
      const flags = String(opt(d, 'flags') ?? '').includes('CASE_INSENSITIVE') ? 'giu' : 'gu';
      const rx = new RegExp(String(opt(d, 'pattern') ?? '\\W+'), flags);
      const group = Number(opt(d, 'group') ?? -1);
      if (group >= 0) return [...text.matchAll(rx)].map((m, i) => ({ term: m[group] ?? '', pos: i, start: m.index!, end: m.index! + m[0].length })).filter((t) => t.term !== '');
      const out: Token[] = [];
      let last = 0, pos = 0;
      for (const m of text.matchAll(rx)) {
        if (m.index! > last) out.push({ term: text.slice(last, m.index!), pos: pos++, start: last, end: m.index! });
        last = m.index! + m[0].length;
        if (m[0].length === 0) break;
      }
      if (last < text.length) out.push({ term: text.slice(last), pos: pos++, start: last, end: text.length });
      return out;
    }
    case 'ngram': case 'edge_ngram': {
      const min = Number(opt(d, 'min_gram') ?? 1), max = Number(opt(d, 'max_gram') ?? 2);
      const chars = (Array.isArray(opt(d, 'token_chars')) ? (opt(d, 'token_chars') as unknown[]) : []).map(String);
      const classes: Record<string, string> = { letter: '\\p{L}', digit: '\\p{N}', whitespace: '\\s', punctuation: '\\p{P}', symbol: '\\p{S}' };
      const rx = chars.length ? new RegExp(`[${chars.map((c) => classes[c] ?? '').join('')}]+`, 'gu') : /[\s\S]+/gu;
      const out: Token[] = [];
      let pos = 0;
      for (const w of words(text, rx)) for (const g of grams(w.term, min, max, typeOf(d) === 'edge_ngram')) out.push({ term: g, pos: pos++, start: w.start, end: w.start + g.length });
      return out;
    }
    default: throw illegalArgument(`failed to find global tokenizer under [${typeOf(d)}]`);
  }
}

/** EnglishMinimalStemmer (Lucene): plural endings only. */
function minimalEnglish(s: string): string {
  const n = s.length;
  if (n < 3 || s[n - 1] !== 's') return s;
  switch (s[n - 2]) {
    case 'u': case 's': return s;
    case 'e':
      if (n > 3 && s[n - 3] === 'i' && s[n - 4] !== 'a' && s[n - 4] !== 'e') return s.slice(0, n - 3) + 'y';
      if (s[n - 3] === 'i' || s[n - 3] === 'a' || s[n - 3] === 'o' || s[n - 3] === 'e') return s;
      return s.slice(0, n - 1);
    default: return s.slice(0, n - 1);
  }
}

const possessive = (w: string): string => (/['\u2019\uff07][sS]$/.test(w) ? w.slice(0, -2) : w);

function stemmerOf(language: string): (w: string) => string {
  switch (language.toLowerCase()) {
    case 'english': case 'porter': return porterStem;
    case 'porter2': return porter2;
    case 'minimal_english': case 'light_english': case 'lovins': return minimalEnglish;
    case 'possessive_english': return possessive;
    default: throw illegalArgument(`stemmer language [${language}] is not supported by this service (english, porter, porter2, light_english, minimal_english, possessive_english are)`);
  }
}

function stopSet(v: unknown): Set<string> {
  if (v === undefined || v === '_english_') return ENGLISH_STOP;
  if (v === '_none_') return new Set();
  return new Set((Array.isArray(v) ? v : [v]).map(String));
}

/** Synonym rules (single words): `a, b, c` (each any of them) and `a, b => c`. */
function synonyms(d: Def): (t: string) => string[] | undefined {
  const map = new Map<string, string[]>();
  const expand = opt(d, 'expand') !== false;
  for (const r of (Array.isArray(opt(d, 'synonyms')) ? (opt(d, 'synonyms') as unknown[]) : []).map(String)) {
    if (r.trim().startsWith('#')) continue;
    if (r.includes('=>')) {
      const [l, rr] = r.split('=>');
      const to = rr.split(',').map((x) => x.trim().toLowerCase()).filter(Boolean);
      for (const w of l.split(',').map((x) => x.trim().toLowerCase()).filter(Boolean)) map.set(w, to);
    } else {
      const ws = r.split(',').map((x) => x.trim().toLowerCase()).filter(Boolean);
      for (const w of ws) map.set(w, expand ? ws : [ws[0]]);
    }
  }
  return (t) => map.get(t.toLowerCase());
}

function filterTokens(toks: Token[], d: Def, keywords: Set<string>): Token[] {
  const t = typeOf(d);
  const each = (f: (w: string) => string) => toks.map((x) => (keywords.has(x.term) ? x : { ...x, term: f(x.term) }));
  switch (t) {
    case 'lowercase': return toks.map((x) => ({ ...x, term: x.term.toLowerCase() }));
    case 'uppercase': return toks.map((x) => ({ ...x, term: x.term.toUpperCase() }));
    case 'asciifolding': {
      const fold = (w: string) => w.normalize('NFD').replace(/[\u0300-\u036f]/g, '').replace(/ß/g, 'ss').replace(/æ/g, 'ae').replace(/Æ/g, 'AE').replace(/ø/g, 'o').replace(/Ø/g, 'O').replace(/œ/g, 'oe').replace(/ł/g, 'l');
      return opt(d, 'preserve_original') === true ? toks.flatMap((x) => (fold(x.term) !== x.term ? [x, { ...x, term: fold(x.term) }] : [x])) : toks.map((x) => ({ ...x, term: fold(x.term) }));
    }
    case 'stop': {
      const set = stopSet(opt(d, 'stopwords'));
      const ci = opt(d, 'ignore_case') === true;
      return toks.filter((x) => !set.has(ci ? x.term.toLowerCase() : x.term));
    }
    case 'porter_stem': return each(porterStem);
    case 'kstem': return each(minimalEnglish);
    case 'stemmer': return each(stemmerOf(String(opt(d, 'language') ?? opt(d, 'name') ?? 'english')));
    case 'snowball': {
      const lang = String(opt(d, 'language') ?? 'English');
      if (lang.toLowerCase() !== 'english' && lang.toLowerCase() !== 'porter') throw illegalArgument(`snowball language [${lang}] is not supported by this service (English is)`);
      return each(lang.toLowerCase() === 'porter' ? porterStem : porter2);
    }
    case 'english_possessive_stemmer': case 'possessive_english': return toks.map((x) => ({ ...x, term: possessive(x.term) }));
    case 'keyword_marker': return toks; // applied before the chain runs (keywords)
    case 'trim': return toks.map((x) => ({ ...x, term: x.term.trim() }));
    case 'unique': { const seen = new Set<string>(); return toks.filter((x) => (seen.has(x.term) ? false : (seen.add(x.term), true))); }
    case 'reverse': return toks.map((x) => ({ ...x, term: [...x.term].reverse().join('') }));
    case 'length': { const min = Number(opt(d, 'min') ?? 0), max = Number(opt(d, 'max') ?? Number.MAX_SAFE_INTEGER); return toks.filter((x) => [...x.term].length >= min && [...x.term].length <= max); }
    case 'truncate': { const n = Number(opt(d, 'length') ?? 10); return toks.map((x) => ({ ...x, term: [...x.term].slice(0, n).join('') })); }
    case 'elision': {
      const articles = new Set((Array.isArray(opt(d, 'articles')) ? (opt(d, 'articles') as unknown[]) : ['l', 'm', 't', 'qu', 'n', 's', 'j', 'd', 'c', 'jusqu', 'quoiqu', 'lorsqu', 'puisqu']).map(String));
      return toks.map((x) => { const m = /^(\p{L}+)['’](.+)$/u.exec(x.term); return m && articles.has(m[1].toLowerCase()) ? { ...x, term: m[2] } : x; });
    }
    case 'apostrophe': return toks.map((x) => ({ ...x, term: x.term.replace(/['’].*$/, '') }));
    case 'ngram': case 'edge_ngram': {
      const min = Number(opt(d, 'min_gram') ?? 1), max = Number(opt(d, 'max_gram') ?? 2);
      return toks.flatMap((x) => grams(x.term, min, max, t === 'edge_ngram').map((g) => ({ ...x, term: g })));
    }
    case 'shingle': {
      const min = Number(opt(d, 'min_shingle_size') ?? 2), max = Number(opt(d, 'max_shingle_size') ?? 2);
      const unigrams = opt(d, 'output_unigrams') !== false;
      const sep = String(opt(d, 'token_separator') ?? ' ');
      const out: Token[] = [];
      toks.forEach((x, i) => {
        if (unigrams) out.push(x);
        for (let n = min; n <= max && i + n <= toks.length; n++) out.push({ term: toks.slice(i, i + n).map((y) => y.term).join(sep), pos: x.pos, start: x.start, end: toks[i + n - 1].end });
      });
      return out;
    }
    case 'synonym': case 'synonym_graph': {
      const syn = synonyms(d);
      return toks.flatMap((x) => { const s = syn(x.term); return s ? s.map((w) => ({ ...x, term: w })) : [x]; });
    }
    default: throw illegalArgument(`failed to find global filter under [${t}]`);
  }
}

/** Runs a chain over `text`. */
export function runChain(spec: ChainSpec, text: string): Token[] {
  let s = text;
  for (const c of spec.char_filter) s = charFilter(s, c);
  let toks = tokenize(s, spec.tokenizer);
  const keywords = new Set<string>();
  for (const f of spec.filter) {
    if (typeOf(f) === 'keyword_marker') for (const k of (Array.isArray(opt(f, 'keywords')) ? (opt(f, 'keywords') as unknown[]) : [])) keywords.add(String(k));
    toks = filterTokens(toks, f, keywords);
  }
  return toks.filter((x) => x.term !== '');
}
