/**
 * General language helpers: lemmas, plurals, number words. Nothing here knows a schema; the
 * libraries (compromise, pluralize) do the language and we memoize their answers.
 */
import type nlpType from 'compromise';
import pluralize from 'pluralize';

let nlpFn: typeof nlpType | undefined;
/**
 * compromise, loaded at its first use (the first question asked) rather than with the server:
 * ~0.3 s of module loading on an idle host (0.8 s on a busy one) that a restarted server's
 * listening and first searches need not wait for (issue 25 §2).
 */
function nlp(text: string): ReturnType<typeof nlpType> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  nlpFn ??= require('compromise') as typeof nlpType;
  return nlpFn(text);
}

const lemmaMemo = new Map<string, string>();
const singularMemo = new Map<string, string>();

/** The singular of a lowercase noun ("countries" → "country", "people" → "person"). */
export function singular(w: string): string {
  let s = singularMemo.get(w);
  if (s === undefined) {
    s = /^[a-z]+$/.test(w) && w.length > 3 && !w.endsWith('ss') ? pluralize.singular(w) : w;
    singularMemo.set(w, s);
  }
  return s;
}

export function plural(w: string): string {
  return pluralize.plural(w);
}

/** A verb's infinitive ("wrote" → "write", "sailed" → "sail"), else the word itself. */
export function verbLemma(w: string): string {
  let s = lemmaMemo.get(w);
  if (s === undefined) {
    s = w;
    if (/^[a-z]+$/.test(w) && w.length > 2) {
      const inf = nlp(w).verbs().toInfinitive().text().toLowerCase();
      if (inf && /^[a-z]+$/.test(inf)) s = inf;
      else if (w.endsWith('ed') && w.length > 4) s = w.slice(0, -2);
      else if (w.endsWith('ies') && w.length > 4) s = `${w.slice(0, -3)}y`;
      else if (w.endsWith('s') && !w.endsWith('ss') && w.length > 3) s = w.slice(0, -1);
    }
    lemmaMemo.set(w, s);
  }
  return s;
}

/** The words a name splits into: snake_case and camelCase, lowercased. */
export function nameWords(name: string): string[] {
  return name
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .split(/[_\s-]+/)
    .map((w) => w.toLowerCase())
    .filter(Boolean);
}

const SMALL: Record<string, number> = {
  zero: 0, one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9, ten: 10,
  eleven: 11, twelve: 12, thirteen: 13, fourteen: 14, fifteen: 15, sixteen: 16, seventeen: 17, eighteen: 18, nineteen: 19,
  twenty: 20, thirty: 30, forty: 40, fifty: 50, sixty: 60, seventy: 70, eighty: 80, ninety: 90,
  hundred: 100, thousand: 1000, million: 1e6, dozen: 12,
};

/** True when the word is (part of) a spelled-out number. */
export function isNumberWord(w: string): boolean {
  return w in SMALL || /^(twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)-(one|two|three|four|five|six|seven|eight|nine)$/.test(w);
}

/** The value of a run of number words ("a hundred and five", "twenty-one"), via compromise. */
export function numberWords(words: readonly string[]): number | undefined {
  const n = nlp(words.join(' ')).numbers().get() as number[];
  return n.length === 1 && Number.isFinite(n[0]) ? n[0] : undefined;
}

export const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];

/** Words that carry no content of their own in a question. */
export const STOP = new Set([
  'a', 'an', 'the', 'of', 'in', 'on', 'at', 'to', 'for', 'with', 'by', 'from', 'and', 'or', 'is', 'are', 'was', 'were', 'be', 'been',
  'do', 'does', 'did', 'has', 'have', 'had', 'what', 'which', 'who', 'whom', 'whose', 'that', 'this', 'these', 'those', 'there',
  'me', 'show', 'list', 'give', 'find', 'get', 'tell', 'all', 'any', 'every', 'each', 'we', 'us', 'our', 'i', 'you', 'it', 'its',
  'their', 'they', 'them', 'his', 'her', 'please', 'some', 'ever', 'so', 'far', 'currently', 'yet', 's', 'display', 'return', 'whole',
  'entire', 'collection', 'catalog', 'catalogue', 'database', 'records', 'record', 'data', 'items', 'entries', 'across', 'overall', 'altogether',
]);

/** Auxiliaries that invert a question ("who does X mentor", "what has X sailed"). */
export const AUX = new Set(['do', 'does', 'did', 'has', 'have', 'had', 'is', 'are', 'was', 'were', 'will', 'would', 'can']);

/** Nouns that carry no condition of their own ("the number of", "in the collection", "the word"). */
export const FILLER = new Set([
  'number', 'numbers', 'count', 'total', 'amount', 'list', 'collection', 'catalog', 'catalogue', 'word', 'words', 'phrase', 'term', 'there',
  'connection', 'connections', 'relationship', 'relationships', 'link', 'links', 'dollar', 'dollars', 'euro', 'euros', 'cent', 'cents',
  'kind', 'kinds', 'type', 'types', 'sort', 'lot', 'lots', 'one', 'ones', 'thing', 'things', 'value', 'values', 'result', 'results',
  'row', 'rows', 'system', 'table', 'tables', 'information', 'info', 'detail', 'details', 'time', 'times', 'all', 'least', 'most', 'mention',
]);

/** The words compromise reads as nouns (not pronouns) in this sentence, in context. */
export function nounsIn(sentence: string): Set<string> {
  const out = new Set<string>();
  for (const sent of nlp(sentence).json() as Array<{ terms: Array<{ normal?: string; text: string; tags: string[] }> }>) {
    for (const t of sent.terms) if (t.tags.includes('Noun') && !t.tags.includes('Pronoun')) out.add((t.normal ?? t.text).toLowerCase());
  }
  return out;
}
