/**
 * The grammar's second half of the graph: conditions. Searched text, comparisons of numbers,
 * years, decades and dates (with the column each compares), flags, "living", negated participles.
 */
import { DbError } from '@mmdb/core';
import type { Item } from './lex';
import type { ColRef, Cond, Rhs } from './ir';
import type { ColInfo } from './schema';
import { adjectiveBase, columnForDim, columnForWord, dimOf } from './dims';
import { CMP } from './parse-graph';
import { RelationParser } from './parse-relations';
import { singular, verbLemma } from './words';

/** Aggregate words before a column compared with a number: a HAVING. */
const AGG_FN: Record<string, 'avg' | 'sum' | 'max' | 'min'> = { average: 'avg', mean: 'avg', avg: 'avg', total: 'sum', sum: 'sum', maximum: 'max', minimum: 'min' };

/** Column words of a deadline (general words of the language). */
const DUE = ['due', 'deadline', 'expected', 'scheduled', 'planned', 'expiry', 'expires'];

export abstract class ConditionParser extends RelationParser {
  protected conditions(): void {
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
        // "whose email contains x": the column named just before the searching verb
        const named = [i - 2, i - 3].map((j) => this.items[j]).find((x) => x?.k === 'col' && x.cols.some((c) => c.ty === 'str'));
        const near = named && named.k === 'col' ? this.refFor(this.pickCol(named.cols.filter((c) => c.ty === 'str'), this.nearestNode(i)), this.nearestNode(i)) : this.nearestFts(i, it.col);
        if (named) this.used.add(this.items.indexOf(named));
        if (!near) throw new DbError('validation_failed', 'no searchable text column for the searched words', { not_understood: [] });
        this.q.nodes[near.node].conds.push({ kind: 'like', ref: near, rhs: { slot: it.slot, part: 0 } });
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
      // a flag names rows ("active sailors"), unless the question asks it ("is X an active sailor?")
      if (it.k === 'col' && it.cols[0].ty === 'bool' && !this.has('vs', 'versus', 'each', 'per') && !['is', 'are', 'was', 'were'].includes(this.w(0))) {
        const ref = this.refFor(this.pickCol(it.cols, this.nearestNode(i)), this.nearestNode(i));
        this.q.nodes[ref.node].conds.push({ kind: 'cmp', ref, op: '=', rhs: { lit: this.w(i - 1) === 'non' || this.negatedBefore(i, 2) ? 0 : 1 } });
        this.used.add(i);
      }
      if (it.k === 'w' && /^(returned|paid|closed|finished|completed|shipped|delivered|arrived|submitted|cancelled|canceled|answered|resolved)$/.test(it.w)) {
        const c = this.graphCols(this.q.focus).find((x) => !x.isKey && x.words[0] && it.w.startsWith(x.words[0].slice(0, -1)) && x.ty !== 'bool');
        if (c) {
          const ref = this.refFor(c, this.q.focus);
          this.q.nodes[ref.node].conds.push({ kind: 'null', ref, not: !this.negatedBefore(i, 5) });
          this.used.add(i);
          // "returned late" / "paid early": that date against the row's due date
          const when = this.w(i + 1);
          const due = [...this.lx.schema.table(this.q.nodes[ref.node].table).cols.values()].find((x) => x.isDate && x.words.some((w) => DUE.includes(w)));
          if (due && (when === 'late' || when === 'early' || when === 'overdue')) {
            this.q.nodes[ref.node].conds.push({ kind: 'colcmp', ref, op: when === 'early' ? '<' : '>', other: { node: ref.node, col: due.name } });
          }
        }
      }
    }
  }

  protected nearestFts(i: number, col?: string): ColRef | undefined {
    // the searched rows are a noun's ("logs … that mention"), not an already named value's
    const nps = [...this.nps].filter((n) => n.node >= 0).sort((a, b) => Number(a.kind === 'value') - Number(b.kind === 'value') || Math.abs(a.pos - i) - Math.abs(b.pos - i) || b.pos - a.pos);
    for (const np of nps) {
      const t = this.lx.schema.table(this.q.nodes[np.node].table);
      const f = col ? (t.cols.has(col) ? col : undefined) : t.fulltext[0];
      if (f) return { node: np.node, col: f };
    }
    // a full-text table the question does not name, only when it joins the focus directly
    for (const l of this.lx.schema.linksOf(this.q.nodes[this.q.focus].table)) {
      const t = this.lx.schema.table(l.child === this.q.nodes[this.q.focus].table ? l.parent : l.child);
      const f = col ? (t.cols.has(col) ? col : undefined) : t.fulltext[0];
      if (f) return { node: this.nodeFor(t.id, this.q.focus), col: f };
    }
    return undefined;
  }

  /** The comparison a literal takes part in, and the column it compares. */
  protected literal(i: number): void {
    const it = this.items[i] as Extract<Item, { k: 'num' | 'year' | 'decade' | 'date' }>;
    let op: '>' | '>=' | '<' | '<=' | '=' | 'between' | 'in' = 'in';
    let opStart = i;
    const at = this.w(i - 1) === 'a' || this.w(i - 1) === 'an' ? i - 1 : i; // "fewer than a hundred"
    for (const [ws, o] of CMP) {
      const s = at - ws.length;
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
    // "between A and B", "from A to B", "A through B"
    const TO = ['and', 'to', 'through', 'until', 'till'];
    const opener = (j: number) => this.w(j) === 'between' || this.w(j) === 'from';
    if ((opener(i - 1) && TO.includes(this.w(i + 1)) && this.items[i + 2]?.k === it.k) || (TO.includes(this.w(i - 1)) && opener(i - 3) && this.items[i - 2]?.k === it.k)) op = 'between';
    else if (this.w(i - 1) === 'between') op = 'between';
    let hi: typeof it | undefined;
    if (op === 'between' && TO.includes(this.w(i + 1)) && this.items[i + 2] && this.items[i + 2].k === it.k) hi = this.items[i + 2] as typeof it;
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
    if (it.k === 'num' && (this.w(i - 1) === 'top' || this.w(i - 1) === 'first' || (op === 'in' && after?.k === 'table') || adjectiveBase(this.w(i + 1)) || this.w(i + 1) === 'most' || this.w(i + 1) === 'least' || this.w(i + 1) === 'highest' || this.w(i + 1) === 'lowest')) {
      this.q.limit = { slot: it.slot, part: 0 };
      return;
    }
    // "older than 92 when they died": the age at death (death minus birth); "older than 80": the clock's year minus birth
    if (it.k === 'num' && this.w(i - 1) === 'than' && (this.w(i - 2) === 'older' || this.w(i - 2) === 'younger')) {
      const near = this.nearestNode(opStart);
      const cols = [...this.lx.schema.table(this.q.nodes[near].table).cols.values()].filter((c) => c.ty === 'i64');
      const birth = cols.find((c) => c.words.some((w) => w === 'birth' || w === 'born'));
      const death = cols.find((c) => c.words.some((w) => w === 'death' || w === 'died'));
      const cmp = this.w(i - 2) === 'older' ? '>' as const : '<' as const;
      const rhs: Rhs = { slot: it.slot, part: 0 };
      if (birth && death && this.has('died', 'death', 'dead')) {
        this.q.nodes[near].conds.push({ kind: 'diff', ref: { node: near, col: death.name }, minus: { node: near, col: birth.name }, op: cmp, rhs });
        return;
      }
      if (birth && this.opts.clock !== undefined) {
        this.q.nodes[near].conds.push({ kind: 'age', ref: { node: near, col: birth.name }, year: { slot: this.opts.clock, part: 0 }, op: cmp, rhs });
        return;
      }
    }
    const ref = this.compared(i, opStart, op, it);
    // "with an average price above 30": a condition on the groups, not the rows
    const aggAt = [opStart - 2, opStart - 3].find((j) => AGG_FN[this.w(j)] !== undefined);
    if (ref && aggAt !== undefined && this.items[aggAt + 1]?.k === 'col' && op !== 'in' && op !== 'between') {
      this.q.having = { fn: AGG_FN[this.w(aggAt)], ref, op: op as '>' | '>=' | '<' | '<=' | '=', rhs: { slot: it.slot, part: 0 } };
      this.used.add(aggAt);
      return;
    }
    const shown = it.k === 'num' || it.k === 'year' ? String(it.n) : this.w(opStart - 1) + ' …';
    if (!ref) throw new DbError('validation_failed', `cannot tell what "${shown}" is compared with`, { not_understood: [shown] });
    const c = this.lx.schema.col(this.q.nodes[ref.node].table, ref.col)!;
    const isDateCol = c.isDate;
    // parts of each slot kind: year [n, lo, hi]; decade [y0, y1, lo, hi]; date [lo, hi]
    const lo = (x: typeof it): Rhs => x.k === 'date' ? { slot: x.slot, part: 0 } : x.k === 'year' ? { slot: x.slot, part: isDateCol ? 1 : 0 } : x.k === 'decade' ? { slot: x.slot, part: isDateCol ? 2 : 0 } : { slot: x.slot, part: 0 };
    const hiEx = (x: typeof it): Rhs | undefined => x.k === 'date' ? { slot: x.slot, part: 1 } : x.k === 'year' && isDateCol ? { slot: x.slot, part: 2 } : x.k === 'decade' && isDateCol ? { slot: x.slot, part: 3 } : undefined;
    const hiIn = (x: typeof it): Rhs => x.k === 'decade' ? { slot: x.slot, part: 1 } : lo(x);
    const cmp = (o: '=' | '<' | '<=' | '>' | '>=', r: Rhs): Cond => ({ kind: 'cmp', ref, op: o, rhs: r });
    const conds = this.q.nodes[ref.node].conds;
    if (op === 'between') {
      const h = hiEx(hi!);
      conds.push(cmp('>=', lo(it)), h ? cmp('<', h) : cmp('<=', hiIn(hi!)));
      return;
    }
    const one = (x: typeof it): Cond[] => {
      const range = hiEx(x);
      if (op === 'in' || op === '=') return range ? [cmp('>=', lo(x)), cmp('<', range)] : x.k === 'decade' ? [cmp('>=', lo(x)), cmp('<=', hiIn(x))] : [cmp('=', lo(x))];
      if (op === '>') return [range ? cmp('>=', range) : cmp('>', hiIn(x))];
      if (op === '<=') return [range ? cmp('<', range) : cmp('<=', hiIn(x))];
      return [cmp(op as '<' | '>=', lo(x))];
    };
    // "in 1999 or 2000": either literal
    const alts = [one(it)];
    for (let j = i + 1; this.w(j) === 'or' && this.items[j + 1]?.k === it.k; j += 2) {
      alts.push(one(this.items[j + 1] as typeof it));
      this.used.add(j + 1);
    }
    if (alts.length === 1) conds.push(...alts[0]);
    else conds.push({ kind: 'any', ref, alts });
  }

  havingTable?: string;

  /** A table's own date: the date column named after the table ("voyage_date" of voyages), else a required one, else the first. */
  protected mainDate(table: string): ColInfo | undefined {
    const t = this.lx.schema.table(table);
    const dates = [...t.cols.values()].filter((c) => c.isDate);
    return dates.find((x) => x.words.some((w) => t.words.includes(w))) ?? dates.find((x) => x.required) ?? dates[0];
  }

  /** The column a literal is compared with: a column named beside it, a verb, a unit or the kind of literal. */
  protected compared(i: number, opStart: number, op: string, it: Extract<Item, { k: 'num' | 'year' | 'decade' | 'date' }>): ColRef | undefined {
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
    // "how many crossings … in 2020": the answered rows' own date, when they are events (no display column)
    const focusTable = this.q.nodes[this.q.focus].table;
    const focusDate = !this.lx.schema.labelOf(focusTable) ? this.mainDate(focusTable) : undefined;
    if (focusDate && (it.k === 'date' || it.k === 'year' || it.k === 'decade') && op === 'in') return { node: this.q.focus, col: focusDate.name };
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
}
