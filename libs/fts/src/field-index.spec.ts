import { FieldIndex } from './field-index';

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
      }
    }
  });
});
