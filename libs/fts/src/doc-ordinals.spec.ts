import { DocOrdinals } from './doc-ordinals';

describe('DocOrdinals (doc id → ordinal over the ids array)', () => {
  it('answers like a Map under adds and removes (backward-shift deletion, growth)', () => {
    let seed = 3;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const ids: string[] = [];
    const t = new DocOrdinals(ids);
    const model = new Map<string, number>();
    for (let step = 0; step < 30_000; step++) {
      const doc = `doc-${rnd(5000)}${rnd(9) === 0 ? 'é' : ''}`;
      expect(t.get(doc)).toBe(model.get(doc));
      const o = model.get(doc);
      if (o !== undefined && rnd(2) === 0) {
        t.remove(o);
        ids[o] = '';
        model.delete(doc);
      } else if (o === undefined) {
        ids.push(doc);
        t.add(ids.length - 1);
        model.set(doc, ids.length - 1);
      }
    }
    expect(t.size).toBe(model.size);
    for (const [doc, o] of model) expect(t.get(doc)).toBe(o);
    expect(t.get('absent')).toBeUndefined();
  });
});
