/**
 * The `q` syntax of `GET /fts/{table}/{field}` (documented in libs/fts/README.md):
 *
 * - `word`          a scored term; any optional term may match
 * - `"a phrase"`    the words in this order, next to each other (positions)
 * - `"a phrase"~n`  the words each within n positions of their place, in any order (slop)
 * - `+clause`       required: every match contains it
 * - `-clause`       excluded: no match contains it
 * - `pre*`          every indexed term starting with `pre` (not stemmed)
 *
 * Clauses are separated by white space; modifiers combine with any clause kind
 * (`+"shock wave"`, `-heat*`). When any clause is required, optional clauses only
 * add to the score.
 *
 * @example parseQuery('+"boundary layer" -turbulent heat*')
 */
import { DbError } from '@mmdb/core';

export type Occur = 'should' | 'must' | 'must_not';

export interface ParsedClause {
  readonly occur: Occur;
  readonly kind: 'term' | 'phrase' | 'prefix';
  /** Raw text of the clause (word, phrase body or prefix without `*`), analyzed later by the field's analyzer. */
  readonly text: string;
  /** `"a phrase"~n`: the words may be up to n positions away from their places, in any order. */
  readonly slop?: number;
}

/** Longest accepted `q`, in characters. */
export const MAX_QUERY_LENGTH = 4096;

function bad(message: string): never {
  throw new DbError('validation_failed', message, { field: 'q' });
}

export function parseQuery(q: string | undefined | null): ParsedClause[] {
  if (typeof q !== 'string' || q.trim() === '') bad('query parameter "q" is required and must not be empty');
  if (q.length > MAX_QUERY_LENGTH) bad(`query parameter "q" is longer than ${MAX_QUERY_LENGTH} characters`);
  const out: ParsedClause[] = [];
  let i = 0;
  const n = q.length;
  while (i < n) {
    while (i < n && /\s/.test(q[i])) i++;
    if (i >= n) break;
    let occur: Occur = 'should';
    if (q[i] === '+' || q[i] === '-') {
      occur = q[i] === '+' ? 'must' : 'must_not';
      i++;
      if (i >= n || /\s/.test(q[i])) bad(`"${q[i - 1]}" at offset ${i - 1} must be followed by a term or phrase`);
      if (q[i] === '+' || q[i] === '-') bad(`two modifiers in a row at offset ${i - 1}`);
    }
    if (q[i] === '"') {
      const end = q.indexOf('"', i + 1);
      if (end < 0) bad(`unterminated phrase: the quote at offset ${i} is never closed`);
      const body = q.slice(i + 1, end);
      if (body.trim() === '') bad(`empty phrase at offset ${i}`);
      i = end + 1;
      const m = /^~(\d{1,3})(?=\s|$)/.exec(q.slice(i));
      if (m) i += m[0].length;
      out.push({ occur, kind: 'phrase', text: body, ...(m && Number(m[1]) > 0 ? { slop: Number(m[1]) } : {}) });
      continue;
    }
    let j = i;
    while (j < n && !/\s/.test(q[j]) && q[j] !== '"') j++;
    const word = q.slice(i, j);
    i = j;
    if (word.endsWith('*')) {
      const prefix = word.slice(0, -1);
      if (prefix === '' || prefix.includes('*')) bad(`"${word}": a prefix query needs at least one character before a single trailing "*"`);
      out.push({ occur, kind: 'prefix', text: prefix });
    } else {
      if (word.includes('*')) bad(`"${word}": "*" is only allowed at the end of a word (prefix query)`);
      out.push({ occur, kind: 'term', text: word });
    }
  }
  if (out.length === 0) bad('query parameter "q" has no clause');
  if (out.every((c) => c.occur === 'must_not')) bad('query has only excluded (-) clauses; add a term to search for');
  return out;
}
