/**
 * Term expansion for the plans (text-plan.ts): a pattern, fuzzy or prefix clause becomes the list
 * of the index's terms (a text field's, from its term dictionary: the field statistics' document
 * frequencies) or values (a keyword field's, its global ordinals) that pass the scorer's own test,
 * and that list is the plan's input: an fts `terms` clause of the field's column, or an `in` list
 * over the keyword's typed column. The tests are the scorer's (`patternTest`, `editDistance`,
 * `fuzziness` in query.ts), so both paths match the same documents.
 */
import { globalOrdinals, type IndexView } from './doc';
import { fieldStats } from './scoring';
import { editDistance, fuzziness } from './query';

/** At most this many terms (values) in one expansion; past it the search takes the scorer over the view. */
export const MAX_EXPANSION = 1024;
const TERM = /^[a-z0-9]+$/;

/**
 * The terms of a text field (indexed with `analyzer`) that pass `test`, or null when more than
 * `max` do or one of them is not a plain `[a-z0-9]` word (the fts lib could tokenize it otherwise).
 */
export function expandTerms(ix: IndexView, path: string, test: (t: string) => boolean, max = MAX_EXPANSION, analyzer = 'standard'): string[] | null {
  const out: string[] = [];
  for (const t of fieldStats(ix, path, analyzer).df.keys()) {
    if (!test(t)) continue;
    if (!TERM.test(t) || out.length >= max) return null;
    out.push(t);
  }
  return out.sort();
}

/** The values of a keyword field that pass `test` (sorted), or null past `MAX_EXPANSION`. */
export function expandValues(ix: IndexView, path: string, test: (v: string) => boolean): string[] | null {
  const out: string[] = [];
  for (const v of globalOrdinals(ix, path).terms) {
    if (!test(v)) continue;
    if (out.length >= MAX_EXPANSION) return null;
    out.push(v);
  }
  return out;
}

/**
 * The scorer's fuzzy match of a query term (`match` with `fuzziness`, text-query.ts `fuzzyTerm`):
 * the same first `prefix_length` characters, an edit distance within the fuzziness, and a score
 * factor above 0 (`1 - distance / longer length`).
 */
export function fuzzyTest(term: string, fz: unknown, prefixLength: number): (t: string) => boolean {
  const max = fuzziness(fz, term);
  return (t) => {
    if (t.slice(0, prefixLength) !== term.slice(0, prefixLength)) return false;
    const d = editDistance(t, term, max);
    return d <= max && (d === 0 || d < Math.max(t.length, term.length));
  };
}
