/**
 * The top-k plans of a relevance page whose query scores as a sum of text matches (topk.ts takes a
 * lone `match`): `bool` (must / should / filter / must_not, `minimum_should_match`, boosts, at any
 * depth), `multi_match` (`best_fields`, `most_fields`, field boosts, `tie_breaker`, `operator`,
 * `minimum_should_match`: a node's structured `bool` of the words),
 * `dis_max`, `query_string` / `simple_query_string` parsed into those (words, `AND` / `OR` / `+` /
 * `-`, fields with boosts), and term-level clauses scoring beside them (`term`, `terms`, `range`,
 * `exists`, `ids`, `match_all`, `constant_score`).
 *
 * Each text match on a `standard` field (a *leaf*: one field, its query's terms, its operator) is
 * one `project(fts_search(es.i_…, t<n>_<field>, {terms, operator}, limit k), [_id, _score])` plan
 * (keys only: the node reads no row); the union of their hits is scored with Elasticsearch's
 * formula (the scorer, `query.ts`) over the view's documents (a key the view does not hold yet: its
 * row by primary key).
 * The page is exact by the threshold argument (Fagin's): every score combinator here is at most
 * the sum of its parts (bool sums, dis_max / best_fields take the best plus `tie_breaker` ≤ 1 of the
 * rest), so a document no node returned scores at most the sum, over the leaves whose node was cut
 * at k, of that leaf's bound (its k-th fts score times the largest ES/fts ratio seen and the norms'
 * slack, as topk.ts argues for one match), plus the largest score each term-level clause can give
 * (`boost`; a term query's BM25 at its largest idf). A leaf whose node returned fewer than k rows
 * lists all its matches, so a document it did not return does not match it; when no unseen
 * document can match the query (a required leaf is complete, or every `should` of a bool that needs
 * one is), the candidates are every match. When the page's last hit scores above the bound the page
 * is the one scoring every document gives; otherwise k grows ×4 to the node's limit (1,000), then
 * the search scores the view. Ties go by index order (`_seq_no`), as the scorer's path orders them.
 *
 * The top bool's `filter` clauses, when they are exact predicates over trusted typed columns
 * (`conjunction`, plan-aggs.ts), are pushed into every node (`filter`): its k rows are the best
 * that pass, so the bound holds for the documents that can match; a node that returned fewer than
 * k rows proves it listed every passing match only when at most 1,000 documents hold its terms (it
 * ranks that many before filtering), else that leaf is read again without the filter.
 *
 * The total: the candidates that match when no unseen document can; for a disjunction of words
 * (should clauses, multi_match, dis_max of matches needing one word) the union of the words'
 * postings in the view, counted until past the limit (as topk.ts counts); else the count plan of the
 * query's matches (`planCount`, text-plan.ts), or null (the scorer's path) when it does not map.
 * `collapse` (no inner_hits): the page's n-th group's best hit decides exactness, the total stays
 * uncollapsed. `min_score` (any query of these forms, a lone `match` included): the hits scoring at least it;
 * an unseen document can pass it only when the bound does, so the page and its total are exact
 * once the bound is below it (the count plan knows no scores: until then k grows).
 */
import { col, ftsSearch, get, lit, project, type Expr, type PlanNode } from '@mmdb/plan';
import type { Doc, IndexView } from './doc';
import type { JsonObject } from './mapping';
import type { IndexRef } from './indices';
import type { EsBackend } from './port';
import { fieldStats } from './scoring';
import { compile } from './query';
import { COLS } from './state';
import { firstPerValue } from './sort';
import { docOfRow, textTermOrdinalBound, textTermOrdinals, viewDoc } from './candidates';
import { conjunction, plainValues, planCount, type Kind } from './plan-aggs';
import { textPlans } from './text-plan';
import { Parser, constants, disjunction, groupsOf, list, possible, type Group, type Leaf } from './topk-tree';

const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
const MAX_K = 1000;

/**
 * The documents holding any leaf's word, counted until past `limit` (Elasticsearch's
 * track_total_hits), over the view's postings as topk.ts counts a match's total.
 */
function unionCount(ix: IndexView, leaves: readonly Leaf[], limit: number): number {
  const seen = new Uint8Array(textTermOrdinalBound(ix));
  let count = 0;
  for (const l of leaves) for (const t of l.terms) for (const o of textTermOrdinals(ix, l.path, 'standard', t)) {
    if (seen[o]) continue;
    seen[o] = 1;
    if (++count > limit) return count;
  }
  return count;
}

/**
 * The page of a relevance search of the forms above (`n` = from + size hits, `track` the total's
 * limit), from fts_search plans and the scorer over their rows; null when the query is not of those
 * forms or the page cannot be proven exact within the node's limit.
 */
export async function topKScored(backend: EsBackend, ref: IndexRef, ix: IndexView, query: unknown, n: number, track: number, lsn: (() => Promise<number>) | undefined, lookup?: (index: string, id: string) => JsonObject | undefined, minScore = -Infinity, collapse?: string): Promise<{ docs: Doc[]; total: number; plan: JsonObject } | null> {
  const parser = new Parser(ref, ix);
  const root = parser.node(query, 1);
  const leaves = parser.leaves;
  if (!root || !leaves.length || leaves.length > 16) return null;
  const scorer = compile({ ix, lookup }, query);
  // the top bool's filter clauses, when exact predicates over trusted typed columns: pushed into every node
  let push: Expr | null = null;
  if (isObj(query) && isObj(query.bool) && query.bool.filter !== undefined) {
    const fields = new Map<string, Kind>();
    const e = conjunction(ix, list(query.bool.filter), fields);
    try {
      if (e && (await plainValues(backend, ref, lsn ? await lsn() : await backend.tableLsn(ref.table.id), fields))) push = e;
    } catch {
      push = null; // an optimization only: when the columns' check cannot run, the nodes read unfiltered (the scorer decides)
    }
  }
  const leafScorers = leaves.map((l) => compile({ ix, lookup }, l.query));
  const { groups, groupOf } = groupsOf(leaves);
  // k grows ×4; straight to the node's limit when the page's last hit ties with the bound (a large group of equal scores)
  let tied = false;
  for (let k = Math.max(2 * n, n + 10); ; k = tied ? MAX_K : Math.min(MAX_K, k * 4)) {
    const node = (l: Group, filter?: Expr): PlanNode => project(
      ftsSearch({ schema: ref.table.id, field: l.column, query: l.fts, limit: k, ranking: { feedback: 'none', proximity: 'none', query_stopwords: 'none' }, ...(filter ? { filter } : {}) }),
      // unfiltered: the hits' keys only (the node reads no row: the view's documents are scored); filtered: their rows (read to filter)
      (filter ? [...COLS, '_score'] : ['_id', '_score']).map((c) => ({ name: c, expr: col(c) })),
    );
    const plans: PlanNode[] = [];
    const results = [];
    for (const l of groups) {
      let plan = node(l, push ?? undefined);
      let rows = await backend.read(plan);
      // the node ranks at most 1,000 matches before its filter: fewer rows than k prove nothing when more documents hold the terms
      if (push && rows.length < k && l.terms.reduce((a, t) => a + (fieldStats(ix, l.path, 'standard').df.get(t) ?? 0), 0) > MAX_K) rows = await backend.read((plan = node(l)));
      plans.push(plan);
      results.push(rows);
    }
    const docs = new Map<string, Doc>();
    const complete: boolean[] = [], thr: number[] = [];
    for (let i = 0; i < groups.length; i++) {
      const rows = results[i];
      const g = groups[i];
      let ratio = 0;
      for (const r of rows) {
        const id = String(r._id);
        let d = docs.get(id);
        if (!d) {
          // a key the view does not hold (written since it was read): its row, by primary key
          const row = r._source !== undefined ? r : viewDoc(ix, id) ? undefined : (await backend.read(project(get(ref.table.id, [lit(id)]), COLS.map((c) => ({ name: c, expr: col(c) })))))[0];
          d = row ? docOfRow(ix, row) : viewDoc(ix, id);
          if (!d) continue; // deleted since
          docs.set(id, d);
        }
        // the group's Elasticsearch score: the sum of its leaves' (each with its boost; the weight above them apart)
        let es = 0;
        for (const j of g.members) es += leafScorers[j](d) ?? 0;
        const fts = Number(r._score);
        if (fts > 0) ratio = Math.max(ratio, es / fts);
      }
      complete.push(rows.length < k);
      if (rows.length >= k && !(ratio > 0)) return null;
      // a row left out scores at most the k-th fts score times the largest ES/fts ratio and the norms' slack
      thr.push(rows.length < k ? 0 : Number(rows[rows.length - 1]._score) * ratio * g.slack * g.mult * (1 + 1e-6));
    }
    const hits: Array<{ doc: Doc; es: number }> = [];
    for (const d of docs.values()) {
      const es = scorer(d);
      if (es !== null && es >= minScore) hits.push({ doc: d, es });
    }
    hits.sort((x, y) => y.es - x.es || x.doc.row._seq_no - y.doc.row._seq_no);
    const unseen = possible(root, groupOf.map((gi) => complete[gi])) ? thr.reduce((a, x) => a + x, constants(root)) : -Infinity;
    // no document outside the candidates can match (with `min_score`: can score enough)
    const closed = unseen < minScore || unseen === -Infinity;
    // the total of an open page: the count plan of the matches, which knows no scores (not with min_score)
    // collapse: the page is of the best hit of each value (search.ts keeps the first of each in this order), so the n-th group's best decides
    const heads = collapse === undefined ? hits : firstPerValue(hits, collapse);
    if ((heads.length >= n ? heads[n - 1].es > unseen : closed) && (closed || track === 0 || minScore === -Infinity)) {
      const total = closed ? hits.length : track === 0 ? 0 : disjunction(root, leaves) ? unionCount(ix, leaves, track) : await planCount(backend, ref, ix, lsn ? await lsn() : await backend.tableLsn(ref.table.id), query, textPlans(ref, ix));
      if (total === null) return null;
      return { docs: hits.map((h) => h.doc), total, plan: { plans } as unknown as JsonObject };
    }
    // every node returned all its matches: a larger k reads the same rows
    if (k >= MAX_K || complete.every(Boolean)) return null;
    tied = heads.length >= n && heads[n - 1].es >= unseen * (1 - 4e-6);
  }
}
