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
const NOUN_USE = new Set(['connection', 'connections', 'relationship', 'relationships', 'link', 'links', 'relation', 'relations', 'network', 'edges', 'edge']);

/** Words asking for the transitive closure of a hop. */
const TRANSITIVE = ['indirectly', 'ultimately', 'transitively', 'eventually', 'recursively'];

export interface ParseOptions { readonly direction?: 'forward' | 'reverse' }

export abstract class GraphParser {
  protected q!: Query;
  protected nps: NP[] = [];
  protected used = new Set<number>();
  protected items: Item[] = [];
  protected words: string[] = [];

  constructor(protected readonly lx: Lexicon, protected readonly opts: ParseOptions = {}) {}

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

  // ---- relations ----
  protected relations(): void {
    this.items.forEach((it, i) => {
      if (it.k !== 'rel') return;
      const nounUse = NOUN_USE.has(this.w(i + 1)) || ['the', 'by', 'through', 'via', 'of'].includes(this.w(i - 1));
      if (this.nounUse(i)) return this.relNoun(it.nouns[0].rel, it.nouns[0].dir, i);
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
      const fits = (v: (typeof it.verbs)[number], a: NP | undefined, b: NP | undefined) => {
        const st = v.subject === 'source' ? v.rel.source : v.rel.target;
        const ot = v.subject === 'source' ? v.rel.target : v.rel.source;
        return (!this.tableOf(a) || this.tableOf(a) === st) && (!this.tableOf(b) || this.tableOf(b) === ot);
      };
      const found = it.verbs.find((v) => fits(v, subj, obj));
      // a verb said of nouns its relation does not join ("sailors who have written logs") is not that relation
      if (!found && (this.tableOf(subj) || this.tableOf(obj)) && !it.verbs.some((v) => fits(v, undefined, obj) || fits(v, subj, undefined))) {
        this.used.delete(i);
        this.items[i] = { k: 'w', w: it.w };
        return;
      }
      const pick = found ?? it.verbs[0];
      const st = pick.subject === 'source' ? pick.rel.source : pick.rel.target;
      const ot = pick.subject === 'source' ? pick.rel.target : pick.rel.source;
      // a missing end is a noun of its table elsewhere in the question that nothing else ties ("grams fed per keeper")
      if (!subj && obj && this.tableOf(obj) === st && st !== ot) [subj, obj] = [obj, undefined];
      if (!obj && subj && this.tableOf(subj) === ot && st !== ot) [obj, subj] = [subj, undefined];
      const spare = (t: string, not?: NP) => this.nps.find((n) => n !== not && !n.linked && n.node >= 0 && this.tableOf(n) === t && n.kind !== 'value');
      if (!subj || (this.tableOf(subj) !== undefined && this.tableOf(subj) !== st)) subj = spare(st, obj) ?? subj;
      if (!obj || (this.tableOf(obj) !== undefined && this.tableOf(obj) !== ot)) obj = spare(ot, subj) ?? obj;
      // an end the question leaves unsaid is a noun of its own, which may be the answer ("mentors Bo Lund" → who)
      const fresh = (t: string): NP => {
        const np: NP = { node: this.node(t), pos: i, kind: 'pron', implied: true };
        this.nps.push(np);
        return np;
      };
      if (!subj || this.tableOf(subj) !== undefined && this.tableOf(subj) !== st) subj = fresh(st);
      if (!obj || this.tableOf(obj) !== undefined && this.tableOf(obj) !== ot) obj = fresh(ot);
      this.setTable(subj, st);
      this.setTable(obj, ot);
      if (subj.node === obj.node) obj = fresh(ot);
      subj.linked = obj.linked = true;
      const negVerb = this.negatedBefore(i, 4) || !!subj.neg;
      const dir: 'forward' | 'reverse' = pick.subject === 'source' ? 'forward' : 'reverse';
      // the hop starts at the subject; negation hangs off the side that is answered
      this.hop(pick.rel, dir, subj.node, obj.node, negVerb ? (subj.neg ? 'to' : 'from') : undefined);
    });
  }

  /** "mentees of X", "captain of X", "how many mentees does X have". */
  /** A relation word read as a noun: only a noun, or a noun-and-verb form before "of" or after an article or a possessive. */
  protected nounUse(i: number): boolean {
    const it = this.items[i];
    if (it.k !== 'rel' || !it.nouns.length) return false;
    if (!it.verbs.length) return true;
    const prev = this.items[i - 1];
    return this.w(i + 1) === 'of' || ['the', 'their', 'his', 'her', 'its', 'whose'].includes(this.w(i - 1)) || (prev?.k === 'value' && prev.w.endsWith("'s"));
  }

  protected relNoun(rel: RelInfo, dir: 'forward' | 'reverse', i: number): void {
    const far = this.nps.find((n) => n.pos === i)!;
    // "Ada Byrne's mentees": the possessor just before; else "mentees of Ada Byrne"
    const prev = this.items[i - 1];
    const possessor = prev?.k === 'value' && prev.w.endsWith("'s") ? this.nps.find((n) => n.pos === i - 1) : undefined;
    const start = possessor ?? this.npAfter(i);
    if (!start) return;
    const startTable = dir === 'forward' ? rel.source : rel.target;
    this.setTable(start, startTable);
    far.linked = start.linked = true;
    this.hop(rel, dir, start.node, far.node, undefined);
  }

  /** The relation named as a thing ("mentor connections of X"): its direction is open on a self-relation. */
  protected namedRel(rel: RelInfo, i: number): void {
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
  /**
   * A negated verb that names a table ("never inspected", "nobody has inspected"): no row of that
   * table for the noun it is said of (the subject, or with "nobody" the object).
   */
  protected eventNegation(): void {
    this.items.forEach((it, i) => {
      if (it.k !== 'w' || this.used.has(i)) return;
      const lemma = verbLemma(it.w);
      if (lemma === it.w && !it.w.endsWith('s')) return; // not an inflected verb form
      const stem = lemma.replace(/e$/, '');
      // the table the verb names: its noun ("inspect" → inspects), or a nominalisation ("feeding", "observation", "payment")
      const names = [lemma, `${lemma}ing`, `${stem}ing`, `${stem}ation`, `${lemma}ion`, `${lemma}ment`];
      const table = [...this.lx.schema.tables.values()].find((t) => t.words.length === 1 && names.includes(t.words[0]));
      if (!table || this.nps.some((n) => n.node >= 0 && this.q.nodes[n.node].table === table.id)) return;
      const nobody = [...this.nps].reverse().find((n) => n.pos < i && n.kind === 'pron' && n.neg);
      if (!nobody && !this.negatedBefore(i, 4)) return;
      const said = [...this.nps].reverse().find((n) => n.pos < i && n.node >= 0 && n !== nobody);
      if (!said) return;
      this.used.add(i);
      if (nobody) this.used.add(nobody.pos);
      const ev = this.node(table.id);
      this.connect(ev, [said.node], true);
      this.eventNodes.add(ev);
    });
  }

  protected readonly eventNodes = new Set<number>();

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
