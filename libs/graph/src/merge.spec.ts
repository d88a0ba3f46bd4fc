import { Adjacency, MIN_MERGE } from './adjacency';

/** Every edge leaving `node` in stored order: [target, owner slot sign, weight, km prop]. */
function rowOf(a: Adjacency, node: string): Array<[string, number, number, number]> {
  const u = a.idOf(node);
  if (u === undefined) return [];
  const km = a.propWeights('km');
  const got: Array<[string, number, number, number]> = [];
  const at = (to: number, owner: number, slot: number) => got.push([a.name(to), owner, a.weightOf(slot), km(u, to, slot)]);
  if (u < a.baseNodes) for (let k = a.fOff[u]; k < a.fOff[u + 1]; k++) if (a.fTo[k] >= 0) at(a.fTo[k], a.fOwner[k], k);
  for (let e = a.oHeadF[u]; e >= 0; e = a.oNextF[e]) if (!a.oDead[e]) at(a.oDst[e], a.oOwner[e], a.baseEdges + e);
  return got;
}

describe('overlay merge in steps (issue 25: no event-loop stall)', () => {
  const saved = Adjacency.mergeStepWork;
  afterEach(() => {
    Adjacency.mergeStepWork = saved;
  });

  it('runs a large merge in many steps while writes go on, and ends equal to a merge done at once', async () => {
    Adjacency.mergeStepWork = 2048;
    let seed = 99;
    const rnd = (k: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return (seed >>> 8) % k;
    };
    const N = 400;
    const a = new Adjacency();
    const ref = new Adjacency(); // every merge at once
    const both = (f: (x: Adjacency) => void) => {
      f(a);
      Adjacency.mergeStepWork = Infinity;
      f(ref);
      Adjacency.mergeStepWork = 2048;
    };
    for (let i = 0; i < 20_000; i++) {
      const e = { src: `n${rnd(N)}`, dst: `n${rnd(N)}`, owner: `o${i}`, weight: i };
      both((x) => x.append(e));
    }
    both((x) => x.compact());
    const random = () => {
      const src = `n${rnd(N + 20)}`; // some new nodes too
      const dst = `n${rnd(N + 20)}`;
      const owner = rnd(3) === 0 ? null : `o${rnd(25_000)}`;
      if (rnd(4) === 0) both((x) => x.remove(src, dst, owner));
      else {
        const w = rnd(1000);
        const props = rnd(5) === 0 ? { km: rnd(50) } : undefined;
        both((x) => x.put({ src, dst, owner, weight: w, ...(props ? { props } : {}) }));
      }
    };
    // writes until the threshold starts a merge: it must not finish synchronously
    for (let k = 0; k < 100_000 && !a.merging; k++) random();
    expect(a.merging).toBe(true);
    expect(a.compactions).toBe(1);
    // writes and reads between the steps, against the old structures
    let turns = 0;
    while (a.merging) {
      for (let k = 0; k < 20; k++) random();
      const probe = `n${rnd(N)}`;
      expect(a.neighbors(probe).sort()).toEqual(ref.neighbors(probe).sort());
      await new Promise((r) => setImmediate(r));
      turns++;
    }
    await a.merged();
    expect(a.compactions).toBe(2);
    expect(a.mergeSteps).toBeGreaterThanOrEqual(10);
    expect(turns).toBeGreaterThanOrEqual(10);
    expect(a.edgeCount).toBe(ref.edgeCount);
    for (let i = 0; i < N + 20; i++) {
      const n = `n${i}`;
      expect(rowOf(a, n).sort()).toEqual(rowOf(ref, n).sort());
      expect(a.sources(n).sort()).toEqual(ref.sources(n).sort());
    }
    // the merged base holds exactly what a merge at once over the same writes holds
    both((x) => x.compact());
    for (let i = 0; i < N + 20; i++) expect(rowOf(a, `n${i}`)).toEqual(rowOf(ref, `n${i}`));
  });

  it('runs a merge that fits in one step at once', () => {
    const a = new Adjacency();
    for (let i = 0; i <= MIN_MERGE; i++) a.put({ src: `s${i % 7}`, dst: `t${i}`, owner: null });
    expect(a.compactions).toBe(1);
    expect(a.merging).toBe(false);
    expect(a.mergeSteps).toBe(0);
  });

  it('a compact() during a merge in steps replaces it', async () => {
    Adjacency.mergeStepWork = 1024;
    const a = new Adjacency();
    for (let i = 0; i < 40_000; i++) a.append({ src: `n${i % 500}`, dst: `n${(i * 7) % 500}`, owner: `o${i}` });
    a.compact();
    let i = 40_000;
    while (!a.merging && i < 100_000) a.put({ src: `n${i % 500}`, dst: `m${i}`, owner: null, weight: i++ });
    expect(a.merging).toBe(true);
    const n1n7 = () => rowOf(a, 'n1').filter(([to]) => to === 'n7').length;
    const before = n1n7();
    a.remove('n1', 'n7', 'o1');
    a.compact();
    expect(a.merging).toBe(false);
    await a.merged();
    await new Promise((r) => setImmediate(r));
    expect(a.compactions).toBe(2); // the first compact() and this one: the merge in steps never installs
    expect(a.pendingChanges).toBe(0);
    expect(a.edgeCount).toBe(i - 1);
    expect(n1n7()).toBe(before - 1);
  });

  it('compactInSteps (the bulk load at first use) builds the same base as compact(), over many turns', async () => {
    Adjacency.mergeStepWork = 4096;
    const a = new Adjacency();
    const b = new Adjacency();
    for (let i = 0; i < 30_000; i++) {
      const e = { src: `n${(i * 31) % 700}`, dst: `n${(i * 17) % 900}`, owner: `o${i}`, weight: i % 13, ...(i % 5 ? {} : { props: { km: i } }) };
      a.append(e);
      b.append(e);
    }
    let turns = 0;
    let done = false;
    const tick = () => {
      turns++;
      if (!done) setImmediate(tick);
    };
    setImmediate(tick);
    await a.compactInSteps();
    done = true;
    b.compact();
    expect(a.mergeSteps).toBeGreaterThanOrEqual(10);
    expect(turns).toBeGreaterThanOrEqual(10);
    expect(a.pendingChanges).toBe(0);
    for (const k of ['fOff', 'fTo', 'fW', 'fOwner', 'rOff', 'rFrom', 'rOwner'] as const) expect(a[k]).toEqual(b[k]);
    for (let i = 0; i < 900; i++) expect(rowOf(a, `n${i}`)).toEqual(rowOf(b, `n${i}`));
  });
});
