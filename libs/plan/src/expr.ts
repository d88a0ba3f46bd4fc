/**
 * Expressions of the plan tree. Plain JSON objects discriminated by `kind`.
 *
 * Column references name a column of the input node's output (`{kind:"col", name:"t.a"}`);
 * inside a subquery a name not found in the subquery's own input resolves against the
 * enclosing rows (correlation).
 *
 * @example {"kind":"binary","op":">","left":{"kind":"col","name":"age"},"right":{"kind":"lit","value":30}}
 */
import type { JsonValue } from '@mmdb/core';
import type { PlanNode } from './node';

/** SQLite type affinity carried by a column reference (drives comparison coercion). */
export type Affinity = 'integer' | 'real' | 'numeric' | 'text' | 'blob';

export type BinaryOp =
  | '+' | '-' | '*' | '/' | '%' | '||'
  | '=' | '<>' | '<' | '<=' | '>' | '>=' | 'is' | 'is not'
  | 'and' | 'or' | '&' | '|' | '<<' | '>>';

export type Expr =
  | LitExpr | ColExpr | ParamExpr | UnaryExpr | BinaryExpr | LikeExpr | BetweenExpr | InListExpr
  | InSubqueryExpr | ExistsExpr | SubqueryExpr | IsNullExpr | CaseExpr | CastExpr | CallExpr | CollateExpr;

/**
 * How two TEXT values compare (SQLite's collating sequences): `binary` by code point, `nocase`
 * with ASCII A-Z folded to a-z, `rtrim` ignoring trailing spaces.
 */
export type Collation = 'binary' | 'nocase' | 'rtrim';
export const COLLATIONS: readonly Collation[] = ['binary', 'nocase', 'rtrim'];

/** A constant. `real: true` marks a number as floating point even when integral (1.0). */
/** `int: true` marks `value` (a decimal string) as a 64-bit integer outside the JS safe range. */
export interface LitExpr { readonly kind: 'lit'; readonly value: JsonValue; readonly real?: boolean; readonly int?: boolean }
/** `collation`: the column's declared collating sequence (used when no explicit COLLATE applies). */
export interface ColExpr { readonly kind: 'col'; readonly name: string; readonly affinity?: Affinity; readonly collation?: Collation }
/** `$1` … bound from the request's `params` (1-based). */
export interface ParamExpr { readonly kind: 'param'; readonly index: number }
export interface UnaryExpr { readonly kind: 'unary'; readonly op: '-' | '+' | 'not' | '~'; readonly arg: Expr }
export interface BinaryExpr { readonly kind: 'binary'; readonly op: BinaryOp; readonly left: Expr; readonly right: Expr }
export interface LikeExpr { readonly kind: 'like'; readonly arg: Expr; readonly pattern: Expr; readonly escape?: Expr; readonly not?: boolean; readonly glob?: boolean }
export interface BetweenExpr { readonly kind: 'between'; readonly arg: Expr; readonly low: Expr; readonly high: Expr; readonly not?: boolean }
export interface InListExpr { readonly kind: 'in_list'; readonly arg: Expr; readonly list: readonly Expr[]; readonly not?: boolean }
export interface InSubqueryExpr { readonly kind: 'in_subquery'; readonly arg: Expr; readonly plan: PlanNode; readonly not?: boolean }
export interface ExistsExpr { readonly kind: 'exists'; readonly plan: PlanNode; readonly not?: boolean }
/** Scalar subquery: the first column of the first row, NULL when empty. */
export interface SubqueryExpr { readonly kind: 'subquery'; readonly plan: PlanNode }
export interface IsNullExpr { readonly kind: 'is_null'; readonly arg: Expr; readonly not?: boolean }
export interface CaseExpr {
  readonly kind: 'case';
  readonly operand?: Expr;
  readonly whens: ReadonlyArray<{ readonly when: Expr; readonly then: Expr }>;
  readonly else?: Expr;
}
export interface CastExpr { readonly kind: 'cast'; readonly arg: Expr; readonly to: Affinity }
/** `arg COLLATE name`: the value of `arg`, compared with `collation` wherever it is an operand. */
export interface CollateExpr { readonly kind: 'collate'; readonly arg: Expr; readonly collation: Collation }
/** A scalar function call (abs, coalesce, nullif, length, lower, upper, substr, …). */
export interface CallExpr { readonly kind: 'call'; readonly name: string; readonly args: readonly Expr[] }

/** An aggregate computed by the `aggregate` node. */
export interface AggregateCall {
  readonly name: string;
  /**
   * count, sum, total, avg, min, max, group_concat, string_agg, any_value (SQLite's: sums of reals
   * compensated as SQLite's Kahan-Babuska-Neumaier), and `kahan_sum(value, order)`: Elasticsearch's
   * compensated sum of the values in ascending `order` (0.0 for none; the ES surface's sums of doubles).
   * `sorted_values(value)`: the finite values ascending as a JSON array text of exact doubles (the
   * ES surface's percentiles and median absolute deviation).
   */
  readonly fn: string;
  readonly args: readonly Expr[];
  readonly distinct?: boolean;
  /** count(*) */
  readonly star?: boolean;
}

export const EXPR_KINDS = [
  'lit', 'col', 'param', 'unary', 'binary', 'like', 'between', 'in_list', 'in_subquery', 'exists',
  'subquery', 'is_null', 'case', 'cast', 'call', 'collate',
] as const;

export const lit = (value: JsonValue, real?: boolean): LitExpr => (real ? { kind: 'lit', value, real } : { kind: 'lit', value });
export const col = (name: string, affinity?: Affinity): ColExpr => (affinity ? { kind: 'col', name, affinity } : { kind: 'col', name });
export const binary = (op: BinaryOp, left: Expr, right: Expr): BinaryExpr => ({ kind: 'binary', op, left, right });

/** The AND-ed parts of a predicate. */
export function conjuncts(e: Expr): Expr[] {
  return e.kind === 'binary' && e.op === 'and' ? [...conjuncts(e.left), ...conjuncts(e.right)] : [e];
}

/** The AND of predicates, or undefined for none. */
export function andAll(es: readonly Expr[]): Expr | undefined {
  return es.length ? es.reduce((a, b) => ({ kind: 'binary', op: 'and', left: a, right: b })) : undefined;
}
