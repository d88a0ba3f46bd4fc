/**
 * The compiler's middle form: a small query graph. Nodes are table instances, links join
 * them along key columns (a relation hop is one or two links), and conditions, outputs,
 * grouping and ordering refer to node columns. `build.ts` turns it into a plan tree.
 */
import type { JsonValue } from '@mmdb/core';
import type { RelInfo } from './schema';

/** A literal of the question (slot parameter) or a constant the grammar chose. */
export type Rhs = { readonly slot: number; readonly part: number } | { readonly lit: JsonValue };

export interface ColRef { readonly node: number; readonly col: string }

export type Cond =
  | { readonly kind: 'cmp'; readonly ref: ColRef; readonly op: '=' | '<>' | '<' | '<=' | '>' | '>='; readonly rhs: Rhs }
  | { readonly kind: 'colcmp'; readonly ref: ColRef; readonly op: '<' | '>'; readonly other: ColRef }
  | { readonly kind: 'null'; readonly ref: ColRef; readonly not: boolean }
  /** `year - ref op rhs`: an age from a birth year and the clock's year (a parameter of every ask). */
  | { readonly kind: 'age'; readonly ref: ColRef; readonly year: Rhs; readonly op: '<' | '>'; readonly rhs: Rhs }
  /** `ref - minus op rhs`: a span between two columns ("older than 92 when they died"). */
  | { readonly kind: 'diff'; readonly ref: ColRef; readonly minus: ColRef; readonly op: '<' | '>'; readonly rhs: Rhs }
  | { readonly kind: 'like'; readonly ref: ColRef; readonly rhs: Rhs }
  /** Any of the alternatives holds (each an AND of conditions): "in 1999 or 2000". */
  | { readonly kind: 'any'; readonly ref: ColRef; readonly alts: ReadonlyArray<readonly Cond[]> };

export interface QNode {
  readonly id: number;
  readonly table: string;
  readonly conds: Cond[];
}

/** `a.aCols = b.bCols`. `neg`: no row of the far side exists (NOT EXISTS). */
export interface Link {
  readonly a: number;
  readonly aCols: readonly string[];
  readonly b: number;
  readonly bCols: readonly string[];
  neg?: boolean;
  /** The relation hop this link belongs to (for the interpretation and direction). */
  readonly hop?: {
    readonly rel: RelInfo; readonly dir: 'forward' | 'reverse'; readonly from: number; readonly to: number; readonly ambiguous?: boolean;
    /** Every node reachable from `from` at any depth (a self-relation's transitive closure), not one hop. */
    readonly closure?: boolean;
  };
}

export type Agg = 'count' | 'sum' | 'avg' | 'min' | 'max';

export type Output =
  | { readonly kind: 'rows'; readonly cols: readonly ColRef[] }
  | { readonly kind: 'agg'; readonly fn: Agg; readonly ref?: ColRef; readonly distinct?: boolean };

export interface Query {
  readonly nodes: QNode[];
  readonly links: Link[];
  focus: number;
  out: Output;
  /** Grouped: one row per key (a column, or an entity's label grouped by its key). */
  group?: { readonly ref: ColRef; readonly entity: boolean; readonly keyOnly?: boolean };
  having?: { readonly fn: Agg; readonly ref?: ColRef; readonly op: '>' | '>=' | '<' | '<=' | '='; readonly rhs: Rhs };
  order?: { readonly fn?: Agg; readonly ref?: ColRef; readonly desc: boolean; readonly distinct?: boolean };
  limit?: Rhs;
  /** "which are the oldest": every row tied with the best value instead of one. */
  ties?: boolean;
}
