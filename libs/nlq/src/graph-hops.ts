/**
 * Relation hops as graph traversals. Every relation the schema model knows is declared in a
 * manifest, so the graph engine keeps its adjacency: a hop between two nodes whose rows are
 * only tested for membership (nothing is read from the edge row, and the far side is reached
 * through a filter rather than joined for its columns) becomes one `graph` link, which build.ts
 * compiles to a `graph_expand`. A hop whose edge row is read (its columns output, grouped,
 * ordered or filtered on) or whose ends are composite keys keeps its join links.
 */
import type { ColRef, Cond, Link, Query } from './ir';
import type { SchemaModel } from './schema';

function refs(c: Cond, out: Set<number>): void {
  out.add(c.ref.node);
  if (c.kind === 'colcmp') out.add(c.other.node);
  if (c.kind === 'diff') out.add(c.minus.node);
  if (c.kind === 'any') c.alts.forEach((a) => a.forEach((x) => refs(x, out)));
}

/** The nodes the query reads columns of (outside their own node's membership). */
function read(q: Query): Set<number> {
  const s = new Set<number>([q.focus]);
  const add = (r?: ColRef) => r && s.add(r.node);
  if (q.out.kind === 'rows') q.out.cols.forEach(add);
  else add(q.out.ref);
  add(q.group?.ref);
  add(q.order?.ref);
  add(q.having?.ref);
  for (const n of q.nodes) n.conds.forEach((c) => refs(c, s));
  return s;
}

/** `q` with each eligible one-hop relation link (or pair of links through its edge table) made a graph link. */
export function graphHops(q: Query, schema: SchemaModel): Query {
  const used = read(q);
  const single = (n: number) => schema.table(q.nodes[n].table).pk.length === 1;
  const links: Link[] = [];
  const done = new Set<Link>();
  for (const l of q.links) {
    if (done.has(l)) continue;
    const h = l.hop;
    if (!h || h.closure || !single(h.from) || !single(h.to)) { links.push(l); continue; }
    const pair = q.links.filter((x) => x.hop === h);
    const mid = h.rel.via ? [l.a, l.b].find((n) => n !== h.from && n !== h.to) : undefined;
    const ok = h.rel.via
      ? pair.length === 2 && mid !== undefined && !used.has(mid) && q.links.filter((x) => x.a === mid || x.b === mid).length === 2
      : pair.length === 1;
    if (!ok) { links.push(l); continue; }
    pair.forEach((x) => done.add(x));
    // the negated side of the pair (if any) is the side answered: a NOT IN over the reached keys
    const neg = pair.some((x) => x.neg);
    const pk = (n: number) => schema.table(q.nodes[n].table).pk;
    links.push({ a: h.from, aCols: pk(h.from), b: h.to, bCols: pk(h.to), hop: h, graph: true, ...(neg ? { neg: true } : {}) });
  }
  return { ...q, links };
}
