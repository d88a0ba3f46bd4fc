/**
 * Lexing a question: tokens become items (tables, columns, values, relations, numbers, dates,
 * quoted or searched text). Every literal is a slot; the items with slots blanked are the
 * question's shape, the intent cache's key.
 */
import type * as chronoType from 'chrono-node';
import type { JsonValue } from '@mmdb/core';
import type { ColInfo, RelInfo } from './schema';
import type { Lexicon, ValueHit } from './lexicon';
import { isNumberWord, MONTHS, numberWords, singular, STOP } from './words';

let chronoMod: typeof chronoType | undefined;
/** chrono-node, loaded at its first use rather than with the server (words.ts `nlp`, issue 25 §2). */
function chrono(): typeof chronoType {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (chronoMod ??= require('chrono-node') as typeof chronoType);
}

export type Item =
  /** A plain word; `cap` when capitalized inside the sentence (a name the lexicon did not know). */
  | { readonly k: 'w'; readonly w: string; readonly cap?: boolean }
  | { readonly k: 'table'; readonly t: string; readonly w: string }
  | { readonly k: 'col'; readonly cols: readonly ColInfo[]; readonly w: string }
  | { readonly k: 'value'; readonly hits: readonly ValueHit[]; readonly slot: number; readonly w: string }
  | { readonly k: 'num'; readonly n: number; readonly slot: number; readonly money?: boolean }
  /** a year: params [n, first day, first day of the next year] */
  | { readonly k: 'year'; readonly n: number; readonly slot: number }
  /** a decade: params [first year, last year, first day, first day after] */
  | { readonly k: 'decade'; readonly slot: number }
  /** a date range: params [first day, first day after] */
  | { readonly k: 'date'; readonly slot: number; readonly gran: string }
  /** searched text: params ["%text%"]; `col` when the question names the field */
  | { readonly k: 'text'; readonly slot: number; readonly col?: string }
  | { readonly k: 'rel'; readonly w: string; readonly verbs: ReadonlyArray<{ rel: RelInfo; subject: 'source' | 'target' }>; readonly nouns: ReadonlyArray<{ rel: RelInfo; dir: 'forward' | 'reverse' }>; readonly named: readonly RelInfo[] };

export interface Lexed {
  readonly items: Item[];
  /** Parameters of each slot, in slot order. */
  readonly slots: JsonValue[][];
  readonly shape: string;
  /** The last slot: the clock ([year, today]) for "older than 80", never part of the shape. */
  readonly clock: number;
}

const SEASONS: Record<string, [number, number]> = { spring: [3, 6], summer: [6, 9], autumn: [9, 12], fall: [9, 12], winter: [12, 15] };
const HOLIDAYS: Record<string, [number, number]> = {
  'christmas eve': [12, 24], christmas: [12, 25], 'christmas day': [12, 25], "new year's eve": [12, 31], "new year's day": [1, 1],
  halloween: [10, 31], "valentine's day": [2, 14],
};
const FT_TRIGGERS = new Set(['mention', 'mentions', 'mentioning', 'mentioned', 'containing', 'contains', 'contain', 'say', 'says', 'saying', 'discuss', 'discusses', 'discussing']);
const FT_ABOUT = new Set(['talk', 'talks', 'talking', 'complain', 'complains', 'complaining', 'complaint', 'complaints', 'rave', 'raves', 'raving', 'discussion']);
const FT_SKIP = new Set(['the', 'a', 'an', 'both', 'word', 'words', 'phrase', 'term', 'their', 'its', 'of']);
const FT_STOP = new Set(['and', 'or', 'in', 'from', 'by', 'that', 'who', 'which', 'with', 'but', 'than', 'during', 'since', 'before', 'after']);

/** Words that compare or place in time before they could name a column. */
const PREPOSITIONS = new Set(['since', 'before', 'after', 'over', 'under', 'above', 'below', 'until', 'during', 'between', 'through']);

const iso = (y: number, m: number, d: number) => new Date(Date.UTC(y, m - 1, d)).toISOString().slice(0, 10);
const dayAfter = (s: string) => new Date(Date.parse(s + 'T00:00:00Z') + 86_400_000).toISOString().slice(0, 10);

/** Raw tokens with their original spelling; quoted strings are single tokens. */
function rawTokens(nl: string): Array<{ t: string; raw: string; quoted?: boolean }> {
  const out: Array<{ t: string; raw: string; quoted?: boolean }> = [];
  const re = /(^|[\s(])(['"“‘])(.+?)(['"”’])(?=[\s?.,!)]|$)|\$?\d+(?:,\d{3})*(?:\.\d+)?s?|[A-Za-z0-9]+(?:['’][A-Za-z]+)*(?:-[A-Za-z0-9]+)*/g;
  for (const m of nl.replace(/\([^)]*\)/g, ' ').replace(/\b(non)-(?=[a-z])/gi, '$1 ').matchAll(re)) {
    if (m[3] !== undefined) out.push({ t: m[3].toLowerCase(), raw: m[3], quoted: true });
    else out.push({ t: m[0].toLowerCase().replace(/’/g, "'"), raw: m[0] });
  }
  return out;
}

/**
 * A searched text's slot: the LIKE pattern (part 0, for a column without a full-text field) and
 * the structured full-text query (part 1: the words as a phrase, for `fts_search`).
 */
const searched = (text: string): JsonValue[] => [`%${text}%`, { phrase: text }];

export function lex(nl: string, lx: Lexicon, now: Date): Lexed {
  const toks = rawTokens(nl);
  const words = toks.map((x) => x.t);
  const items: Item[] = [];
  const slots: JsonValue[][] = [];
  const slot = (p: JsonValue[]) => slots.push(p) - 1;
  const yearIn = (from: number): number | undefined => {
    for (let j = from; j < words.length; j++) if (/^\d{4}$/.test(words[j])) return Number(words[j]);
    return undefined;
  };
  let i = 0;
  let ftPending = false;
  while (i < toks.length) {
    const w = words[i];
    const raw = toks[i].raw;
    if (toks[i].quoted) {
      items.push({ k: 'text', slot: slot(searched(toks[i].raw)) });
      i++;
      continue;
    }
    // searched words after "mention", "talk about", "uses the word"
    if (ftPending && !STOP.has(w) && !FT_SKIP.has(w)) {
      const term: string[] = [];
      while (i < toks.length && !FT_STOP.has(words[i]) && term.length < 4) term.push(toks[i++].raw);
      items.push({ k: 'text', slot: slot(searched(term.join(' ').toLowerCase())) });
      ftPending = words[i] === 'and' && items.some((x) => x.k === 'w' && x.w === 'both');
      if (ftPending) i++;
      continue;
    }
    const afterTable = items.length > 0 && items[items.length - 1].k === 'table';
    if (FT_TRIGGERS.has(w) || (w === 'about' && i > 0 && (FT_ABOUT.has(words[i - 1]) || afterTable)) || ((w === 'word' || w === 'phrase') && !ftPending)) {
      items.push({ k: 'w', w: FT_TRIGGERS.has(w) ? 'mention' : w });
      ftPending = true;
      i++;
      continue;
    }
    if (ftPending && (STOP.has(w) || FT_SKIP.has(w))) {
      items.push({ k: 'w', w });
      i++;
      continue;
    }
    // "with Harbor in the title"
    if (w === 'with' && i + 3 < words.length && words[i + 2] === 'in' && /^(the|its|their)$/.test(words[i + 3])) {
      const c = i + 4 < words.length ? lx.columnsAt(words, i + 4) : undefined;
      const strCol = c?.[0].find((x) => x.ty === 'str');
      if (c && strCol && !lx.valueAt(words, i + 1)) {
        items.push({ k: 'w', w: 'with' }, { k: 'text', slot: slot(searched(words[i + 1])), col: strCol.name });
        i += 4 + c[1];
        continue;
      }
    }
    // dates
    const hol2 = `${w} ${words[i + 1] ?? ''}`;
    const hol = HOLIDAYS[hol2] ? [hol2, 2] as const : HOLIDAYS[w] ? [w, 1] as const : undefined;
    if (hol) {
      const y = /^\d{4}$/.test(words[i + hol[1]] ?? '') ? Number(words[i + hol[1]]) : now.getUTCFullYear();
      const [m, d] = HOLIDAYS[hol[0]];
      const lo = iso(y, m, d);
      items.push({ k: 'date', slot: slot([lo, dayAfter(lo)]), gran: 'day' });
      i += hol[1] + (/^\d{4}$/.test(words[i + hol[1]] ?? '') ? 1 : 0);
      continue;
    }
    if (SEASONS[w] && /^\d{4}$/.test(words[i + 1] ?? '')) {
      const y = Number(words[i + 1]);
      const [a, b] = SEASONS[w];
      items.push({ k: 'date', slot: slot([iso(y, a, 1), iso(y, b, 1)]), gran: 'season' });
      i += 2;
      continue;
    }
    if ((w === 'first' || w === 'last') && words[i + 1] === 'week' && words[i + 2] === 'of' && /^\d{4}$/.test(words[i + 3] ?? '')) {
      const y = Number(words[i + 3]);
      items.push({ k: 'date', slot: slot(w === 'first' ? [iso(y, 1, 1), iso(y, 1, 8)] : [iso(y, 12, 25), iso(y + 1, 1, 1)]), gran: 'week' });
      i += 4;
      continue;
    }
    const mi = MONTHS.indexOf(w);
    if (mi >= 0 && (w !== 'may' || /^\d/.test(words[i + 1] ?? ''))) {
      const next = words[i + 1] ?? '';
      if (/^\d{4}$/.test(next)) {
        const y = Number(next);
        items.push({ k: 'date', slot: slot([iso(y, mi + 1, 1), iso(mi === 11 ? y + 1 : y, mi === 11 ? 1 : mi + 2, 1)]), gran: 'month' });
        i += 2;
        continue;
      }
      if (/^\d{1,2}(st|nd|rd|th)?$/.test(next)) {
        const d = parseInt(next, 10);
        const hasYear = /^\d{4}$/.test(words[i + 2] ?? '');
        const y = hasYear ? Number(words[i + 2]) : yearIn(i + 2) ?? now.getUTCFullYear();
        const lo = iso(y, mi + 1, d);
        items.push({ k: 'date', slot: slot([lo, dayAfter(lo)]), gran: 'day' });
        i += hasYear ? 3 : 2;
        continue;
      }
      if (!/^\d/.test(next)) {
        const y = yearIn(i + 1) ?? now.getUTCFullYear();
        items.push({ k: 'date', slot: slot([iso(y, mi + 1, 1), iso(mi === 11 ? y + 1 : y, mi === 11 ? 1 : mi + 2, 1)]), gran: 'month' });
        i += 1;
        continue;
      }
    }
    if (/^\d{4}-\d{2}-\d{2}$/.test(w)) {
      items.push({ k: 'date', slot: slot([w, dayAfter(w)]), gran: 'day' });
      i++;
      continue;
    }
    // "in the last 30 days", "over the past 3 months": a window ending today
    const span = /^(days?|weeks?|months?|years?)$/.exec(words[i + 2] ?? '');
    if ((w === 'last' || w === 'past') && /^\d+$/.test(words[i + 1] ?? '') && span) {
      const n = Number(words[i + 1]);
      const unit = span[1].replace(/s$/, '');
      const d = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
      const today = d.toISOString().slice(0, 10);
      if (unit === 'day') d.setUTCDate(d.getUTCDate() - n + 1);
      else if (unit === 'week') d.setUTCDate(d.getUTCDate() - 7 * n + 1);
      else if (unit === 'month') d.setUTCMonth(d.getUTCMonth() - n);
      else d.setUTCFullYear(d.getUTCFullYear() - n);
      items.push({ k: 'date', slot: slot([d.toISOString().slice(0, 10), dayAfter(today)]), gran: `last_${unit}s` });
      i += 3;
      continue;
    }
    if ((w === 'last' || w === 'this' || w === 'next' || w === 'past') && (words[i + 1] === 'year' || words[i + 1] === 'month' || words[i + 1] === 'week') || w === 'today' || w === 'yesterday') {
      const phrase = w === 'today' || w === 'yesterday' ? w : `${w === 'past' ? 'last' : w} ${words[i + 1]}`;
      const r = chrono().parse(phrase, now)[0];
      if (r) {
        const d = r.start.date();
        const unit = phrase.split(' ')[1] ?? 'day';
        const y = d.getUTCFullYear();
        const m = d.getUTCMonth() + 1;
        let range: [string, string];
        if (unit === 'year') range = [iso(y, 1, 1), iso(y + 1, 1, 1)];
        else if (unit === 'month') range = [iso(y, m, 1), iso(m === 12 ? y + 1 : y, m === 12 ? 1 : m + 1, 1)];
        else if (unit === 'week') {
          const lo = iso(y, m, d.getUTCDate());
          range = [lo, new Date(Date.parse(lo + 'T00:00:00Z') + 7 * 86_400_000).toISOString().slice(0, 10)];
        } else range = [iso(y, m, d.getUTCDate()), dayAfter(iso(y, m, d.getUTCDate()))];
        items.push({ k: 'date', slot: slot(range), gran: `rel_${unit}` });
        i += w === 'today' || w === 'yesterday' ? 1 : 2;
        continue;
      }
    }
    // values (names, categories)
    const v = lx.valueAt(words, i);
    if (v && acceptValue(v, toks.slice(i, i + v[1]).map((x) => x.raw), lx)) {
      items.push({ k: 'value', hits: v[0], slot: slot([v[0][0].value]), w: words.slice(i, i + v[1]).join(' ') });
      i += v[1];
      continue;
    }
    // a part of one name, in capitals and not a word the schema knows ("Harbour" of "Harbour Office")
    const capsRun = (n: number) => toks.slice(i, i + n).every((x) => /^[A-Z]/.test(x.raw) && !x.quoted) && !STOP.has(w) && !lx.tableAt(words, i) && !lx.columnsAt(words, i) && i > 0;
    const part = capsRun(1) ? lx.partialAt(words, i, capsRun) : undefined;
    if (part) {
      items.push({ k: 'value', hits: part[0], slot: slot([part[0][0].value]), w: words.slice(i, i + part[1]).join(' ') });
      i += part[1];
      continue;
    }
    // numbers
    const dec = /^(\d{3})0s$/.exec(w);
    if (dec) {
      const y = Number(dec[1]) * 10;
      items.push({ k: 'decade', slot: slot([y, y + 9, iso(y, 1, 1), iso(y + 10, 1, 1)]) });
      i++;
      continue;
    }
    const num = /^\$?(\d+(?:,\d{3})*(?:\.\d+)?)$/.exec(raw);
    if (num) {
      const n = Number(num[1].replace(/,/g, ''));
      const money = raw.startsWith('$') || /^(dollars?|usd|euros?|pounds?|cents?)$/.test(words[i + 1] ?? '');
      if (/^\d{4}$/.test(w) && n >= 1000 && n <= 2999 && !money) items.push({ k: 'year', n, slot: slot([n, iso(n, 1, 1), iso(n + 1, 1, 1)]) });
      else items.push({ k: 'num', n, slot: slot([n]), ...(money ? { money } : {}) });
      i++;
      continue;
    }
    const star = /^(\d+)-([a-z]+)$/.exec(w);
    if (star) {
      items.push({ k: 'num', n: Number(star[1]), slot: slot([Number(star[1])]) }, { k: 'w', w: singular(star[2]) });
      i++;
      continue;
    }
    if (isNumberWord(w) && !(w === 'one' && !isNumberWord(words[i + 1] ?? ''))) {
      let j = i;
      // "a hundred and five" is one number; "ten and twenty" are two
      while (j < words.length && (isNumberWord(words[j]) || (words[j] === 'and' && /^(hundred|thousand|million)$/.test(words[j - 1] ?? '') && isNumberWord(words[j + 1] ?? '')))) j++;
      const n = words[j - 1] === 'dozen' ? (j - 1 > i ? numberWords(words.slice(i, j - 1)) ?? 1 : 1) * 12 : numberWords(words.slice(i, j));
      if (n !== undefined) {
        items.push({ k: 'num', n, slot: slot([n]) });
        i = j;
        continue;
      }
    }
    // schema words
    const multi = lx.columnsAt(words, i);
    if (multi && multi[1] > 1 && !STOP.has(w)) {
      items.push({ k: 'col', cols: multi[0], w: words.slice(i, i + multi[1]).join(' ') });
      i += multi[1];
      continue;
    }
    const t = lx.tableAt(words, i);
    const edgeWord = t && t[1] === 1 && lx.schema.relations.some((r) => r.via === t[0]) && (lx.relVerbs(w).length > 0 || lx.relByName(w).length > 0);
    if (t && !edgeWord && !(t[1] === 1 && lx.relVerbs(w).length && !w.endsWith('s'))) {
      items.push({ k: 'table', t: t[0], w: words.slice(i, i + t[1]).join(' ') });
      i += t[1];
      continue;
    }
    const verbs = lx.relVerbs(w);
    const nouns = lx.relNouns(w);
    const named = lx.relByName(w);
    const c = STOP.has(w) || PREPOSITIONS.has(w) ? undefined : lx.columnsAt(words, i);
    if (c && !(c[1] === 1 && (verbs.length || nouns.length))) {
      items.push({ k: 'col', cols: c[0], w: words.slice(i, i + c[1]).join(' ') });
      i += c[1];
      continue;
    }
    if (verbs.length || nouns.length || named.length) {
      items.push({ k: 'rel', w, verbs, nouns, named });
      i++;
      continue;
    }
    items.push({ k: 'w', w: w.replace(/'s$/, ''), ...(i > 0 && /^[A-Z]/.test(raw) && raw !== 'I' ? { cap: true } : {}) });
    i++;
  }
  const clock = slot([now.getUTCFullYear(), now.toISOString().slice(0, 10)]);
  return { items, slots, shape: shapeOf(items), clock };
}

/** A single lowercase word names a category value only; a label value needs a capital letter. */
function acceptValue(v: [ValueHit[], number], raw: string[], lx: Lexicon): boolean {
  const capital = raw.some((r) => /^[A-Z0-9]/.test(r));
  const category = v[0].some((h) => lx.schema.col(h.table, h.column)?.isCategory);
  if (v[1] === 1) {
    const w = raw[0].toLowerCase();
    if (STOP.has(w) || /^\d+$/.test(w)) return false;
    if (!capital && (!category || lx.tablesFor(w).length > 0)) return false;
  } else if (!capital && !category) return false;
  return true;
}

export function shapeOf(items: readonly Item[]): string {
  return items
    .map((it) => {
      switch (it.k) {
        case 'w': return it.w;
        case 'table': return `T:${it.t}`;
        case 'col': return `C:${it.w}`;
        case 'value': return `V:${it.hits.map((h) => `${h.table}.${h.column}`).join('|')}`;
        case 'num': return it.money ? '$N' : 'N';
        case 'year': return 'Y';
        case 'decade': return 'D';
        case 'date': return `DT:${it.gran}`;
        case 'text': return `X${it.col ? ':' + it.col : ''}`;
        case 'rel': return `R:${it.w}`;
      }
    })
    .join(' ');
}
