import { DbError } from './errors';
import { ColumnType } from './types';
import { JsonValue } from './types';

/** The parsed form of a table manifest (TOML grammar in libs/storage/MANIFEST.md). */
export interface TableManifest {
  readonly namespace: string;
  readonly table: string;
  /** `namespace.table`. */
  readonly id: string;
  readonly primary_key: readonly string[];
  readonly columns: readonly ColumnDef[];
  readonly indexes: readonly IndexDef[];
  readonly foreign_keys: readonly ForeignKeyDef[];
  readonly checks: readonly CheckDef[];
  readonly vector?: VectorDef;
  readonly fulltext: readonly FullTextDef[];
  readonly relations: readonly RelationDef[];
  /** True when the table has no declared primary key and uses a hidden `_rowid` (SQL CREATE TABLE). */
  readonly hidden_rowid?: boolean;
  /**
   * Storage-internal, never from the TOML: the id its rows and index entries are keyed under
   * when it differs from `id` (after an online migration's cutover switched the table to the
   * keys its new shape was written under). libs/storage `keyIdOf`.
   */
  readonly physical?: string;
  /** The display column: what "which <table>…" returns in English questions (libs/nlq). */
  readonly label?: string;
  /** Free text about the table (read by the English compiler). */
  readonly description?: string;
}

export interface ColumnDef {
  readonly name: string;
  readonly ty: ColumnType;
  readonly required: boolean;
  /** Stored form of the default, applied when a write omits the column. */
  readonly default?: JsonValue;
  /** Dimension, for ty = "vector". */
  readonly dim?: number;
  /** Free text about the column (its words are read by the English compiler). */
  readonly description?: string;
  /** Other English names of the column ("cost" for `price`), for the English compiler. */
  readonly synonyms?: readonly string[];
}

export interface IndexDef {
  readonly name: string;
  readonly columns: readonly string[];
  readonly unique: boolean;
}

export type OnDelete = 'restrict' | 'ignore';

export interface ForeignKeyDef {
  readonly name: string;
  readonly columns: readonly string[];
  /** Referenced schema id. */
  readonly references: string;
  /** Referenced columns: the target's primary key. */
  readonly ref_columns: readonly string[];
  /** `restrict` (default): deleting a referenced row fails with fk_violation; `ignore`: allowed. */
  readonly on_delete: OnDelete;
}

export interface CheckDef {
  readonly name: string;
  /** A SQL boolean expression over the row's columns. */
  readonly expr: string;
}

export const VECTOR_METRICS = ['cosine', 'dot', 'l2', 'manhattan'] as const;
export type VectorMetric = (typeof VECTOR_METRICS)[number];
export const VECTOR_INDEX_KINDS = ['auto', 'exact', 'hnsw', 'ivfpq'] as const;
export type VectorIndexKind = (typeof VECTOR_INDEX_KINDS)[number];

export interface VectorDef {
  readonly column: string;
  readonly dim: number;
  readonly metric: VectorMetric;
  readonly index: VectorIndexKind;
  /** Optional index parameters (m, ef_construction, nlist, ...), passed to the vector lib. */
  readonly params: Readonly<Record<string, number>>;
}

export interface FullTextDef {
  /** A str column. */
  readonly field: string;
  /** Analyzer name, `english` by default (see libs/fts). */
  readonly analyzer: string;
  /** Replaces the analyzer's stop-word list when present. */
  readonly stopwords?: readonly string[];
  readonly k1: number;
  readonly b: number;
}

export interface RelationDef {
  readonly name: string;
  /** Source schema id: this table unless the relation is declared on an edge table. */
  readonly source: string;
  /** Target schema id. */
  readonly target: string;
  /**
   * Columns of this table's rows holding the target's key. A single column may hold
   * one key or an array of keys (one edge each).
   */
  readonly columns: readonly string[];
  /**
   * Edge-table form only: columns of this table's rows holding the source's key.
   * Absent when the rows of this table are themselves the source nodes.
   */
  readonly source_columns?: readonly string[];
  /** Optional column whose number is the edge weight (default 1). */
  readonly weight?: string;
  /** English phrase for source → target, e.g. "member -> members they follow" (libs/nlq). */
  readonly forward?: string;
  /** English phrase for target → source, e.g. "member -> their followers". */
  readonly reverse?: string;
}

/** The error for a user's table named like an internal one (400 validation_failed). */
export function reservedTableName(name: string): DbError {
  return new DbError('validation_failed', `table names containing "${INTERNAL_TABLE_MARK}" are reserved for online migrations' shadow tables: "${name}"`, { key: 'table' });
}

export function schemaId(namespace: string, table: string): string {
  return `${namespace}.${table}`;
}

/**
 * The mark in the name of an internal table: an online migration's shadow
 * (`<table>__mig_<ulid>`, libs/migrations). Such a table is the store's own: every surface that
 * lists or names tables to a user (GET /schemas, Elasticsearch index patterns and `_cat`, English
 * questions, SQL names) skips it through `isInternalTable` (storage's `TenantStore.tables()`),
 * and only a migration's submit frame may register one.
 */
export const INTERNAL_TABLE_MARK = '__mig_';

/** Whether a table name or schema id (`namespace.table`) names an internal table (see INTERNAL_TABLE_MARK; any case). */
export function isInternalTable(tableOrId: string): boolean {
  return tableOrId.slice(tableOrId.indexOf('.') + 1).toLowerCase().includes(INTERNAL_TABLE_MARK);
}
