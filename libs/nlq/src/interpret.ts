/**
 * A plain-language statement of what a compiled question runs, written from the query graph.
 * Literals stay as `{{slot}}` placeholders so a cached template reads right with new values.
 */
import type { Query, Rhs } from './ir';
import type { SchemaModel } from './schema';
import { nameWords, plural } from './words';

const noun = (schema: SchemaModel, table: string) => plural(schema.table(table).words.join(' '));
const rhs = (r: Rhs) => ('lit' in r ? String(r.lit) : `{{${r.slot}.${r.part}}}`);

/** The direction readings of a relation, for the interpretation and the ambiguity error. */
export function readings(rel: { name: string; source: string; target: string; forward?: string; reverse?: string; cols: readonly string[]; viaSourceCols?: readonly string[] }): { forward: string; reverse: string } {
  const ends = rel.viaSourceCols ? `${nameWords(rel.viaSourceCols[0]).join(' ').replace(/ id$/, '')} → ${nameWords(rel.cols[0]).join(' ').replace(/ id$/, '')}` : `${rel.source} → ${rel.target}`;
  return {
    forward: `${rel.forward ?? `${rel.source} ${rel.name} ${rel.target}`} (forward: ${ends})`,
    reverse: `${rel.reverse ?? `${rel.target} reached by ${rel.name} from ${rel.source}`} (reverse)`,
  };
}

export function interpret(q: Query, schema: SchemaModel): string {
  const parts: string[] = [];
  const desc = (n: number) => {
    const node = q.nodes[n];
    const conds = node.conds.map((c) => {
      const col = nameWords(c.ref.col).join(' ');
      if (c.kind === 'cmp') return c.op === '=' ? `${col} ${rhs(c.rhs)}` : `${col} ${c.op} ${rhs(c.rhs)}`;
      if (c.kind === 'diff') return `${col} minus ${nameWords(c.minus.col).join(' ')} ${c.op} ${rhs(c.rhs)}`;
      if (c.kind === 'null') return c.not ? `with a ${col}` : `with no ${col}`;
      if (c.kind === 'any') return `${col} in one of ${c.alts.length} ranges`;
      if (c.kind === 'like') return `${col} mentioning ${rhs(c.rhs).replace(/^%|%$/g, '')}`;
      return `${col} ${c.op} ${nameWords(c.other.col).join(' ')}`;
    });
    return `${noun(schema, node.table)}${conds.length ? ` with ${conds.join(' and ')}` : ''}`;
  };
  const hops = new Map<string, NonNullable<Query['links'][number]['hop']>>();
  for (const l of q.links) if (l.hop) hops.set(`${l.hop.rel.name}:${l.hop.from}:${l.hop.to}`, l.hop);
  for (const h of hops.values()) {
    const r = readings(h.rel);
    const phrase = h.dir === 'forward' ? r.forward : r.reverse;
    const neg = q.links.some((l) => l.hop === h && l.neg) ? 'not ' : '';
    parts.push(`from ${desc(h.from)}, ${neg}along ${h.rel.name}${h.closure ? ' at any depth (directly or indirectly)' : ''} ${phrase} to ${noun(schema, q.nodes[h.to].table)}`);
  }
  const focus = desc(q.focus);
  const out = q.out.kind === 'agg' ? `${q.out.fn}${q.out.ref ? ` of ${nameWords(q.out.ref.col).join(' ')}` : ''} over ${focus}` : `${focus}`;
  return [out, ...parts].join('; ') + (q.group ? `, grouped by ${nameWords(q.group.ref.col).join(' ')}` : '') + (q.order ? `, ordered ${q.order.desc ? 'descending' : 'ascending'}` : '');
}
