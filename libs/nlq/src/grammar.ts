/**
 * The grammar: lexed items → query graph. Noun phrases (tables, values, pronouns, relation
 * nouns) become nodes; relation verbs link subject and object; other phrases link along
 * foreign keys (parse-graph.ts); comparisons, dates and flags become conditions
 * (parse-conditions.ts); counts, aggregates, grouping and superlatives come from general
 * words of the language (here). Anything it cannot place is reported, never guessed.
 */
import { DbError } from '@mmdb/core';
import type { Item } from './lex';
import type { Agg, ColRef, Query } from './ir';
import { adjectiveBase, columnForDim, columnForWord, dimOf, PLACE_WORDS } from './dims';
import { ConditionParser } from './parse-conditions';
import { FILLER, nounsIn, STOP } from './words';

export type { ParseOptions } from './parse-graph';

/** Words ranking by the column after them ('the highest price', 'the most pages'). */
const RANK_WORDS = ['most', 'least', 'highest', 'lowest', 'largest', 'smallest', 'greatest', 'fewest', 'maximum', 'minimum'];

/** Aggregate words a superlative may rank by ('the highest average price'). */
const RANKED_AGG = ['average', 'mean', 'total', 'sum', 'avg'];

export class Grammar extends ConditionParser {
  parse(items: Item[]): Query {
    this.items = [...items]; // the lexed items may be memoized: never change them in place
    this.words = items.map((it) => (it.k === 'w' ? it.w : it.k === 'rel' ? it.w : it.k === 'table' ? it.w : it.k === 'col' ? it.w : `<${it.k}>`));
    this.q = { nodes: [], links: [], focus: -1, out: { kind: 'rows', cols: [] } };
    this.nounPhrases();
    this.relations();
    this.chooseFocus();
    this.eventNegation();
    this.linkRest();
    this.conditions();
    this.answer();
    // a capitalized word nothing placed is a name this store does not know: never answer without it
    // so is a noun after "with"/"having"/"whose" that nothing placed ("sailors with expired licences"): a condition we cannot apply
    const nouns = nounsIn(this.words.filter((w) => !w.startsWith('<')).join(' '));
    const condNoun = (it: Item, i: number) => it.k === 'w' && !STOP.has(it.w) && !FILLER.has(it.w) && nouns.has(it.w)
      && [1, 2, 3].some((d) => ['with', 'having', 'whose', 'without'].includes(this.w(i - d)));
    const left = this.items.map((it, i) => [it, i] as const).filter(([it, i]) => !this.used.has(i) && (it.k !== 'w' || it.cap || condNoun(it, i)));
    if (left.length) {
      const what = left.map(([it, i]) => (it.k === 'value' ? it.w : this.words[i]));
      throw new DbError('validation_failed', `could not place ${what.map((w) => `"${w}"`).join(', ')} in the question`, { not_understood: what });
    }
    return this.q;
  }

  protected answer(): void {
    const q = this.q;
    const words = this.words;
    const focus = q.focus;
    const ftable = q.nodes[focus].table;
    const label = this.lx.schema.labelOf(ftable);
    const colItems = this.items.map((it, i) => [it, i] as const).filter(([it, i]) => it.k === 'col' && !this.used.has(i)) as Array<[Extract<Item, { k: 'col' }>, number]>;
    let isCount = /\bhow many\b|(?<!\bby )\bnumber of\b|^count\b|\bcount the\b|\bcount of\b/.test(words.join(' '));
    // "how many pages does X have": a number the row holds, not a count of rows
    const many = words.indexOf('many');
    if (many >= 0 && words[many - 1] === 'how' && this.items[many + 1]?.k === 'col' && (this.items[many + 1] as Extract<Item, { k: 'col' }>).cols.some((c) => c.ty === 'i64' || c.ty === 'f64')) isCount = false;
    // "which ship has the highest tonnage": the entity with it, not the value (a superlative below)
    const entityFirst = (i: number) => this.items.slice(0, i).some((x) => x.k === 'table') && (['which', 'who'].includes(words[0]) || words.slice(0, i).includes('with'));
    const aggWord = words.findIndex((w, i) => !this.used.has(i) && !(['highest', 'lowest', 'maximum', 'minimum'].includes(w) && entityFirst(i)) && ['average', 'mean', 'avg', 'total', 'sum', 'maximum', 'max', 'minimum', 'min', 'highest', 'lowest'].includes(w)
      && !adjectiveBase(words[i + 1] ?? '') && !((w === 'highest' || w === 'lowest') && (this.items[i + 1]?.k === 'table' || RANKED_AGG.includes(words[i + 1] ?? ''))));
    const sortedBy = (i: number) => ['sorted', 'ordered', 'sort', 'order', 'ranked', 'rank'].includes(words[i - 1] ?? '');
    const groupAt = words.findIndex((w, i) => w === 'per' || w === 'each' || w === 'vs' || w === 'versus' || (w === 'by' && this.items[i + 1]?.k === 'col' && !sortedBy(i)));
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
    // "each port with its number of ships": a count of other rows per answered entity
    const numberOf = words.findIndex((w, k) => (w === 'number' && words[k + 1] === 'of') || w === 'count');
    const countedNp = numberOf >= 0 ? this.nps.find((n) => n.pos > numberOf && n.node >= 0 && n.node !== focus && n.kind !== 'value') : undefined;
    if (this.groupFocus && !q.group && !agg && isCount && countedNp) {
      q.group = { ref: { node: focus, col: this.lx.schema.table(ftable).pk[0] }, entity: true };
      q.focus = countedNp.node;
    }
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
    if (q.having && q.having.fn !== 'count' && !q.group) {
      // "genres with an average price above 30": groups by the column named first
      const keyCol = colItems.find(([, i]) => !this.used.has(i));
      if (keyCol) {
        this.used.add(keyCol[1]);
        q.group = { ref: this.refFor(this.pickCol(keyCol[0].cols, focus), focus), entity: false, keyOnly: true };
      } else q.group = { ref: { node: focus, col: this.lx.schema.table(ftable).pk[0] }, entity: true, keyOnly: true };
    }
    if (q.having && this.havingTable) {
      const hn = this.havingTable === ftable && !q.group ? focus : this.nodeFor(this.havingTable, undefined);
      q.having = { ...q.having, ref: undefined };
      if (!q.group) {
        const keyCol = colItems.find(([, i]) => !this.used.has(i) && i < this.items.findIndex((x) => x.k === 'num' || x.k === 'year'));
        if (keyCol && hn === focus) {
          this.used.add(keyCol[1]);
          q.group = { ref: this.refFor(this.pickCol(keyCol[0].cols, focus), focus), entity: false, keyOnly: true };
        } else if (hn !== focus) {
          // "captains with more than 12 ships": the counted rows are the other table's, grouped by the answered entity
          q.group = { ref: { node: focus, col: this.lx.schema.table(ftable).pk[0] }, entity: true, keyOnly: true };
          q.focus = hn;
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
      } else if (sup.rankAgg && agg && aggRef) {
        // "which genre has the highest average price": groups ranked by the aggregate
        const key = colItems.find(([, i]) => !this.used.has(i) && i < aggWord);
        if (key) this.used.add(key[1]);
        q.group = q.group ?? (key ? { ref: this.refFor(this.pickCol(key[0].cols, focus), focus), entity: false, keyOnly: true } : { ref: { node: focus, col: this.lx.schema.table(ftable).pk[0] }, entity: true, keyOnly: true });
        q.order = { fn: agg, ref: aggRef, desc: sup.desc };
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
      const sortCol = colItems.find(([, i]) => !this.used.has(i) && this.w(i - 1) === 'by' && sortedBy(i - 1));
      if (q.order === undefined && sortCol) {
        this.used.add(sortCol[1]);
        q.order = { fn: q.out.kind === 'agg' ? q.out.fn : 'count', ref: q.out.kind === 'agg' ? q.out.ref : undefined, desc: this.orderWords() === 'desc' || this.has('descending') };
      }
      if (q.order === undefined && this.orderWords()) q.order = { fn: q.out.kind === 'agg' ? q.out.fn : 'count', ref: q.out.kind === 'agg' ? q.out.ref : undefined, desc: this.orderWords() === 'desc' };
      return;
    }
    if (agg) {
      q.out = { kind: 'agg', fn: agg, ref: aggRef };
      return;
    }
    if (isCount) {
      // "how many times was X sailed": the edge rows (events) of the hop, not the distinct rows they reach
      const times = words.findIndex((w, k) => w === 'times' && words[k - 1] === 'many');
      const via = times >= 0 ? this.live().find((n) => this.lx.schema.relations.some((r) => r.via === n.table)) : undefined;
      if (via) q.focus = via.id;
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
      const tcols = [...this.lx.schema.table(ftable).cols.values()].filter((x) => x.ty === 'str' && !x.isKey);
      const c = PLACE_WORDS.map((w) => tcols.find((x) => x.words.includes(w) || x.synonyms.includes(w))).find(Boolean);
      if (c) cols.push({ node: focus, col: c.name });
    }
    if (words[0] === 'when' && !cols.length) {
      // the column a verb names ("published", "open"), else the table's own date
      const tcols = [...this.lx.schema.table(ftable).cols.values()].filter((x) => x.isDate || x.ty === 'i64' || x.ty === 'timestamp');
      const byVerb = words.slice(1).map((w) => columnForWord(w, tcols)).find((x) => x && !x.isKey);
      const c = byVerb ?? this.mainDate(ftable);
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
    // a table with no display column (edge and event rows) answers with its own columns
    const own = !labelCol.length && !cols.length ? this.lx.schema.table(ftable).manifest.columns.filter((c) => c.ty !== 'vector').map((c) => ({ node: focus, col: c.name })) : [];
    q.out = { kind: 'rows', cols: [...labelCol, ...cols, ...own] };
    if (!q.order) {
      const ow = this.orderWords();
      const byCol = colItems.find(([, i]) => this.w(i - 1) === 'by' && sortedBy(i - 1));
      if (byCol) {
        q.order = { ref: this.refFor(this.pickCol(byCol[0].cols, focus), focus), desc: ow === 'desc' || this.has('descending', 'desc') };
        this.used.add(byCol[1]);
        q.out = { kind: 'rows', cols: q.out.kind === 'rows' ? q.out.cols.filter((c) => !(c.node === q.order!.ref!.node && c.col === q.order!.ref!.col)) : [] };
      }
    }
  }

  protected orderWords(): 'asc' | 'desc' | undefined {
    const s = this.words.join(' ');
    if (/\bhighest first\b|\bdescending\b|\blargest first\b|\bmost first\b/.test(s)) return 'desc';
    if (/\blowest first\b|\bascending\b|\bsmallest first\b/.test(s)) return 'asc';
    return undefined;
  }

  /** "the 5 most expensive", "cheapest", "oldest to newest", "the most ships", "most sailed". */
  protected superlative(focus: number): { ref?: ColRef; aggRef?: ColRef; desc: boolean; count?: boolean; countTable?: string; all?: boolean; sorted?: boolean; rankAgg?: boolean } | undefined {
    const words = this.words;
    for (let i = 0; i < words.length; i++) {
      const w = words[i];
      let base: string | undefined;
      let desc = true;
      if (w === 'by' && words[i + 1] === 'number' && words[i + 2] === 'of' && this.items[i + 3]?.k === 'table') {
        this.used.add(i + 3);
        return { desc: true, count: true, countTable: (this.items[i + 3] as Extract<Item, { k: 'table' }>).t };
      }
      // "opened first", "joined last": the earliest or latest by the column the verb names
      if ((w === 'first' || w === 'last') && i > 0) {
        const c = columnForWord(words[i - 1], [...this.lx.schema.table(this.q.nodes[focus].table).cols.values()]);
        if (c && (c.isDate || c.ty === 'i64' || c.ty === 'timestamp')) {
          if (this.items[i - 1]?.k === 'col') this.used.add(i - 1);
          return { ref: { node: focus, col: c.name }, desc: w === 'last' };
        }
      }
      if (['highest', 'lowest', 'largest', 'smallest', 'biggest', 'greatest', 'most', 'least'].includes(w) && RANKED_AGG.includes(words[i + 1] ?? '')) {
        return { desc: !['lowest', 'smallest', 'least'].includes(w), rankAgg: true };
      }
      // "the highest price", "the most pages": rank by that column
      const nextCol = this.items[i + 1];
      if (RANK_WORDS.includes(w) && nextCol?.k === 'col' && !this.used.has(i + 1)) {
        const c = this.pickCol(nextCol.cols, focus);
        if (c.ty === 'i64' || c.ty === 'f64' || c.isDate) {
          this.used.add(i + 1);
          const desc = !['least', 'lowest', 'smallest', 'fewest', 'minimum'].includes(w);
          // a column of related rows ranks by its average ("ships with the highest score" of their inspections)
          if (c.table !== this.q.nodes[focus].table) return { aggRef: this.refFor(c, focus), desc };
          return { ref: this.refFor(c, focus), desc };
        }
      }
      // "the most popular genre", "the most common city": the value with the most rows
      if ((w === 'most' || w === 'least') && ['popular', 'common', 'frequent', 'usual'].includes(words[i + 1] ?? '') && this.items[i + 2]?.k === 'col') {
        this.used.add(i + 1);
        return { desc: w === 'most', count: true };
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
