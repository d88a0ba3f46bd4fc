/**
 * A plain-language statement of what a compiled question runs, written from the query graph.
 * Literals stay as `{{slot}}` placeholders so a cached template reads right with new values.
 */
import type { Query, Rhs } from './ir';
import type { SchemaModel } from './schema';
import { nameWords, plural } from './words';

const noun = (schema: SchemaModel, table: string) => plural(schema.table(table).words.join(' '));
const rhs = (r: Rhs) => ('lit' in r ? String(r.lit) : `{{${r.slot}.${r.part}}}`);

type Hop = NonNullable<Query['links'][number]['hop']>;
type RelLike = { name: string; source: string; target: string; forward?: string; reverse?: string; cols: readonly string[]; viaSourceCols?: readonly string[] };

/** The ends of a relation's edge in a direction, by their key columns: "mentor → mentee". */
function ends(rel: RelLike, dir: 'forward' | 'reverse'): string {
  const word = (c: string) => nameWords(c).filter((w) => w !== 'id').join(' ');
  const [a, b] = rel.viaSourceCols ? [word(rel.viaSourceCols[0]), word(rel.cols[0])] : [rel.source.split('.').pop()!, word(rel.cols[0])];
  return dir === 'forward' ? `${a} → ${b}` : `${b} → ${a}`;
}

/** What comes after `->` in a relation phrase ("sailors they mentor"), or a plain reading. */
function farPhrase(rel: RelLike, dir: 'forward' | 'reverse'): string {
  const p = dir === 'forward' ? rel.forward : rel.reverse;
  if (p) return (p.includes('->') ? p.split('->')[1] : p).trim();
  return dir === 'forward' ? `${rel.target.split('.').pop()} by ${rel.name}` : `${rel.source.split('.').pop()} with ${rel.name} to them`;
}

/** The direction readings of a relation, for the ambiguity error. */
export function readings(rel: RelLike): { forward: string; reverse: string } {
  return {
    forward: `${rel.forward ?? `${rel.source} ${rel.name} ${rel.target}`} (forward: ${ends(rel, 'forward')})`,
    reverse: `${rel.reverse ?? `${rel.target} reached by ${rel.name} from ${rel.source}`} (reverse: ${ends(rel, 'reverse')})`,
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
      if (c.kind === 'age') return `age (from ${col}) ${c.op} ${rhs(c.rhs)}`;
      if (c.kind === 'null') return c.not ? `with a ${col}` : `with no ${col}`;
      if (c.kind === 'any') return `${col} in one of ${c.alts.length} ranges`;
      if (c.kind === 'like') return `${col} mentioning ${rhs(c.rhs).replace(/^%|%$/g, '')}`;
      return `${col} ${c.op} ${nameWords(c.other.col).join(' ')}`;
    });
    return `${noun(schema, node.table)}${conds.length ? ` with ${conds.join(' and ')}` : ''}`;
  };
  const hops = new Map<string, Hop>();
  for (const l of q.links) if (l.hop) hops.set(`${l.hop.rel.name}:${l.hop.from}:${l.hop.to}`, l.hop);
  // distances from the answer, so each hop reads from the far (named) side toward the answer
  const dist = new Map<number, number>([[q.focus, 0]]);
  for (let changed = true; changed; ) {
    changed = false;
    for (const l of q.links) {
      for (const [x, y] of [[l.a, l.b], [l.b, l.a]]) {
        if (dist.has(x) && (!dist.has(y) || dist.get(y)! > dist.get(x)! + 1)) {
          dist.set(y, dist.get(x)! + 1);
          changed = true;
        }
      }
    }
  }
  const far = (n: number) => dist.get(n) ?? 0;
  const flip = (h: Hop): Hop => ({ ...h, from: h.to, to: h.from, dir: h.dir === 'forward' ? 'reverse' : 'forward' });
  const negated = (h: Hop) => q.links.some((l) => l.hop === h && l.neg);
  // a negated hop reads from the answer ("sailors with no ships they crewed"), others toward it
  const read = [...hops.values()].map((h) => ({ h: negated(h) === far(h.from) >= far(h.to) ? flip(h) : h, neg: negated(h) }));
  read.sort((a, b) => far(b.h.from) - far(a.h.from));
  for (const { h, neg } of read) {
    const depth = h.closure ? ' at any depth (directly or indirectly)' : '';
    if (neg) parts.push(`with no ${farPhrase(h.rel, h.dir)}${depth} (${h.rel.name}: ${ends(h.rel, h.dir)})`);
    // "sailors they mentor, starting from sailors with name Ann Lee (mentors: mentor → mentee)"
    else parts.push(`${farPhrase(h.rel, h.dir)}${depth}, starting from ${desc(h.from)} (${h.rel.name}: ${ends(h.rel, h.dir)})`);
  }
  const focus = desc(q.focus);
  const out = q.out.kind === 'agg' ? `${q.out.fn}${q.out.ref ? ` of ${nameWords(q.out.ref.col).join(' ')}` : ''} over ${focus}` : `${focus}`;
  return (parts.length ? `${out}: ${parts.join(', then ')}` : out) + (q.group ? `, grouped by ${nameWords(q.group.ref.col).join(' ')}` : '') + (q.order ? `, ordered ${q.order.desc ? 'descending' : 'ascending'}` : '');
}
