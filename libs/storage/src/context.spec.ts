import { WriteSet } from './context';

describe('WriteSet', () => {
  const k = (s: string) => Buffer.from(s, 'latin1');

  it('answers range reads in key order, also for keys written after the first range read', () => {
    const w = new WriteSet();
    for (const s of ['m', 'c', 'x', 'a\u00ff', 'a']) w.set(k(s), k(`${s}!`));
    expect(w.inRange(k('a'), k('n')).map(([key]) => key.toString('latin1'))).toEqual(['a', 'a\u00ff', 'c', 'm']);
    w.set(k('b'), null);
    w.set(k('c'), k('again'));
    w.set(k('zz'), k('Z'));
    expect(w.inRange(k('a'), k('zzz')).map(([key, v]) => [key.toString('latin1'), v?.toString('latin1') ?? null])).toEqual([
      ['a', 'a!'],
      ['a\u00ff', 'a\u00ff!'],
      ['b', null],
      ['c', 'again'],
      ['m', 'm!'],
      ['x', 'x!'],
      ['zz', 'Z'],
    ]);
    expect(w.size).toBe(7);
    expect(w.lookup(k('b'))).toBeNull();
    expect(w.lookup(k('q'))).toBeUndefined();
  });

  it('merges into another set, last write winning', () => {
    const a = new WriteSet();
    const b = new WriteSet();
    a.set(k('1'), k('a'));
    b.set(k('1'), k('b'));
    b.set(k('2'), null);
    b.mergeInto(a);
    expect(a.writes().map((x) => [x.key.toString(), x.value?.toString() ?? null])).toEqual([
      ['1', 'b'],
      ['2', null],
    ]);
  });

  it('merging into an empty set moves the entries over and leaves the source empty', () => {
    const k = (s: string) => Buffer.from(s);
    const from = new WriteSet();
    from.set(k('b'), k('2'));
    from.set(k('a'), k('1'));
    expect(from.inRange(k('a'), k('z')).length).toBe(2); // builds the sorted key list
    const into = new WriteSet();
    from.mergeInto(into);
    expect(from.size).toBe(0);
    expect(from.lookup(k('a'))).toBeUndefined();
    into.set(k('c'), k('3'));
    expect(into.inRange(k('a'), k('z')).map(([key]) => key.toString())).toEqual(['a', 'b', 'c']);
    from.set(k('d'), k('4')); // the source is usable again and shares nothing with the target
    expect(into.lookup(k('d'))).toBeUndefined();
  });
});
