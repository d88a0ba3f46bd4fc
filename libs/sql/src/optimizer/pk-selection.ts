/**
 * Access-path selection over `filter(scan)`:
 * - `pk_selection`: a filter fixing every primary-key column by a constant turns the scan into a pk
 *   `get`; integer bounds on a one-column integer primary key into an `index_scan` on `primary`.
 * - `index_selection`: an equality or a range on the first column of a secondary index into an
 *   `index_scan` on that index.
 * The filter stays above the new leaf (it re-checks what the key range cannot express exactly), except
 * integer bounds on an integer primary key, which the range applies exactly.
 */
import type { Expr, PlanNode } from '@mmdb/plan';
import type { OptCatalog, Pass } from './optimizer';
import { andAll, bottomUp, conjuncts, isBinary } from './util';
import { comparisonCollation } from '../exec/collation';

const isConst = (e: Expr) => e.kind === 'lit' || e.kind === 'param' || (e.kind === 'unary' && e.op === '-' && e.arg.kind === 'lit');

const FLIP: Record<string, string> = { '<': '>', '<=': '>=', '>': '<', '>=': '<=' };

interface Cmp { col: string; op: string; val: Expr; src: Expr }

/** Conjuncts of the form `col op constant` (either side) compared as BINARY, column names lower case. */
function comparisons(pred: Expr): Cmp[] {
  const out: Cmp[] = [];
  for (const c of conjuncts(pred)) {
    if (c.kind !== 'binary' || !['=', '<', '<=', '>', '>='].includes(c.op)) continue;
    // keys are in BINARY order: a comparison under another collating sequence cannot use them
    if (!isBinary(comparisonCollation(c.left, c.right))) continue;
    if (c.left.kind === 'col' && isConst(c.right)) out.push({ col: c.left.name.toLowerCase(), op: c.op, val: c.right, src: c });
    else if (c.right.kind === 'col' && isConst(c.left)) out.push({ col: c.right.name.toLowerCase(), op: FLIP[c.op] ?? c.op, val: c.left, src: c });
  }
  return out;
}

/** A literal a range bound can use on a column of this storage type (compares exactly in key order). */
function rangeLit(ty: string | undefined, v: Expr): boolean {
  if (v.kind !== 'lit') return false;
  if (ty === 'i64') return typeof v.value === 'number' && Number.isInteger(v.value) && !v.real;
  if (ty === 'f64') return typeof v.value === 'number';
  if (ty === 'str') return typeof v.value === 'string';
  return false;
}

function leafOf(n: PlanNode, cat: OptCatalog) {
  if (n.op !== 'filter' || n.input.op !== 'scan' || n.input.limit !== undefined) return undefined;
  const scan = n.input;
  const t = cat.table(scan.schema);
  const name = (c: string) => (scan.alias ? `${scan.alias}.${c}` : c).toLowerCase();
  const colTy = (col: string) => t.manifest?.columns.find((c) => name(c.name) === col);
  const aff = (col: string) => t.cols.find((x) => name(x.name) === col)?.aff;
  const base = { schema: scan.schema, ...(scan.alias ? { alias: scan.alias } : {}) };
  return { filter: n, scan, t, name, colTy, aff, base };
}

export const pkSelection: Pass = {
  name: 'pk_selection',
  run: (plan, cat, opts) => {
    if (opts.noIndex) return plan;
    let changed = false;
    const out = bottomUp(plan, (n: PlanNode) => {
      const L = leafOf(n, cat);
      if (!L || n.op !== 'filter') return n;
      const { t, name, base } = L;
      const cmps = comparisons(n.predicate);
      const eq = new Map<string, Expr>();
      for (const c of cmps) if (c.op === '=') eq.set(c.col, c.val);
      if (t.pk.length && t.pk.every((p) => eq.has(name(p)))) {
        changed = true;
        return { ...n, input: { op: 'get', ...base, key: t.pk.map((p) => eq.get(name(p))!) } };
      }
      if (t.pk.length !== 1) return n;
      const first = name(t.pk[0]);
      if (L.aff(first) !== 'integer' || L.colTy(first)?.ty !== 'i64') return n;
      const lower = cmps.filter((c) => c.col === first && (c.op === '>' || c.op === '>=') && rangeLit('i64', c.val));
      const upper = cmps.filter((c) => c.col === first && (c.op === '<' || c.op === '<=') && rangeLit('i64', c.val));
      if (lower.length !== 1 && upper.length !== 1) return n;
      const used = new Set<Expr>();
      const bound = (c: Cmp, incl: string) => { used.add(c.src); return { value: c.val, inclusive: c.op === incl }; };
      const scanNode: PlanNode = {
        op: 'index_scan', ...base, index: 'primary',
        ...(lower.length === 1 ? { lower: bound(lower[0], '>=') } : {}),
        ...(upper.length === 1 ? { upper: bound(upper[0], '<=') } : {}),
      };
      changed = true;
      const rest = conjuncts(n.predicate).filter((c) => !used.has(c));
      return rest.length ? { ...n, predicate: andAll(rest)!, input: scanNode } : scanNode;
    });
    return changed ? out : plan;
  },
};

export const indexSelection: Pass = {
  name: 'index_selection',
  run: (plan, cat, opts) => {
    if (opts.noIndex) return plan;
    let changed = false;
    const out = bottomUp(plan, (n: PlanNode) => {
      const L = leafOf(n, cat);
      if (!L || n.op !== 'filter' || !L.t.manifest) return n;
      const { name, base } = L;
      const cmps = comparisons(n.predicate);
      let best: PlanNode | undefined;
      for (const idx of L.t.manifest.indexes) {
        const col = name(idx.columns[0]);
        const ty = L.colTy(col)?.ty;
        const aff = L.aff(col);
        // the storage type and the SQL affinity must agree, so key order is comparison order
        if (!((ty === 'i64' && aff === 'integer') || (ty === 'f64' && aff === 'real') || (ty === 'str' && aff === 'text'))) continue;
        const eq = cmps.find((c) => c.col === col && c.op === '=' && (c.val.kind === 'param' || rangeLit(ty, c.val)));
        if (eq) { best = { op: 'index_scan', ...base, index: idx.name, prefix: [eq.val] }; break; }
        const lower = cmps.filter((c) => c.col === col && (c.op === '>' || c.op === '>=') && rangeLit(ty, c.val));
        const upper = cmps.filter((c) => c.col === col && (c.op === '<' || c.op === '<=') && rangeLit(ty, c.val));
        if (!best && (lower.length === 1 || upper.length === 1)) {
          best = {
            op: 'index_scan', ...base, index: idx.name,
            ...(lower.length === 1 ? { lower: { value: lower[0].val, inclusive: lower[0].op === '>=' } } : {}),
            ...(upper.length === 1 ? { upper: { value: upper[0].val, inclusive: upper[0].op === '<=' } } : {}),
          };
        }
      }
      if (!best) return n;
      changed = true;
      return { ...n, input: best };
    });
    return changed ? out : plan;
  },
};
