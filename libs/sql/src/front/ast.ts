/** The SQL syntax tree produced by the parser (names not yet resolved). */
import type { Collation } from '@mmdb/plan';
import type { Value } from '../values';

export type AExpr =
  | { t: 'lit'; v: Value }
  | { t: 'id'; table?: string; name: string }
  | { t: 'param'; index: number }
  | { t: 'unary'; op: '-' | '+' | 'not' | '~'; arg: AExpr }
  | { t: 'bin'; op: string; l: AExpr; r: AExpr }
  | { t: 'like'; arg: AExpr; pattern: AExpr; escape?: AExpr; not: boolean; glob: boolean }
  | { t: 'between'; arg: AExpr; low: AExpr; high: AExpr; not: boolean }
  | { t: 'in'; arg: AExpr; list?: AExpr[]; select?: Select; table?: string; not: boolean }
  | { t: 'exists'; select: Select; not: boolean }
  | { t: 'subq'; select: Select }
  | { t: 'isnull'; arg: AExpr; not: boolean }
  | { t: 'case'; operand?: AExpr; whens: { when: AExpr; then: AExpr }[]; else?: AExpr }
  | { t: 'cast'; arg: AExpr; type: string }
  | { t: 'collate'; arg: AExpr; name: Collation }
  | { t: 'fn'; name: string; args: AExpr[]; distinct: boolean; star: boolean; filter?: AExpr; over?: WindowSpec | string };

/** A frame bound: `offset` for n PRECEDING / n FOLLOWING. */
export interface FrameBoundSpec { type: 'unbounded_preceding' | 'preceding' | 'current_row' | 'following' | 'unbounded_following'; offset?: AExpr }
/** `OVER (base PARTITION BY … ORDER BY … frame)`; `base` names a WINDOW-clause window. */
export interface WindowSpec {
  base?: string;
  partition?: AExpr[];
  order?: OrderItem[];
  frame?: { unit: 'rows' | 'range' | 'groups'; start: FrameBoundSpec; end: FrameBoundSpec; exclude?: 'no_others' | 'current_row' | 'group' | 'ties' };
}

export type ResultCol = { t: 'expr'; expr: AExpr; alias?: string; text: string } | { t: 'star'; table?: string };

export type FromItem =
  | { t: 'table'; name: string; alias?: string }
  | { t: 'sub'; select: Select; alias?: string }
  | { t: 'tvf'; name: string; args: AExpr[]; alias?: string }
  | { t: 'join'; kind: 'inner' | 'left' | 'right' | 'full' | 'cross'; left: FromItem; right: FromItem; on?: AExpr; using?: string[] };

export interface SelectCore {
  t: 'core';
  distinct: boolean;
  columns: ResultCol[];
  from?: FromItem;
  where?: AExpr;
  groupBy?: AExpr[];
  having?: AExpr;
  /** `WINDOW name AS (…)` definitions. */
  windows?: Record<string, WindowSpec>;
}
export interface ValuesBody { t: 'values'; rows: AExpr[][] }
export interface Compound { t: 'compound'; op: 'union' | 'intersect' | 'except'; all: boolean; left: SelectBody; right: SelectBody }
export type SelectBody = SelectCore | ValuesBody | Compound;

export interface OrderItem { expr: AExpr; desc: boolean; nulls?: 'first' | 'last' }
export interface Cte { name: string; columns?: string[]; select: Select }

export interface Select {
  kind: 'select';
  with?: { recursive: boolean; ctes: Cte[] };
  body: SelectBody;
  orderBy?: OrderItem[];
  limit?: AExpr;
  offset?: AExpr;
}

export interface ColumnSpec {
  name: string;
  type: string;
  pk: boolean;
  pkDesc?: boolean;
  autoinc?: boolean;
  notNull: boolean;
  unique: boolean;
  default?: AExpr;
  check?: { name?: string; expr: AExpr; text: string };
  references?: { table: string; columns: string[] };
  /** `COLLATE name` in the column definition. */
  collate?: Collation;
  /** `VECTOR(n)`: the dimension. */
  dim?: number;
}

export type Stmt =
  | Select
  | { kind: 'insert'; table: string; columns?: string[]; source: Select; orConflict?: 'replace' | 'ignore' | 'abort' | 'fail' | 'rollback'; returning?: ResultCol[] }
  | { kind: 'update'; table: string; alias?: string; sets: { column: string; expr: AExpr }[]; where?: AExpr; returning?: ResultCol[] }
  | { kind: 'delete'; table: string; alias?: string; where?: AExpr }
  | {
      kind: 'create_table';
      name: string;
      ifNotExists: boolean;
      columns: ColumnSpec[];
      primaryKey?: string[];
      uniques: string[][];
      checks: { name?: string; expr: AExpr; text: string }[];
      foreignKeys: { columns: string[]; table: string; refColumns: string[] }[];
      asSelect?: Select;
    }
  | {
      kind: 'create_index'; name: string; table: string; columns: string[]; unique: boolean; ifNotExists: boolean;
      /** pgvector's `USING hnsw | ivfflat`, the column's operator class and `WITH (…)` parameters. */
      using?: string; opclass?: string; with?: Record<string, number>;
    }
  | { kind: 'create_view'; name: string; ifNotExists: boolean; select: Select; text: string }
  | { kind: 'drop'; what: 'table' | 'index' | 'view' | 'trigger'; name: string; ifExists: boolean }
  | { kind: 'alter_add'; table: string; column: ColumnSpec }
  | { kind: 'alter_rename'; table: string; from: string; to: string }
  | { kind: 'alter_drop'; table: string; column: string }
  | { kind: 'begin' }
  | { kind: 'commit' }
  | { kind: 'rollback' }
  | { kind: 'reindex'; name?: string }
  | { kind: 'unsupported'; construct: string };
