/**
 * Structured queries (the JSON form of a plan's `fts_search.query`): `terms`, `phrase` (+ slop),
 * `prefix`, and `bool` with must / should / must_not at any depth and `minimum_should_match`.
 *
 * Meaning (Elasticsearch's bool): a document matches a bool when it matches every `must`, no
 * `must_not`, and at least `minimum_should_match` of the `should` clauses (default 1 when the bool
 * has no `must`, else 0; a negative n means "all but n"); its score is the sum of the BM25 scores
 * of the positive clauses it matches (`must_not` adds nothing), as the route scores `+a b -c`.
 *
 * A query the `q` syntax can say (one level of clauses, default minimum_should_match, and nested
 * bools that flatten without changing the meaning) compiles to exactly the clauses of its text
 * form, so its answer is the route's. Anything else becomes BoolQuery clauses: each nested bool
 * is evaluated into a scored doc list (no MaxScore pruning inside it), and the ranking stages
 * (proximity, RM3) see only the top level's plain words.
 */
import { DbError } from '@mmdb/core';
import type { Analyzer } from './analysis';
import type { Occur, ParsedClause } from './query-parser';
import { compileQuery, readsStore, type BooleanClause, type CompileOptions, type Query, type SearchContext, type Weight } from './query';
import { ListScorer, NO_MORE, type Scorer } from './scorer';

export type StructuredQuery =
  | { readonly terms: readonly string[]; readonly operator?: 'or' | 'and' }
  | { readonly phrase: string; readonly slop?: number }
  | { readonly prefix: string }
  | {
      readonly bool: {
        readonly must?: readonly StructuredQuery[];
        readonly should?: readonly StructuredQuery[];
        readonly must_not?: readonly StructuredQuery[];
        readonly minimum_should_match?: number;
      };
    };

type Bool = Extract<StructuredQuery, { bool: unknown }>['bool'];

function bad(path: string, what: string): never {
  throw new DbError('validation_failed', `invalid plan at ${path}: ${what}`, { path });
}

function word(path: string, w: unknown): string {
  if (typeof w !== 'string' || !/^[^\s"+\-*][^\s"*]*$/u.test(w)) bad(path, `${JSON.stringify(w)} is not one word`);
  return w;
}

/** Checks the shape (a parameter bound to an object arrives unchecked) and each leaf's text. */
function check(q: unknown, path: string): asserts q is StructuredQuery {
  if (!q || typeof q !== 'object' || Array.isArray(q)) bad(path, 'expected a structured query object');
  const o = q as Record<string, unknown>;
  if ('terms' in o) {
    if (!Array.isArray(o.terms) || o.terms.length === 0) bad(`${path}.terms`, 'expected a non-empty array of words');
    o.terms.forEach((t, i) => word(`${path}.terms[${i}]`, t));
    if (o.operator !== undefined && o.operator !== 'and' && o.operator !== 'or') bad(`${path}.operator`, 'expected one of or, and');
  } else if ('phrase' in o) {
    if (typeof o.phrase !== 'string' || o.phrase.trim() === '') bad(`${path}.phrase`, 'expected a non-empty string');
    if (o.phrase.includes('"')) bad(`${path}.phrase`, 'a phrase cannot hold a quote');
    if (o.slop !== undefined && !(Number.isInteger(o.slop) && (o.slop as number) >= 0 && (o.slop as number) <= 999)) bad(`${path}.slop`, 'expected an integer from 0 to 999');
  } else if ('prefix' in o) word(`${path}.prefix`, o.prefix);
  else if ('bool' in o) {
    const b = o.bool as Record<string, unknown>;
    if (!b || typeof b !== 'object') bad(`${path}.bool`, 'expected an object');
    let positive = 0;
    for (const k of ['must', 'should', 'must_not'] as const) {
      if (b[k] === undefined) continue;
      if (!Array.isArray(b[k])) bad(`${path}.bool.${k}`, 'expected an array');
      (b[k] as unknown[]).forEach((x, i) => check(x, `${path}.bool.${k}[${i}]`));
      if (k !== 'must_not') positive += (b[k] as unknown[]).length;
    }
    const m = b.minimum_should_match;
    if (m !== undefined && !Number.isInteger(m)) bad(`${path}.bool.minimum_should_match`, 'expected an integer');
    if (positive === 0) bad(`${path}.bool`, 'a bool needs at least one must or should clause');
  } else bad(path, 'expected one of terms, phrase, prefix, bool');
}

/** The number of `should` clauses a doc must match (ES: default 1 without must, else 0; negative = all but n). */
export function requiredShould(b: Bool): number {
  const n = b.should?.length ?? 0;
  const m = b.minimum_should_match;
  if (m === undefined) return (b.must?.length ?? 0) > 0 || n === 0 ? 0 : 1;
  return m < 0 ? Math.max(0, n + m) : m;
}

const leafClause = (q: StructuredQuery, occur: Occur): ParsedClause | null =>
  'phrase' in q ? { occur, kind: 'phrase', text: q.phrase, ...(q.slop ? { slop: q.slop } : {}) } : 'prefix' in q ? { occur, kind: 'prefix', text: q.prefix } : null;

/**
 * `q` at `occur` inside a parent whose should clauses only need one match (or none), as clauses
 * of the q syntax; null when that would change the meaning.
 */
function flat(q: StructuredQuery, occur: Occur): ParsedClause[] | null {
  const l = leafClause(q, occur);
  if (l) return [l];
  if ('terms' in q) {
    const and = q.operator === 'and';
    const many = q.terms.length > 1;
    // AND-ed words as one should/must_not clause, or OR-ed words as one must clause, are not one level
    if (many && ((and && occur !== 'must') || (!and && occur === 'must'))) return null;
    return q.terms.map((t) => ({ occur, kind: 'term', text: t }));
  }
  if (!('bool' in q)) return null;
  const b = q.bool;
  const must = b.must ?? [];
  const should = b.should ?? [];
  const not = b.must_not ?? [];
  if (b.minimum_should_match !== undefined && requiredShould(b) !== requiredShould({ ...b, minimum_should_match: undefined })) return null;
  const parts = (xs: readonly StructuredQuery[], o: Occur) => {
    const out: ParsedClause[] = [];
    for (const x of xs) {
      const f = flat(x, o);
      if (!f) return null;
      out.push(...f);
    }
    return out;
  };
  if (occur === 'should') {
    // the bool is the parent's one optional clause only when it is one positive clause
    if (not.length || must.length + should.length !== 1) return null;
    return flat((must[0] ?? should[0]) as StructuredQuery, 'should');
  }
  if (occur === 'must_not') {
    if (not.length || must.length + should.length !== 1) return null;
    return flat((must[0] ?? should[0]) as StructuredQuery, 'must_not');
  }
  // must (or the top level, where occur is 'must' for a bool with a must, see compileStructured)
  let req: ParsedClause[] | null;
  let opt: ParsedClause[] | null = [];
  if (must.length) {
    req = parts(must, 'must');
    opt = parts(should, 'should');
  } else if (should.length === 1) req = parts(should, 'must');
  else return null;
  const exc = parts(not, 'must_not');
  return req && opt && exc ? [...req, ...exc, ...opt] : null;
}

/** The top level as q-syntax clauses, or null. */
function flatTop(q: StructuredQuery): ParsedClause[] | null {
  if (!('bool' in q)) {
    if ('terms' in q) return q.terms.map((t) => ({ occur: q.operator === 'and' ? 'must' : 'should', kind: 'term', text: t }));
    return flat(q, 'should');
  }
  const b = q.bool;
  if (requiredShould(b) !== ((b.must?.length ?? 0) > 0 || !(b.should?.length) ? 0 : 1)) return null;
  const out: ParsedClause[] = [];
  const lists: Array<[readonly StructuredQuery[] | undefined, Occur]> = [[b.must, 'must'], [b.must_not, 'must_not'], [b.should, 'should']];
  for (const [xs, o] of lists) {
    for (const x of xs ?? []) {
      const f = flat(x, o);
      if (!f) return null;
      out.push(...f);
    }
  }
  return out;
}

/**
 * A bool evaluated into a scored doc list: docs matching every must, at least `minShould` of the
 * should clauses and no must_not; score = Σ scores of the matched positive clauses.
 */
export class BoolQuery implements Query {
  constructor(
    readonly must: readonly Query[],
    readonly should: readonly Query[],
    readonly mustNot: readonly Query[],
    readonly minShould: number,
  ) {}

  async createWeight(ctx: SearchContext): Promise<Weight | null> {
    // weights that read the store first, then the synchronous ones: no await between binding term weights and scoring
    const slow = new Map<Query, Weight | null>();
    for (const q of [...this.must, ...this.should, ...this.mustNot]) if (readsStore(q)) slow.set(q, await q.createWeight(ctx));
    const bind = (qs: readonly Query[]) => qs.map((q) => ((slow.has(q) ? slow.get(q) : (q.createWeight(ctx) as Weight | null)) ?? null)?.scorer() ?? null);
    const must = bind(this.must);
    if (must.some((s) => s === null)) return null;
    const should = bind(this.should).filter((s): s is Scorer => s !== null);
    const not = bind(this.mustNot).filter((s): s is Scorer => s !== null);
    const need = this.minShould;
    if (should.length < need || (must.length === 0 && should.length === 0)) return null;
    const docs: number[] = [];
    const scores: number[] = [];
    const excluded = (d: number) => not.some((s) => s.advance(d) === d);
    const req = (must as Scorer[]).slice().sort((a, b) => a.n - b.n);
    if (req.length) {
      const lead = req[0];
      for (let d = lead.doc(); d !== NO_MORE; ) {
        let t = d;
        for (let j = 1; j < req.length && t === d; j++) t = req[j].advance(d);
        if (t !== d) {
          d = lead.advance(t);
          continue;
        }
        let score = 0;
        for (const r of req) score += r.score();
        let hits = 0;
        for (const s of should) {
          if (s.advance(d) === d) {
            hits++;
            score += s.score();
          }
        }
        if (hits >= need && !excluded(d)) {
          docs.push(d);
          scores.push(score);
        }
        d = lead.next();
      }
    } else {
      const acc = new Map<number, { score: number; hits: number }>();
      for (const s of should) {
        for (let d = s.doc(); d !== NO_MORE; d = s.next()) {
          const a = acc.get(d);
          if (a) {
            a.score += s.score();
            a.hits++;
          } else acc.set(d, { score: s.score(), hits: 1 });
        }
      }
      const min = Math.max(1, need);
      for (const d of [...acc.keys()].sort((a, b) => a - b)) {
        const a = acc.get(d) as { score: number; hits: number };
        if (a.hits >= min && !excluded(d)) {
          docs.push(d);
          scores.push(a.score);
        }
      }
    }
    if (docs.length === 0) return null;
    const ds = Int32Array.from(docs);
    const ss = Float64Array.from(scores);
    return { scorer: () => new ListScorer(ds, ss) };
  }
}

/** One structured query as a Query (a leaf's words analyzed by the field's analyzer), or null when it analyzes to nothing. */
function toQuery(q: StructuredQuery, analyzer: Analyzer): Query | null {
  const l = leafClause(q, 'should');
  if (l || ('terms' in q)) {
    const parsed = l ? [l] : (q as { terms: readonly string[] }).terms.map((t): ParsedClause => ({ occur: 'should', kind: 'term', text: t }));
    if (l) {
      const c = compileQuery(parsed, analyzer);
      return c.length === 0 ? null : c.length === 1 ? c[0].query : new BoolQuery([], c.map((x) => x.query), [], 1);
    }
    // each word (a word may analyze to several terms: all of them, as the syntax's "+word" does for must)
    const words = parsed.map((p) => compileQuery([p], analyzer)).filter((c) => c.length > 0).map((c) => (c.length === 1 ? c[0].query : new BoolQuery([], c.map((x) => x.query), [], 1)));
    if (words.length === 0) return null;
    if (words.length === 1) return words[0];
    return (q as { operator?: string }).operator === 'and' ? new BoolQuery(words, [], [], 0) : new BoolQuery([], words, [], 1);
  }
  const b = (q as { bool: Bool }).bool;
  const list = (xs: readonly StructuredQuery[] | undefined) => (xs ?? []).map((x) => toQuery(x, analyzer));
  // a must clause that analyzes to nothing drops out (as "+the" does in the syntax)
  const must = list(b.must).filter((x): x is Query => x !== null);
  const should = list(b.should).filter((x): x is Query => x !== null);
  const not = list(b.must_not).filter((x): x is Query => x !== null);
  if (must.length === 0 && should.length === 0) return null;
  return new BoolQuery(must, should, not, requiredShould(b));
}

/**
 * The clauses of a structured query for `searchClauses` / the ranking pipeline. A query the q
 * syntax can say yields exactly the clauses of its text; otherwise a minimum_should_match other
 * than the default makes the whole query one required BoolQuery, and nested bools become
 * BoolQuery clauses of the top level. Throws validation_failed naming the path (`path` = where
 * the query sits in the plan).
 */
export function compileStructured(q: unknown, analyzer: Analyzer, opts: CompileOptions = {}, path = '$.query'): BooleanClause[] {
  check(q, path);
  const f = flatTop(q);
  if (f) {
    if (f.every((c) => c.occur === 'must_not')) bad(path, 'a query of only excluded clauses matches nothing; add a term to search for');
    return compileQuery(f, analyzer, opts);
  }
  if (!('bool' in q)) {
    const one = toQuery(q, analyzer);
    return one ? [{ occur: 'must', query: one }] : [];
  }
  const b = q.bool;
  if (requiredShould(b) !== ((b.must?.length ?? 0) > 0 || !(b.should?.length) ? 0 : 1)) {
    const one = toQuery(q, analyzer);
    return one ? [{ occur: 'must', query: one }] : [];
  }
  const out: BooleanClause[] = [];
  const lists: Array<[readonly StructuredQuery[] | undefined, Occur]> = [[b.must, 'must'], [b.must_not, 'must_not'], [b.should, 'should']];
  for (const [xs, occur] of lists) {
    for (const x of xs ?? []) {
      const fl = flat(x, occur);
      if (fl) {
        out.push(...compileQuery(fl, analyzer, {}));
        continue;
      }
      const one = toQuery(x, analyzer);
      if (one) out.push({ occur, query: one });
    }
  }
  return out;
}
