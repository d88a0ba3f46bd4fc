/** Elasticsearch's built-in analyzers and the `lowercase` normalizer. */
import { illegalArgument } from './errors';

export interface Token { readonly term: string; readonly pos: number; readonly start: number; readonly end: number }

const ENGLISH_STOP = new Set(['a', 'an', 'and', 'are', 'as', 'at', 'be', 'but', 'by', 'for', 'if', 'in', 'into', 'is', 'it', 'no', 'not', 'of', 'on', 'or', 'such', 'that', 'the', 'their', 'then', 'there', 'these', 'they', 'this', 'to', 'was', 'will', 'with']);

export const ANALYZERS = ['standard', 'simple', 'whitespace', 'keyword', 'english', 'stop'] as const;

function words(text: string, rx: RegExp): Token[] {
  const out: Token[] = [];
  let pos = 0;
  for (const m of text.matchAll(rx)) out.push({ term: m[0], pos: pos++, start: m.index!, end: m.index! + m[0].length });
  return out;
}

/** A light English stemmer (plural and common suffixes), enough for the `english` analyzer's matching. */
function stem(w: string): string {
  if (w.length <= 3) return w;
  if (w.endsWith("'s")) w = w.slice(0, -2);
  if (w.endsWith('sses')) return w.slice(0, -2);
  if (w.endsWith('ies') && w.length > 4) return w.slice(0, -3) + 'i';
  if (w.endsWith('ss') || w.endsWith('us')) return w;
  if (w.endsWith('s')) w = w.slice(0, -1);
  if (w.endsWith('ing') && w.length > 5) return w.slice(0, -3);
  if (w.endsWith('ed') && w.length > 4) return w.slice(0, -2);
  if (w.endsWith('y') && w.length > 3) return w.slice(0, -1) + 'i';
  return w;
}

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
      return words(text, STD).map((t) => ({ ...t, term: t.term.toLowerCase() })).filter((t) => !ENGLISH_STOP.has(t.term)).map((t) => ({ ...t, term: stem(t.term) }));
    default:
      throw illegalArgument(`failed to find analyzer [${analyzer}]`);
  }
}

export const isAnalyzer = (a: string): boolean => (ANALYZERS as readonly string[]).includes(a) || a === 'default';

export function terms(text: string, analyzer?: string): string[] {
  return analyze(text, analyzer).map((t) => t.term);
}
