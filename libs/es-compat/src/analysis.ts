/** Elasticsearch's built-in analyzers and the `lowercase` normalizer. */
import { illegalArgument } from './errors';
import { porterStem } from './porter';

export interface Token { readonly term: string; readonly pos: number; readonly start: number; readonly end: number }

const ENGLISH_STOP = new Set(['a', 'an', 'and', 'are', 'as', 'at', 'be', 'but', 'by', 'for', 'if', 'in', 'into', 'is', 'it', 'no', 'not', 'of', 'on', 'or', 'such', 'that', 'the', 'their', 'then', 'there', 'these', 'they', 'this', 'to', 'was', 'will', 'with']);

export const ANALYZERS = ['standard', 'simple', 'whitespace', 'keyword', 'english', 'stop'] as const;

function words(text: string, rx: RegExp): Token[] {
  const out: Token[] = [];
  let pos = 0;
  for (const m of text.matchAll(rx)) out.push({ term: m[0], pos: pos++, start: m.index!, end: m.index! + m[0].length });
  return out;
}

/** `english_possessive_stemmer`: a trailing 's (straight, curly or fullwidth apostrophe) dropped. */
const possessive = (w: string): string => (/['\u2019\uff07][sS]$/.test(w) ? w.slice(0, -2) : w);

const STD = /[\p{L}\p{N}_]+(?:['.][\p{L}\p{N}_]+)*/gu;

/** Analyzes `text` with an analyzer name; throws illegal_argument for an unknown analyzer. */
export function analyze(text: string, analyzer = 'standard'): Token[] {
  switch (analyzer) {
    case 'standard':
    case 'default':
      return words(text, STD).map((t) => ({ ...t, term: t.term.toLowerCase() }));
    case 'simple':
      return words(text, /\p{L}+/gu).map((t) => ({ ...t, term: t.term.toLowerCase() }));
    case 'whitespace':
      return words(text, /\S+/gu);
    case 'keyword':
      return [{ term: text, pos: 0, start: 0, end: text.length }];
    case 'stop':
      return words(text, /\p{L}+/gu).map((t) => ({ ...t, term: t.term.toLowerCase() })).filter((t) => !ENGLISH_STOP.has(t.term));
    case 'english':
      // Elasticsearch's english analyzer: standard tokenizer, english_possessive_stemmer,
      // lowercase, english stop words, porter_stem (positions keep the stop words' gaps)
      return words(text, STD).map((t) => ({ ...t, term: possessive(t.term).toLowerCase() })).filter((t) => !ENGLISH_STOP.has(t.term)).map((t) => ({ ...t, term: porterStem(t.term) }));
    default:
      throw illegalArgument(`failed to find analyzer [${analyzer}]`);
  }
}

export const isAnalyzer = (a: string): boolean => (ANALYZERS as readonly string[]).includes(a) || a === 'default';

export function terms(text: string, analyzer?: string): string[] {
  return analyze(text, analyzer).map((t) => t.term);
}
