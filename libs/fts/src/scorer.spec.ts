import { FieldIndex } from './field-index';
import { NO_MORE, TermScorer } from './scorer';

/** The first doc ≥ target in a sorted list, by a linear scan (the reference). */
function firstAtLeast(docs: number[], target: number): number {
  for (const d of docs) if (d >= target) return d;
  return NO_MORE;
}

describe('TermScorer.advance through the skip entries', () => {
  it('lands where a linear scan does, for short and long jumps, across list changes', () => {
    let seed = 11;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const fi = new FieldIndex();
    const live = new Set<number>();
    for (let round = 0; round < 6; round++) {
      // appends, then removals and re-puts in the middle (the skip entries go stale from there)
      for (let d = 0; d < 3000; d++) {
        const id = round * 3000 + d;
        if (rnd(3) === 0) continue;
        fi.putDoc(`d${id}`, 10, ['t'], [1]);
        live.add(id);
      }
      for (let r = 0; r < 400; r++) {
        const id = rnd((round + 1) * 3000);
        if (live.has(id)) {
          fi.removeDoc(`d${id}`);
          live.delete(id);
        }
      }
      const list = fi.terms.get('t')!;
      const docs = Array.from(list.docs.subarray(0, list.n));
      expect(docs.length).toBe(live.size);
      for (let pass = 0; pass < 20; pass++) {
        const s = new TermScorer(list, 1, fi.docLen, 10, 10, { k1: 1.2, b: 0.75 });
        let target = 0;
        for (;;) {
          // mostly short steps, sometimes jumps over many blocks, sometimes the current doc
          const r = rnd(10);
          target += r < 6 ? rnd(4) : r < 9 ? rnd(500) : rnd(20000);
          const got = s.advance(target);
          // target never falls below the current doc here, so the answer is the first doc ≥ target
          expect(got).toBe(firstAtLeast(docs, target));
          expect(s.doc()).toBe(got);
          if (got === NO_MORE) break;
          expect(docs[s.i]).toBe(got);
          target = got;
        }
      }
    }
  });
});
