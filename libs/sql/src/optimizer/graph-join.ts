/**
 * graph_join: a `graph_expand` joined to the table it reaches on that table's key
 * (`r.id = g._node`, the usual "expand, then join the rows") already carries those rows: the
 * join and the scan of the whole table are replaced by the expansion itself, the scan side's
 * filters applied to its row columns, and a project giving the scan's columns their old names.
 * Only for a one-column text key (node keys are text, so the equality means the same).
 */
import type { Expr, PlanNode } from '@mmdb/plan';
import { andAll, conjuncts, transformPlan } from '@mmdb/plan';
import type { OptCatalog, Pass } from './optimizer';
import { bottomUp, outputNames } from './util';

type Expand = PlanNode & { op: 'graph_expand' };

function scanUnderFilters(n: PlanNode): { scan: PlanNode & { op: 'scan' }; preds: Expr[] } | null {
  const preds: Expr[] = [];
  let cur = n;
  while (cur.op === 'filter') { preds.push(...conjuncts(cur.predicate)); cur = cur.input; }
  return cur.op === 'scan' && cur.limit === undefined && cur.alias ? { scan: cur, preds } : null;
}

function rewrite(n: PlanNode & { op: 'join' }, cat: OptCatalog): PlanNode | null {
  if (n.kind !== 'inner' || !n.on || n.on.kind !== 'binary' || n.on.op !== '=' || !cat.reached) return null;
  for (const [gSide, sSide] of [[n.left, n.right], [n.right, n.left]] as const) {
    const gPreds: Expr[] = [];
    let gNode = gSide;
    while (gNode.op === 'filter') { gPreds.push(...conjuncts(gNode.predicate)); gNode = gNode.input; }
    if (gNode.op !== 'graph_expand' || gNode.row_columns === false || !gNode.alias) continue;
    const g: Expand = gNode;
    const s = scanUnderFilters(sSide);
    if (!s) continue;
    const t = cat.table(s.scan.schema);
    const m = t.manifest;
    if (!m || m.primary_key.length !== 1) continue;
    const pkCol = m.columns.find((c) => c.name === m.primary_key[0]);
    if (pkCol?.ty !== 'str') continue;
    let reached: string;
    try { reached = cat.reached(g.schema, g.rel, g.direction ?? 'forward'); } catch { continue; }
    if (reached !== m.id) continue;
    const a = `${s.scan.alias}.${pkCol.name}`.toLowerCase();
    const b = `${g.alias}._node`.toLowerCase();
    const names = [n.on.left, n.on.right].map((e) => (e.kind === 'col' ? e.name.toLowerCase() : ''));
    if (!(names.includes(a) && names.includes(b))) continue;
    const outNames = outputNames(n, cat);
    const gNames = outputNames(g, cat);
    if (!outNames || !gNames) continue;
    // the scan's columns are the expansion's row columns under the expansion's alias
    const from = `${s.scan.alias}.`.toLowerCase();
    const rename = (name: string): string => {
      const l = name.toLowerCase();
      if (l.startsWith(from)) return `${g.alias}.${name.slice(from.length)}`;
      if (l === `#version:${s.scan.alias}`.toLowerCase()) return `#version:${g.alias}`;
      return name;
    };
    const renamed = s.preds.map((p) => transformPlan({ op: 'filter', input: { op: 'values', columns: [], rows: [] }, predicate: p }, {
      subqueries: false,
      expr: (e) => (e.kind === 'col' ? { ...e, name: rename(e.name) } : e),
    }) as PlanNode & { op: 'filter' }).map((f) => f.predicate);
    // an expansion reaching a key with no row has NULL row columns: the inner join dropped it
    const exists: Expr = { kind: 'is_null', arg: { kind: 'col', name: `${g.alias}.${pkCol.name}` }, not: true };
    const body: PlanNode = { op: 'filter', input: g, predicate: andAll([exists, ...gPreds, ...renamed])! };
    const exact = (x: string) => gNames.find((y) => y === x.toLowerCase());
    const cols = outNames.map((name) => {
      const src = exact(name) ?? exact(rename(name));
      return src ? { name, expr: { kind: 'col', name: rename(name) } as Expr } : null;
    });
    if (cols.some((c) => c === null)) continue;
    return { op: 'project', input: body, columns: cols as { name: string; expr: Expr }[] };
  }
  return null;
}

export const graphJoin: Pass = {
  name: 'graph_join',
  run: (plan, cat) => {
    let changed = false;
    const out = bottomUp(plan, (n) => {
      if (n.op !== 'join') return n;
      const r = rewrite(n, cat);
      if (!r) return n;
      changed = true;
      return r;
    });
    return changed ? out : plan;
  },
};
