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
 * `min_score` (any query of these forms, a lone `match` included): the hits scoring at least it;
 * an unseen document can pass it only when the bound does, so the page and its total are exact
 * once the bound is below it (the count plan knows no scores: until then k grows).
 */
import { col, ftsSearch, get, lit, project, type Expr, type FtsQuery, type PlanNode } from '@mmdb/plan';
import type { Doc, IndexView } from './doc';
import type { Json, JsonObject } from './mapping';
import type { IndexRef } from './indices';
import type { EsBackend } from './port';
import { analyze } from './analysis';
import { indexAnalyzer, isText, searchAnalyzer } from './fields';
import { fieldStats, idf } from './scoring';
import { compile, minimumShouldMatch } from './query';
import { COLS } from './state';
import { docOfRow, textTermOrdinalBound, textTermOrdinals, viewDoc } from './candidates';
import { conjunction, plainValues, planCount, type Kind } from './plan-aggs';
import { textPlans } from './text-plan';
import { queryStringFields } from './text-query';
import { parseQueryString, parseSimpleQueryString } from './query-string';

const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
const list = (v: unknown): unknown[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);
const TERM = /^[a-z0-9]+$/;
const FIELD = /^([A-Za-z0-9_][A-Za-z0-9_.]*)(?:\^(\d+(?:\.\d+)?))?$/;
const MAX_K = 1000;
const NORM_SLACK = 1.13;
/** Elasticsearch's BM25 k1: a term's score is at most idf · (k1 + 1) · boost. */
const K1 = 1.2;

/** A text match on one field, answered by one fts_search node. */
interface Leaf { readonly path: string; readonly column: string; readonly terms: string[]; readonly fts: FtsQuery; readonly query: JsonObject; readonly boost: number; readonly mult: number; readonly slack: number }

/**
 * The leaves of one column and one weight (boost and the boosts above it) share a node: its query
 * the `should` of theirs, its score the sum of theirs, as Elasticsearch's is (each leaf's score on
 * the same field), so one ranking bounds them all at once, far tighter than a bound per leaf.
 */
interface Group { readonly column: string; readonly path: string; readonly members: number[]; readonly fts: FtsQuery; readonly terms: string[]; readonly mult: number; readonly slack: number }

function groupsOf(leaves: readonly Leaf[]): { groups: Group[]; groupOf: number[] } {
  const byKey = new Map<string, number[]>();
  leaves.forEach((l, i) => {
    const key = `${l.column}\u0000${l.mult}\u0000${l.boost}`;
    byKey.set(key, [...(byKey.get(key) ?? []), i]);
  });
  const groups: Group[] = [];
  const groupOf: number[] = [];
  for (const members of byKey.values()) {
    const first = leaves[members[0]];
    members.forEach((i) => (groupOf[i] = groups.length));
    const fts: FtsQuery = members.length === 1 ? first.fts : { bool: { should: members.map((i) => leaves[i].fts) } };
    groups.push({ column: first.column, path: first.path, members, fts, terms: [...new Set(members.flatMap((i) => leaves[i].terms))], mult: first.mult, slack: first.slack });
  }
  return { groups, groupOf };
}

/** How a query scores: each part's score is at most the sum of its children's, times the boosts pushed into them. */
type Node =
  | { readonly kind: 'leaf'; readonly leaf: number }
  | { readonly kind: 'const'; readonly max: number }
  | { readonly kind: 'any'; readonly parts: readonly Node[] }
  | { readonly kind: 'bool'; readonly must: readonly Node[]; readonly should: readonly Node[]; readonly msm: number; readonly restricted: boolean };

class Parser {
  readonly leaves: Leaf[] = [];
  constructor(private readonly ref: IndexRef, private readonly ix: IndexView) {}

  /** The score tree of a query in scoring context, boosts multiplied down (`mult`), or null when a part is not one of the forms above. */
  node(q: unknown, mult: number): Node | null {
    if (!isObj(q) || Object.keys(q).length !== 1) return null;
    const [kind] = Object.keys(q);
    const body = q[kind];
    if (!isObj(body)) return null;
    const boost = boostIn(body);
    if (boost === null) return null;
    switch (kind) {
      case 'match': {
        const fields = Object.keys(body);
        if (fields.length !== 1) return null;
        const v = body[fields[0]];
        const p: JsonObject = isObj(v) ? v : { query: v };
        // `lenient` changes nothing on a text field (query_string's parse sets it)
        if (Object.keys(p).some((k) => !['query', 'operator', 'minimum_should_match', 'boost', 'lenient'].includes(k))) return null;
        const b = p.boost === undefined ? 1 : p.boost;
        if (typeof b !== 'number' || !(b >= 0)) return null;
        return this.leaf(fields[0], p.query, p.operator, p.minimum_should_match, b, mult);
      }
      case 'multi_match': {
        if (Object.keys(body).some((k) => !['query', 'fields', 'type', 'tie_breaker', 'operator', 'minimum_should_match', 'boost'].includes(k))) return null;
        const type = body.type ?? 'best_fields';
        const tie = body.tie_breaker ?? 0;
        if ((type !== 'best_fields' && type !== 'most_fields') || typeof tie !== 'number' || !(tie >= 0 && tie <= 1)) return null;
        if (!Array.isArray(body.fields) || !body.fields.length) return null;
        const parts: Node[] = [];
        for (const spec of body.fields) {
          const m = typeof spec === 'string' ? FIELD.exec(spec) : null;
          if (!m) return null;
          const leaf = this.leaf(m[1], body.query, body.operator, body.minimum_should_match, m[2] === undefined ? 1 : Number(m[2]), mult * boost);
          if (!leaf) return null;
          parts.push(leaf);
        }
        return { kind: 'any', parts };
      }
      case 'dis_max': {
        if (Object.keys(body).some((k) => k !== 'queries' && k !== 'tie_breaker' && k !== 'boost')) return null;
        const tie = body.tie_breaker ?? 0;
        if (typeof tie !== 'number' || !(tie >= 0 && tie <= 1) || !Array.isArray(body.queries) || !body.queries.length) return null;
        const parts = body.queries.map((x) => this.node(x, mult * boost));
        return parts.every((x): x is Node => x !== null) ? { kind: 'any', parts } : null;
      }
      case 'bool': {
        if (Object.keys(body).some((k) => !['must', 'should', 'filter', 'must_not', 'minimum_should_match', 'boost'].includes(k))) return null;
        const must = list(body.must).map((x) => this.node(x, mult * boost));
        const should = list(body.should).map((x) => this.node(x, mult * boost));
        if (!must.every((x): x is Node => x !== null) || !should.every((x): x is Node => x !== null)) return null;
        // restricted: filter / must_not clauses narrow the matches
        return { kind: 'bool', must, should, msm: requiredShould(body, should.length), restricted: list(body.filter).length + list(body.must_not).length > 0 };
      }
      case 'query_string': case 'simple_query_string': {
        // parsed into the DSL as the scorer parses it (query-string.ts): matches, dis_max over fields, bools
        let parsed: JsonObject;
        try {
          const qf = queryStringFields(this.ix, body);
          parsed = kind === 'query_string' ? parseQueryString(qf.body, qf.fields) : parseSimpleQueryString(qf.body, qf.fields);
        } catch {
          return null; // the scorer reports the error
        }
        return this.node(parsed, mult * boost);
      }
      case 'constant_score': case 'match_all': case 'range': case 'exists': case 'ids': case 'terms':
        return { kind: 'const', max: mult * boost * (1 + 1e-6) };
      case 'term': {
        const names = Object.keys(body);
        const f = names.length === 1 ? this.ix.fields.get(names[0]) : undefined;
        if (!f || isText(f)) return null;
        // a term query's BM25 (norms off) is below idf · (k1 + 1), idf largest for one holder
        const n = Math.max(1, this.ix.docs.length);
        return { kind: 'const', max: mult * boost * Math.max(1, idf(n, 1) * (K1 + 1)) * (1 + 1e-6) };
      }
      default: return null;
    }
  }

  private leaf(name: string, text: unknown, operator: unknown, msm: unknown, boost: number, mult: number): Node | null {
    const op = String(operator ?? 'or').toLowerCase();
    if ((op !== 'or' && op !== 'and') || (typeof text !== 'string' && typeof text !== 'number') || !(boost >= 0)) return null;
    const f = this.ix.fields.get(name);
    if (!f || !isText(f) || f.parent !== undefined || indexAnalyzer(this.ix, f) !== 'standard' || searchAnalyzer(this.ix, f) !== 'standard') return null;
    const column = this.ref.meta.text[f.path];
    if (!column || !this.ref.table.fulltextAllWords?.includes(column)) return null;
    const terms = analyze(String(text), 'standard').map((t) => t.term);
    if (!terms.length || terms.length > 64 || new Set(terms).size !== terms.length || !terms.every((t) => TERM.test(t))) return null;
    const stats = fieldStats(this.ix, f.path, 'standard');
    // the fts lib must make the same tokens, or lengths and frequencies differ by more than norms
    if (!stats.asciiTokens) return null;
    // how many of the words a match needs (operator and: all; minimum_should_match as the scorer reads it), as the fts node's query
    let need: number;
    try {
      need = op === 'and' ? terms.length : msm !== undefined ? Math.max(1, minimumShouldMatch(msm, terms.length)) : 1;
    } catch {
      return null; // the scorer reports it
    }
    const fts: FtsQuery = need <= 1 ? { terms, operator: 'or' } : need >= terms.length ? { terms, operator: 'and' } : { bool: { should: terms.map((t) => ({ terms: [t] })), minimum_should_match: need } };
    const query: JsonObject = { match: { [f.path]: { query: String(text), operator: op, boost, ...(msm !== undefined ? { minimum_should_match: msm as Json } : {}) } } };
    this.leaves.push({ path: f.path, column, terms, fts, query, boost, mult, slack: stats.maxLen >= 24 ? NORM_SLACK : 1 });
    return { kind: 'leaf', leaf: this.leaves.length - 1 };
  }
}

/** The largest `boost` a clause's body names (its own or its field's parameters), 1 when none; null when one is not a number ≥ 0. */
function boostIn(body: JsonObject): number | null {
  let b = 1;
  for (const v of [body, ...Object.values(body).filter(isObj)]) {
    if (v.boost === undefined) continue;
    if (typeof v.boost !== 'number' || !(v.boost >= 0)) return null;
    b = Math.max(b, v.boost);
  }
  return b;
}

/** The `should` clauses a bool needs (Elasticsearch: 1 when it has neither must nor filter; none when it has no should); a form this does not read counts as 0 (no fewer documents may match). */
function requiredShould(b: JsonObject, n: number): number {
  const m = b.minimum_should_match;
  if (n === 0) return 0;
  if (m === undefined) return n > 0 && list(b.must).length === 0 && list(b.filter).length === 0 ? 1 : 0;
  const v = typeof m === 'number' ? m : typeof m === 'string' && /^-?\d+$/.test(m) ? Number(m) : 0;
  return Math.max(0, v < 0 ? n + v : v);
}

/** Whether a document no node returned can match the node (a complete group lists every match of its leaves). */
function possible(n: Node, complete: boolean[]): boolean {
  switch (n.kind) {
    case 'leaf': return !complete[n.leaf];
    case 'const': return true;
    case 'any': return n.parts.some((p) => possible(p, complete));
    case 'bool': return n.must.every((p) => possible(p, complete)) && (n.msm === 0 || n.should.filter((p) => possible(p, complete)).length >= n.msm);
  }
}

/** The most the term-level clauses of the node can add (every combinator is at most the sum of its parts). */
function constants(n: Node): number {
  switch (n.kind) {
    case 'leaf': return 0;
    case 'const': return n.max;
    case 'any': return n.parts.reduce((a, p) => a + constants(p), 0);
    case 'bool': return [...n.must, ...n.should].reduce((a, p) => a + constants(p), 0);
  }
}

/**
 * Whether the query matches exactly the documents holding any word of any leaf: a bool of `should`
 * clauses alone (one needed), multi_match / dis_max, of leaves needing one word.
 */
function disjunction(n: Node, leaves: readonly Leaf[]): boolean {
  switch (n.kind) {
    case 'leaf': {
      const f = leaves[n.leaf].fts;
      return 'terms' in f && f.operator === 'or';
    }
    case 'const': return false;
    case 'any': return n.parts.every((p) => disjunction(p, leaves));
    case 'bool': return !n.must.length && !n.restricted && n.msm === 1 && n.should.every((p) => disjunction(p, leaves));
  }
}

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
export async function topKScored(backend: EsBackend, ref: IndexRef, ix: IndexView, query: unknown, n: number, track: number, lsn: (() => Promise<number>) | undefined, lookup?: (index: string, id: string) => JsonObject | undefined, minScore = -Infinity): Promise<{ docs: Doc[]; total: number; plan: JsonObject } | null> {
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
    if ((hits.length >= n ? hits[n - 1].es > unseen : closed) && (closed || track === 0 || minScore === -Infinity)) {
      const total = closed ? hits.length : track === 0 ? 0 : disjunction(root, leaves) ? unionCount(ix, leaves, track) : await planCount(backend, ref, ix, lsn ? await lsn() : await backend.tableLsn(ref.table.id), query, textPlans(ref, ix));
      if (total === null) return null;
      return { docs: hits.map((h) => h.doc), total, plan: { plans } as unknown as JsonObject };
    }
    // every node returned all its matches: a larger k reads the same rows
    if (k >= MAX_K || complete.every(Boolean)) return null;
    tied = hits.length >= n && hits[n - 1].es >= unseen * (1 - 4e-6);
  }
}
