import type { Expr } from '../expr';
import type { PlanNode } from '../node';
/**
 * Writes the rows of `input` (its columns map positionally to `columns`) into `schema`.
 * `on_conflict: "replace"` overwrites a row with the same key. `returning` is evaluated over the stored rows.
 */
export interface InsertNode {
  readonly op: 'insert';
  readonly schema: string;
  readonly columns: readonly string[];
  readonly input: PlanNode;
  readonly on_conflict?: 'error' | 'replace' | 'ignore';
  readonly returning?: ReadonlyArray<{ readonly name: string; readonly expr: Expr }>;
}
export const insert = (n: Omit<InsertNode, 'op'>): InsertNode => ({ op: 'insert', ...n });
