/**
 * Recall of filtered top-k through the HNSW index against exact brute force, at several
 * selectivities, on a real TenantStore. The graph is built with lowered parameters (m 12,
 * ef_construction 40, ef_high_recall 10) on data of high intrinsic dimension, so that the
 * configured ef alone misses (recall@10 ~0.87-0.89 at 30-50 %, as a 1M-row table does at
 * ef 128): the index's own calibration (calibrate.ts) must raise the walk's ef until the
 * answers meet the target at every selectivity. Recall thresholds only, never timings.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TenantStore } from '@mmdb/storage';
import { VectorParticipant, efCalibration, filterExact, rng } from '@mmdb/vector';

jest.setTimeout(300_000);

const N = 10_000;
const DIM = 64;
const Q = 40;
const MANIFEST = `namespace = "t"
table = "hard"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "i64"
[[columns]]
name = "lt1"
ty = "bool"
[[columns]]
name = "lt3"
ty = "bool"
[[columns]]
name = "lt5"
ty = "bool"
[[columns]]
name = "emb"
ty = "vector"
dim = ${DIM}
[vector]
column = "emb"
dim = ${DIM}
metric = "l2"
index = "hnsw"
[vector.params]
m = 12
ef_construction = 40
ef_high_recall = 10
`;

/** 8 centres, each point uniform in a cube of side 0.6 around its centre: neighbours are barely closer than the rest. */
function corpus(): { emb: number[][]; cat: number[] } {
  const r = rng(7);
  const centres = Array.from({ length: 8 }, () => Array.from({ length: DIM }, () => r() * 2 - 1));
  const emb: number[][] = [];
  const cat: number[] = [];
  for (let i = 0; i < N; i++) {
    emb.push(centres[i % 8].map((c) => Math.fround(c + (r() - 0.5) * 0.6)));
    cat.push(Math.floor(r() * 10));
  }
  return { emb, cat };
}

function truth(q: number[], emb: number[][], pass: (i: number) => boolean, k = 10): string[] {
  const d: Array<[number, number]> = [];
  for (let i = 0; i < emb.length; i++) {
    if (!pass(i)) continue;
    let s = 0;
    for (let j = 0; j < DIM; j++) s += (q[j] - emb[i][j]) ** 2;
    d.push([s, i]);
  }
  return d.sort((a, b) => a[0] - b[0]).slice(0, k).map(([, i]) => String(i));
}

let dir: string;
const saved = { cal: { ...efCalibration }, exact: { ...filterExact } };
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'mmdb-vector-recall-'));
  // every filter through the index (none small enough for the exact scan); one calibration, when
  // the last row lands (earlier ones would start at sizes that depend on scheduling)
  Object.assign(filterExact, { min: 0, perSqrt: 0 });
  efCalibration.min = N;
});
afterAll(() => {
  Object.assign(efCalibration, saved.cal);
  Object.assign(filterExact, saved.exact);
  rmSync(dir, { recursive: true, force: true });
});

test('filtered top-10 through HNSW meets recall 0.95 at 100 %, 50 %, 30 % and 10 % selectivity after calibration', async () => {
  const vectors = new VectorParticipant();
  const store = await TenantStore.open({ dir, participants: [vectors], sync: false });
  await store.registerSchema(MANIFEST);
  const { emb, cat } = corpus();
  for (let i = 0; i < N; i += 500) {
    const changes = [];
    for (let j = i; j < Math.min(N, i + 500); j++)
      changes.push({ op: 'put' as const, schema: 't.hard', row: { id: j, lt1: cat[j] < 1, lt3: cat[j] < 3, lt5: cat[j] < 5, emb: emb[j] } });
    await store.commit({ changes });
  }
  const t = vectors.table('t.hard');
  expect([t.kind, t.size]).toEqual(['hnsw', N]);
  // the calibration started with the last row; wait for it
  for (let p = t.tune(); p; p = t.tune()) await p;
  const ef = t.efFor(10, 'high_recall');
  expect(ef).toBeGreaterThan(10); // the configured ef was not enough: calibration raised it

  const r = rng(11);
  const qs = Array.from({ length: Q }, () => emb[Math.floor(r() * N)].map((x) => x + (r() - 0.5) * 0.1));
  const cases: Array<[string, Record<string, boolean> | undefined, (i: number) => boolean]> = [
    ['100%', undefined, () => true],
    ['50%', { lt5: true }, (i) => cat[i] < 5],
    ['30%', { lt3: true }, (i) => cat[i] < 3],
    ['10%', { lt1: true }, (i) => cat[i] < 1],
  ];
  const got: Record<string, number> = {};
  for (const [name, filter, pass] of cases) {
    let hit = 0;
    for (const q of qs) {
      const ans = vectors.topk('t.hard', { vector: q, k: 10, ...(filter ? { filter } : {}) });
      expect(ans).toHaveLength(10);
      expect(ans.every((m) => pass(Number(m.id)))).toBe(true);
      const want = new Set(truth(q, emb, pass));
      hit += ans.filter((m) => want.has(m.id)).length;
    }
    got[name] = hit / (10 * Q);
  }
  // each selectivity named with its recall when it misses
  for (const [name, rec] of Object.entries(got)) expect({ name, recall: rec >= 0.95 ? 'met' : rec }).toEqual({ name, recall: 'met' });
  await store.close();
});
