/**
 * General natural-language knowledge about measurements: which words describe which kind of column, and which
 * way an adjective ranks. Columns are matched by the words of their names and synonyms, so
 * "cheapest" finds a `price` or `cost` column in any schema that has one.
 */
import type { ColInfo } from './schema';
import { singular, verbLemma } from './words';

export interface Dim { readonly words: readonly string[]; readonly desc: boolean }

const MONEY = ['price', 'cost', 'amount', 'fee', 'salary', 'revenue', 'value', 'total'];
const LENGTH = ['length', 'page', 'duration', 'minute', 'runtime', 'word', 'size', 'distance'];
const AGE_BIRTH = ['birth', 'born', 'dob'];
const TIME = ['year', 'date', 'founded', 'opened', 'created', 'built', 'published', 'established', 'released', 'joined', 'started', 'time', 'when'];
const RATING = ['rating', 'score', 'star', 'stars', 'grade'];

/** Adjective (base form) → the dimension it ranks and whether "more" means a larger value. */
const ADJ: Record<string, Dim> = {
  expensive: { words: MONEY, desc: true }, costly: { words: MONEY, desc: true }, pricey: { words: MONEY, desc: true }, cheap: { words: MONEY, desc: false },
  long: { words: LENGTH, desc: true }, short: { words: LENGTH, desc: false }, thick: { words: LENGTH, desc: true }, thin: { words: LENGTH, desc: false },
  big: { words: ['size', 'area', 'population', 'capacity', ...LENGTH], desc: true }, large: { words: ['size', 'area', 'population', 'capacity'], desc: true },
  small: { words: ['size', 'area', 'population', 'capacity'], desc: false },
  heavy: { words: ['weight', 'mass'], desc: true }, light: { words: ['weight', 'mass'], desc: false },
  tall: { words: ['height'], desc: true }, fast: { words: ['speed'], desc: true }, slow: { words: ['speed'], desc: false },
  old: { words: [...AGE_BIRTH, ...TIME], desc: false }, young: { words: [...AGE_BIRTH, ...TIME], desc: true },
  new: { words: TIME, desc: true }, recent: { words: TIME, desc: true }, latest: { words: TIME, desc: true }, early: { words: TIME, desc: false },
  late: { words: TIME, desc: true },
  rated: { words: RATING, desc: true }, popular: { words: RATING, desc: true },
};

/** "cheapest" → cheap, "oldest" → old, "larger" → large; undefined when not a ranked adjective. */
export function adjectiveBase(w: string): { base: string; degree: 'base' | 'comparative' | 'superlative' } | undefined {
  if (ADJ[w]) return { base: w, degree: 'base' };
  const irregular: Record<string, [string, 'comparative' | 'superlative']> = {
    newest: ['new', 'superlative'], newer: ['new', 'comparative'], latest: ['latest', 'superlative'], earliest: ['early', 'superlative'], earlier: ['early', 'comparative'],
    biggest: ['big', 'superlative'], bigger: ['big', 'comparative'], thinnest: ['thin', 'superlative'], thinner: ['thin', 'comparative'],
    cheapest: ['cheap', 'superlative'], cheaper: ['cheap', 'comparative'], priciest: ['pricey', 'superlative'], pricier: ['pricey', 'comparative'],
    heaviest: ['heavy', 'superlative'], heavier: ['heavy', 'comparative'], latest_: ['late', 'superlative'], later: ['late', 'comparative'],
  };
  if (irregular[w]) return { base: irregular[w][0], degree: irregular[w][1] };
  for (const [suf, deg] of [['est', 'superlative'], ['er', 'comparative']] as const) {
    if (!w.endsWith(suf)) continue;
    const stem = w.slice(0, -suf.length);
    for (const b of [stem, stem + 'e', stem.replace(/i$/, 'y')]) if (ADJ[b]) return { base: b, degree: deg };
  }
  return undefined;
}

export function dimOf(base: string): Dim | undefined {
  return ADJ[base];
}

/** Verbs that name a column by another word ("born" → birth, "died" → death, "cost" → price). */
const VERB_COL: Record<string, readonly string[]> = {
  born: AGE_BIRTH, bear: AGE_BIRTH, die: ['death', 'died'], died: ['death', 'died'], cost: MONEY, costs: MONEY, price: MONEY, priced: MONEY, pay: MONEY, sell: MONEY,
  publish: ['year', 'published', 'publication', 'date'], release: ['year', 'released', 'release', 'date'], write: ['year', 'written', 'date', 'created'],
  open: ['opened', 'open', 'year'], found: ['founded', 'year'], build: ['built', 'year'], establish: ['established', 'year'],
  join: ['joined', 'join', 'since'], post: ['created', 'posted', 'date'], create: ['created', 'date'], make: ['made', 'date', 'created'],
  live: ['city', 'address', 'location', 'residence', 'town'], weigh: ['weight'], star: RATING, rate: RATING,
};

/** A column of `cols` that a word names through its name, its synonyms or general language. */
export function columnForWord(word: string, cols: readonly ColInfo[]): ColInfo | undefined {
  const lemma = verbLemma(word);
  const s = singular(word);
  const direct = cols.find((c) => c.words.includes(word) || c.words.includes(s) || c.words.some((y) => singular(y) === s) || c.words.some((w) => verbLemma(w) === lemma && lemma.length > 2) || c.synonyms.includes(word));
  if (direct) return direct;
  const via = VERB_COL[word] ?? VERB_COL[lemma];
  if (!via) return undefined;
  for (const w of via) {
    const c = cols.find((x) => x.words.some((y) => y === w || singular(y) === w) || x.synonyms.includes(w));
    if (c) return c;
  }
  return undefined;
}

/** The best column of `cols` for a dimension (its words in order of preference). */
export function columnForDim(dim: Dim, cols: readonly ColInfo[]): ColInfo | undefined {
  for (const w of dim.words) {
    const c = cols.find((x) => (x.ty !== 'str' || x.isDate) && (x.words.some((y) => y === w || singular(y) === w) || x.synonyms.includes(w)));
    if (c) return c;
  }
  return undefined;
}

/** Words that ask for a place: the column they name, if the table has one. */
export const PLACE_WORDS = ['country', 'city', 'location', 'place', 'region', 'state', 'origin', 'address', 'town', 'nationality', 'hometown', 'birthplace', 'port', 'home'];
