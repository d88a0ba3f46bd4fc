/**
 * - `sort_pushdown`: a sort over a project whose columns are plain column references, literals or
 *   parameters moves below the project (its keys rewritten to the project's input columns), so a
 *   top-N sort keeps input rows and the project runs only on the rows that come out. Projects that
 *   compute anything (which could raise an error, or be costly) are left alone.
 * - `index_order`: a top-N sort (ORDER BY … LIMIT, its limit set by limit_pushdown) directly over a
 *   scan, whose first key is the first column of an index (or the one-column primary key) in index
 *   order (ASC NULLS FIRST, or DESC NULLS LAST read from the end), reads only the candidate rows:
 *   `index_scan{top: n, reverse}`, the first n entries of the index and their ties. The sort stays
 *   and orders them (ties in primary-key order, as over the scan).
 */
import type { Expr, PlanNode } from '@mmdb/plan';
import type { Pass } from './optimizer';
import { bottomUp, isBinary } from './util';

const plain = (e: Expr) => e.kind === 'col' || e.kind === 'lit' || e.kind === 'param';

/** Index of the column `name` resolves to among `names` (exact, else a unique `x.name`); -1 if none or ambiguous. */
function resolve(names: readonly string[], name: string): number {
  const k = name.toLowerCase();
  const exact = names.findIndex((n) => n.toLowerCase() === k);
  if (exact >= 0) return names.findIndex((n, i) => i > exact && n.toLowerCase() === k) >= 0 ? -1 : exact;
  if (k.includes('.')) return -1;
  const hits = names.flatMap((n, i) => (n.toLowerCase().endsWith('.' + k) ? [i] : []));
  return hits.length === 1 ? hits[0] : -1;
}

export const sortPushdown: Pass = {
  name: 'sort_pushdown',
  run: (plan) => {
    let changed = false;
    const out = bottomUp(plan, (n: PlanNode) => {
      if (n.op !== 'sort' || n.input.op !== 'project') return n;
      const p = n.input;
      if (!p.columns.every((c) => plain(c.expr))) return n;
      const names = p.columns.map((c) => c.name);
      const keys = [];
      for (const k of n.keys) {
        if (k.expr.kind === 'lit') { keys.push(k); continue; }
        if (k.expr.kind !== 'col') return n;
        const i = resolve(names, k.expr.name);
        if (i < 0) return n;
        keys.push({ ...k, expr: p.columns[i].expr });
      }
      changed = true;
      return { ...p, input: { ...n, keys, input: p.input } };
    });
    return changed ? out : plan;
  },
};

export const indexOrder: Pass = {
  name: 'index_order',
  run: (plan, cat, opts) => {
    if (opts.noIndex) return plan;
    let changed = false;
    const out = bottomUp(plan, (n: PlanNode) => {
      if (n.op !== 'sort' || n.limit === undefined || n.input.op !== 'scan' || n.input.limit !== undefined) return n;
      const scan = n.input;
      const key = n.keys[0];
      if (key.expr.kind !== 'col' || !isBinary(key.expr.collation)) return n; // index order is BINARY order
      const desc = !!key.desc;
      const nullsFirst = key.nulls ? key.nulls === 'first' : !desc;
      if (nullsFirst === desc) return n; // not the index order or its reverse
      const t = cat.table(scan.schema);
      const m = t.manifest;
      if (!m) return n;
      const i = resolve(m.columns.map((c) => (scan.alias ? `${scan.alias}.${c.name}` : c.name)), key.expr.name);
      if (i < 0) return n;
      const col = m.columns[i];
      const aff = t.cols.find((x) => x.name === col.name)?.aff;
      // the storage type and the SQL affinity must agree, so key order is comparison order
      if (!((col.ty === 'i64' && aff === 'integer') || (col.ty === 'f64' && aff === 'real') || (col.ty === 'str' && aff === 'text'))) return n;
      const index = t.pk.length === 1 && t.pk[0] === col.name ? 'primary' : m.indexes.find((x) => x.columns[0] === col.name)?.name;
      if (!index) return n;
      changed = true;
      return { ...n, input: { op: 'index_scan', schema: scan.schema, ...(scan.alias ? { alias: scan.alias } : {}), index, top: n.limit, ...(desc ? { reverse: true } : {}) } };
    });
    return changed ? out : plan;
  },
};
