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
