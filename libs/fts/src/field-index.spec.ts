import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { FieldIndex, PostingList } from './field-index';

describe('FieldIndex under puts, replacements and removals', () => {
  it('keeps every posting list exact against a brute-force model (arena compaction included)', () => {
    let seed = 7;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    for (let trial = 0; trial < 5; trial++) {
      const fi = new FieldIndex();
      const truth = new Map<string, Map<string, number>>();
      for (let step = 0; step < 8000; step++) {
        const doc = `d${rnd(300)}`;
        if (rnd(4) === 0) {
          fi.removeDoc(doc);
          truth.delete(doc);
          continue;
        }
        const terms = [...new Set(Array.from({ length: rnd(12) }, () => `t${rnd(40 + trial * 10)}`))];
        const tfs = terms.map(() => 1 + rnd(5));
        fi.putDoc(doc, 10 + rnd(50), terms, tfs);
        truth.set(doc, new Map(terms.map((t, i) => [t, tfs[i]])));
      }
      const want = new Map<string, Map<number, number>>();
      for (const [d, m] of truth)
        for (const [t, tf] of m) {
          if (!want.has(t)) want.set(t, new Map());
          want.get(t)!.set(fi.ordinal(d)!, tf);
        }
      expect(fi.liveDocs).toBe(truth.size);
      expect([...fi.terms.keys()].sort()).toEqual([...want.keys()].sort());
      for (const [t, pl] of fi.terms) {
        const got = new Map<number, number>();
        for (let i = 0; i < pl.n; i++) {
          if (i > 0) expect(pl.docs[i - 1]).toBeLessThan(pl.docs[i]);
          got.set(pl.docs[i], pl.tfs[i]);
        }
        expect(got).toEqual(want.get(t));
        checkBlocks(pl, fi.docLen);
      }
    }
  });

  it('keeps block impacts exact while a list grows by appends (with removals between)', () => {
    const fi = new FieldIndex();
    let seed = 3;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    for (let d = 0; d < 5000; d++) {
      if (d % 7 === 3) fi.removeDoc(`d${rnd(d)}`);
      const terms = ['common', ...(rnd(3) === 0 ? ['rare'] : [])];
      fi.putDoc(`d${d}`, 5 + rnd(300), terms, terms.map(() => (rnd(3) ? 1 : 1 + rnd(9))));
      if (d % 1000 === 999) for (const pl of fi.terms.values()) checkBlocks(pl, fi.docLen);
    }
  });
});

/**
 * Every block's impacts are the exact minima/maximum of its postings (ratio: rounded down to
 * float32), and its skip entry is its last doc.
 */
function checkBlocks(pl: PostingList, docLen: Int32Array): void {
  pl.ensureBlocks(docLen);
  pl.ensureSkips();
  for (let b = 0; b * 64 < pl.n; b++) expect(pl.skips[b]).toBe(pl.docs[Math.min(pl.n, b * 64 + 64) - 1]);
  for (let b = 0; b * 64 < pl.n; b++) {
    let d1 = 0x7fffffff;
    let d2 = 0x7fffffff;
    let mt = 0;
    let mr = Infinity;
    for (let i = b * 64; i < Math.min(pl.n, b * 64 + 64); i++) {
      const tf = pl.tfs[i];
      const dl = docLen[pl.docs[i]];
      if (tf === 1) d1 = Math.min(d1, dl);
      else if (tf === 2) d2 = Math.min(d2, dl);
      else {
        mt = Math.max(mt, tf);
        mr = Math.min(mr, dl / tf);
      }
    }
    expect([pl.blocks[4 * b], pl.blocks[4 * b + 1], pl.blocks[4 * b + 2]]).toEqual([d1, d2, mt]);
    const r = pl.blockRatio[4 * b + 3];
    expect(r <= mr).toBe(true);
    if (mr !== Infinity) expect(r).toBeGreaterThan(mr * (1 - 1e-5));
    else expect(r).toBe(Infinity);
  }
}

describe('FieldIndex with a large vocabulary (issue 25 §7: memory per distinct term)', () => {
  // The heap after full collections (gc taken from a fresh context: jest runs without --expose-gc).
  let gc: () => void = () => undefined;
  const heapAfterGc = (): number => {
    for (let i = 0; i < 3; i++) gc();
    return process.memoryUsage().heapUsed;
  };
  beforeAll(() => {
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc') as () => void;
    setFlagsFromString('--no-expose-gc');
  });

  it('keeps a rare term in ~100 bytes of typed arrays, with no object per term', () => {
    const V = 100_000;
    const before = heapAfterGc();
    const fi = new FieldIndex();
    let t = 0;
    let d = 0;
    // docs of 3 common words and 10 words seen once or twice (a Zipf tail)
    while (t < V) {
      const terms = ['c0', 'c1', 'c2'];
      for (let j = 0; j < 10 && t < V; j++) terms.push(`rare${t++ % (V - 5000)}`);
      fi.putDoc(`d${d++}`, terms.length, terms, terms.map(() => 1));
    }
    const after = heapAfterGc();
    expect(fi.termCount).toBe(3 + V - 5000);
    // the common words' lists are the only PostingList objects
    expect(fi.longLists).toBe(3);
    // dictionary + per-term metadata + the short lists' slab: ~60–110 B a term (the arrays double)
    expect(fi.dictionaryBytes / fi.termCount).toBeLessThan(160);
    // the JS heap holds the doc ids (10,000) and the long lists, not the terms: the Map and
    // object per term of the old index cost ~1,040 B a term (104 MB here)
    expect((after - before) / fi.termCount).toBeLessThan(100);
    expect(fi.terms.get('rare7')!.n).toBe(2);
    expect(fi.df('rare99999')).toBe(0);
  });

  it('answers the same lists and prefix expansions as a model while terms come and go', () => {
    let seed = 5;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const fi = new FieldIndex();
    const truth = new Map<string, Map<string, number>>();
    for (let step = 0; step < 20_000; step++) {
      const doc = `d${rnd(2000)}`;
      if (rnd(3) === 0) {
        fi.removeDoc(doc);
        truth.delete(doc);
        continue;
      }
      // a few common words (long lists), many rare ones (short, dropped when their docs go)
      const terms = [...new Set(Array.from({ length: 1 + rnd(8) }, () => (rnd(4) === 0 ? `c${rnd(5)}` : `r${rnd(6000)}x`)))];
      const tfs = terms.map(() => 1 + rnd(4));
      fi.putDoc(doc, 5 + rnd(40), terms, tfs);
      truth.set(doc, new Map(terms.map((t, i) => [t, tfs[i]])));
      // prefix expansions between writes: the sorted ids are merged with added terms, rebuilt after drops
      if (step % 1500 === 0) {
        const live = [...new Set([...truth.values()].flatMap((m) => [...m.keys()]))].sort();
        for (const p of ['r1', 'c', 'r59'])
          expect(fi.expandPrefix(p, 256)).toEqual(live.filter((k) => k.startsWith(p)).slice(0, 256));
      }
    }
    const want = new Map<string, Map<number, number>>();
    for (const [d, m] of truth)
      for (const [t, tf] of m) {
        if (!want.has(t)) want.set(t, new Map());
        want.get(t)!.set(fi.ordinal(d)!, tf);
      }
    expect(fi.termCount).toBe(want.size);
    for (const [t, m] of want) {
      const pl = fi.list(t)!;
      expect(fi.df(t)).toBe(m.size);
      const got = new Map<number, number>();
      for (let i = 0; i < pl.n; i++) got.set(pl.docs[i], pl.tfs[i]);
      expect(got).toEqual(m);
      checkBlocks(pl, fi.docLen);
    }
    const keys = [...want.keys()].sort();
    for (const p of ['r1', 'r59', 'c', 'r', 'zz', 'r600'])
      expect(fi.expandPrefix(p, 256)).toEqual(keys.filter((k) => k.startsWith(p)).slice(0, 256));
  });

  it('merges terms added after a prefix expansion into its sorted order (no full sort), and re-sorts after a drop', () => {
    const fi = new FieldIndex();
    const words = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `p${((from + i) * 7919) % 100_000}q`);
    fi.putDoc('a', 5, words(0, 500), words(0, 500).map(() => 1));
    const all = new Set(words(0, 500));
    const check = () => {
      const live = [...all].sort();
      for (const p of ['p1', 'p', 'p99', 'p5'])
        expect(fi.expandPrefix(p, 10_000)).toEqual(live.filter((k) => k.startsWith(p)));
    };
    check();
    for (let d = 0; d < 5; d++) {
      const ws = words(500 + d * 100, 600 + d * 100);
      fi.putDoc(`b${d}`, 5, ws, ws.map(() => 1));
      ws.forEach((w) => all.add(w));
      check(); // the 100 new terms merged in
    }
    fi.removeDoc('b2'); // its 100 terms go
    words(700, 800).forEach((w) => all.delete(w));
    check();
  });
});
