/**
 * Which plans a watch subscription can follow row by row, and how: a chain of filter, project
 * and sort over one `scan` (a row query), or that under one `aggregate` with filter, project
 * and sort above it (an aggregate query). Anything that reads a second row source (joins,
 * subqueries, set operations, CTEs) or whose result depends on other rows (limit, distinct,
 * window) is refused before the stream opens: matching a changed row would then need more
 * than that row.
 */
import { DbError, type ErrorCode } from '@mmdb/core';
import type { AggregateNode, Expr, PlanNode, ScanNode } from '@mmdb/plan';

export interface RowShape {
  readonly kind: 'rows';
  /** The plan with `get` leaves turned into filtered scans (what changed rows run through). */
  readonly plan: PlanNode;
  readonly leaf: ScanNode;
}

export interface AggregateShape {
  readonly kind: 'aggregate';
  readonly plan: PlanNode;
  readonly leaf: ScanNode;
  readonly aggregate: AggregateNode;
  /** The nodes above the aggregate, root first (filter, project, sort). */
  readonly top: readonly PlanNode[];
}

export type WatchShape = RowShape | AggregateShape;

/** Aggregate functions a subscription maintains incrementally (add and remove a row). */
export const INCREMENTAL_AGGREGATES: ReadonlySet<string> = new Set(['count', 'sum', 'total', 'avg', 'min', 'max']);

const SUBQUERY_KINDS = new Set(['in_subquery', 'exists', 'subquery']);

function hasSubquery(x: unknown): boolean {
  if (!x || typeof x !== 'object') return false;
  if (Array.isArray(x)) return x.some(hasSubquery);
  const o = x as Record<string, unknown>;
  if (typeof o.kind === 'string' && SUBQUERY_KINDS.has(o.kind)) return true;
  for (const [k, v] of Object.entries(o)) if (k !== 'input' && hasSubquery(v)) return true;
  return false;
}

const qualify = (alias: string | undefined, name: string) => (alias ? `${alias}.${name}` : name);

/**
 * Analyzes a bound plan. `code`: the error to answer with (`unsupported_sql` for SQL,
 * `validation_failed` for a JSON plan). `pkOf` gives a schema's primary-key columns.
 */
export function watchShape(plan: PlanNode, code: ErrorCode, pkOf: (schema: string) => readonly string[]): WatchShape {
  const refuse = (what: string): never => {
    throw new DbError(code, `a watch subscription follows one table through filter, project and sort, optionally under one aggregate; ${what} is not supported`, {
      ...(code === 'validation_failed' ? { field: 'plan' } : {}),
    });
  };
  let aggregate: AggregateNode | null = null;
  let below = false; // under the aggregate
  const top: PlanNode[] = [];
  let leaf: ScanNode | null = null;
  const rewrite = (n: PlanNode): PlanNode => {
    switch (n.op) {
      case 'filter':
      case 'project':
      case 'sort': {
        if (hasSubquery(n)) refuse('a subquery');
        if (n.op === 'sort' && n.limit !== undefined) refuse('a sort with a limit');
        if (!below) top.push(n);
        return { ...n, input: rewrite(n.input) } as PlanNode;
      }
      case 'aggregate': {
        if (below) refuse('a second aggregate');
        below = true;
        if (hasSubquery(n)) refuse('a subquery');
        for (const a of n.aggregates) {
          if (a.distinct) refuse(`${a.fn}(DISTINCT …)`);
          if (!INCREMENTAL_AGGREGATES.has(a.fn.toLowerCase())) refuse(`the aggregate ${a.fn}() (count, sum, total, avg, min and max are)`);
        }
        const out = { ...n, input: rewrite(n.input) } as AggregateNode;
        aggregate = out;
        return out;
      }
      case 'scan': {
        if (n.limit !== undefined) refuse('a scan limit');
        leaf = n;
        return n;
      }
      case 'get': {
        // a point lookup is a scan filtered on the primary key
        const s: ScanNode = n.alias ? { op: 'scan', schema: n.schema, alias: n.alias } : { op: 'scan', schema: n.schema };
        leaf = s;
        const pk = pkOf(n.schema);
        if (pk.length !== n.key.length) refuse(`a get with ${n.key.length} key values on a ${pk.length}-column primary key`);
        const eqs: Expr[] = pk.map((c, i) => ({ kind: 'binary', op: '=', left: { kind: 'col', name: qualify(n.alias, c) }, right: n.key[i] }));
        const predicate = eqs.reduce((a, b) => ({ kind: 'binary', op: 'and', left: a, right: b }));
        return { op: 'filter', input: s, predicate };
      }
      default:
        return refuse(`the ${n.op} node`);
    }
  };
  const out = rewrite(plan);
  if (!leaf) return refuse('a plan without a scan');
  if (aggregate) return { kind: 'aggregate', plan: out, leaf, aggregate, top };
  return { kind: 'rows', plan: out, leaf };
}
