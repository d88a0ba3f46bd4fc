/**
 * The score tree of a relevance query the scored top-k plans answer (topk-scored.ts): its text
 * matches on `standard` fields (leaves, grouped per field and weight into fts_search nodes), the
 * most its term-level clauses can add, and which documents it can match (a bool's must / should).
 */
import type { FtsQuery } from '@mmdb/plan';
import type { IndexView } from './doc';
import type { Json, JsonObject } from './mapping';
import type { IndexRef } from './indices';
import { analyze } from './analysis';
import { indexAnalyzer, isText, searchAnalyzer } from './fields';
import { fieldStats, idf } from './scoring';
import { minimumShouldMatch } from './query';
import { queryStringFields } from './text-query';
import { parseQueryString, parseSimpleQueryString } from './query-string';

const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
export const list = (v: unknown): unknown[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);
const TERM = /^[a-z0-9]+$/;
const FIELD = /^([A-Za-z0-9_][A-Za-z0-9_.]*)(?:\^(\d+(?:\.\d+)?))?$/;
const NORM_SLACK = 1.13;
/** Elasticsearch's BM25 k1: a term's score is at most idf · (k1 + 1) · boost. */
const K1 = 1.2;

/** A text match on one field (its words, its node query), with its boost and the boosts above it (`mult`). */
export interface Leaf { readonly path: string; readonly column: string; readonly terms: string[]; readonly fts: FtsQuery; readonly query: JsonObject; readonly boost: number; readonly mult: number; readonly slack: number }

/**
 * The leaves of one column and one weight (boost and the boosts above it) share a node: its query
 * the `should` of theirs, its score the sum of theirs, as Elasticsearch's is (each leaf's score on
 * the same field), so one ranking bounds them all at once, far tighter than a bound per leaf.
 */
export interface Group { readonly column: string; readonly path: string; readonly members: number[]; readonly fts: FtsQuery; readonly terms: string[]; readonly mult: number; readonly slack: number }

export function groupsOf(leaves: readonly Leaf[]): { groups: Group[]; groupOf: number[] } {
  // each key's groups, a leaf joining the first whose words it shares none of (the node's query may
  // count a word held by two of its clauses once, where Elasticsearch scores it in each)
  const byKey = new Map<string, Array<{ members: number[]; words: Set<string> }>>();
  leaves.forEach((l, i) => {
    const key = `${l.column}\u0000${l.mult}\u0000${l.boost}`;
    const list = byKey.get(key) ?? [];
    const g = list.find((x) => !l.terms.some((t) => x.words.has(t)));
    if (g) { g.members.push(i); for (const t of l.terms) g.words.add(t); } else list.push({ members: [i], words: new Set(l.terms) });
    byKey.set(key, list);
  });
  const groups: Group[] = [];
  const groupOf: number[] = [];
  for (const members of [...byKey.values()].flatMap((list) => list.map((x) => x.members))) {
    const first = leaves[members[0]];
    members.forEach((i) => (groupOf[i] = groups.length));
    const fts: FtsQuery = members.length === 1 ? first.fts : { bool: { should: members.map((i) => leaves[i].fts) } };
    groups.push({ column: first.column, path: first.path, members, fts, terms: [...new Set(members.flatMap((i) => leaves[i].terms))], mult: first.mult, slack: first.slack });
  }
  return { groups, groupOf };
}

/** How a query scores: each part's score is at most the sum of its children's, times the boosts pushed into them. */
export type Node =
  | { readonly kind: 'leaf'; readonly leaf: number }
  | { readonly kind: 'const'; readonly max: number }
  | { readonly kind: 'any'; readonly parts: readonly Node[] }
  | { readonly kind: 'bool'; readonly must: readonly Node[]; readonly should: readonly Node[]; readonly msm: number; readonly restricted: boolean };

export class Parser {
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

/** The `should` clauses a bool needs, as the scorer reads it (query.ts: 1 when it has neither must nor filter; `minimum_should_match` capped at their number). */
function requiredShould(b: JsonObject, n: number): number {
  const m = b.minimum_should_match;
  // (a spec that reads as no number: the scorer's comparisons with NaN pass every document, as 0 does)
  if (m !== undefined) return Number.isFinite(minimumShouldMatch(m, n)) ? minimumShouldMatch(m, n) : 0;
  return list(b.must).length || list(b.filter).length ? 0 : n ? 1 : 0;
}

/** Whether a document no node returned can match the node (a complete group lists every match of its leaves). */
export function possible(n: Node, complete: boolean[]): boolean {
  switch (n.kind) {
    case 'leaf': return !complete[n.leaf];
    case 'const': return true;
    case 'any': return n.parts.some((p) => possible(p, complete));
    case 'bool': return n.must.every((p) => possible(p, complete)) && (n.msm === 0 || n.should.filter((p) => possible(p, complete)).length >= n.msm);
  }
}

/** The most the term-level clauses of the node can add (every combinator is at most the sum of its parts). */
export function constants(n: Node): number {
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
export function disjunction(n: Node, leaves: readonly Leaf[]): boolean {
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

