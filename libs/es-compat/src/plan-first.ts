/**
 * A page of a search with `terminate_after` n (one index): Elasticsearch collects, in index order,
 * the first n documents the query matches, then ranks or sorts only those. As a plan: the query's
 * matches (`matchesInput`, text-plan.ts and the exact predicates) in `_seq_no` order, limited to n,
 * their rows read: `project(limit(sort(I, _seq_no), n), [doc columns])`; `terminated_early` when
 * `aggregate(limit(sort(I, _seq_no), n + 1), [], [count(*)])` passes n. The scorer ranks (or sort.ts
 * sorts) those rows (search.ts), as the top-k plans' rows are ranked. Null (the view's code
 * answers) with `min_score`, `post_filter`, aggregations, collapse, rescore, or a query the plans
 * do not map.
 */
import { aggregate, col, limit, lit, project, sort, type PlanNode } from '@mmdb/plan';
import { Doc, type IndexView } from './doc';
import type { JsonObject } from './mapping';
import type { IndexRef } from './indices';
import type { EsBackend } from './port';
import { COLS, toDocRow } from './state';
import { matchesInput, type MatchInput } from './plan-aggs';

/** Body keys such a page may hold (what changes which documents are collected is not here). */
const KEYS = new Set(['query', 'from', 'size', 'sort', '_source', 'track_total_hits', 'track_scores', 'version', 'seq_no_primary_term', 'timeout', 'stats', 'terminate_after', 'explain', 'stored_fields', 'docvalue_fields', 'highlight', 'fields']);

export async function firstMatches(backend: EsBackend, ref: IndexRef, ix: IndexView, lsn: number, b: JsonObject, match: MatchInput): Promise<{ docs: Doc[]; total: number; terminatedEarly: boolean; unordered: true } | null> {
  const n = b.terminate_after;
  if (typeof n !== 'number' || !Number.isInteger(n) || n <= 0 || Object.keys(b).some((k) => !KEYS.has(k)) || b.size === 0) return null;
  const input = await matchesInput(backend, ref, ix, lsn, b.query, match);
  if (!input) return null;
  const first = (k: number): PlanNode => limit(sort(input, [{ expr: col('_seq_no') }]), lit(k));
  const rows = await backend.read(project(first(n), COLS.map((c) => ({ name: c, expr: col(c) }))));
  const [c] = rows.length < n ? [{ n: rows.length }] : await backend.read(aggregate(first(n + 1), [], [{ name: 'n', fn: 'count', args: [], star: true }]));
  const docs = rows.map((r) => new Doc(toDocRow(r), ix));
  return { docs, total: docs.length, terminatedEarly: Number(c.n) > n, unordered: true };
}
