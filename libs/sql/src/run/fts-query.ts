/**
 * The query of an `fts_search` node: text in our query syntax (libs/fts README), a structured
 * query (libs/fts structured.ts: nested bool, minimum_should_match), or an expression over no
 * columns (`$n`, a literal, `'"' || $1 || '"'`) whose value is query text, or a JSON object text
 * (a `$n` bound to an object) read as a structured query.
 */
import { DbError } from '@mmdb/core';
import type { StructuredQuery } from '@mmdb/fts';
import type { NodeOf } from '@mmdb/plan';
import type { ExecCtx } from '../exec/context';
import { constantOf } from './leaves';

export function ftsQueryOf(n: NodeOf<'fts_search'>, ctx: ExecCtx): string | StructuredQuery {
  const q = n.query;
  if (typeof q === 'string') return q;
  if (!('kind' in q)) return q as StructuredQuery;
  // a literal object (a template with its parameters written in): the structured query itself
  if (q.kind === 'lit' && q.value !== null && typeof q.value === 'object' && !Array.isArray(q.value)) return q.value as unknown as StructuredQuery;
  const v = constantOf(q, ctx);
  if (typeof v !== 'string') throw new DbError('validation_failed', 'invalid plan at $.query: the query must be text or a structured query object', { path: '$.query' });
  if (/^\s*\{/.test(v)) {
    try {
      const o = JSON.parse(v) as unknown;
      if (o && typeof o === 'object' && !Array.isArray(o)) return o as StructuredQuery;
    } catch {
      // not JSON: query text
    }
  }
  return v;
}
