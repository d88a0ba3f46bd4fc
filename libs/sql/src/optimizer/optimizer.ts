/**
 * The optimizer: a list of named passes over the plan tree. Each pass can be switched off,
 * is timed, and is followed by a plan check (the plan must still validate).
 */
import { DbError } from '@mmdb/core';
import { validatePlan, type PlanNode } from '@mmdb/plan';
import type { TableInfo } from '../exec/context';
import { constantFolding } from './constant-folding';
import { predicatePushdown } from './predicate-pushdown';
import { hashJoin } from './hash-join';
import { indexSelection, pkSelection } from './pk-selection';
import { limitPushdown } from './limit-pushdown';
import { joinOrdering } from './join-ordering';
import { joinSearch } from './join-search';
import { topkPushdown } from './topk-pushdown';
import { ftsPredicate } from './fts-predicate';
import { graphJoin } from './graph-join';
import { indexOrder, sortPushdown } from './sort-pushdown';

export interface OptCatalog {
  table(id: string): TableInfo & { manifest?: import('@mmdb/core').TableManifest };
  /** Rows of a table when known (the table cache), for join ordering. */
  rowCount?(id: string): number | undefined;
  /** The schema a traversal of `rel` from `schema` reaches in `direction` (graph_join). */
  reached?(schema: string, rel: string, direction: 'forward' | 'reverse' | 'both'): string;
}
export interface OptOptions { disabled?: readonly string[]; noIndex?: boolean }
export interface Pass { readonly name: string; run(plan: PlanNode, cat: OptCatalog, opts: OptOptions): PlanNode }
export interface PassReport { name: string; time_ms: number; changed: boolean }

export const PASSES: readonly Pass[] = [constantFolding, predicatePushdown, ftsPredicate, topkPushdown, graphJoin, joinSearch, pkSelection, indexSelection, joinOrdering, hashJoin, limitPushdown, sortPushdown, indexOrder];

export function optimize(plan: PlanNode, cat: OptCatalog, opts: OptOptions = {}): { plan: PlanNode; passes: PassReport[] } {
  const passes: PassReport[] = [];
  const outs: PlanNode[] = [];
  let cur = plan;
  for (const p of PASSES) {
    if (opts.disabled?.includes(p.name)) continue;
    const t0 = performance.now();
    const next = p.run(cur, cat, opts);
    passes.push({ name: p.name, time_ms: Math.round((performance.now() - t0) * 1000) / 1000, changed: next !== cur });
    if (next !== cur) outs.push(next);
    cur = next;
  }
  // The passes' output is validated once (a 64-table join validated after each of twelve passes
  // spent more time there than planning); when it is invalid, the first pass whose output was
  // invalid is named, which is what a per-pass check would have said.
  if (outs.length > 0) {
    try {
      validatePlan(cur);
    } catch {
      const changed = passes.filter((r) => r.changed);
      for (let i = 0; i < outs.length; i++) {
        try {
          validatePlan(outs[i]);
        } catch (e) {
          throw new DbError('internal_error', `optimizer pass ${changed[i].name} produced an invalid plan: ${(e as Error).message}`);
        }
      }
    }
  }
  return { plan: cur, passes };
}
