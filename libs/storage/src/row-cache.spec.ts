import { RowCache } from './row-cache';

describe('RowCache', () => {
  it('keeps at most max entries, newest values shadowing older ones', () => {
    const c = new RowCache<number>(10);
    for (let i = 0; i < 100; i++) c.set(`k${i}`, i);
    expect(c.size).toBeLessThanOrEqual(10);
    expect(c.get('k99')).toBe(99);
    expect(c.get('k0')).toBeUndefined();
    c.set('k99', -1);
    expect(c.get('k99')).toBe(-1);
  });

  it('a value rewritten after its generation aged never reads back stale', () => {
    const c = new RowCache<string>(4);
    c.set('a', 'v1');
    c.set('b', 'x'); // young full (2): a, b become old
    c.set('a', 'v2'); // young: a=v2 shadows old a=v1
    expect(c.get('a')).toBe('v2');
    c.set('c', 'y'); // young full again: old = {a=v2, c}; the old a=v1 is gone
    expect(c.get('a')).toBe('v2');
  });

  it('keeps entries in use: a hit in the old generation moves it back to the young one', () => {
    const c = new RowCache<number>(4);
    c.set('hot', 1);
    c.set('x1', 0); // rotate: hot is old
    expect(c.get('hot')).toBe(1); // promoted
    c.set('x2', 0); // rotate: hot (young) becomes old, x1 generation dropped
    expect(c.get('hot')).toBe(1);
    expect(c.get('x1')).toBeUndefined();
  });

  it('does nothing with max 0, and clear empties it', () => {
    const off = new RowCache<number>(0);
    off.set('a', 1);
    expect(off.get('a')).toBeUndefined();
    const c = new RowCache<number>(8);
    c.set('a', 1);
    c.clear();
    expect(c.get('a')).toBeUndefined();
    expect(c.size).toBe(0);
  });
});
