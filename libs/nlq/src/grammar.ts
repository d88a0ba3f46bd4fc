/**
 * The grammar: lexed items → query graph. Noun phrases (tables, values, pronouns, relation
 * nouns) become nodes; relation verbs link subject and object; other phrases link along
 * foreign keys; comparisons, dates, counts, aggregates, grouping and superlatives come
 * from general words of the language. Anything it cannot place is reported, never guessed.
 */
import { DbError } from '@mmdb/core';
import type { Item } from './lex';
import type { Agg, ColRef, Cond, Link, Query, Rhs } from './ir';
import type { Lexicon } from './lexicon';
import type { ColInfo, RelInfo } from './schema';
import { adjectiveBase, columnForDim, columnForWord, dimOf, PLACE_WORDS } from './dims';
import { AUX, singular, STOP, verbLemma } from './words';

interface NP { node: number; pos: number; kind: 'table' | 'value' | 'pron' | 'relnoun'; neg?: boolean; linked?: boolean; inClause?: boolean }

const PRONOUNS = new Set(['who', 'whom', 'someone', 'somebody', 'anyone', 'anybody', 'people', 'person', 'nobody', 'everyone', 'something', 'anything', 'nothing']);
const NEG = new Set(['never', 'not', "n't", 'no', 'nobody', 'nothing', 'without', 'non', "don't", "doesn't", "didn't", "haven't", "hasn't", "hadn't", "isn't", "aren't", "wasn't", "weren't", "won't", "cannot", "can't"]);
const CMP: Array<[string[], '>' | '>=' | '<' | '<=' | '=']> = [
  [['more', 'than'], '>'], [['greater', 'than'], '>'], [['over'], '>'], [['above'], '>'], [['exceeding'], '>'], [['after'], '>'], [['later', 'than'], '>'],
  [['at', 'least'], '>='], [['no', 'less', 'than'], '>='], [['since'], '>='], [['or', 'more'], '>='],
  [['less', 'than'], '<'], [['fewer', 'than'], '<'], [['under'], '<'], [['below'], '<'], [['before'], '<'], [['earlier', 'than'], '<'],
  [['at', 'most'], '<='], [['no', 'more', 'than'], '<='], [['up', 'to'], '<='], [['exactly'], '='],
];
/** Words that may sit between a noun and the value that qualifies it ("sailors from Oslo"). */
const ATTACH = new Set(['in', 'from', 'at', 'of', 'the', 'named', 'called', 'with', 'whose', 'for', 'by', 'a', 'an', 'on']);
const NOUN_USE = new Set(['connection', 'connections', 'relationship', 'relationships', 'link', 'links', 'relation', 'relations', 'network', 'edges', 'edge']);

export interface ParseOptions { readonly direction?: 'forward' | 'reverse' }

export class Grammar {
  private q!: Query;
  private nps: NP[] = [];
  private used = new Set<number>();
  private items: Item[] = [];
  private words: string[] = [];

  constructor(private readonly lx: Lexicon, private readonly opts: ParseOptions = {}) {}

  parse(items: Item[]): Query {
    this.items = items;
    this.words = items.map((it) => (it.k === 'w' ? it.w : it.k === 'rel' ? it.w : it.k === 'table' ? it.w : it.k === 'col' ? it.w : `<${it.k}>`));
    this.q = { nodes: [], links: [], focus: -1, out: { kind: 'rows', cols: [] } };
    this.nounPhrases();
    this.relations();
    this.chooseFocus();
    this.linkRest();
    this.conditions();
    this.answer();
    // a capitalized word nothing placed is a name this store does not know: never answer without it
    const left = items.map((it, i) => [it, i] as const).filter(([it, i]) => !this.used.has(i) && (it.k !== 'w' || it.cap));
    if (left.length) {
      const what = left.map(([it, i]) => (it.k === 'value' ? it.w : this.words[i]));
      throw new DbError('validation_failed', `could not place ${what.map((w) => `"${w}"`).join(', ')} in the question`, { not_understood: what });
    }
    return this.q;
  }

  private node(table: string): number {
    const id = this.q.nodes.length;
    this.q.nodes.push({ id, table, conds: [] });
    return id;
  }

  private w(i: number): string {
    return this.words[i] ?? '';
  }

  private has(...ws: string[]): boolean {
    return ws.some((w) => this.words.includes(w));
  }

  private negatedBefore(i: number, span = 4): boolean {
    for (let j = i - 1; j >= Math.max(0, i - span); j--) {
      const it = this.items[j];
      if (it.k !== 'w') return false;
      if (NEG.has(it.w) || it.w.endsWith("n't")) return true;
    }
    return false;
  }

  // ---- noun phrases ----
  private nounPhrases(): void {
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
      } else if (it.k === 'rel' && it.nouns.length && !it.verbs.length) {
        this.used.add(i);
        const r = it.nouns[0];
        const far = r.dir === 'forward' ? r.rel.target : r.rel.source;
        this.nps.push({ node: this.node(far), pos: i, kind: 'relnoun' });
      }
    });
  }

  private relBetween(a: number, b: number): boolean {
    for (let j = a + 1; j < b; j++) if (this.items[j].k === 'rel') return true;
    return false;
  }

  private npBefore(i: number): NP | undefined {
    return [...this.nps].reverse().find((n) => n.pos < i && !n.inClause);
  }

  private npAfter(i: number): NP | undefined {
    return this.nps.find((n) => n.pos > i);
  }

  /** Links `from` to `to` along a relation in direction `dir` (from is the start of the hop). */
  private hop(rel: RelInfo, dir: 'forward' | 'reverse', from: number, to: number, neg: 'from' | 'to' | undefined, ambiguous = false): void {
    const sourceNode = dir === 'forward' ? from : to;
    const targetNode = dir === 'forward' ? to : from;
    const hop = { rel, dir, from, to, ambiguous };
    const pk = (n: number) => this.lx.schema.table(this.q.nodes[n].table).pk;
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

  private setTable(np: NP, table: string): void {
    if (np.node < 0) np.node = this.node(table);
  }

  private tableOf(np: NP | undefined): string | undefined {
    return np && np.node >= 0 ? this.q.nodes[np.node].table : undefined;
  }

  // ---- relations ----
  private relations(): void {
    this.items.forEach((it, i) => {
      if (it.k !== 'rel') return;
      const nounUse = NOUN_USE.has(this.w(i + 1)) || ['the', 'by', 'through', 'via', 'of'].includes(this.w(i - 1));
      if (it.nouns.length && !it.verbs.length) return this.relNoun(it.nouns[0].rel, it.nouns[0].dir, i);
      if (nounUse && it.named.length) return this.namedRel(it.named[0], i);
      if (!it.verbs.length) return;
      this.used.add(i);
      const particle = ['after', 'for', 'up', 'over', 'on', 'to'].includes(this.w(i + 1));
      const byAt = this.w(i + 1) === 'by' ? i + 1 : particle && this.w(i + 2) === 'by' ? i + 2 : -1;
      const passive = ['was', 'were', 'is', 'are', 'been', 'being', 'be'].includes(this.w(i - 1)) || byAt > 0;
      let subj: NP | undefined;
      let obj: NP | undefined;
      const before = this.npBefore(i);
      if (passive) {
        obj = before;
        subj = byAt > 0 ? this.npAfter(byAt) : undefined;
      } else {
        const prev2 = before ? this.nps.filter((n) => n.pos < before.pos && !n.inClause).pop() : undefined;
        const auxBetween = prev2 && before && this.words.slice(prev2.pos + 1, before.pos).some((x) => AUX.has(x));
        const relClause = prev2 && before && (before.kind === 'value' || (before.kind === 'pron' && !['who', 'whom', 'what'].includes(this.w(before.pos)))) && before.pos - prev2.pos <= 2 && (prev2.kind === 'table' || prev2.kind === 'pron' || prev2.kind === 'relnoun')
          && !this.words.slice(prev2.pos + 1, before.pos).some((x) => x === 'who' || x === 'that') && !this.items.slice(prev2.pos + 1, before.pos).some((x) => x.k === 'rel')
          && !this.words.slice(before.pos + 1, i).some((x) => x === 'who' || x === 'that' || x === 'which');
        if (before && prev2 && (auxBetween || relClause) && !this.items.slice(before.pos + 1, i).some((x, k) => x.k === 'rel' && !this.clauseVerbs.has(before.pos + 1 + k))) {
          subj = before;
          obj = prev2;
          // "the people X mentors": X lives inside the clause; a later verb's subject is its head
          if (relClause && !auxBetween) {
            before.inClause = true;
            this.clauseVerbs.add(i);
          }
        } else {
          subj = before;
          obj = this.npAfter(i);
        }
      }
      const pick = it.verbs.find((v) => {
        const st = v.subject === 'source' ? v.rel.source : v.rel.target;
        const ot = v.subject === 'source' ? v.rel.target : v.rel.source;
        return (!this.tableOf(subj) || this.tableOf(subj) === st) && (!this.tableOf(obj) || this.tableOf(obj) === ot);
      }) ?? it.verbs[0];
      const st = pick.subject === 'source' ? pick.rel.source : pick.rel.target;
      const ot = pick.subject === 'source' ? pick.rel.target : pick.rel.source;
      // a missing end is a noun of its table elsewhere in the question that nothing else ties ("grams fed per keeper")
      if (!subj && obj && this.tableOf(obj) === st && st !== ot) [subj, obj] = [obj, undefined];
      if (!obj && subj && this.tableOf(subj) === ot && st !== ot) [obj, subj] = [subj, undefined];
      const spare = (t: string, not?: NP) => this.nps.find((n) => n !== not && !n.linked && n.node >= 0 && this.tableOf(n) === t && n.kind !== 'value');
      if (!subj || (this.tableOf(subj) !== undefined && this.tableOf(subj) !== st)) subj = spare(st, obj) ?? subj;
      if (!obj || (this.tableOf(obj) !== undefined && this.tableOf(obj) !== ot)) obj = spare(ot, subj) ?? obj;
      if (!subj || this.tableOf(subj) !== undefined && this.tableOf(subj) !== st) subj = { node: this.node(st), pos: i, kind: 'pron' };
      if (!obj || this.tableOf(obj) !== undefined && this.tableOf(obj) !== ot) obj = { node: this.node(ot), pos: i, kind: 'pron' };
      this.setTable(subj, st);
      this.setTable(obj, ot);
      if (subj.node === obj.node) obj = { node: this.node(ot), pos: i, kind: 'pron' };
      subj.linked = obj.linked = true;
      const negVerb = this.negatedBefore(i, 4) || !!subj.neg;
      const dir: 'forward' | 'reverse' = pick.subject === 'source' ? 'forward' : 'reverse';
      // the hop starts at the subject; negation hangs off the side that is answered
      this.hop(pick.rel, dir, subj.node, obj.node, negVerb ? (subj.neg ? 'to' : 'from') : undefined);
    });
  }

  /** "mentees of X", "captain of X", "how many mentees does X have". */
  private relNoun(rel: RelInfo, dir: 'forward' | 'reverse', i: number): void {
    const far = this.nps.find((n) => n.pos === i)!;
    const start = this.npAfter(i);
    if (!start) return;
    const startTable = dir === 'forward' ? rel.source : rel.target;
    this.setTable(start, startTable);
    far.linked = start.linked = true;
    this.hop(rel, dir, start.node, far.node, undefined);
  }

  /** The relation named as a thing ("mentor connections of X"): its direction is open on a self-relation. */
  private namedRel(rel: RelInfo, i: number): void {
    this.used.add(i);
    const start = [...this.nps].find((n) => n.kind === 'value') ?? this.npAfter(i);
    if (!start) return;
    const self = rel.source === rel.target;
    const startTable = this.tableOf(start);
    const dir: 'forward' | 'reverse' = self ? this.opts.direction ?? 'forward' : startTable === rel.source ? 'forward' : 'reverse';
    const farTable = dir === 'forward' ? rel.target : rel.source;
    let far = this.nps.find((n) => n !== start && !n.linked && this.tableOf(n) === farTable) ?? this.nps.find((n) => n !== start && n.kind === 'pron' && n.node < 0);
    if (!far) {
      far = { node: this.node(farTable), pos: i, kind: 'pron' };
      this.nps.push(far);
    }
    this.setTable(far, farTable);
    far.linked = start.linked = true;
    this.hop(rel, dir, start.node, far.node, undefined, self && !this.opts.direction);
  }

  /** A node of the same table as another, not tied to anything by a hop, is the same thing: merge it. */
  private mergeSameTable(): void {
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

  private readonly dead = new Set<number>();
  private readonly clauseVerbs = new Set<number>();
  private groupNode?: number;
  private groupFocus = false;

  private live() {
    return this.q.nodes.filter((n) => !this.dead.has(n.id));
  }

  private chooseFocus(): void {
    this.mergeSameTable();
    if (!this.nps.some((n) => n.node >= 0)) {
      const c = this.items.findIndex((x) => x.k === 'col');
      if (c >= 0) this.nps.push({ node: this.node((this.items[c] as Extract<Item, { k: 'col' }>).cols[0].table), pos: c, kind: 'table' });
    }
    const first = this.nps.filter((n) => n.kind !== 'value' && n.node >= 0).sort((a, b) => a.pos - b.pos)[0];
    const wh = this.nps.find((n) => n.kind === 'pron' && n.node >= 0 && (this.w(n.pos) === 'who' || this.w(n.pos) === 'what' || this.w(n.pos) === 'whom'));
    const hm = this.words.indexOf('many');
    const counted = hm >= 0 ? this.nps.find((n) => n.pos > hm && n.node >= 0 && n.kind !== 'value') : undefined;
    const f = counted ?? (wh && wh.pos <= 1 ? wh : undefined) ?? first ?? this.nps.find((n) => n.node >= 0);
    if (!f) throw new DbError('validation_failed', 'the question names no table, column or value this store knows', { not_understood: this.words.filter((w) => !STOP.has(w)) });
    this.q.focus = f.node;
  }

  /** Every node not yet connected joins the graph along the shortest foreign-key path. */
  private linkRest(): void {
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
  private nodeFor(table: string, prefer?: number): number {
    if (prefer !== undefined && this.q.nodes[prefer].table === table) return prefer;
    const existing = this.live().reverse().find((n) => n.table === table);
    if (existing) return existing.id;
    const n = this.node(table);
    this.connect(n, this.live().filter((x) => x.id !== n).map((x) => x.id));
    return n;
  }

  /** The node a column reference belongs to, preferring `near`. */
  private refFor(c: ColInfo, near?: number): ColRef {
    return { node: this.nodeFor(c.table, near), col: c.name };
  }

  /** Columns of the nodes in the graph, nearest first. */
  private graphCols(near?: number): ColInfo[] {
    const order = near !== undefined ? [near, ...this.live().map((n) => n.id).filter((x) => x !== near)] : this.live().map((n) => n.id);
    return order.flatMap((n) => [...this.lx.schema.table(this.q.nodes[n].table).cols.values()]);
  }

  private nearestNode(i: number): number {
    const np = this.npBefore(i) ?? this.npAfter(i);
    return np && np.node >= 0 ? np.node : this.q.focus;
  }

  // ---- conditions: comparisons, dates, negations, flags ----
  private conditions(): void {
    const items = this.items;
    // "the night shift", "species Lion": a column word beside a value of that column is part of it
    items.forEach((it, i) => {
      if (it.k !== 'col' || this.used.has(i)) return;
      for (const j of [i - 1, i + 1, i - 2, i + 2]) {
        const v = items[j];
        if (v?.k === 'value' && v.hits.some((h) => it.cols.some((c) => c.table === h.table && c.name === h.column))) {
          this.used.add(i);
          return;
        }
      }
    });
    for (let i = 0; i < items.length; i++) {
      const it = items[i];
      if (this.used.has(i)) continue;
      if (it.k === 'text') {
        this.used.add(i);
        const near = this.nearestFts(i, it.col);
        if (near) this.q.nodes[near.node].conds.push({ kind: 'like', ref: near, rhs: { slot: it.slot, part: 0 } });
        continue;
      }
      if (it.k === 'num' || it.k === 'year' || it.k === 'decade' || it.k === 'date') this.literal(i);
      if (it.k === 'w' && (it.w === 'living' || it.w === 'alive' || it.w === 'dead' || it.w === 'deceased')) {
        const c = this.graphCols(this.nearestNode(i)).find((x) => x.words.some((w) => w === 'death' || w === 'died' || w === 'deceased'));
        if (c) {
          const ref = this.refFor(c, this.nearestNode(i));
          this.q.nodes[ref.node].conds.push({ kind: 'null', ref, not: it.w === 'dead' || it.w === 'deceased' });
          this.used.add(i);
        }
      }
      if (it.k === 'col' && it.cols[0].ty === 'bool' && !this.has('vs', 'versus', 'each', 'per')) {
        const ref = this.refFor(this.pickCol(it.cols, this.nearestNode(i)), this.nearestNode(i));
        this.q.nodes[ref.node].conds.push({ kind: 'cmp', ref, op: '=', rhs: { lit: this.w(i - 1) === 'non' || this.negatedBefore(i, 2) ? 0 : 1 } });
        this.used.add(i);
      }
      if (it.k === 'w' && /^(returned|paid|closed|finished|completed|shipped|delivered|cancelled|canceled|answered|resolved)$/.test(it.w)) {
        const c = this.graphCols(this.q.focus).find((x) => !x.isKey && x.words[0] && it.w.startsWith(x.words[0].slice(0, -1)) && x.ty !== 'bool');
        if (c) {
          const ref = this.refFor(c, this.q.focus);
          this.q.nodes[ref.node].conds.push({ kind: 'null', ref, not: !this.negatedBefore(i, 5) });
          this.used.add(i);
        }
      }
    }
  }

  private pickCol(cols: readonly ColInfo[], near: number): ColInfo {
    const tables = new Set(this.q.nodes.map((n) => n.table));
    return cols.find((c) => c.table === this.q.nodes[near]?.table) ?? cols.find((c) => tables.has(c.table)) ?? cols[0];
  }

  private nearestFts(i: number, col?: string): ColRef | undefined {
    // the searched rows are a noun's ("logs … that mention"), not an already named value's
    const nps = [...this.nps].filter((n) => n.node >= 0).sort((a, b) => Number(a.kind === 'value') - Number(b.kind === 'value') || Math.abs(a.pos - i) - Math.abs(b.pos - i) || b.pos - a.pos);
    for (const np of nps) {
      const t = this.lx.schema.table(this.q.nodes[np.node].table);
      const f = col ? (t.cols.has(col) ? col : undefined) : t.fulltext[0];
      if (f) return { node: np.node, col: f };
    }
    for (const t of this.lx.schema.tables.values()) {
      const f = col ? (t.cols.has(col) ? col : undefined) : t.fulltext[0];
      if (f) return { node: this.nodeFor(t.id, this.q.focus), col: f };
    }
    return undefined;
  }

  /** The comparison a literal takes part in, and the column it compares. */
  private literal(i: number): void {
    const it = this.items[i] as Extract<Item, { k: 'num' | 'year' | 'decade' | 'date' }>;
    let op: '>' | '>=' | '<' | '<=' | '=' | 'between' | 'in' = 'in';
    let opStart = i;
    for (const [ws, o] of CMP) {
      const s = i - ws.length;
      if (s >= 0 && ws.every((w, k) => this.w(s + k) === w)) {
        op = o;
        opStart = s;
        break;
      }
      if (ws[0] === 'or' && this.w(i + 1) === 'or' && this.w(i + 2) === ws[1]) op = o;
    }
    if (this.w(i - 1) === 'than') {
      // "cheaper than", "more expensive than", "older than": the adjective's dimension and direction
      const adj = adjectiveBase(this.w(i - 2));
      const dim = adj && dimOf(adj.base);
      if (dim) {
        const more = adj!.degree === 'comparative' || this.w(i - 3) === 'more';
        op = more === dim.desc ? '>' : '<';
        opStart = i - 2;
      }
    }
    if (this.w(i - 1) === 'between' || (this.w(i + 1) === 'and' && this.w(i - 2) === 'between')) op = 'between';
    let hi: typeof it | undefined;
    if (op === 'between' && this.w(i + 1) === 'and' && this.items[i + 2] && this.items[i + 2].k === it.k) hi = this.items[i + 2] as typeof it;
    else if (op === 'between') return; // the upper bound of an earlier "between"
    this.used.add(i);
    if (hi) this.used.add(i + 2);
    // a count: "more than 150 ships", "at least 10 voyages"
    const after = this.items[i + 1];
    if (it.k === 'num' && after?.k === 'table' && op !== 'in') {
      this.q.having = { fn: 'count', ref: undefined, op: op === 'between' ? '>=' : op, rhs: { slot: it.slot, part: 0 } };
      this.havingTable = after.t;
      return;
    }
    if (it.k === 'num' && (this.w(i - 1) === 'top' || this.w(i - 1) === 'first' || adjectiveBase(this.w(i + 1)) || this.w(i + 1) === 'most' || this.w(i + 1) === 'least' || this.w(i + 1) === 'highest' || this.w(i + 1) === 'lowest')) {
      this.q.limit = { slot: it.slot, part: 0 };
      return;
    }
    const ref = this.compared(i, opStart, it);
    const shown = it.k === 'num' || it.k === 'year' ? String(it.n) : this.w(opStart - 1) + ' …';
    if (!ref) throw new DbError('validation_failed', `cannot tell what "${shown}" is compared with`, { not_understood: [shown] });
    const c = this.lx.schema.col(this.q.nodes[ref.node].table, ref.col)!;
    const conds = this.q.nodes[ref.node].conds;
    const isDateCol = c.isDate;
    // parts of each slot kind: year [n, lo, hi]; decade [y0, y1, lo, hi]; date [lo, hi]
    const lo = (x: typeof it): Rhs => x.k === 'date' ? { slot: x.slot, part: 0 } : x.k === 'year' ? { slot: x.slot, part: isDateCol ? 1 : 0 } : x.k === 'decade' ? { slot: x.slot, part: isDateCol ? 2 : 0 } : { slot: x.slot, part: 0 };
    const hiEx = (x: typeof it): Rhs | undefined => x.k === 'date' ? { slot: x.slot, part: 1 } : x.k === 'year' && isDateCol ? { slot: x.slot, part: 2 } : x.k === 'decade' && isDateCol ? { slot: x.slot, part: 3 } : undefined;
    const hiIn = (x: typeof it): Rhs => x.k === 'decade' ? { slot: x.slot, part: 1 } : lo(x);
    const push = (o: Cond['kind'] extends never ? never : '=' | '<' | '<=' | '>' | '>=', r: Rhs) => conds.push({ kind: 'cmp', ref, op: o, rhs: r });
    if (op === 'between') {
      push('>=', lo(it));
      const h = hiEx(hi!);
      if (h) push('<', h);
      else push('<=', hiIn(hi!));
      return;
    }
    const range = hiEx(it);
    if (op === 'in' || op === '=') {
      if (range) {
        push('>=', lo(it));
        push('<', range);
      } else if (it.k === 'decade') {
        push('>=', lo(it));
        push('<=', hiIn(it));
      } else push('=', lo(it));
      return;
    }
    if (op === '>' || op === '<=') push(op, range ?? hiIn(it));
    if (op === '>' && range) {
      conds.pop();
      push('>=', range);
    } else if (op === '<=' && range) {
      conds.pop();
      push('<', range);
    }
    if (op === '<' || op === '>=') push(op, lo(it));
  }

  havingTable?: string;

  /** A table's own date: the date column named after the table ("voyage_date" of voyages), else a required one, else the first. */
  private mainDate(table: string): ColInfo | undefined {
    const t = this.lx.schema.table(table);
    const dates = [...t.cols.values()].filter((c) => c.isDate);
    return dates.find((x) => x.words.some((w) => t.words.includes(w))) ?? dates.find((x) => x.required) ?? dates[0];
  }

  /** The column a literal is compared with: a column named beside it, a verb, a unit or the kind of literal. */
  private compared(i: number, opStart: number, it: Extract<Item, { k: 'num' | 'year' | 'decade' | 'date' }>): ColRef | undefined {
    const near = this.nearestNode(opStart);
    const after = this.items[i + 1];
    if (after?.k === 'col') {
      this.used.add(i + 1);
      return this.refFor(this.pickCol(after.cols, near), near);
    }
    if (after?.k === 'w') {
      const c = columnForWord(after.w, this.graphCols(near));
      if (c && c.ty !== 'str') return this.refFor(c, near);
    }
    for (let j = opStart - 1; j >= Math.max(0, opStart - 3); j--) {
      const b = this.items[j];
      if (b.k === 'col') {
        this.used.add(j);
        return this.refFor(this.pickCol(b.cols, near), near);
      }
      if (b.k === 'w') {
        const adj = adjectiveBase(b.w);
        const dim = adj && dimOf(adj.base);
        const c = dim ? columnForDim(dim, this.graphCols(near)) : columnForWord(b.w, this.graphCols(near));
        if (c) return this.refFor(c, near);
      }
    }
    if (it.k === 'num' && it.money) {
      const c = columnForDim(dimOf('expensive')!, this.graphCols(near));
      if (c) return this.refFor(c, near);
    }
    const cols = this.graphCols(near);
    // a time after a relation verb ("sailed … in 2024") is the time of the edge rows, when they have one
    const verbBefore = this.items.slice(0, opStart).some((x) => x.k === 'rel' && x.verbs.some((v) => v.rel.via));
    if (verbBefore && (it.k === 'date' || it.k === 'year' || it.k === 'decade')) {
      const via = this.live().filter((n) => this.lx.schema.relations.some((r) => r.via === n.table));
      for (const n of via) {
        const c = this.mainDate(n.table);
        if (c) return { node: n.id, col: c.name };
      }
    }
    if (it.k === 'date' || ((it.k === 'year' || it.k === 'decade') && !cols.some((c) => c.words.includes('year') && c.table === this.q.nodes[near].table))) {
      // a date: the date column of an event table in the graph, else of the nearest node
      const events = this.live().filter((n) => !this.lx.schema.labelOf(n.table)).map((n) => n.id);
      for (const n of [...events, near, ...this.live().map((x) => x.id)]) {
        const c = this.mainDate(this.q.nodes[n].table);
        if (c) return { node: n, col: c.name };
      }
    }
    if (it.k === 'date') {
      // a date with no dated table in the graph: a table the question names by a word ("inspected")
      const said = new Set(this.words.flatMap((w) => [singular(w), verbLemma(w)]));
      const t = [...this.lx.schema.tables.values()].find((x) => x.words.some((w) => said.has(w)) && [...x.cols.values()].some((c) => c.isDate));
      const c = t && [...t.cols.values()].find((x) => x.isDate);
      if (t && c) return { node: this.nodeFor(t.id, undefined), col: c.name };
    }
    if (it.k === 'year' || it.k === 'decade') {
      const c = cols.find((x) => x.words.includes('year') && x.table === this.q.nodes[near].table) ?? cols.find((x) => x.words.includes('year'));
      if (c) return this.refFor(c, near);
    }
    return undefined;
  }

  // ---- what is answered ----
  private answer(): void {
    const q = this.q;
    const words = this.words;
    const focus = q.focus;
    const ftable = q.nodes[focus].table;
    const label = this.lx.schema.labelOf(ftable);
    const colItems = this.items.map((it, i) => [it, i] as const).filter(([it, i]) => it.k === 'col' && !this.used.has(i)) as Array<[Extract<Item, { k: 'col' }>, number]>;
    let isCount = /\bhow many\b|(?<!\bby )\bnumber of\b|^count\b|\bcount the\b|\bcount of\b/.test(words.join(' '));
    const aggWord = words.findIndex((w, i) => ['average', 'mean', 'avg', 'total', 'sum', 'maximum', 'max', 'minimum', 'min', 'highest', 'lowest'].includes(w)
      && !adjectiveBase(words[i + 1] ?? '') && !((w === 'highest' || w === 'lowest') && this.items[i + 1]?.k === 'table'));
    const groupAt = words.findIndex((w, i) => w === 'per' || w === 'each' || w === 'vs' || w === 'versus' || (w === 'by' && this.items[i + 1]?.k === 'col'));
    // grouping key
    if (groupAt >= 0) {
      const g = this.items.slice(groupAt + 1).findIndex((x) => x.k === 'col' || x.k === 'table') + groupAt + 1;
      const gi = this.items[g];
      const before = groupAt > 0 ? this.items.slice(0, groupAt).map((x, k) => [x, k] as const).reverse().find(([x, k]) => x.k === 'col' && !this.used.has(k)) : undefined;
      let key = words[groupAt] === 'vs' || words[groupAt] === 'versus' ? before : gi ? [gi, g] as const : undefined;
      const nextCol = this.items[g + 1];
      if (gi?.k === 'table' && nextCol?.k === 'col' && nextCol.cols.some((c) => c.table === gi.t)) {
        this.used.add(g);
        const n = this.nps.find((x) => x.pos === g);
        key = [{ ...nextCol, cols: nextCol.cols.filter((c) => c.table === gi.t) }, g + 1] as const;
        if (n) this.groupNode = n.node;
      }
      if (key && key[0].k === 'col') {
        this.used.add(key[1]);
        q.group = { ref: this.refFor(this.pickCol(key[0].cols, this.groupNode ?? focus), this.groupNode ?? focus), entity: false };
      } else if (key && key[0].k === 'table') {
        const n = this.nps.find((x) => x.pos === key[1]);
        if (n && n.node !== focus) q.group = { ref: { node: n.node, col: this.lx.schema.table(key[0].t).pk[0] }, entity: true };
        else if (n) this.groupFocus = true;
      }
    }
    // the thing measured
    let agg: Agg | undefined;
    let aggRef: ColRef | undefined;
    if (aggWord >= 0) {
      const w = words[aggWord];
      agg = w === 'average' || w === 'mean' || w === 'avg' ? 'avg' : w === 'total' || w === 'sum' ? 'sum' : w === 'maximum' || w === 'max' || w === 'highest' ? 'max' : 'min';
      const c = colItems.find(([, i]) => i > aggWord) ?? colItems.find(([, i]) => i < aggWord);
      const cw = c ? undefined : this.items.slice(aggWord + 1).find((x) => x.k === 'w' && columnForWord(x.w, this.graphCols(focus)));
      const col = c ? this.pickCol(c[0].cols, focus) : cw && cw.k === 'w' ? columnForWord(cw.w, this.graphCols(focus)) : undefined;
      if (c) this.used.add(c[1]);
      if (col && (col.ty !== 'str' || col.isDate)) aggRef = this.refFor(col, focus);
      else agg = undefined;
      if (!agg && w === 'total') isCount = true;
    }
    if (!agg && /\bhow much would it cost\b|\bhow much (?:do|does|did) (?:all|every)\b/.test(words.join(' '))) {
      const c = columnForDim(dimOf('expensive')!, this.graphCols(focus));
      if (c) {
        agg = 'sum';
        aggRef = this.refFor(c, focus);
      }
    }
    // "total grams fed per keeper": the measure lives on other rows, one group per answered entity
    if (this.groupFocus && !q.group && agg && aggRef && aggRef.node !== focus) q.group = { ref: { node: focus, col: this.lx.schema.table(ftable).pk[0] }, entity: true };
    // "when was the first/most recent X": the min/max of its date
    const firstLast = words.findIndex((w) => ['first', 'earliest', 'latest', 'last', 'recent', 'newest', 'oldest'].includes(w));
    if (!agg && words[0] === 'when' && firstLast >= 0) {
      const dc = [...this.lx.schema.table(ftable).cols.values()].find((c) => c.isDate);
      if (dc) {
        agg = ['first', 'earliest', 'oldest'].includes(words[firstLast]) ? 'min' : 'max';
        aggRef = { node: focus, col: dc.name };
      }
    }
    // superlatives and ordering
    const sup = this.superlative(focus);
    if (q.having && this.havingTable) {
      const hn = this.havingTable === ftable && !q.group ? focus : this.nodeFor(this.havingTable, undefined);
      q.having = { ...q.having, ref: undefined };
      if (!q.group) {
        const keyCol = colItems.find(([, i]) => !this.used.has(i) && i < this.items.findIndex((x) => x.k === 'num' || x.k === 'year'));
        if (keyCol && hn === focus) {
          this.used.add(keyCol[1]);
          q.group = { ref: this.refFor(this.pickCol(keyCol[0].cols, focus), focus), entity: false, keyOnly: true };
        } else if (hn !== focus) {
          q.group = { ref: { node: focus, col: this.lx.schema.table(ftable).pk[0] }, entity: true, keyOnly: true };
        }
      }
    }
    if (sup) {
      if (sup.count) {
        // "which captain has commanded the most ships": rank entities by how many rows of another table they have
        const counted = sup.countTable ? this.nodeFor(sup.countTable, undefined) : undefined;
        const keyCol = colItems.find(([, i]) => !this.used.has(i));
        if (keyCol && !counted) {
          this.used.add(keyCol[1]);
          q.group = { ref: this.refFor(this.pickCol(keyCol[0].cols, focus), focus), entity: false, keyOnly: true };
        } else if (keyCol && counted !== undefined && this.q.nodes[counted].table !== ftable) {
          this.used.add(keyCol[1]);
          q.group = { ref: this.refFor(this.pickCol(keyCol[0].cols, focus), focus), entity: false, keyOnly: true };
          q.order = { fn: 'count', ref: undefined, desc: sup.desc };
          q.focus = counted;
        } else q.group = { ref: { node: focus, col: this.lx.schema.table(ftable).pk[0] }, entity: true, keyOnly: true };
        // counting an entity counts distinct ones ("fed the most animals"), not the rows that reach them
        const countedTable = counted !== undefined ? this.q.nodes[counted].table : undefined;
        const entity = countedTable && this.lx.schema.labelOf(countedTable) && counted !== focus;
        q.order = entity ? { fn: 'count', ref: { node: counted!, col: this.lx.schema.table(countedTable!).pk[0] }, desc: sup.desc, distinct: true } : { fn: 'count', desc: sup.desc };
        if (counted !== undefined && counted !== focus) q.focus = counted;
      } else if (sup.aggRef) {
        q.group = q.group ?? { ref: { node: focus, col: this.lx.schema.table(ftable).pk[0] }, entity: true, keyOnly: true };
        q.order = { fn: 'avg', ref: sup.aggRef, desc: sup.desc };
      } else q.order = { ref: sup.ref, desc: sup.desc };
      if (!q.limit && !sup.all && !sup.sorted) q.limit = { lit: 1 };
      if (sup.all) q.ties = true;
    }
    if (q.group) {
      if (agg) q.out = { kind: 'agg', fn: agg, ref: aggRef };
      else if (isCount || !q.order) q.out = { kind: 'agg', fn: 'count' };
      else q.out = { kind: 'agg', fn: q.order.fn ?? 'count', ref: q.order.ref };
      if (isCount && q.group.keyOnly && !sup) q.group = { ...q.group, keyOnly: false };
      if (!sup && !q.having) q.group = { ...q.group, keyOnly: false };
      if (q.order === undefined && this.orderWords()) q.order = { fn: q.out.kind === 'agg' ? q.out.fn : 'count', ref: q.out.kind === 'agg' ? q.out.ref : undefined, desc: this.orderWords() === 'desc' };
      return;
    }
    if (agg) {
      q.out = { kind: 'agg', fn: agg, ref: aggRef };
      return;
    }
    if (isCount) {
      const distinct = words.includes('different') || words.includes('distinct');
      const c = colItems.find(([, i]) => !this.used.has(i));
      if (distinct && c) {
        this.used.add(c[1]);
        q.out = { kind: 'agg', fn: 'count', ref: this.refFor(this.pickCol(c[0].cols, focus), focus), distinct: true };
      } else q.out = { kind: 'agg', fn: 'count' };
      return;
    }
    // plain rows: the named attributes, else the label
    const cols: ColRef[] = [];
    for (const [c, i] of colItems) {
      if (this.used.has(i)) continue;
      this.used.add(i);
      cols.push(this.refFor(this.pickCol(c.cols, this.nearestNode(i)), this.nearestNode(i)));
    }
    const first = this.items.findIndex((x) => x.k === 'table' || x.k === 'value' || x.k === 'rel');
    const firstCol = colItems[0]?.[1] ?? Infinity;
    if (words[0] === 'where' && !cols.length) {
      const c = PLACE_WORDS.map((w) => this.lx.schema.table(ftable).cols.get(w)).find(Boolean);
      if (c) cols.push({ node: focus, col: c.name });
    }
    if (words[0] === 'when' && !cols.length) {
      const c = [...this.lx.schema.table(ftable).cols.values()].find((x) => x.isDate);
      if (c) cols.push({ node: focus, col: c.name });
    }
    if (/^how much\b/.test(words.join(' ')) && !cols.length) {
      const c = columnForDim(dimOf('expensive')!, this.graphCols(focus));
      if (c) cols.push(this.refFor(c, focus));
    }
    if (words[0] === 'what' && this.items[1]?.k === 'w' && !cols.length) {
      const c = columnForWord((this.items[1] as { w: string }).w, [...this.lx.schema.table(ftable).cols.values()]);
      if (c) {
        cols.push({ node: focus, col: c.name });
        this.used.add(1);
      }
    }
    const attrsOnly = cols.length > 0 && (firstCol < first || ['where', 'when', 'how'].includes(words[0]) || (words[0] === 'what' && !this.items.some((x) => x.k === 'table')));
    const labelCol = label && !cols.some((c) => c.node === focus && c.col === label) && !attrsOnly ? [{ node: focus, col: label }] : [];
    if (!labelCol.length && !cols.length) throw new DbError('validation_failed', `${ftable} has no display column to answer with; name a column`, { not_understood: [] });
    q.out = { kind: 'rows', cols: [...labelCol, ...cols] };
    if (!q.order) {
      const ow = this.orderWords();
      const byCol = colItems.find(([, i]) => this.w(i - 1) === 'by' && this.w(i - 2) === 'sorted');
      if (ow && byCol) q.order = { ref: this.refFor(byCol[0].cols[0], focus), desc: ow === 'desc' };
    }
  }

  private orderWords(): 'asc' | 'desc' | undefined {
    const s = this.words.join(' ');
    if (/\bhighest first\b|\bdescending\b|\blargest first\b|\bmost first\b/.test(s)) return 'desc';
    if (/\blowest first\b|\bascending\b|\bsmallest first\b/.test(s)) return 'asc';
    return undefined;
  }

  /** "the 5 most expensive", "cheapest", "oldest to newest", "the most ships", "most sailed". */
  private superlative(focus: number): { ref?: ColRef; aggRef?: ColRef; desc: boolean; count?: boolean; countTable?: string; all?: boolean; sorted?: boolean } | undefined {
    const words = this.words;
    for (let i = 0; i < words.length; i++) {
      const w = words[i];
      let base: string | undefined;
      let desc = true;
      if (w === 'by' && words[i + 1] === 'number' && words[i + 2] === 'of' && this.items[i + 3]?.k === 'table') {
        this.used.add(i + 3);
        return { desc: true, count: true, countTable: (this.items[i + 3] as Extract<Item, { k: 'table' }>).t };
      }
      const mostLike = w === 'most' || w === 'least' || w === 'fewest' || ((w === 'highest' || w === 'lowest' || w === 'best' || w === 'worst' || w === 'top') && !!adjectiveBase(words[i + 1] ?? ''));
      if (mostLike && i + 1 < words.length) {
        const next = this.items[i + 1];
        if (next.k === 'table') {
          this.used.add(i + 1);
          return { desc: w !== 'least' && w !== 'fewest', count: true, countTable: next.t };
        }
        if (next.k === 'rel') {
          this.used.add(i + 1);
          const v = next.verbs[0];
          return v ? { desc: w !== 'least' && w !== 'fewest', count: true, countTable: v.rel.via ?? (this.q.nodes[focus].table === v.rel.source ? v.rel.target : v.rel.source) } : undefined;
        }
        const adj = adjectiveBase(words[i + 1]);
        if (!adj) continue;
        base = adj.base;
        desc = !['least', 'lowest', 'worst'].includes(w);
        this.used.add(i + 1);
      } else if (w === 'from' && i + 3 < words.length && words[i + 2] === 'to') {
        const a = adjectiveBase(words[i + 1]);
        if (!a) continue;
        const dim = dimOf(a.base)!;
        const c = columnForDim(dim, this.graphCols(focus));
        if (!c) continue;
        return { ref: this.refFor(c, focus), desc: dim.desc, sorted: true };
      } else {
        const a = adjectiveBase(w);
        if (!a || a.degree !== 'superlative') continue;
        base = a.base;
        desc = true;
      }
      const dim = dimOf(base);
      if (!dim) continue;
      const c = (base === 'rated' || base === 'popular') ? undefined : columnForDim(dim, [...this.lx.schema.table(this.q.nodes[focus].table).cols.values()]);
      if (c) {
        const all = words.slice(0, i).includes('are') && this.items.some((x) => x.k === 'table' && x.w.endsWith('s'));
        return { ref: { node: focus, col: c.name }, desc: dim.desc === desc, all };
      }
      // a measure of related rows ("highest rated": the average rating of their voyages)
      const child = this.lx.schema.fks.filter((f) => f.parent === this.q.nodes[focus].table).map((f) => this.lx.schema.table(f.child));
      for (const t of child) {
        const cc = columnForDim(dim, [...t.cols.values()]);
        if (cc) return { aggRef: { node: this.nodeFor(t.id, undefined), col: cc.name }, desc: dim.desc === desc };
      }
    }
    return undefined;
  }
}
