import { TermTable } from './term-table';

describe('TermTable (the packed term dictionary)', () => {
  it('finds, adds and removes terms like a Map, reusing ids and rewriting its pool, and sorts like JS strings', () => {
    let seed = 11;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    // ASCII, Latin-1, BMP above U+E000 and supplementary characters (UTF-8 order ≠ UTF-16 order there)
    const alphabet = ['a', 'b', 'z', '0', 'é', 'ß', '\uE000', '\uFFFD', '😀', '𝄞', 'ж'];
    const word = () => Array.from({ length: 1 + rnd(6) }, () => alphabet[rnd(alphabet.length)]).join('');
    const t = new TermTable();
    const model = new Map<string, number>();
    for (let step = 0; step < 40_000; step++) {
      const w = word();
      const id = t.find(w);
      expect(id).toBe(model.get(w) ?? -1);
      if (id >= 0 && rnd(3) === 0) {
        t.remove(id);
        model.delete(w);
      } else if (id < 0) {
        const nid = t.intern(w);
        expect([...model.values()]).not.toContain(nid);
        model.set(w, nid);
      }
    }
    expect(t.size).toBe(model.size);
    for (const [w, id] of model) {
      expect(t.find(w)).toBe(id);
      expect(t.term(id)).toBe(w);
    }
    const sorted = [...t.sortedIds()].map((id) => t.term(id));
    expect(sorted).toEqual([...model.keys()].sort());
    // ids stay below the most ever live at once (removed ids are reused)
    expect(t.idLimit).toBeLessThan(model.size * 2);
  });

  it('adds from UTF-8 bytes (an image) what a string lookup then finds, and refuses a repeat', () => {
    const t = new TermTable();
    const b = Buffer.from('xxhéatyy', 'utf8');
    const id = t.addBytes(b, 2, 5);
    expect(t.find('héat')).toBe(id);
    expect(t.addBytes(Buffer.from('héat'), 0, 5)).toBe(-1);
    expect(t.intern('héat')).toBe(id);
  });
});
