import { Adjacency } from './adjacency';
import { decodeAdjacency, encodeAdjacency } from './graph-image';

describe('graph image', () => {
  it('decodes from its chunks in place, cut anywhere, to the adjacency the whole image gives', () => {
    const a = new Adjacency();
    for (let i = 0; i < 3000; i++) a.put({ src: `n${i % 300}`, dst: `n${(i * 7) % 301}`, owner: i % 5 === 0 ? `o${i}` : null, weight: i % 11, props: { p: i } });
    a.compact();
    const whole = Buffer.concat(encodeAdjacency(a));
    const expected = decodeAdjacency(whole);
    for (const size of [1, 3, 4_096, 10_007, whole.length]) {
      const chunks: Buffer[] = [];
      for (let at = 0; at < whole.length; at += size) chunks.push(whole.subarray(at, Math.min(whole.length, at + size)));
      const got = decodeAdjacency(chunks);
      expect(Buffer.concat(encodeAdjacency(got)).equals(whole)).toBe(true);
      for (const n of ['n0', 'n7', 'n299']) expect(got.neighbors(n).sort()).toEqual(expected.neighbors(n).sort());
    }
    expect(() => decodeAdjacency([whole.subarray(0, whole.length - 1)])).toThrow(/truncated/);
    expect(() => decodeAdjacency([whole, Buffer.from([0])])).toThrow(/trailing/);
  });
});
