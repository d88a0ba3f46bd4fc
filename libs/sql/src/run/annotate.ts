/**
 * Types for a JSON plan from the manifests: a column reference without an `affinity` (or
 * `collation`) takes its leaf column's, so a plan gets the optimizations of the SQL it equals
 * (a hash join needs both keys' affinity class). Only references that certainly name a leaf
 * column are annotated: a name no project / aggregate / window / values / CTE re-defines, found
 * in exactly one leaf (or with the same affinity in every leaf that has it).
 */
import { forEachNode, transformPlan, type Affinity, type Collation, type PlanNode } from '@mmdb/plan';
import type { SqlTable } from '../catalog';

type Info = { aff?: Affinity; coll?: Collation } | null;

export function annotateTypes(plan: PlanNode, table: (id: string) => SqlTable): PlanNode {
  const known = new Map<string, Info>();
  const shadowed = new Set<string>();
  const add = (name: string, info: Info) => {
    const k = name.toLowerCase();
    const prev = known.get(k);
    if (prev === undefined) known.set(k, info);
    else if (prev === null || info === null || prev.aff !== info.aff || prev.coll !== info.coll) known.set(k, null);
  };
  forEachNode(plan, (n) => {
    switch (n.op) {
      case 'scan': case 'get': case 'index_scan': case 'fts_search': case 'vector_topk': {
        let t: SqlTable;
        try { t = table(n.schema); } catch { return; } // an unknown schema is reported when the plan runs
        for (const c of t.columns) {
          const info = { aff: c.aff, ...(c.coll ? { coll: c.coll } : {}) };
          add(n.alias ? `${n.alias}.${c.name}` : c.name, info);
          if (n.alias) add(c.name, info); // `age` matches a unique `u.age`
        }
        return;
      }
      case 'project': n.columns.forEach((c) => shadowed.add(c.name.toLowerCase())); return;
      case 'aggregate': [...n.group, ...n.aggregates].forEach((c) => shadowed.add(c.name.toLowerCase())); return;
      case 'window': n.functions.forEach((c) => shadowed.add(c.name.toLowerCase())); return;
      case 'unnest': shadowed.add(n.as.toLowerCase()); return;
      case 'values': n.columns.forEach((c) => shadowed.add(c.toLowerCase())); return;
      case 'with': n.ctes.forEach((c) => (c.columns ?? []).forEach((x) => { shadowed.add(x.toLowerCase()); shadowed.add(`${c.name}.${x}`.toLowerCase()); })); return;
      default: return;
    }
  });
  return transformPlan(plan, {
    expr: (e) => {
      if (e.kind !== 'col' || (e.affinity && e.collation)) return e;
      const k = e.name.toLowerCase();
      if (shadowed.has(k)) return e;
      const info = known.get(k);
      if (!info) return e;
      return { ...e, ...(e.affinity || !info.aff ? {} : { affinity: info.aff }), ...(e.collation || !info.coll ? {} : { collation: info.coll }) };
    },
  });
}
