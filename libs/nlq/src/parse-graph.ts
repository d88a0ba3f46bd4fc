/**
 * The grammar's first half: noun phrases become nodes, relation verbs and nouns link them,
 * the focus is chosen, and every other node joins the graph along foreign keys.
 */
import { DbError } from '@mmdb/core';
import type { Item } from './lex';
import type { ColRef, Cond, Link, Query } from './ir';
import type { Lexicon } from './lexicon';
import type { ColInfo, RelInfo } from './schema';
import { AUX, singular, STOP, verbLemma } from './words';

export interface NP { node: number; pos: number; kind: 'table' | 'value' | 'pron' | 'relnoun'; neg?: boolean; linked?: boolean; inClause?: boolean; implied?: boolean }

const PRONOUNS = new Set(['who', 'whom', 'someone', 'somebody', 'anyone', 'anybody', 'people', 'person', 'nobody', 'everyone', 'something', 'anything', 'nothing']);
export const NEG = new Set(['never', 'not', "n't", 'no', 'nobody', 'nothing', 'without', 'non', "don't", "doesn't", "didn't", "haven't", "hasn't", "hadn't", "isn't", "aren't", "wasn't", "weren't", "won't", "cannot", "can't"]);
export const CMP: Array<[string[], '>' | '>=' | '<' | '<=' | '=']> = [
  [['more', 'than'], '>'], [['greater', 'than'], '>'], [['over'], '>'], [['above'], '>'], [['exceeding'], '>'], [['after'], '>'], [['later', 'than'], '>'],
  [['at', 'least'], '>='], [['no', 'less', 'than'], '>='], [['since'], '>='], [['or', 'more'], '>='],
  [['less', 'than'], '<'], [['fewer', 'than'], '<'], [['under'], '<'], [['below'], '<'], [['before'], '<'], [['earlier', 'than'], '<'],
  [['at', 'most'], '<='], [['no', 'more', 'than'], '<='], [['up', 'to'], '<='], [['exactly'], '='],
];
/** Words that may sit between a noun and the value that qualifies it ("sailors from Oslo"). */
const ATTACH = new Set(['in', 'from', 'at', 'of', 'the', 'named', 'called', 'with', 'whose', 'for', 'by', 'a', 'an', 'on']);

/** Words asking for the transitive closure of a hop. */
const TRANSITIVE = ['indirectly', 'ultimately', 'transitively', 'eventually', 'recursively'];

export interface ParseOptions {
  readonly direction?: 'forward' | 'reverse';
  /** The slot holding the clock ([year, today]), for ages. */
  readonly clock?: number;
}

export abstract class GraphParser {
  protected q!: Query;
  protected nps: NP[] = [];
  protected used = new Set<number>();
  protected items: Item[] = [];
  protected words: string[] = [];

  constructor(protected readonly lx: Lexicon, protected readonly opts: ParseOptions = {}) {}

  /** A relation word read as a noun (parse-relations.ts). */
  protected abstract nounUse(i: number): boolean;

  protected node(table: string): number {
    const id = this.q.nodes.length;
    this.q.nodes.push({ id, table, conds: [] });
    return id;
  }

  protected w(i: number): string {
    return this.words[i] ?? '';
  }

  protected has(...ws: string[]): boolean {
    return ws.some((w) => this.words.includes(w));
  }

  protected negatedBefore(i: number, span = 4): boolean {
    for (let j = i - 1; j >= Math.max(0, i - span); j--) {
      const it = this.items[j];
      if (it.k !== 'w') return false;
      if (NEG.has(it.w) || it.w.endsWith("n't")) return true;
    }
    return false;
  }

  // ---- noun phrases ----
  protected nounPhrases(): void {
    this.items.forEach((it, i) => {
      if (it.k === 'table') {
        this.used.add(i);
        const next = this.items[i + 1];
        if (next?.k === 'value' && next.hits.some((h) => h.table === it.t)) return; // "captain Ada Byrne": the value's node
        this.nps.push({ node: this.node(it.t), pos: i, kind: 'table', neg: this.w(i - 1) === 'no' || this.w(i - 1) === 'without' });
      } else if (it.k === 'value') {
        this.used.add(i);
        const prevTable = this.items[i - 1]?.k === 'table' ? (this.items[i - 1] as { t: string }).t : undefined;
        const open = [...this.nps].reverse().find((n) => n.kind === 'table' && n.pos >= i - 3 && !this.relBetween(n.pos, i)
          && this.words.slice(n.pos + 1, i).every((x) => ATTACH.has(x)));
        const inGraph = [...this.nps].reverse().map((n) => (n.node >= 0 ? this.q.nodes[n.node].table : '')).find((t) => it.hits.some((h) => h.table === t));
        const hit = it.hits.find((h) => h.table === prevTable) ?? it.hits.find((h) => open && h.table === this.q.nodes[open.node].table) ?? it.hits.find((h) => h.table === inGraph)
          ?? it.hits.find((h) => this.lx.schema.labelOf(h.table) === h.column) ?? it.hits[0];
        const op = this.negatedBefore(i, 5) && !this.relBetween(Math.max(0, i - 5), i) ? '<>' : '=';
        const cond: Cond = { kind: 'cmp', ref: { node: -1, col: hit.column }, op, rhs: { slot: it.slot, part: 0 } };
        // "from Oslo or Bergen": either value of the same column
        const before = this.items[i - 2];
        if (this.w(i - 1) === 'or' && before?.k === 'value') {
          const has = (c: Cond): boolean => (c.kind === 'cmp' && 'slot' in c.rhs && c.rhs.slot === before.slot) || (c.kind === 'any' && c.alts.some((a) => a.some(has)));
          const prevNode = this.q.nodes.find((n) => n.conds.some(has));
          const k = prevNode ? prevNode.conds.findIndex(has) : -1;
          if (prevNode && k >= 0 && prevNode.table === hit.table && prevNode.conds[k].ref.col === hit.column) {
            const first = prevNode.conds[k];
            const alts = first.kind === 'any' ? first.alts : [[first]];
            prevNode.conds[k] = { kind: 'any', ref: first.ref, alts: [...alts, [{ ...cond, ref: first.ref }]] };
            return;
          }
        }
        const isLabel = this.lx.schema.labelOf(hit.table) === hit.column;
        if (open && this.q.nodes[open.node].table === hit.table && !(isLabel && this.q.nodes[open.node].conds.length)) {
          this.q.nodes[open.node].conds.push({ ...cond, ref: { node: open.node, col: hit.column } });
          return;
        }
        const n = this.node(hit.table);
        this.q.nodes[n].conds.push({ ...cond, ref: { node: n, col: hit.column } });
        this.nps.push({ node: n, pos: i, kind: 'value' });
      } else if (it.k === 'w' && PRONOUNS.has(it.w)) {
        const prev = this.items[i - 1];
        if ((it.w === 'who' || it.w === 'whom') && prev && (prev.k === 'table' || prev.k === 'value' || (prev.k === 'w' && PRONOUNS.has(prev.w)))) return; // relative "who"
        this.used.add(i);
        this.nps.push({ node: -1, pos: i, kind: 'pron', neg: it.w === 'nobody' || it.w === 'nothing' });
      } else if (it.k === 'w' && it.w === 'what' && (AUX.has(this.w(i + 1)) || this.items[i + 1]?.k === 'rel')) {
        this.nps.push({ node: -1, pos: i, kind: 'pron' });
      } else if (it.k === 'rel' && this.nounUse(i)) {
        this.used.add(i);
        const r = it.nouns[0];
        const far = r.dir === 'forward' ? r.rel.target : r.rel.source;
        this.nps.push({ node: this.node(far), pos: i, kind: 'relnoun' });
      }
    });
  }

  protected relBetween(a: number, b: number): boolean {
    for (let j = a + 1; j < b; j++) if (this.items[j].k === 'rel') return true;
    return false;
  }

  protected npBefore(i: number): NP | undefined {
    return [...this.nps].reverse().find((n) => n.pos < i && !n.inClause);
  }

  protected npAfter(i: number): NP | undefined {
    return this.nps.find((n) => n.pos > i);
  }

  /** Links `from` to `to` along a relation in direction `dir` (from is the start of the hop). */
  protected hop(rel: RelInfo, dir: 'forward' | 'reverse', from: number, to: number, neg: 'from' | 'to' | undefined, ambiguous = false): void {
    // spec 4.6: `direction` overrides the inferred direction of every self-relation hop
    if (rel.source === rel.target && this.opts.direction) dir = this.opts.direction;
    const sourceNode = dir === 'forward' ? from : to;
    const targetNode = dir === 'forward' ? to : from;
    const pk = (n: number) => this.lx.schema.table(this.q.nodes[n].table).pk;
    // "directly or indirectly": every node reachable along a self-relation (its transitive closure)
    const closure = rel.source === rel.target && TRANSITIVE.some((w) => this.words.includes(w));
    const hop = { rel, dir, from, to, ambiguous, ...(closure ? { closure: true } : {}) };
    if (closure) {
      this.q.links.push({ a: from, aCols: pk(from), b: to, bCols: pk(to), hop, ...(neg ? { neg: true } : {}) });
      return;
    }
    if (rel.via) {
      const v = this.node(rel.via);
      const l1: Link = { a: sourceNode, aCols: pk(sourceNode), b: v, bCols: rel.viaSourceCols ?? [], hop };
      const l2: Link = { a: targetNode, aCols: pk(targetNode), b: v, bCols: rel.cols, hop };
      if (neg) (neg === 'from' ? (from === sourceNode ? l1 : l2) : from === sourceNode ? l2 : l1).neg = true;
      this.q.links.push(l1, l2);
    } else {
      const l = { a: sourceNode, aCols: rel.cols, b: targetNode, bCols: pk(targetNode), hop, ...(neg ? { neg: true } : {}) };
      this.q.links.push(l);
    }
  }

  protected setTable(np: NP, table: string): void {
    if (np.node < 0) np.node = this.node(table);
  }

  protected tableOf(np: NP | undefined): string | undefined {
    return np && np.node >= 0 ? this.q.nodes[np.node].table : undefined;
  }

  /** A node of the same table as another, not tied to anything by a hop, is the same thing: merge it. */
  protected mergeSameTable(): void {
    const hopNodes = new Set(this.q.links.flatMap((l) => [l.a, l.b]));
    for (const np of this.nps) {
      if (np.node < 0 || hopNodes.has(np.node)) continue;
      const table = this.q.nodes[np.node].table;
      const other = this.nps.filter((o) => o !== np && o.node >= 0 && o.node !== np.node && this.q.nodes[o.node].table === table)
        .sort((a, b) => Math.abs(a.pos - np.pos) - Math.abs(b.pos - np.pos))[0];
      if (!other) continue;
      const into = other.node;
      const from = np.node;
      for (const c of this.q.nodes[from].conds) this.q.nodes[into].conds.push({ ...c, ref: { node: into, col: c.ref.col } } as Cond);
      this.q.nodes[from].conds.length = 0;
      for (const n of this.nps) if (n.node === from) n.node = into;
      this.dead.add(from);
    }
  }

  protected readonly dead = new Set<number>();
  protected readonly clauseVerbs = new Set<number>();
  protected groupNode?: number;
  protected groupFocus = false;

  protected live() {
    return this.q.nodes.filter((n) => !this.dead.has(n.id));
  }

  protected chooseFocus(): void {
    this.mergeSameTable();
    if (!this.nps.some((n) => n.node >= 0)) {
      const c = this.items.findIndex((x) => x.k === 'col');
      if (c >= 0) this.nps.push({ node: this.node((this.items[c] as Extract<Item, { k: 'col' }>).cols[0].table), pos: c, kind: 'table' });
    }
    const said = this.nps.filter((n) => n.kind !== 'value' && n.node >= 0).sort((a, b) => a.pos - b.pos);
    const first = said.find((n) => !n.implied) ?? said[0];
    const wh = this.nps.find((n) => n.kind === 'pron' && n.node >= 0 && (this.w(n.pos) === 'who' || this.w(n.pos) === 'what' || this.w(n.pos) === 'whom'));
    const hm = this.words.indexOf('many');
    const counted = hm >= 0 ? this.nps.find((n) => n.pos > hm && n.node >= 0 && n.kind !== 'value') : undefined;
    const f = counted ?? (wh && wh.pos <= 1 ? wh : undefined) ?? first ?? this.nps.find((n) => n.node >= 0);
    if (!f) throw new DbError('validation_failed', 'the question names no table, column or value this store knows', { not_understood: this.words.filter((w) => !STOP.has(w)) });
    this.q.focus = f.node;
  }

  /** Every node not yet connected joins the graph along the shortest foreign-key path. */
  protected linkRest(): void {
    const connected = new Set<number>([this.q.focus]);
    const grow = () => {
      let changed = true;
      while (changed) {
        changed = false;
        for (const l of this.q.links) {
          if (connected.has(l.a) !== connected.has(l.b)) {
            connected.add(l.a);
            connected.add(l.b);
            changed = true;
          }
        }
      }
    };
    grow();
    const negated = new Set(this.nps.filter((n) => n.neg && n.kind === 'table').map((n) => n.node));
    for (const n of this.q.nodes) {
      if (connected.has(n.id) || this.dead.has(n.id)) continue;
      this.connect(n.id, [...connected], negated.has(n.id));
      grow();
      // nodes linked among themselves by a hop join as a group
      if (!connected.has(n.id)) connected.add(n.id);
    }
  }

  /** Joins node `n` to the nearest of `targets` by foreign keys, adding intermediate nodes. */
  connect(n: number, targets: number[], neg = false): number {
    const schema = this.lx.schema;
    const byTable = new Map<string, number[]>();
    for (const t of targets) (byTable.get(this.q.nodes[t].table) ?? byTable.set(this.q.nodes[t].table, []).get(this.q.nodes[t].table)!).push(t);
    const start = this.q.nodes[n].table;
    const prev = new Map<string, { from: string; fk: (typeof schema.fks)[number] } | null>([[start, null]]);
    const queue = [start];
    let hit: string | undefined;
    // among paths of equal length, prefer tables the question names by a word ("inspected" → an inspections table)
    const said = new Set(this.words.flatMap((w) => [w, singular(w), verbLemma(w)]));
    const mentioned = (table: string) => schema.table(table).words.some((w) => said.has(w));
    while (queue.length && !hit) {
      const t = queue.shift()!;
      const links = schema.linksOf(t).sort((a, b) => Number(mentioned(b.child === t ? b.parent : b.child)) - Number(mentioned(a.child === t ? a.parent : a.child)));
      for (const fk of links) {
        const other = fk.child === t ? fk.parent : fk.child;
        if (prev.has(other)) continue;
        prev.set(other, { from: t, fk });
        if (byTable.has(other)) {
          hit = other;
          break;
        }
        queue.push(other);
      }
    }
    if (!hit) throw new DbError('validation_failed', `cannot relate ${start} to the rest of the question`, { not_understood: [start] });
    const path: Array<{ from: string; to: string; fk: (typeof schema.fks)[number] }> = [];
    for (let t = hit; prev.get(t); t = prev.get(t)!.from) path.unshift({ from: prev.get(t)!.from, to: t, fk: prev.get(t)!.fk });
    let cur = n;
    path.forEach((step, k) => {
      const next = k === path.length - 1 ? byTable.get(hit!)!.slice(-1)[0] : this.node(step.to);
      const curIsChild = step.fk.child === step.from;
      this.q.links.push({
        a: cur, aCols: curIsChild ? step.fk.childCols : step.fk.parentCols,
        b: next, bCols: curIsChild ? step.fk.parentCols : step.fk.childCols, ...(neg && k === path.length - 1 ? { neg: true } : {}),
      });
      cur = next;
    });
    return cur;
  }

  /** A node of `table` in the graph (the most recent one), or a new one joined to the focus. */
  protected nodeFor(table: string, prefer?: number): number {
    if (prefer !== undefined && this.q.nodes[prefer].table === table) return prefer;
    const existing = this.live().reverse().find((n) => n.table === table);
    if (existing) return existing.id;
    const n = this.node(table);
    this.connect(n, this.live().filter((x) => x.id !== n).map((x) => x.id));
    return n;
  }

  /** The node a column reference belongs to, preferring `near`. */
  protected refFor(c: ColInfo, near?: number): ColRef {
    return { node: this.nodeFor(c.table, near), col: c.name };
  }

  /** Columns of the nodes in the graph, nearest first. */
  protected graphCols(near?: number): ColInfo[] {
    const order = near !== undefined ? [near, ...this.live().map((n) => n.id).filter((x) => x !== near)] : this.live().map((n) => n.id);
    return order.flatMap((n) => [...this.lx.schema.table(this.q.nodes[n].table).cols.values()]);
  }

  protected nearestNode(i: number): number {
    const np = this.npBefore(i) ?? this.npAfter(i);
    return np && np.node >= 0 ? np.node : this.q.focus;
  }

  protected pickCol(cols: readonly ColInfo[], near: number): ColInfo {
    const tables = new Set(this.q.nodes.map((n) => n.table));
    return cols.find((c) => c.table === this.q.nodes[near]?.table) ?? cols.find((c) => tables.has(c.table)) ?? cols[0];
  }

}
