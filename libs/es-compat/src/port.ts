/**
 * What the ES surface needs from the database, declared here and implemented at the
 * composition root (apps/api): manifests, plan execution on the shared executor, commits.
 */
import type { PlanNode } from '@mmdb/plan';
import type { JsonValue } from '@mmdb/core';

/** A registered table as this surface sees it. */
export interface EsTable {
  readonly id: string;
  readonly description?: string;
  readonly columns: ReadonlyArray<{ readonly name: string; readonly ty: string }>;
  readonly primaryKey: readonly string[];
  readonly fulltext: readonly string[];
  /** `[[fulltext]]` columns whose postings keep every word (no stop-word list): their search finds every document holding a term. */
  readonly fulltextAllWords?: readonly string[];
}

/**
 * What an ES write read of the row it replaces: its `_version` and `_seq_no`, or null when it
 * read no row. The commit checks it against the committed row in the same frame (a racing write
 * through /rows or /sql fails the commit with `write_conflict`) so the write is retried on fresh
 * state rather than overwriting the other one.
 */
export type EsExpect = { readonly version: number; readonly seqNo: number } | null;

export type EsChange =
  | { readonly op: 'put'; readonly schema: string; readonly row: Record<string, JsonValue>; readonly expect?: EsExpect }
  | { readonly op: 'delete'; readonly schema: string; readonly pk: JsonValue[]; readonly expect?: EsExpect }
  | { readonly op: 'schema_put'; readonly toml: string };

export interface EsBackend {
  tables(): EsTable[];
  /** Runs a read-only plan on the shared plan executor; rows keyed by output column name. */
  read(plan: PlanNode): Promise<Array<Record<string, JsonValue>>>;
  /**
   * Commits the changes atomically, in one log frame; answers the frame's LSN. A change's
   * `expect` that the committed row no longer meets (checked with the storage's row-version
   * precondition, so in the commit itself) fails the whole commit with DbError `write_conflict`.
   */
  commit(changes: EsChange[]): Promise<number>;
  /** Drops a table (its rows, postings and manifest). */
  drop(id: string): Promise<void>;
  /**
   * Changes a table's manifest to `toml` by an online migration (libs/migrations, auto-cutover)
   * whose rows are reshaped by `esRowFor` (every stored document in the new mapping's shape),
   * answering once it completed; refusals as the migration's. Optional: without it a mapping
   * change is one frame.
   */
  migrate?(id: string, toml: string): Promise<void>;
  /** LSN of the last frame that changed the table's rows or manifest (for caching what a plan read). */
  tableLsn(id: string): Promise<number>;
  /** The store's last durable LSN (cheap): while it has not moved, no table changed. */
  lastLsn?(): number;
}
