/** The migration object and audit entry as stored (catalogue kinds `migration`, `migration_audit`) and served. */
import type { JsonValue } from '@mmdb/core';
import type { Operation, RowMapping } from './ops';
import type { MigrationState, Trigger } from './states';

export interface Throttle {
  /** Ceiling on copied rows per second (default 50,000). */
  readonly max_rows_per_s: number;
  /** The most rows in one backfill frame (default 1,000). */
  readonly batch_size: number;
  /**
   * Time budget of one backfill frame in ms (default 3): a frame holds the rows that fit in it
   * at the measured cost per row (libs/migrations DESIGN.md "Throttle"). Absent in objects
   * stored before it existed (the default then applies).
   */
  readonly slice_ms?: number;
}

export interface Progress {
  readonly done: number;
  readonly total: number;
  /** Rows per second over the recent batches. */
  readonly rate: number;
  /** Seconds left at that rate (null when unknown). */
  readonly eta_s: number | null;
}

export interface MigrationRecord {
  readonly id: string;
  readonly schema: string;
  readonly state: MigrationState;
  readonly plan: 'rewrite' | 'no_rewrite';
  readonly steps: readonly string[];
  readonly operations: readonly Operation[] | null;
  readonly auto_cutover: boolean;
  readonly throttle: Throttle;
  readonly progress: Progress;
  readonly created_by: string;
  /** UNIX seconds. */
  readonly created_at: number;
  readonly updated_at: number;
  readonly completed_at: number | null;
  readonly reason: string | null;
  /** The first primary keys that break the new shape (Failed). */
  readonly offending_keys: readonly JsonValue[][];
  /** Whether the old shape's leftovers (the shadow table) are removed. */
  readonly cleaned: boolean;
  /**
   * What the cutover frame held (Completed rewrites): rows written, how many came from the
   * shadow as dual writes and the backfill left them, how many were reshaped again from the
   * source (a write the dual write missed: none unless a mirror was not installed), and how
   * long the table was fenced.
   */
  readonly cutover?: {
    readonly rows: number;
    readonly from_shadow: number;
    readonly reshaped: number;
    readonly fenced_ms: number;
    /** True when the cutover frame switched the table onto the shadow's keys (no row rewritten in it). */
    readonly switched?: boolean;
  };
  /** Internal: the target manifest, the shadow table, how rows map. */
  readonly target_toml: string;
  readonly shadow: string | null;
  readonly mapping: RowMapping;
}

export interface AuditEntry {
  /** Position in the log (zero-padded sequence, so ids sort in order). */
  readonly id: string;
  readonly migration: string;
  readonly action: Trigger;
  readonly from: MigrationState | null;
  readonly to: MigrationState;
  /** The token's id, `operator`, or `system`. */
  readonly actor: string;
  /** UNIX seconds. */
  readonly at: number;
}

export const nowS = (): number => Math.floor(Date.now() / 1000);
