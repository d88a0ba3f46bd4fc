import type { Expr } from '../expr';
import type { PlanNode } from '../node';

/**
 * One row per element of a JSON array held by each input row (Postgres `CROSS JOIN LATERAL
 * jsonb_array_elements`, SQLite's `json_each` over arrays). `expr` is evaluated per row as JSON
 * text: an array gives one row per element (in order; each element as `json_extract` answers it:
 * true/false as 1/0, integers INTEGER, other numbers REAL, strings TEXT, objects and arrays JSON
 * text), any other JSON value one row holding it, SQL NULL no row. `affinity: 'real'` turns
 * numeric elements into REALs (a double column's values), `'integer'` / `'text'` as a cast does.
 * `distinct`: an element equal to an earlier one of the same row gives no second row (a document
 * counts once per value). `outer`: a row with no element (NULL, an empty array) gives one row
 * holding NULL (a LEFT JOIN LATERAL). Output: the input's columns, the element as column `as` (it replaces
 * the input column of that name, so a plan written over a one-valued column reads every value).
 */
export interface UnnestNode {
  readonly op: 'unnest';
  readonly input: PlanNode;
  readonly expr: Expr;
  readonly as: string;
  readonly affinity?: 'real' | 'integer' | 'text';
  readonly distinct?: boolean;
  readonly outer?: boolean;
}
export const unnest = (input: PlanNode, expr: Expr, as: string, opts: { affinity?: UnnestNode['affinity']; distinct?: boolean; outer?: boolean } = {}): UnnestNode => ({
  op: 'unnest', input, expr, as, ...(opts.affinity ? { affinity: opts.affinity } : {}), ...(opts.distinct ? { distinct: true } : {}), ...(opts.outer ? { outer: true } : {}),
});
