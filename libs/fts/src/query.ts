/**
 * Query → Weight → Scorer (as in Lucene/Tantivy).
 * - A Query is the analyzed request: terms, phrases, prefixes, their occurrence.
 * - A Weight binds a query to the statistics of the index at one moment (N, avgdl,
 *   document frequencies → idf, upper bounds).
 * - A Scorer is a cursor over matching doc ordinals (see scorer.ts).
 */
import type { Analyzer } from './analysis';
import type { FieldIndex } from './field-index';
import type { Occur, ParsedClause } from './query-parser';
import { ListScorer, TermScorer, type Scorer } from './scorer';
import { bm25, idf, type Bm25Params } from './similarity';
import { topK, type CollectStats } from './collector';

/** What a weight needs: the field's in-memory index, its BM25 parameters, and positions from a snapshot. */
export interface SearchContext {
  readonly index: FieldIndex;
  readonly params: Bm25Params;
  /** Positions of `term` in `doc`, read from a storage snapshot (undefined if absent there). */
  positions(term: string, doc: string): Promise<number[] | undefined>;
  /** Positions of several terms in `doc` at once (one read; optional, proximity uses it when present). */
  positionsOf?(doc: string, terms: readonly string[]): Promise<Array<number[] | undefined>>;
  /** A doc's term frequencies (for relevance feedback), read from the same snapshot. */
  termVector?(doc: string): Promise<ReadonlyMap<string, number> | undefined>;
}

export interface Weight {
  scorer(): Scorer;
}

export interface Query {
  /** null when the query can match nothing. */
  createWeight(ctx: SearchContext): Promise<Weight | null> | Weight | null;
}

const avgdlOf = (ix: FieldIndex): number => (ix.docs > 0 ? ix.total / ix.docs : 1) || 1;

export class TermQuery implements Query {
  constructor(
    readonly term: string,
    readonly boost = 1,
  ) {}
  createWeight(ctx: SearchContext): Weight | null {
    const ix = ctx.index;
    const list = ix.list(this.term);
    if (!list || list.n === 0) return null;
    const w = idf(Math.max(ix.docs, list.n), list.n) * this.boost;
    const avgdl = avgdlOf(ix);
    return { scorer: () => new TermScorer(list, w, ix.docLen, avgdl, ix.minLen, ctx.params) };
  }
}

const listWeight = (docs: Int32Array, scores: Float64Array): Weight => ({ scorer: () => new ListScorer(docs, scores) });

/** Terms at fixed relative positions; scored as one pseudo-term (tf = phrase frequency, idf = Σ idf). */
export class PhraseQuery implements Query {
  /** `slop` > 0: each later word may be up to `slop` positions from its place (either side). */
  constructor(readonly terms: ReadonlyArray<{ term: string; offset: number }>, readonly slop = 0) {}

  async createWeight(ctx: SearchContext): Promise<Weight | null> {
    const ix = ctx.index;
    const lists = this.terms.map((t) => ix.list(t.term));
    if (lists.some((l) => !l || l.n === 0)) return null;
    const ls = lists as NonNullable<(typeof lists)[number]>[];
    let sumIdf = 0;
    for (const l of ls) sumIdf += idf(Math.max(ix.docs, l.n), l.n);
    const avgdl = avgdlOf(ix);
    // candidates: docs holding every term (in-memory intersection)
    const order = ls.map((_, j) => j).sort((a, b) => ls[a].n - ls[b].n);
    const lead = ls[order[0]];
    const cand: number[] = [];
    const cursors = new Int32Array(ls.length);
    outer: for (let i = 0; i < lead.n; i++) {
      const d = lead.docs[i];
      for (const j of order) {
        const l = ls[j];
        const at = l.seek(d, cursors[j]);
        cursors[j] = at;
        if (at >= l.n || l.docs[at] !== d) continue outer;
      }
      cand.push(d);
    }
    const docs: number[] = [];
    const scores: number[] = [];
    const CHUNK = 128;
    for (let c = 0; c < cand.length; c += CHUNK) {
      const part = cand.slice(c, c + CHUNK);
      const freqs = await Promise.all(part.map((d) => this.freq(ctx, ix.docIds[d])));
      part.forEach((d, i) => {
        if (freqs[i] > 0) {
          docs.push(d);
          scores.push(bm25(sumIdf, freqs[i], ix.docLen[d], avgdl, ctx.params));
        }
      });
    }
    return docs.length ? listWeight(Int32Array.from(docs), Float64Array.from(scores)) : null;
  }

  private async freq(ctx: SearchContext, doc: string): Promise<number> {
    if (!doc) return 0;
    const pos = await Promise.all(this.terms.map((t) => ctx.positions(t.term, doc)));
    if (pos.some((p) => !p)) return 0;
    const sets = pos.slice(1).map((p) => new Set(p));
    let f = 0;
    const slop = this.slop;
    for (const p0 of pos[0] as number[]) {
      const start = p0 - this.terms[0].offset;
      if (slop === 0) {
        if (sets.every((s, j) => s.has(start + this.terms[j + 1].offset))) f++;
        continue;
      }
      // sloppy: every later word somewhere within `slop` of its place
      const near = (s: Set<number>, at: number) => { for (let d = -slop; d <= slop; d++) if (s.has(at + d)) return true; return false; };
      if (sets.every((s, j) => near(s, start + this.terms[j + 1].offset))) f++;
    }
    return f;
  }
}

/** Every indexed term starting with a prefix (at most MAX_EXPANSIONS, in term order); a doc scores the sum of its matched terms. */
export class PrefixQuery implements Query {
  static readonly MAX_EXPANSIONS = 256;
  constructor(readonly prefix: string) {}

  createWeight(ctx: SearchContext): Weight | null {
    const ix = ctx.index;
    const terms = ix.expandPrefix(this.prefix, PrefixQuery.MAX_EXPANSIONS);
    if (terms.length === 0) return null;
    const acc = new Map<number, number>();
    for (const t of terms) {
      const tw = new TermQuery(t).createWeight(ctx);
      if (!tw) continue;
      const s = tw.scorer();
      for (let d = s.doc(); s.i < s.n; d = s.next()) acc.set(d, (acc.get(d) ?? 0) + s.score());
    }
    const docs = Int32Array.from([...acc.keys()].sort((a, b) => a - b));
    const scores = Float64Array.from(docs, (d) => acc.get(d) as number);
    return listWeight(docs, scores);
  }
}

/** A query whose weight awaits store reads (phrases, and bools that may hold them); term and prefix weights are synchronous. */
export const readsStore = (q: Query): boolean => !(q instanceof TermQuery || q instanceof PrefixQuery);

export interface BooleanClause {
  readonly occur: Occur;
  readonly query: Query;
}

/** Options of `compileQuery`. */
export interface CompileOptions {
  /**
   * Query-side stop words (analyzed terms): bare optional words of request phrasing
   * ("papers", "available"…) dropped from the query, unless that would leave no positive
   * clause. Never applied to required words, phrases or prefixes; documents keep them.
   */
  readonly queryStopTerms?: ReadonlySet<string>;
}

/** Analyzes parsed clauses with the field's analyzer. Stop-word-only clauses drop out; equal terms merge (boost = count). */
export function compileQuery(parsed: readonly ParsedClause[], analyzer: Analyzer, opts: CompileOptions = {}): BooleanClause[] {
  const out: BooleanClause[] = [];
  const shouldTerms = new Map<string, number>();
  const add = (occur: Occur, term: string) => {
    if (occur === 'should') shouldTerms.set(term, (shouldTerms.get(term) ?? 0) + 1);
    else out.push({ occur, query: new TermQuery(term) });
  };
  for (const c of parsed) {
    if (c.kind === 'prefix') {
      const p = analyzer.normalizePrefix(c.text);
      if (p) out.push({ occur: c.occur, query: new PrefixQuery(p) });
      continue;
    }
    const toks = analyzer.analyze(c.text);
    if (toks.length === 0) continue;
    if (c.kind === 'phrase' && toks.length > 1) {
      const base = toks[0].pos;
      out.push({ occur: c.occur, query: new PhraseQuery(toks.map((t) => ({ term: t.term, offset: t.pos - base })), c.slop ?? 0) });
      continue;
    }
    for (const t of toks) add(c.occur, t.term);
  }
  const qs = opts.queryStopTerms;
  if (qs && qs.size) {
    const kept = [...shouldTerms.keys()].filter((t) => !qs.has(t));
    if (kept.length > 0 || out.some((c) => c.occur !== 'must_not')) for (const t of [...shouldTerms.keys()]) if (qs.has(t)) shouldTerms.delete(t);
  }
  for (const [term, n] of shouldTerms) out.push({ occur: 'should', query: new TermQuery(term, n) });
  return out;
}

export interface RankedDoc {
  readonly doc_id: string;
  readonly score: number;
  /** The doc's ordinal in its field index, on plain BM25 hits: `docIds(table, field)[ord]` is `doc_id`. */
  readonly ord?: number;
}

/** Runs compiled clauses: weights first (phrases read positions), then one synchronous top-k pass. */
export async function searchClauses(
  clauses: readonly BooleanClause[],
  ctx: SearchContext,
  k: number,
  stats?: CollectStats,
  /** Doc ids scored first to set the heap's threshold (a disjunction's result does not change). */
  seeds?: readonly string[],
  /** Each hit carries its ordinal (`RankedDoc.ord`). */
  ordinals = false,
  /** k reaches every doc and the caller does not need the hits ranked: they come in no particular order. */
  unordered = false,
): Promise<RankedDoc[]> {
  // phrase weights read the store; bind them first so the term weights and the
  // scoring pass below see one state of the in-memory index
  const phraseWeights = new Map<BooleanClause, Weight | null>();
  for (const c of clauses) if (readsStore(c.query)) phraseWeights.set(c, await c.query.createWeight(ctx));
  const must: Scorer[] = [];
  const should: Scorer[] = [];
  const mustNot: Scorer[] = [];
  for (const c of clauses) {
    // term and prefix weights are synchronous: no await between binding and scoring
    const w = phraseWeights.has(c) ? phraseWeights.get(c) : (c.query.createWeight(ctx) as Weight | null);
    if (!w) {
      if (c.occur === 'must') return [];
      continue;
    }
    (c.occur === 'must' ? must : c.occur === 'should' ? should : mustNot).push(w.scorer());
  }
  if (must.length === 0 && should.length === 0) return [];
  let seedOrds: number[] | undefined;
  if (seeds && seeds.length && must.length === 0) {
    seedOrds = [];
    for (const id of seeds) {
      const o = ctx.index.ordinal(id);
      if (o !== undefined) seedOrds.push(o);
    }
  }
  const hits = topK(must, should, mustNot, k, ctx.index.docIds, stats, seedOrds, unordered);
  const ids = ctx.index.docIds;
  return ordinals ? hits.map((h) => ({ doc_id: ids[h.ord], score: h.score, ord: h.ord })) : hits.map((h) => ({ doc_id: ids[h.ord], score: h.score }));
}

/**
 * Scores exactly the given docs with the clauses (a reranking pass): docs failing a required
 * clause or matching an excluded one drop out; best first, ties by doc id.
 */
export async function scoreDocs(clauses: readonly BooleanClause[], ctx: SearchContext, docs: readonly string[]): Promise<RankedDoc[]> {
  const ix = ctx.index;
  const phraseWeights = new Map<BooleanClause, Weight | null>();
  for (const c of clauses) if (readsStore(c.query)) phraseWeights.set(c, await c.query.createWeight(ctx));
  const ords: number[] = [];
  for (const id of docs) {
    const o = ix.ordinal(id);
    if (o !== undefined) ords.push(o);
  }
  ords.sort((a, b) => a - b);
  const sc: Scorer[] = [];
  const kind: number[] = []; // 0 should, 1 must, 2 must_not
  for (const c of clauses) {
    const w = phraseWeights.has(c) ? phraseWeights.get(c) : (c.query.createWeight(ctx) as Weight | null);
    if (!w) {
      if (c.occur === 'must') return [];
      continue;
    }
    sc.push(w.scorer());
    kind.push(c.occur === 'should' ? 0 : c.occur === 'must' ? 1 : 2);
  }
  const m = sc.length;
  const out: Array<{ ord: number; score: number }> = [];
  // ascending: every cursor only moves forward (galloping)
  next: for (const d of ords) {
    let score = 0;
    let any = false;
    for (let j = 0; j < m; j++) {
      const s = sc[j];
      const hit = s.advance(d) === d;
      const o = kind[j];
      if (o === 2) {
        if (hit) continue next;
      } else if (hit) {
        score += s.score();
        any = true;
      } else if (o === 1) continue next;
    }
    if (any) out.push({ ord: d, score });
  }
  const ids = ix.docIds;
  out.sort((a, b) => b.score - a.score || (ids[a.ord] < ids[b.ord] ? -1 : ids[a.ord] > ids[b.ord] ? 1 : 0));
  return out.map((h) => ({ doc_id: ids[h.ord], score: h.score }));
}

/** Pseudo-relevance feedback (RM3): expand the scored terms with the best terms of the first-round top docs. */
export interface FeedbackOptions {
  /** First-round docs taken as relevant (default 10). */
  readonly docs?: number;
  /** Expansion terms added (default 20). */
  readonly terms?: number;
  /** Weight of the expansion model against the original query, 0..1 (default 0.5). */
  readonly weight?: number;
  /**
   * Feedback words in more than this fraction of the field's docs are not expansion terms
   * (default 1: none dropped; Anserini's RM3 drops those above 0.1). Measured on Cranfield,
   * 0.1–0.3 cost nDCG@10 (topical words such as "flow" are in a fifth of its docs).
   */
  readonly maxDfRatio?: number;
  /**
   * The second round reranks the first round's best `depth` docs (default RM3_DEPTH) instead
   * of searching the whole field: its cost is depth × expansion terms lookups, whatever the
   * size of the field. 0: a full second retrieval.
   */
  readonly depth?: number;
}

export const RM3_DEPTH = 100;
/** Feedback docs of RM3 (the first round's best). */
export const RM3_DOCS = 10;

export const RM3_MAX_DF_RATIO = 1;

/**
 * RM3 (Lavrenko & Croft's relevance model, interpolated as in Anserini): the first round's
 * top docs give P(w|R) ∝ Σ_d P(w|d)·P(d|q) (P(d|q) ∝ e^score), the best `terms` words form
 * the expansion model, mixed with the query's own term model by `weight`; the mixture's
 * weights become term boosts of a second BM25 round. Required, excluded, phrase and prefix
 * clauses are kept as they are.
 */
export async function searchWithFeedback(
  clauses: readonly BooleanClause[],
  ctx: SearchContext,
  k: number,
  fb: FeedbackOptions = {},
  stats?: CollectStats,
  /** Both rounds' ranking (default plain BM25, `searchClauses`); the ranking pipeline passes BM25 + proximity. */
  round: (clauses: readonly BooleanClause[], k: number, seeds?: readonly string[]) => Promise<RankedDoc[]> = (c, n, seeds) =>
    searchClauses(c, ctx, n, stats, seeds),
): Promise<RankedDoc[]> {
  const R = fb.docs ?? RM3_DOCS;
  const T = fb.terms ?? 20;
  const lambda = fb.weight ?? 0.5;
  const depth = fb.depth ?? RM3_DEPTH;
  const first = await round(clauses, Math.max(k, R, depth));
  const terms = clauses.filter((c) => c.occur === 'should' && c.query instanceof TermQuery) as Array<{ occur: Occur; query: TermQuery }>;
  if (!ctx.termVector || first.length === 0 || terms.length === 0 || lambda <= 0) return first.slice(0, k);
  const top = first.slice(0, R);
  const vectors = await Promise.all(top.map((h) => (ctx.termVector as NonNullable<SearchContext['termVector']>)(h.doc_id)));
  const max = top[0].score;
  const rel = new Map<string, number>();
  let z = 0;
  top.forEach((h, i) => {
    const v = vectors[i];
    if (!v) return;
    let dl = 0;
    for (const tf of v.values()) dl += tf;
    if (dl === 0) return;
    const w = Math.exp(h.score - max);
    z += w;
    for (const [t, tf] of v) rel.set(t, (rel.get(t) ?? 0) + (w * tf) / dl);
  });
  const maxDf = (fb.maxDfRatio ?? RM3_MAX_DF_RATIO) * ctx.index.docs;
  if (maxDf < ctx.index.docs) for (const t of [...rel.keys()]) if (ctx.index.df(t) > maxDf) rel.delete(t);
  if (z === 0) return first.slice(0, k);
  const expansion = [...rel].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, T);
  const esum = expansion.reduce((s, [, v]) => s + v, 0);
  const qlen = terms.reduce((s, c) => s + c.query.boost, 0);
  // weights scaled by the query length so the kept clauses (phrases…) stay comparable
  const mix = new Map<string, number>();
  for (const c of terms) mix.set(c.query.term, (mix.get(c.query.term) ?? 0) + (1 - lambda) * c.query.boost);
  for (const [t, v] of expansion) mix.set(t, (mix.get(t) ?? 0) + (lambda * v * qlen) / esum);
  const second: BooleanClause[] = clauses.filter((c) => !(c.occur === 'should' && c.query instanceof TermQuery));
  for (const [t, w] of mix) second.push({ occur: 'should', query: new TermQuery(t, w) });
  // the pool is the same for every limit up to depth, so a smaller limit's results are a prefix of a larger one's
  if (depth > 0) return (await scoreDocs(second, ctx, first.slice(0, Math.max(k, depth)).map((h) => h.doc_id))).slice(0, k);
  // the first round's docs share the expanded query's words: scored first, they give the
  // second round a threshold at once, so its common expansion terms are pruned (MaxScore)
  return round(
    second,
    k,
    first.map((h) => h.doc_id),
  );
}
