/**
 * The grammar's relations: verbs link subject and object (passives, inverted questions,
 * relative clauses), relation nouns hop in their fixed direction ("mentees of X", "X's captain"),
 * a relation named as a thing is ambiguous on a self-relation, and a negated verb naming a table
 * is "no row of that table".
 */
import type { RelInfo } from './schema';
import { GraphParser, type NP } from './parse-graph';
import { AUX, verbLemma } from './words';

/** Nouns that make a relation word a thing rather than a verb ("mentor connections"). */
const NOUN_USE = new Set(['connection', 'connections', 'relationship', 'relationships', 'link', 'links', 'relation', 'relations', 'network', 'edges', 'edge']);

export abstract class RelationParser extends GraphParser {
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
        const relClause = prev2 && before && (before.kind === 'value' || (before.kind === 'pron' && !['who', 'whom', 'what'].includes(this.w(before.pos)))) && before.pos - prev2.pos <= 3 && (prev2.kind === 'table' || prev2.kind === 'pron' || prev2.kind === 'relnoun')
          // "the ships X commands", "the ships that X commands" (an object relative: a name right after that/which)
          && !this.words.slice(prev2.pos + 1, before.pos).some((x) => x === 'who' || ((x === 'that' || x === 'which') && before.kind !== 'value'))
          && !this.items.slice(prev2.pos + 1, before.pos).some((x) => x.k === 'rel')
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

}
