/**
 * One suite over every index kind and metric, through the public VectorTable door:
 * recall@10 on a real MNIST slice against float64 brute force, filters, delete/replace.
 */
import { VectorTable, filterExact, type VectorMetric } from '@mmdb/vector';
import { bruteForce, recall, refDistance, shippedGroundTruth, slice } from './mnist';

const N = 1500;
const Q = 15;
const data = slice(N, Q);

type Kind = 'exact' | 'hnsw' | 'ivf' | 'ivfpq';
// [kind, metric, min recall@10 high_recall, min recall@10 fast] on this slice; dot on raw
// (un-normalised) pixels is the hard case for IVF: the best inner products sit in many lists.
const CASES: Array<[Kind, VectorMetric, number, number]> = [
  ['exact', 'cosine', 1, 1],
  ['exact', 'dot', 1, 1],
  ['exact', 'l2', 1, 1],
  ['exact', 'manhattan', 1, 1],
  ['hnsw', 'cosine', 0.95, 0.8],
  ['hnsw', 'dot', 0.9, 0.7],
  ['hnsw', 'l2', 0.95, 0.8],
  ['ivf', 'cosine', 0.9, 0.6],
  ['ivf', 'dot', 0.75, 0.4],
  ['ivf', 'l2', 0.9, 0.6],
  ['ivf', 'manhattan', 0.9, 0.6],
  ['ivfpq', 'cosine', 0.85, 0.4],
  ['ivfpq', 'dot', 0.6, 0.3],
  ['ivfpq', 'l2', 0.85, 0.4],
  ['ivfpq', 'manhattan', 0.85, 0.4],
];

function build(kind: Kind, metric: VectorMetric): VectorTable {
  // built as `exact`, then moved to `kind` in one build; small PQ training keeps the suite fast
  const t = new VectorTable('t', { dim: data.dim, metric, index: 'exact', params: kind === 'ivfpq' ? { pq_train: 1000, iters: 4 } : {} });
  data.base.forEach((v, i) => t.upsert(String(i), v, { digit: data.labels[i], even: data.labels[i] % 2 === 0 }));
  t.rebuild(kind);
  expect(t.kind).toBe(kind);
  return t;
}

describe.each(CASES)('%s / %s', (kind, metric, minRecall, minFast) => {
  let t: VectorTable;
  const truth = data.queries.map((q) => bruteForce(metric, data.base, q, 10));
  beforeAll(() => {
    t = build(kind, metric);
  });

  it(`recall@10 (high_recall) ≥ ${minRecall} and distances are the documented ones`, () => {
    let r = 0;
    data.queries.forEach((q, qi) => {
      const got = t.topk(q, { k: 10, mode: 'high_recall' });
      expect(got).toHaveLength(10);
      for (let i = 1; i < got.length; i++) expect(got[i].distance).toBeGreaterThanOrEqual(got[i - 1].distance);
      for (const m of got) {
        const ref = refDistance(metric, q, data.base[Number(m.id)]);
        expect(Math.abs(m.distance - ref)).toBeLessThanOrEqual(1e-3 * Math.max(1, Math.abs(ref)));
      }
      r += recall(got.map((m) => m.id), truth[qi]);
    });
    expect(r / Q).toBeGreaterThanOrEqual(minRecall);
  });

  it('a stored vector is at distance 0 from itself, and cosine, l2 and manhattan never answer below 0', () => {
    for (let i = 0; i < 20; i++) {
      const got = t.topk(data.base[i], { k: 3, mode: 'high_recall' });
      if (metric === 'dot') continue; // 1 − a·b: below 0 wherever a·b > 1
      for (const m of got) expect(m.distance).toBeGreaterThanOrEqual(0);
      if (kind === 'exact' || kind === 'hnsw') expect(got[0].distance).toBeLessThan(1e-5);
    }
  });

  it(`fast mode answers k results, recall@10 ≥ ${minFast}`, () => {
    let r = 0;
    data.queries.forEach((q, qi) => {
      const got = t.topk(q, { k: 10, mode: 'fast' });
      expect(got).toHaveLength(10);
      r += recall(got.map((m) => m.id), truth[qi]);
    });
    expect(r / Q).toBeGreaterThanOrEqual(minFast);
  });

  it('a filter is exact in membership and never falls short of k', () => {
    for (const [filter, keep] of [
      [{ digit: 3 }, (i: number) => data.labels[i] === 3],
      [{ digit: 4, even: true }, (i: number) => data.labels[i] === 4],
    ] as const) {
      const q = data.queries[0];
      const got = t.topk(q, { k: 10, mode: 'fast', filter });
      expect(got).toHaveLength(10);
      for (const m of got) expect(keep(Number(m.id))).toBe(true);
      expect(got.map((m) => Number(m.id))).toEqual(bruteForce(metric, data.base, q, 10, keep));
    }
    expect(t.topk(data.queries[0], { k: 10, mode: 'fast', filter: { digit: 11 } })).toEqual([]);
    expect(t.topk(data.queries[0], { k: 10, mode: 'fast', filter: { digit: 3, even: true } })).toEqual([]);
  });

  it('a filter searched through the index keeps membership exact and k results', () => {
    const saved = { ...filterExact };
    const search = jest.spyOn((t as unknown as { index: { search: (...a: unknown[]) => unknown } }).index, 'search');
    try {
      Object.assign(filterExact, { min: 0, perSqrt: 0 }); // no filter is small enough for the exact scan
      let r = 0;
      let n = 0;
      for (const [filter, keep] of [
        [{ digit: 3 }, (i: number) => data.labels[i] === 3],
        [{ even: false }, (i: number) => data.labels[i] % 2 === 1],
        [{ digit: 4, even: true }, (i: number) => data.labels[i] === 4],
      ] as const)
        for (const q of data.queries.slice(0, 5)) {
          const got = t.topk(q, { k: 10, mode: 'fast', filter });
          expect(got).toHaveLength(10);
          for (const m of got) expect(keep(Number(m.id))).toBe(true);
          r += recall(got.map((m) => m.id), bruteForce(metric, data.base, q, 10, keep));
          n++;
        }
      expect(r / n).toBeGreaterThanOrEqual(minFast);
      if (kind !== 'exact') expect(search.mock.calls.some((c) => (c[1] as { filter?: unknown }).filter !== undefined)).toBe(true);
    } finally {
      Object.assign(filterExact, saved);
      search.mockRestore();
    }
  });

  it('delete removes and a put with an existing id replaces', () => {
    const q = data.queries[1];
    const first = t.topk(q, { k: 1, mode: 'high_recall' })[0];
    expect(t.delete(first.id)).toBe(true);
    expect(t.delete(first.id)).toBe(false);
    expect(t.topk(q, { k: 10, mode: 'high_recall' }).map((m) => m.id)).not.toContain(first.id);
    // put another id's vector under `first.id`'s id: the query itself becomes the nearest
    t.upsert(first.id, q, { digit: 99 });
    const again = t.topk(q, { k: 1, mode: 'high_recall' })[0];
    expect(again.id).toBe(first.id);
    expect(again.metadata).toEqual({ digit: 99 });
    expect(again.distance).toBeCloseTo(refDistance(metric, q, q), 3);
    expect(t.topk(q, { k: 5, mode: 'fast', filter: { digit: 99 } }).map((m) => m.id)).toEqual([first.id]);
  });

  it('a checkpoint image restores the same answers', () => {
    const copy = VectorTable.deserialize('t', t.serialize());
    expect(copy.kind).toBe(t.kind);
    expect(copy.size).toBe(t.size);
    for (const q of data.queries.slice(0, 5)) expect(copy.topk(q, { k: 10, mode: 'high_recall' })).toEqual(t.topk(q, { k: 10, mode: 'high_recall' }));
  });
});

describe('exact search against the shipped ground truth (full 9,000 base)', () => {
  it.each(['l2', 'cosine'] as const)('%s', (metric) => {
    const full = slice(9000, 20);
    const t = new VectorTable('full', { dim: full.dim, metric, index: 'exact', params: {} });
    full.base.forEach((v, i) => t.upsert(String(i), v, null));
    const gt = shippedGroundTruth(metric, 20);
    full.queries.forEach((q, qi) => {
      expect(t.topk(q, { k: 10, mode: 'high_recall' }).map((m) => Number(m.id))).toEqual(gt[qi].slice(0, 10));
    });
  });
});
