import { Adjacency, MIN_MERGE } from './adjacency';
import { NodeTable } from './node-table';

/** Outgoing owner-less (target, weight) pairs of `node`, sorted: read through the public traversal arrays. */
function outOf(a: Adjacency, node: string): Array<[string, number]> {
  const u = a.idOf(node);
  if (u === undefined) return [];
  const got: Array<[string, number]> = [];
  if (u < a.baseNodes) for (let k = a.fOff[u]; k < a.fOff[u + 1]; k++) if (a.fTo[k] >= 0 && a.fOwner[k] < 0) got.push([a.name(a.fTo[k]), a.weightOf(k)]);
  for (let e = a.oHeadF[u]; e >= 0; e = a.oNextF[e]) if (!a.oDead[e] && a.oOwner[e] < 0) got.push([a.name(a.oDst[e]), a.weightOf(a.baseEdges + e)]);
  return got.sort();
}

describe('NodeTable', () => {
  it('interns strings to dense ids and gives them back, across growth and rehashing', () => {
    const t = new NodeTable();
    const words = ['', 'a', 'v1', 'v2', 'ünïcödé', '😀 emoji', 'x'.repeat(5000), '["eu",7]', '😀', 'abcd', 'abcde', 'abcdef', 'abcdefg', 'abcdefgh', 'abcdefghi', '😀😀😀😀'];
    for (let i = 0; i < 20_000; i++) words.push(`n${i}`);
    const ids = words.map((w) => t.intern(w));
    expect(ids).toEqual(words.map((_, i) => i));
    expect(t.size).toBe(words.length);
    for (let i = 0; i < words.length; i++) {
      expect(t.idOf(words[i])).toBe(i);
      expect(t.intern(words[i])).toBe(i);
      expect(t.name(i)).toBe(words[i]);
    }
    expect(t.idOf('n20000')).toBe(-1);
    expect(t.idOf('v3')).toBe(-1);
  });
});

describe('Adjacency', () => {
  it('adds, updates and removes edges by (src, dst, owner)', () => {
    const a = new Adjacency();
    a.put({ src: 'a', dst: 'b', owner: null, weight: 2 });
    a.put({ src: 'a', dst: 'c', owner: null });
    a.put({ src: 'a', dst: 'b', owner: null, weight: 5 }); // upsert, not a second edge
    expect(a.edgeCount).toBe(2);
    expect(a.neighbors('a').sort()).toEqual(['b', 'c']);
    expect(outOf(a, 'a')).toEqual([
      ['b', 5],
      ['c', NaN],
    ]);
    a.remove('a', 'b', null);
    a.remove('a', 'b', null); // idempotent
    expect(a.edgeCount).toBe(1);
    expect(a.neighbors('a')).toEqual(['c']);
    expect(a.sources('b')).toEqual([]);
    expect(a.sources('c')).toEqual(['a']);
  });

  it('keeps parallel edges of different owners apart, and lists a neighbour once', () => {
    for (const compactAfterPuts of [false, true]) {
      const a = new Adjacency();
      a.put({ src: 'x', dst: 'y', owner: 'e1', weight: 1 });
      a.put({ src: 'x', dst: 'y', owner: 'e2', weight: 3 });
      a.put({ src: 'x', dst: 'z', owner: null });
      if (compactAfterPuts) a.compact();
      expect(a.edgeCount).toBe(3);
      expect(a.neighbors('x').sort()).toEqual(['y', 'z']);
      expect(a.sources('y')).toEqual(['x']);
      a.remove('x', 'y', 'e1');
      a.remove('x', 'y', 'e3'); // an owner never seen: nothing
      expect(a.neighbors('x').sort()).toEqual(['y', 'z']);
      a.remove('x', 'y', 'e2');
      expect(a.neighbors('x')).toEqual(['z']);
      expect(a.sources('y')).toEqual([]);
    }
  });

  it('keeps props aligned with edges through removals and compaction', () => {
    const a = new Adjacency();
    a.put({ src: 's', dst: 't1', owner: null });
    a.put({ src: 's', dst: 't2', owner: null, props: { cost: 7 } });
    a.compact();
    a.put({ src: 's', dst: 't3', owner: null, props: { cost: 9, km: 2 } });
    a.remove('s', 't1', null);
    const cost = a.propWeights('cost');
    const km = a.propWeights('km');
    const read = () => {
      const u = a.idOf('s')!;
      const got: Array<[string, number, number]> = [];
      for (let k = a.fOff[u]; k < a.fOff[u + 1]; k++) if (a.fTo[k] >= 0) got.push([a.name(a.fTo[k]), cost(u, a.fTo[k], k), km(u, a.fTo[k], k)]);
      for (let e = a.oHeadF[u]; e >= 0; e = a.oNextF[e]) if (!a.oDead[e]) got.push([a.name(a.oDst[e]), cost(u, a.oDst[e], a.baseEdges + e), km(u, a.oDst[e], a.baseEdges + e)]);
      return got.sort();
    };
    const want = [
      ['t2', 7, NaN],
      ['t3', 9, 2],
    ];
    expect(read()).toEqual(want);
    a.compact();
    expect(a.oLen).toBe(0);
    expect(read()).toEqual(want);
    a.put({ src: 's', dst: 't2', owner: null, props: { km: 4 } }); // upsert of a base edge replaces its props
    expect(read()).toEqual([
      ['t2', NaN, 4],
      ['t3', 9, 2],
    ]);
    expect(a.propWeights('nope')(0, 0, 0)).toBeNaN();
  });

  it('answers unknown nodes with no neighbours', () => {
    const a = new Adjacency();
    expect(a.neighbors('nobody')).toEqual([]);
    expect(a.sources('nobody')).toEqual([]);
  });

  it('merges the overlay into the base once it passes the threshold; deletes and upserts after the merge hit the base', () => {
    const a = new Adjacency();
    const n = MIN_MERGE + 10;
    for (let i = 0; i < n; i++) a.put({ src: `s${i % 50}`, dst: `t${i}`, owner: null, weight: i });
    expect(a.compactions).toBe(1); // passed MIN_MERGE once
    expect(a.baseEdges).toBeGreaterThan(MIN_MERGE);
    expect(a.edgeCount).toBe(n);
    // after the merge: delete base edges (tombstones), upsert a base edge in place, re-add a deleted one
    a.remove('s0', 't0', null);
    a.remove('s1', 't1', null);
    a.put({ src: 's2', dst: 't2', owner: null, weight: 1000 });
    a.put({ src: 's1', dst: 't1', owner: null, weight: -1 });
    expect(a.edgeCount).toBe(n - 1);
    expect(a.neighbors('s0')).not.toContain('t0');
    expect(a.sources('t0')).toEqual([]);
    expect(a.sources('t1')).toEqual(['s1']);
    expect(outOf(a, 's2').find(([t]) => t === 't2')).toEqual(['t2', 1000]);
    expect(outOf(a, 's1').find(([t]) => t === 't1')).toEqual(['t1', -1]);
    const before = ['s0', 's1', 's2', 's49'].map((s) => outOf(a, s));
    a.compact();
    expect(a.pendingChanges).toBe(0);
    expect(['s0', 's1', 's2', 's49'].map((s) => outOf(a, s))).toEqual(before);
    expect(a.sources('t1')).toEqual(['s1']);
    expect(a.sources('t0')).toEqual([]);
  });

  it('stays equal to a plain model under random puts, upserts and removes across many merges', () => {
    let seed = 12345;
    const rnd = (k: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return (seed >>> 8) % k;
    };
    const a = new Adjacency();
    const model = new Map<string, number>(); // "src>dst>owner" → weight
    for (let step = 0; step < 40_000; step++) {
      const src = `n${rnd(120)}`;
      const dst = `n${rnd(120)}`;
      const owner = rnd(4) === 0 ? `o${rnd(3)}` : null;
      const key = `${src}>${dst}>${owner}`;
      if (rnd(3) === 0) {
        a.remove(src, dst, owner);
        model.delete(key);
      } else {
        const w = rnd(100);
        a.put({ src, dst, owner, weight: w });
        model.set(key, w);
      }
    }
    expect(a.compactions).toBeGreaterThan(2);
    expect(a.edgeCount).toBe(model.size);
    for (let i = 0; i < 120; i++) {
      const s = `n${i}`;
      const wantOut = new Set([...model.keys()].filter((k) => k.startsWith(`${s}>`)).map((k) => k.split('>')[1]));
      expect(new Set(a.neighbors(s))).toEqual(wantOut);
      expect(a.neighbors(s).length).toBe(wantOut.size); // distinct
      const wantIn = new Set([...model.keys()].filter((k) => k.split('>')[1] === s).map((k) => k.split('>')[0]));
      expect(new Set(a.sources(s))).toEqual(wantIn);
    }
    // weights by (src, dst) for owner-less edges
    for (const [k, w] of model) {
      const [src, dst, owner] = k.split('>');
      if (owner !== 'null') continue;
      expect(outOf(a, src).find(([t]) => t === dst)?.[1]).toBe(w);
    }
  });
});
