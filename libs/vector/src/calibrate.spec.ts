import { efCalibration } from './calibrate';
import { HnswIndex } from './hnsw';
import { rng } from './kmeans';
import { VectorTable } from './table';

const DIM = 16;
const saved = { ...efCalibration };
afterEach(() => Object.assign(efCalibration, saved));

/** A table of `n` uniform random vectors with a deliberately weak graph (m 4, ef 4). */
function table(n: number, seed = 3): VectorTable {
  const t = new VectorTable('t', { dim: DIM, metric: 'l2', index: 'hnsw', params: { m: 4, ef_construction: 8, ef_high_recall: 4, ef_fast: 4 } });
  const r = rng(seed);
  for (let i = 0; i < n; i++) t.upsert(`v${i}`, Array.from({ length: DIM }, () => r()), null);
  return t;
}

describe('HNSW ef calibration', () => {
  test('starts at efCalibration.min, again only after growth, and sizes filtered walks by the share passing', async () => {
    efCalibration.min = 2000;
    const t = table(1999);
    expect(t.tune()).toBeNull(); // under min: nothing to calibrate
    expect(t.efFor(10, 'high_recall')).toBe(10); // max(k, ef_high_recall 4)
    t.upsert('x', Array.from({ length: DIM }, () => 0.5), null); // the 2,000th starts one
    const running = t.tune();
    expect(running).not.toBeNull();
    expect(t.tune()).toBe(running); // one at a time
    expect(t.calibrating()).toBe(true); // explain says so while it runs
    await running;
    expect(t.calibrating()).toBe(false);
    const cal = (t.ann as HnswIndex).calibrated!;
    expect(cal.size).toBe(2000);
    expect(cal.recallAtBase).toBeLessThan(efCalibration.target); // ef 4 on this graph is not enough
    expect(cal.ef).toBeGreaterThan(4);
    expect(cal.recall >= efCalibration.target || cal.ef === efCalibration.maxEf).toBe(true);
    // unfiltered: the calibrated ef; filtered: ⌈share × ef + k × (1 − share)⌉, never under the mode's ef or k
    expect(t.efFor(10, 'high_recall')).toBe(Math.max(10, cal.ef));
    expect(t.efFor(1, 'high_recall', 0.5)).toBe(Math.max(4, Math.ceil(0.5 * cal.ef + 0.5)));
    expect(t.efFor(1, 'high_recall', 0.0001)).toBe(4);
    expect(t.efFor(10, 'fast', 0.5)).toBe(10); // fast keeps ef_fast (here under k: k)
    expect(t.tune()).toBeNull(); // not grown by 1.25× since
    // the checkpoint image keeps it: a restarted table searches with the same ef at once
    const back = VectorTable.deserialize('t', t.serialize());
    expect((back.ann as HnswIndex).calibrated).toEqual(cal);
    expect(back.tune()).toBeNull();
    expect(back.efFor(1, 'high_recall', 0.5)).toBe(t.efFor(1, 'high_recall', 0.5));
  });

  test('unfiltered recall@10 at the calibrated ef meets 0.95 against brute force on new queries', async () => {
    efCalibration.min = 1000;
    const t = table(3000, 9);
    // the one started at 1,000 rows (during the upserts) measured a third of the graph: wait for the one at 3,000
    for (let p = t.tune(); p; p = t.tune()) await p;
    expect((t.ann as HnswIndex).calibrated!.size).toBe(3000);
    const r = rng(77);
    let hit = 0;
    const Q = 40;
    for (let j = 0; j < Q; j++) {
      const q = Array.from({ length: DIM }, () => r());
      const got = t.topk(q, { k: 10, mode: 'high_recall' }).map((m) => m.id);
      const exact = [...t.entries()]
        .map(({ id }) => ({ id, d: t.vectorOf(id)!.reduce((s, x, i) => s + (x - q[i]) ** 2, 0) }))
        .sort((a, b) => a.d - b.d)
        .slice(0, 10);
      const want = new Set(exact.map((e) => e.id));
      hit += got.filter((id) => want.has(id)).length;
    }
    expect(hit / (10 * Q)).toBeGreaterThanOrEqual(0.95);
  });

  test('[vector.params] calibrate = 0 keeps the configured ef', () => {
    efCalibration.min = 1000;
    const t = new VectorTable('t', { dim: DIM, metric: 'l2', index: 'hnsw', params: { m: 4, ef_construction: 8, ef_high_recall: 4, calibrate: 0 } });
    const r = rng(5);
    for (let i = 0; i < 1500; i++) t.upsert(`v${i}`, Array.from({ length: DIM }, () => r()), null);
    expect(t.tune()).toBeNull();
    expect(t.efFor(1, 'high_recall')).toBe(4);
  });

  test('a replaced index stops its calibration', async () => {
    efCalibration.min = 1e9; // none while it is built
    const t = table(1500);
    efCalibration.min = 1000;
    const idx = t.ann as HnswIndex;
    const running = idx.tune(1500)!;
    expect(running).not.toBeNull();
    t.rebuild('hnsw'); // replaces (and disposes) the index
    await running;
    expect(idx.calibrated).toBeNull();
  });
});
