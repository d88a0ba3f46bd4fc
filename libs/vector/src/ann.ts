/**
 * The one interface every index kind implements. Indexes hold labels (slots of the
 * table's VectorSlab); the table maps ids and metadata to labels.
 */
import type { VectorMetric } from './metric';
import type { VectorSlab } from './slab';

export type IndexKind = 'exact' | 'hnsw' | 'ivf' | 'ivfpq';
export type SearchMode = 'fast' | 'high_recall';
export const SEARCH_MODES: readonly SearchMode[] = ['fast', 'high_recall'];

export interface SearchParams {
  readonly k: number;
  readonly mode: SearchMode;
  /** Only labels for which this returns true may be answered. */
  readonly filter?: (label: number) => boolean;
  /** With a filter: the share of the table's entries that pass it (0..1), which sizes the walk. */
  readonly passing?: number;
}

/** A hit: the label and its raw score (see `Scorer`; smaller is closer). */
export interface Hit {
  label: number;
  score: number;
}

export interface AnnIndex {
  readonly kind: IndexKind;
  /** Indexes the vector now stored at `label` in the slab (replacing any earlier one). */
  add(label: number): void;
  remove(label: number): void;
  /** Up to k hits, closest first. `q` is already normalised for cosine. */
  search(q: Float32Array, p: SearchParams): Hit[];
  /** The index's own state for a checkpoint (the slab is saved by the table). */
  serialize(): Buffer;
  /**
   * The same bytes as `serialize()` at the call, for an index whose serialisation is long:
   * it must take its state synchronously and may finish off the event loop.
   */
  image?(): Promise<Buffer>;
  /** Bytes held by the index beside the slab (codes, graph, lists). */
  memoryBytes(): number;
  /** Background tuning as the table grows (HNSW: the ef calibration); the running one, if any. */
  tune?(size: number): Promise<void> | null;
  /** The table replaced this index (background work stops). */
  dispose?(): void;
}

export interface IndexContext {
  readonly metric: VectorMetric;
  readonly dim: number;
  readonly slab: VectorSlab;
  /** Manifest `[vector] params` (m, ef_construction, nlist, ...). */
  readonly params: Readonly<Record<string, number>>;
}
