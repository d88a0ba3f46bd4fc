/** The explain shape: the executed plan annotated per node. */
export interface ExplainNode {
  readonly op: string;
  /** Short description (schema, predicate, keys, strategy). */
  readonly detail?: string;
  readonly rows_out: number;
  readonly time_ms: number;
  readonly children: readonly ExplainNode[];
}

export interface ExplainPass { readonly name: string; readonly time_ms: number; readonly changed: boolean }

export interface Explain {
  /** Optimizer passes in the order run. */
  readonly passes: readonly ExplainPass[];
  /** The plan after optimization (JSON). */
  readonly plan: unknown;
  readonly tree: ExplainNode;
  readonly total_ms: number;
}
