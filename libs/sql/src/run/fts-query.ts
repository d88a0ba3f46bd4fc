/**
 * A structured full-text query (plan `FtsQuery`) in our query syntax (libs/fts README): `+`
 * required, `-` excluded, `"phrase"` (`~n` slop), `pre*`. The syntax has one level of clauses, so
 * a structured query it cannot say (a nested bool, other minimum_should_match) answers
 * validation_failed naming its JSON path.
 */
import { DbError } from '@mmdb/core';
import type { FtsQuery } from '@mmdb/plan';

function unsupported(path: string, what: string): never {
  throw new DbError('validation_failed', `invalid plan at ${path}: ${what} is not supported by the full-text engine`, { path });
}

function word(path: string, w: string): string {
  if (!/^[^\s"+\-*][^\s"*]*$/u.test(w)) throw new DbError('validation_failed', `invalid plan at ${path}: "${w}" is not one word`, { path });
  return w;
}

/** The clauses of a leaf query, each with its occurrence prefix applied. */
function leaf(q: FtsQuery, path: string, prefix: '' | '+' | '-'): string[] {
  if ('terms' in q) {
    const p = q.operator === 'and' && prefix === '' ? '+' : prefix;
    if (q.operator === 'and' && prefix === '-' && q.terms.length > 1) unsupported(path, 'must_not over several AND-ed terms');
    if (q.operator !== 'and' && prefix === '+' && q.terms.length > 1) unsupported(path, 'must over several OR-ed terms');
    return q.terms.map((t, i) => p + word(`${path}.terms[${i}]`, t));
  }
  if ('phrase' in q) {
    if (q.phrase.includes('"')) throw new DbError('validation_failed', `invalid plan at ${path}.phrase: a phrase cannot hold a quote`, { path: `${path}.phrase` });
    if (q.slop !== undefined && q.slop > 999) throw new DbError('validation_failed', `invalid plan at ${path}.slop: at most 999`, { path: `${path}.slop` });
    return [`${prefix}"${q.phrase}"${q.slop ? `~${q.slop}` : ''}`];
  }
  if ('prefix' in q) return [`${prefix}${word(`${path}.prefix`, q.prefix)}*`];
  return unsupported(path, 'a nested bool');
}

export function ftsQueryText(q: FtsQuery, path = '$.query'): string {
  if (!('bool' in q)) return leaf(q, path, '').join(' ');
  const b = q.bool;
  const out: string[] = [];
  (b.must ?? []).forEach((x, i) => out.push(...leaf(x, `${path}.bool.must[${i}]`, '+')));
  (b.must_not ?? []).forEach((x, i) => out.push(...leaf(x, `${path}.bool.must_not[${i}]`, '-')));
  (b.should ?? []).forEach((x, i) => out.push(...leaf(x, `${path}.bool.should[${i}]`, '')));
  const msm = b.minimum_should_match;
  const hasMust = (b.must ?? []).length > 0;
  // the syntax: with a required clause, optional ones only add to the score (0); without, one must match (1)
  if (msm !== undefined && msm !== (hasMust ? 0 : 1) && !(msm === 0 && !hasMust && (b.should ?? []).length === 0)) {
    unsupported(`${path}.bool.minimum_should_match`, `minimum_should_match ${msm} here`);
  }
  if (out.length === 0) throw new DbError('validation_failed', `invalid plan at ${path}.bool: no clause`, { path: `${path}.bool` });
  return out.join(' ');
}
