/**
 * Elasticsearch's built-in analyzers and the `lowercase` normalizer; custom analyzers run as
 * chains (analysis-chain.ts), named by `chain:` and their JSON definition (fields.ts
 * `resolveAnalyzer` builds them from the index's `settings.analysis`).
 */
import { illegalArgument } from './errors';
import { porterStem } from './porter';
import { ENGLISH_STOP, STD, runChain, type ChainSpec } from './analysis-chain';

export interface Token { readonly term: string; readonly pos: number; readonly start: number; readonly end: number }

export const ANALYZERS = ['standard', 'simple', 'whitespace', 'keyword', 'english', 'stop', 'snowball', 'pattern', 'fingerprint'] as const;

function words(text: string, rx: RegExp): Token[] {
  const out: Token[] = [];
  let pos = 0;
  for (const m of text.matchAll(rx)) out.push({ term: m[0], pos: pos++, start: m.index!, end: m.index! + m[0].length });
  return out;
}

/** `english_possessive_stemmer`: a trailing 's (straight, curly or fullwidth apostrophe) dropped. */
const possessive = (w: string): string => (/['\u2019\uff07][sS]$/.test(w) ? w.slice(0, -2) : w);

const chains = new Map<string, ChainSpec>();

/** The analyzer name of a chain (a custom analyzer, or a built-in one with parameters). */
export function chainName(spec: ChainSpec): string {
  // a chain equal to a built-in analyzer is that analyzer (so its fields keep the plans built-ins have)
  const sig = JSON.stringify([spec.char_filter, spec.tokenizer, spec.filter]);
  const same: Record<string, string> = {
    '[[],"standard",["lowercase"]]': 'standard', '[[],"whitespace",[]]': 'whitespace', '[[],"keyword",[]]': 'keyword',
    '[[],"lowercase",[]]': 'simple', '[[],"letter",["lowercase"]]': 'simple', '[[],"lowercase",["stop"]]': 'stop',
    '[[],"standard",["english_possessive_stemmer","lowercase","stop","porter_stem"]]': 'english',
  };
  return same[sig] ?? `chain:${JSON.stringify(spec)}`;
}

const SNOWBALL: ChainSpec = { char_filter: [], tokenizer: 'standard', filter: ['lowercase', 'stop', { type: 'snowball', language: 'English' }] };

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
    case 'snowball':
      return runChain(SNOWBALL, text);
    case 'pattern':
      return runChain({ char_filter: [], tokenizer: 'pattern', filter: ['lowercase'] }, text);
    case 'fingerprint': {
      // standard tokens, lowercased, ASCII-folded, deduplicated and sorted, joined into one token
      const ts = runChain({ char_filter: [], tokenizer: 'standard', filter: ['lowercase', 'asciifolding'] }, text).map((t) => t.term);
      const term = [...new Set(ts)].sort().join(' ');
      return term ? [{ term, pos: 0, start: 0, end: text.length }] : [];
    }
    default: {
      if (analyzer.startsWith('chain:')) {
        let spec = chains.get(analyzer);
        if (!spec) {
          spec = JSON.parse(analyzer.slice(6)) as ChainSpec;
          if (chains.size > 1000) chains.clear();
          chains.set(analyzer, spec);
        }
        return runChain(spec, text);
      }
      throw illegalArgument(`failed to find analyzer [${analyzer}]`);
    }
  }
}

export const isAnalyzer = (a: string): boolean => (ANALYZERS as readonly string[]).includes(a) || a === 'default';

export function terms(text: string, analyzer?: string): string[] {
  return analyze(text, analyzer).map((t) => t.term);
}
