import { Adjacency } from './adjacency';

describe('Adjacency', () => {
  it('adds, updates and removes edges by (src, dst, owner)', () => {
    const a = new Adjacency();
    a.put({ src: 'a', dst: 'b', owner: null, weight: 2 });
    a.put({ src: 'a', dst: 'c', owner: null });
    a.put({ src: 'a', dst: 'b', owner: null, weight: 5 }); // upsert, not a second edge
    expect(a.edgeCount).toBe(2);
    expect(a.neighbors('a').sort()).toEqual(['b', 'c']);
    const id = a.idOf('a')!;
    const k = a.out[id]!.to.indexOf(a.idOf('b')!);
    expect(a.out[id]!.w[k]).toBe(5);
    a.remove('a', 'b', null);
    a.remove('a', 'b', null); // idempotent
    expect(a.edgeCount).toBe(1);
    expect(a.neighbors('a')).toEqual(['c']);
    expect(a.sources('b')).toEqual([]);
    expect(a.sources('c')).toEqual(['a']);
  });

  it('keeps parallel edges of different owners apart, and lists a neighbour once', () => {
    const a = new Adjacency();
    a.put({ src: 'x', dst: 'y', owner: 'e1', weight: 1 });
    a.put({ src: 'x', dst: 'y', owner: 'e2', weight: 3 });
    a.put({ src: 'x', dst: 'z', owner: null });
    expect(a.edgeCount).toBe(3);
    expect(a.neighbors('x').sort()).toEqual(['y', 'z']);
    expect(a.sources('y')).toEqual(['x']);
    a.remove('x', 'y', 'e1');
    expect(a.neighbors('x').sort()).toEqual(['y', 'z']);
    a.remove('x', 'y', 'e2');
    expect(a.neighbors('x')).toEqual(['z']);
    expect(a.sources('y')).toEqual([]);
  });

  it('keeps props aligned with edges through swap removals', () => {
    const a = new Adjacency();
    a.put({ src: 's', dst: 't1', owner: null });
    a.put({ src: 's', dst: 't2', owner: null, props: { cost: 7 } });
    a.put({ src: 's', dst: 't3', owner: null, props: { cost: 9 } });
    a.remove('s', 't1', null);
    const o = a.out[a.idOf('s')!]!;
    const got = o.to.map((t, k) => [a.names[t], o.props?.[k]?.cost]);
    expect(got.sort()).toEqual([
      ['t2', 7],
      ['t3', 9],
    ]);
  });

  it('answers unknown nodes with no neighbours', () => {
    const a = new Adjacency();
    expect(a.neighbors('nobody')).toEqual([]);
    expect(a.sources('nobody')).toEqual([]);
  });
});
