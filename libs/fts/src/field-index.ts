/**
 * The in-memory index of one (table, field): doc ordinals, field lengths and, per
 * term, a sorted posting list (doc ordinal, term frequency) in typed arrays.
 * It mirrors the F keyspace exactly: the participant feeds it every F key write of
 * every applied frame (and a full scan at open), so it is current the moment a
 * commit resolves. Positions stay in the store; phrase queries read them from a
 * snapshot.
 */

export class PostingList {
  docs = new Int32Array(4);
  tfs = new Int32Array(4);
  n = 0;
  /** An upper bound of the term frequency over the list (exact after inserts; may be stale-high after deletes). */
  maxTf = 0;

  /** Index of the first entry with doc ≥ target, searching from `from`. */
  seek(target: number, from = 0): number {
    const d = this.docs;
    let lo = from;
    let hi = this.n;
    // gallop first: most seeks land close by
    let step = 1;
    while (lo + step < hi && d[lo + step] < target) {
      lo += step;
      step *= 2;
    }
    hi = Math.min(hi, lo + step + 1);
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (d[mid] < target) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  set(doc: number, tf: number): void {
    if (tf > this.maxTf) this.maxTf = tf;
    const n = this.n;
    if (n === 0 || this.docs[n - 1] < doc) {
      this.grow(n + 1);
      this.docs[n] = doc;
      this.tfs[n] = tf;
      this.n = n + 1;
      return;
    }
    const i = this.seek(doc);
    if (i < n && this.docs[i] === doc) {
      this.tfs[i] = tf;
      return;
    }
    this.grow(n + 1);
    this.docs.copyWithin(i + 1, i, n);
    this.tfs.copyWithin(i + 1, i, n);
    this.docs[i] = doc;
    this.tfs[i] = tf;
    this.n = n + 1;
  }

  remove(doc: number): boolean {
    const i = this.seek(doc);
    if (i >= this.n || this.docs[i] !== doc) return false;
    this.docs.copyWithin(i, i + 1, this.n);
    this.tfs.copyWithin(i, i + 1, this.n);
    this.n--;
    return true;
  }

  private grow(need: number): void {
    if (need <= this.docs.length) return;
    const cap = Math.max(need, this.docs.length * 2);
    const d = new Int32Array(cap);
    d.set(this.docs.subarray(0, this.n));
    const t = new Int32Array(cap);
    t.set(this.tfs.subarray(0, this.n));
    this.docs = d;
    this.tfs = t;
  }
}

export class FieldIndex {
  private readonly ordOf = new Map<string, number>();
  /** Doc id by ordinal ('' once deleted). */
  docIds: string[] = [];
  /** Field length by ordinal. */
  docLen = new Int32Array(16);
  readonly terms = new Map<string, PostingList>();
  /** Document count and total length, as in the field's stats key. */
  docs = 0;
  total = 0;
  /** A lower bound of the field length of any live doc (for score upper bounds). */
  minLen = Number.MAX_SAFE_INTEGER;
  private sorted: string[] | null = null;

  ordinal(doc: string): number | undefined {
    return this.ordOf.get(doc);
  }

  private ensure(doc: string): number {
    let o = this.ordOf.get(doc);
    if (o === undefined) {
      o = this.docIds.length;
      this.docIds.push(doc);
      this.ordOf.set(doc, o);
      if (o >= this.docLen.length) {
        const nl = new Int32Array(this.docLen.length * 2);
        nl.set(this.docLen);
        this.docLen = nl;
      }
    }
    return o;
  }

  setPosting(term: string, doc: string, tf: number): void {
    const o = this.ensure(doc);
    let pl = this.terms.get(term);
    if (!pl) {
      pl = new PostingList();
      this.terms.set(term, pl);
      this.sorted = null;
    }
    pl.set(o, tf);
  }

  removePosting(term: string, doc: string): void {
    const o = this.ordOf.get(doc);
    const pl = this.terms.get(term);
    if (o === undefined || !pl) return;
    pl.remove(o);
    if (pl.n === 0) {
      this.terms.delete(term);
      this.sorted = null;
    }
  }

  setDoc(doc: string, length: number): void {
    const o = this.ensure(doc);
    this.docLen[o] = length;
    if (length < this.minLen) this.minLen = length;
  }

  removeDoc(doc: string): void {
    const o = this.ordOf.get(doc);
    if (o === undefined) return;
    this.ordOf.delete(doc);
    this.docIds[o] = '';
    this.docLen[o] = 0;
  }

  setStats(docs: number, total: number): void {
    this.docs = docs;
    this.total = total;
  }

  get liveDocs(): number {
    return this.ordOf.size;
  }

  /** Indexed terms starting with `prefix`, in term order, at most `max`. */
  expandPrefix(prefix: string, max: number): string[] {
    if (!this.sorted) this.sorted = [...this.terms.keys()].sort();
    const s = this.sorted;
    let lo = 0;
    let hi = s.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (s[mid] < prefix) lo = mid + 1;
      else hi = mid;
    }
    const out: string[] = [];
    for (let i = lo; i < s.length && out.length < max && s[i].startsWith(prefix); i++) out.push(s[i]);
    return out;
  }
}
