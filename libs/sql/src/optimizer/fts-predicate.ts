/**
 * The full-text predicate of SQL: `WHERE col @@ query [AND …]` over one table whose manifest
 * declares `col` as a `[[fulltext]]` field reads `fts_search` {field: col, query, every match
 * (`limit: null`), filter: the WHERE's other conjuncts on that table}. `score()` (or
 * `score(col)` naming the searched column, needed when a statement has several `@@`) becomes the
 * leaf's `_score` column. `ORDER BY score() DESC LIMIT n [OFFSET m]` above bounds the search to
 * its best n + m (at most 1,000). Runs after predicate_pushdown, so a WHERE over a join has its
 * conjuncts on the table already; a `@@` it cannot place stays a call the executor refuses
 * (`unsupported_sql`).
 */
import { DbError } from '@mmdb/core';
import type { Expr, PlanNode } from '@mmdb/plan';
import { andAll, conjuncts, transformPlan } from '@mmdb/plan';
import { FTS_MATCH, FTS_SCORE } from '../exec/vector-functions';
import type { OptCatalog, Pass } from './optimizer';

const isMatch = (e: Expr): e is Expr & { kind: 'call' } => e.kind === 'call' && e.name === FTS_MATCH;
const isScore = (e: Expr): e is Expr & { kind: 'call' } => e.kind === 'call' && e.name === FTS_SCORE;

/** A `@@` operand that can be a search query: a constant (literal, `$n`, or an expression of them). */
function constant(e: Expr): boolean {
  if (e.kind === 'col' || e.kind === 'subquery' || e.kind === 'exists' || e.kind === 'in_subquery') return false;
  for (const v of Object.values(e)) {
    if (Array.isArray(v)) { for (const x of v) if (x && typeof x === 'object' && 'kind' in x && !constant(x as Expr)) return false; }
    else if (v && typeof v === 'object' && 'kind' in v && !constant(v as Expr)) return false;
  }
  return true;
}

interface Search { readonly column: string; readonly score: string; }

/** Rewrites a filter chain over a scan holding one `@@` on a full-text column into fts_search. */
function rewrite(n: PlanNode, cat: OptCatalog, found: Search[]): PlanNode {
  if (n.op !== 'filter') return n;
  const preds: Expr[] = [];
  let cur: PlanNode = n;
  while (cur.op === 'filter') {
    preds.push(...conjuncts(cur.predicate));
    cur = cur.input;
  }
  if (cur.op !== 'scan' || cur.limit !== undefined) return n;
  const scan = cur;
  const matches = preds.filter(isMatch);
  if (matches.length === 0) return n;
  const fulltext = cat.table(scan.schema).manifest?.fulltext ?? [];
  const prefix = scan.alias ? `${scan.alias}.`.toLowerCase() : '';
  const fieldOf = (e: Expr) => {
    if (e.kind !== 'col') return undefined;
    const name = e.name.toLowerCase();
    if (prefix && !name.startsWith(prefix)) return undefined;
    return fulltext.find((f) => f.field.toLowerCase() === name.slice(prefix.length))?.field;
  };
  const usable = matches.filter((m) => fieldOf(m.args[0]) !== undefined && constant(m.args[1]));
  if (usable.length === 0) return n;
  if (usable.length > 1) throw new DbError('unsupported_sql', `one @@ per table: ${scan.schema} has ${usable.length} (put the words in one query, e.g. '+a +b')`, { construct: 'several @@ on one table' });
  const m = usable[0];
  const field = fieldOf(m.args[0]) as string;
  const q = m.args[1];
  const rest = preds.filter((p) => p !== m);
  found.push({ column: (m.args[0] as { name: string }).name.toLowerCase(), score: `${prefix}_score` });
  return {
    op: 'fts_search',
    schema: scan.schema,
    ...(scan.alias ? { alias: scan.alias } : {}),
    field,
    query: q.kind === 'lit' && typeof q.value === 'string' ? q.value : q,
    limit: null,
    ...(rest.length ? { filter: andAll(rest)! } : {}),
  };
}

const count = (e: Expr | undefined): number | undefined =>
  e && e.kind === 'lit' && typeof e.value === 'number' && Number.isInteger(e.value) && !e.real && e.value >= 0 ? e.value : undefined;

/** `limit` over sort(first key `_score` DESC) over projects/sorts down to an unbounded fts_search: bound it. */
function bound(n: PlanNode): PlanNode {
  if (n.op !== 'limit') return n;
  const l = count(n.limit);
  const o = n.offset ? count(n.offset) : 0;
  if (l === undefined || o === undefined || l + o < 1 || l + o > 1000) return n;
  let key: string | undefined;
  const path: PlanNode[] = [];
  let cur: PlanNode = n.input;
  for (;;) {
    if (cur.op === 'sort' && key === undefined) {
      const k = cur.keys[0];
      if (!k || !k.desc || k.expr.kind !== 'col') return n;
      key = k.expr.name.toLowerCase();
    } else if (cur.op === 'project') {
      if (key !== undefined) {
        const c = cur.columns.find((x) => x.name.toLowerCase() === key);
        if (c) {
          if (c.expr.kind !== 'col') return n;
          key = c.expr.name.toLowerCase();
        }
      }
    } else if (cur.op === 'fts_search') break;
    else return n;
    path.push(cur);
    cur = cur.input;
  }
  const s = cur;
  if (s.limit !== null || key !== `${s.alias ? `${s.alias}.` : ''}_score`.toLowerCase()) return n;
  let out: PlanNode = { ...s, limit: l + o };
  for (let i = path.length - 1; i >= 0; i--) out = { ...path[i], input: out } as PlanNode;
  return { ...n, input: out };
}

export const ftsPredicate: Pass = {
  name: 'fts_predicate',
  run: (plan, cat) => {
    // most plans have neither: one walk that copies nothing (the transformer returns what it is given)
    let uses = false;
    transformPlan(plan, { expr: (e) => ((uses ||= isMatch(e) || isScore(e)), e) });
    if (!uses) return plan;
    const found: Search[] = [];
    let out = transformPlan(plan, { node: (n) => rewrite(n, cat, found) });
    out = transformPlan(out, {
      expr: (e) => {
        if (!isScore(e)) return e;
        if (found.length === 0) throw new DbError('unsupported_sql', 'score() needs a `col @@ query` predicate in the WHERE of a table with that [[fulltext]] field', { construct: 'score()' });
        const arg = e.args[0];
        const which = arg ? found.filter((f) => arg.kind === 'col' && f.column === arg.name.toLowerCase()) : found;
        if (which.length !== 1) throw new DbError('unsupported_sql', arg ? 'score(col): col must be the column of a @@ of this statement' : 'score() is ambiguous with several @@: name the column, score(t.body)', { construct: 'score()' });
        return { kind: 'col', name: which[0].score };
      },
      node: bound,
    });
    return out;
  },
};
