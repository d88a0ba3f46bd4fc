/**
 * A view brought up to date by a change (documents removed, documents added after every other)
 * in proportion to the change: the docs array, the BM25 statistics (doc count, total length,
 * document frequencies, longest document, multi-valued and non-ASCII flags), the term → documents
 * lists, document numbers and the keyword fields' global ordinals are adjusted, not dropped for a
 * rebuild over every document at the next search. The result equals a rebuild
 * (view-delta.spec.ts); only the df maps' key order may differ (no reader depends on it for
 * answers: expansions sort, sums over span terms aside, see DESIGN.md).
 */
import type { Doc, FieldStats, IndexView } from './doc';
import { carryPostings, indexOfSeq, without } from './candidates';
import { addDoc } from './scoring';

/** `removed`: documents of `ix.docs`; `added`: new documents, in `_seq_no` order, after all of them. */
export function applyDelta(ix: IndexView, removed: readonly Doc[], added: readonly Doc[]): void {
  if (!removed.length && !added.length) return;
  const old = ix.docs;
  // the removed documents found by binary search (the array is in _seq_no order), copied around in slices
  // (a new array: the caches of derived state are keyed by it, and a reader holding the old one keeps it)
  const at = removed.map((d) => indexOfSeq(old, d)).filter((i) => i >= 0);
  let docs: Doc[];
  if (at.length) {
    docs = without(old, at);
    for (const d of added) docs.push(d);
  } else docs = old.concat(added);
  (ix as { docs: Doc[] }).docs = docs;
  for (const [k, s] of [...ix.stats]) {
    const ok = k.startsWith('kw\u0000') ? keywordDelta(s, k.slice(3), removed, added) : textDelta(s, k.slice(0, k.indexOf('\u0000')), k.slice(k.indexOf('\u0000') + 1), removed, added);
    if (!ok) ix.stats.delete(k);
  }
  carryPostings(old, docs, removed, added);
  if (ix.ordinals) for (const [path, o] of ix.ordinals) {
    const kept = removed.length ? dropOrdinals(ix, o, removed, path) : o;
    if (kept) ix.ordinals.set(path, mergeOrdinals(kept, added, path));
    else ix.ordinals.delete(path); // rebuilt at the next terms aggregation
  }
}

/**
 * The ordinals without the values no document holds any more, known from the field's keyword
 * statistics (their df, already adjusted by this change); null when those are not built.
 */
function dropOrdinals(ix: IndexView, o: { terms: string[]; bytes: number }, removed: readonly Doc[], path: string): { terms: string[]; bytes: number } | null {
  const s = ix.stats.get(`kw\u0000${path}`);
  if (!s) return null;
  const gone = new Set<string>();
  for (const d of removed) for (const v of d.values(path)) {
    const t = String(v);
    if (!s.df.has(t)) gone.add(t);
  }
  if (!gone.size) return o;
  const terms = o.terms.filter((t) => !gone.has(t));
  return { terms, bytes: [...gone].reduce((b, t) => b - (2 * t.length + 40), o.bytes) };
}

function textDelta(s: FieldStats, path: string, analyzer: string, removed: readonly Doc[], added: readonly Doc[]): boolean {
  if (!s.lens) return false;
  for (const d of removed) addDoc(s, d, path, analyzer, -1);
  for (const d of added) addDoc(s, d, path, analyzer, 1);
  return true;
}

function keywordDelta(s: FieldStats, path: string, removed: readonly Doc[], added: readonly Doc[]): boolean {
  const step = (d: Doc, by: 1 | -1) => {
    const vals = d.values(path);
    if (!vals.length) return;
    s.docCount += by;
    s.sumLen += by * vals.length;
    for (const v of new Set(vals.map(String))) {
      const n = (s.df.get(v) ?? 0) + by;
      if (n > 0) s.df.set(v, n); else s.df.delete(v);
    }
  };
  for (const d of removed) step(d, -1);
  for (const d of added) step(d, 1);
  return true;
}

/** The sorted distinct values with the added documents' new ones merged in (one pass over the old). */
function mergeOrdinals(o: { terms: string[]; bytes: number }, added: readonly Doc[], path: string): { terms: string[]; bytes: number } {
  const fresh = new Set<string>();
  for (const d of added) for (const v of d.values(path)) {
    const t = String(v);
    if (!has(o.terms, t)) fresh.add(t);
  }
  if (!fresh.size) return o;
  const add = [...fresh].sort();
  const terms: string[] = [];
  let i = 0;
  for (const t of add) {
    while (i < o.terms.length && o.terms[i] < t) terms.push(o.terms[i++]);
    terms.push(t);
  }
  while (i < o.terms.length) terms.push(o.terms[i++]);
  return { terms, bytes: add.reduce((b, t) => b + 2 * t.length + 40, o.bytes) };
}

function has(sorted: string[], t: string): boolean {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid] < t) lo = mid + 1; else hi = mid;
  }
  return lo < sorted.length && sorted[lo] === t;
}
