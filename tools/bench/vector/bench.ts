/**
 * Vector benchmark (see README.md): MNIST, synthetic 100k×128 beside raw hnswlib-node,
 * filtered top-k at 10% and 1%, and IVF-PQ at scale. Every table prints the ceiling
 * measured in the same run.
 */
import { join } from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import { HierarchicalNSW } from 'hnswlib-node';
import { HNSW_DEFAULTS, VectorTable, readFvecs, readIvecs, rng, type IvfIndex, type VectorMetric } from '@mmdb/vector';
import { gcStats, hostSteal, startBareServer, startServer, type BareServer, type Server } from './https';

const args = process.argv.slice(2);
const flag = (n: string) => args.includes(`--${n}`);
const opt = (n: string, d: number) => {
  const i = args.indexOf(`--${n}`);
  return i >= 0 ? Number(args[i + 1]) : d;
};
const QUICK = flag('quick');
const HTTPS = !flag('no-https');
const MNIST = join(__dirname, '../../../../shared/datasets/mnist');

export const now = () => Number(process.hrtime.bigint()) / 1e6;
export function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}
const f2 = (x: number) => x.toFixed(2);
const f3 = (x: number) => x.toFixed(3);
const f1 = (x: number) => x.toFixed(1);
const FLOOR = 'floor: same body to a bare node:https server (lean client)';

function table(title: string, head: string[], rows: (string | number)[][]): void {
  console.log(`\n### ${title}\n`);
  console.log(`| ${head.join(' | ')} |`);
  console.log(`|${head.map(() => '---').join('|')}|`);
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
}

function recallAt(got: string[], truth: number[], k = 10): number {
  const t = new Set(truth.slice(0, k).map(String));
  return got.slice(0, k).filter((g) => t.has(g)).length / k;
}

interface Run {
  recall: number;
  p50: number;
  p99: number;
  /** Host steal (% of CPU time, /proc/stat) over the timed passes this run was part of. */
  steal: number;
}

/** What HTTPS adds over the in-process path measured in the same interleaved loop. */
const added = (h: Run, inproc: Run) => `${f2(h.p50 - inproc.p50)} / ${f2(h.p99 - inproc.p99)}`;

/** Requests per path before HTTPS timing: a fresh client and server pay for JIT tier-up in their first few thousand. */
const HTTPS_WARMUP = 3000;
/** Timed passes over the queries when HTTPS is measured (500 queries × 2: p99 is the 10th-worst, not the 5th). */
const HTTPS_ROUNDS = 2;

type Path = (q: number[]) => Promise<string[]> | string[];

/**
 * Times every path on each query in turn, one call at a time (never two at once): whatever
 * else runs on the machine hits all paths alike, so their difference is the paths' own.
 */
async function timePaths(queries: number[][], truth: number[][], paths: Path[], warmups = 20, rounds = 1): Promise<Run[]> {
  const lat = paths.map(() => [] as number[]);
  const rec = paths.map(() => 0);
  for (let i = 0; i < warmups; i++) for (const run of paths) await run(queries[i % queries.length]);
  const steal = hostSteal();
  for (let r = 0; r < rounds; r++)
    for (let i = 0; i < queries.length; i++)
      for (let p = 0; p < paths.length; p++) {
        const t0 = now();
        const got = await paths[p](queries[i]);
        lat[p].push(now() - t0);
        rec[p] += recallAt(got, truth[i]);
      }
  const n = rounds * queries.length;
  const stolen = steal();
  return paths.map((_, p) => ({ recall: rec[p] / n, p50: pct(lat[p], 50), p99: pct(lat[p], 99), steal: stolen }));
}

/** A full GC here (the loads and builds before leave marking work behind), then a quiet server. */
async function quiet(srv: Server): Promise<void> {
  (globalThis as { gc?: () => void }).gc?.();
  const waited = await srv.settle();
  if (waited > 1500) console.log(`(waited ${(waited / 1000).toFixed(1)} s for the server to go quiet)`);
}

async function timeQueries(queries: number[][], truth: number[][], run: Path, warmups = 20): Promise<Run> {
  return (await timePaths(queries, truth, [run], warmups))[0];
}

/**
 * The floor of the HTTPS rows, measured in the same loops: the same body posted through the
 * lean client to a bare node:https server in its own process (`bare-server.js`), which answers
 * `[]`. Started beside the server in `main`.
 */
let bare: BareServer | null = null;

/**
 * The in-process paths, then (with a server) the same top-k over HTTPS through the lean
 * client and through node:https, and the same body to the bare server (the floor), all
 * interleaved query by query. The lean clients are fresh connections per call (the server
 * closes idle keep-alive sockets after 65 s).
 */
async function timeWithHttps(
  srv: Server | null,
  table: string,
  queries: number[][],
  truth: number[][],
  inproc: Path[],
  body: (q: number[]) => object,
  warmups = HTTPS_WARMUP,
): Promise<{ inproc: Run[]; lean?: Run; node?: Run; floor?: Run }> {
  if (!srv || !bare) return { inproc: await timePaths(queries, truth, inproc) };
  await quiet(srv);
  const lean = await srv.lean();
  const floor = await bare.lean();
  const gcFrom = srv.stdout().length;
  const mine: number[] = [];
  const obs = new PerformanceObserver((l) => l.getEntries().forEach((e) => mine.push(e.duration)));
  obs.observe({ entryTypes: ['gc'] });
  try {
    const ids = (r: { id: string }[]) => r.map((m) => m.id);
    const runs = await timePaths(
      queries,
      truth,
      [
        ...inproc,
        async (q) => ids(await lean.post(`/vector/${table}/topk`, body(q))),
        async (q) => ids(await srv.post(`/vector/${table}/topk`, body(q))),
        async (q) => ids(await floor.post('/floor', body(q))),
      ],
      warmups,
      HTTPS_ROUNDS,
    );
    const gc = gcStats(srv.stdout().slice(gcFrom));
    console.log(
      `(${table}: GCs during warm-up and timing — server: ${gc.scavenges} minor, ${gc.marks} major, longest ${f2(gc.maxMs)} ms; this process: ${mine.length}, longest ${f2(Math.max(0, ...mine))} ms)`,
    );
    return { inproc: runs.slice(0, inproc.length), lean: runs[inproc.length], node: runs[inproc.length + 1], floor: runs[inproc.length + 2] };
  } finally {
    obs.disconnect();
    lean.close();
    floor.close();
  }
}

export function rows2d(data: Float32Array, dim: number, n: number): number[][] {
  return Array.from({ length: n }, (_, r) => Array.from(data.subarray(r * dim, (r + 1) * dim)));
}

/** Exact top-k by brute force (float64), optionally over a subset. */
export function groundTruth(metric: VectorMetric, base: Float32Array, n: number, dim: number, qs: number[][], k: number, keep?: (i: number) => boolean): number[][] {
  const t = new VectorTable('gt', { dim, metric, index: 'exact', params: {} });
  for (let i = 0; i < n; i++) if (!keep || keep(i)) t.upsert(String(i), base.subarray(i * dim, (i + 1) * dim), null);
  return qs.map((q) => t.topk(q, { k, mode: 'high_recall' }).map((m) => Number(m.id)));
}

/**
 * Seeded clustered data like real embeddings: `c` clusters with centres in [-1,1]^dim; each
 * point is its centre plus a random combination of the cluster's `intrinsic` basis vectors
 * (σ 0.3 along each) plus isotropic noise σ 0.02. With `intrinsic` = dim it is the plain
 * gaussian-blob set (`--iid`), on which nearest neighbours are barely distinguishable.
 */
export function clustered(n: number, dim: number, seed: number, c = 100, intrinsic = flag('iid') ? dim : 16): Float32Array {
  const r = rng(1000 + Math.floor(seed / 1000)); // clusters shared by base and query sets of one family
  const gaussOf = (g: () => number) => () => Math.sqrt(-2 * Math.log(g() || 1e-12)) * Math.cos(2 * Math.PI * g());
  const g0 = gaussOf(r);
  const centers = Float32Array.from({ length: c * dim }, () => r() * 2 - 1);
  const bases = Float32Array.from({ length: c * intrinsic * dim }, () => g0() / Math.sqrt(dim));
  const p = rng(seed);
  const gauss = gaussOf(p);
  const out = new Float32Array(n * dim);
  const coef = new Float32Array(intrinsic);
  for (let i = 0; i < n; i++) {
    const k = Math.floor(p() * c);
    for (let t = 0; t < intrinsic; t++) coef[t] = (intrinsic === dim ? 0.2 : 0.3) * gauss();
    for (let j = 0; j < dim; j++) {
      let v = centers[k * dim + j] + (intrinsic === dim ? 0 : 0.02 * gauss());
      if (intrinsic === dim) v += coef[j];
      else for (let t = 0; t < intrinsic; t++) v += coef[t] * bases[(k * intrinsic + t) * dim + j];
      out[i * dim + j] = v;
    }
  }
  return out;
}

function rawHnsw(metric: VectorMetric, data: Float32Array, n: number, dim: number) {
  const space = metric === 'dot' ? 'ip' : (metric as 'l2' | 'cosine');
  const h = new HierarchicalNSW(space, dim);
  h.initIndex({ maxElements: n, m: HNSW_DEFAULTS.m, efConstruction: HNSW_DEFAULTS.ef_construction, randomSeed: HNSW_DEFAULTS.seed });
  for (let i = 0; i < n; i++) h.addPoint(Array.from(data.subarray(i * dim, (i + 1) * dim)), i);
  return h;
}

export async function loadHttps(srv: Server, table: string, data: Float32Array, n: number, dim: number, metric: VectorMetric, meta?: (i: number) => object) {
  let next = 0;
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= n) return;
      await srv.post(`/vector/${table}/put`, { id: String(i), embedding: Array.from(data.subarray(i * dim, (i + 1) * dim)), metric, metadata: meta?.(i) });
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
}

async function mnist(srv: Server | null): Promise<void> {
    const base = readFvecs(join(MNIST, 'base.fvecs'));
    const qf = readFvecs(join(MNIST, 'query.fvecs'));
    const nq = Math.min(QUICK ? 200 : 1000, qf.n); // the shipped query file holds 500
    const mq = rows2d(qf.data, base.dim, nq);
    const rows1: (string | number)[][] = [];
    for (const metric of ['l2', 'cosine'] as const) {
      const gt = readIvecs(join(MNIST, `groundtruth_${metric}_top100.ivecs`), nq);
      const t = new VectorTable('mnist', { dim: base.dim, metric, index: 'auto', params: {} });
      const b0 = now();
      for (let i = 0; i < base.n; i++) t.upsert(String(i), base.data.subarray(i * base.dim, (i + 1) * base.dim), null);
      const build = now() - b0;
      const raw = rawHnsw(metric, base.data, base.n, base.dim);
      let load = 0;
      const name = `mnist_${metric}`;
      if (srv) {
        const l0 = now();
        await loadHttps(srv, name, base.data, base.n, base.dim, metric);
        load = now() - l0;
      }
      for (const mode of ['high_recall', 'fast'] as const) {
        raw.setEf(mode === 'fast' ? HNSW_DEFAULTS.ef_fast : HNSW_DEFAULTS.ef_high_recall);
        const r = await timeWithHttps(
          srv,
          name,
          mq,
          gt,
          [(q) => t.topk(q, { k: 10, mode }).map((m) => m.id), (q) => raw.searchKnn(q, 10).neighbors.map(String)],
          (q) => ({ vector: q, k: 10, mode }),
        );
        const [ours, ceil] = r.inproc;
        rows1.push([metric, mode, 'in-process', f3(ours.recall), f2(ours.p50), f2(ours.p99), f3(ceil.recall), f2(ceil.p99), f2(ours.p99 / ceil.p99), '', Math.round(build), f1(ours.steal)]);
        for (const [path, h] of [['HTTPS (lean client)', r.lean], ['HTTPS (node:https)', r.node]] as const)
          if (h) rows1.push([metric, mode, path, f3(h.recall), f2(h.p50), f2(h.p99), f3(ceil.recall), f2(ceil.p99), f2(h.p99 / ceil.p99), added(h, ours), Math.round(load), '']);
        if (r.floor) rows1.push([metric, mode, FLOOR, '', f2(r.floor.p50), f2(r.floor.p99), '', '', '', '', '', '']);
      }
    }
    table(
      `1. MNIST 9,000 × 784, ${nq} queries, recall@10 against the shipped exact ground truth (ceiling: raw hnswlib-node, same parameters)`,
      ['metric', 'mode', 'path', 'recall@10', 'p50 ms', 'p99 ms', 'ceiling recall', 'ceiling p99 ms', 'ratio', 'HTTPS − in-process p50 / p99 ms', 'build or load ms', 'host steal %'],
      rows1,
    );

}

export async function main(): Promise<void> {
  console.log(`vector benchmark — node ${process.version}, ${QUICK ? 'quick' : 'full'} run, HNSW m=${HNSW_DEFAULTS.m} ef_construction=${HNSW_DEFAULTS.ef_construction} ef fast/high_recall=${HNSW_DEFAULTS.ef_fast}/${HNSW_DEFAULTS.ef_high_recall}`);
  const srv = HTTPS ? await startServer({ nodeArgs: ['--trace-gc'] }) : null;
  if (srv) bare = await startBareServer(join(srv.dir, 'tls'));
  try {
    // ---- 1. MNIST ----
    if (!flag('skip-mnist')) await mnist(srv);
    if (flag('only-mnist')) return;

    // ---- 2 + 3. synthetic 100k × 128 ---- = readFvecs(join(MNIST, 'base.fvecs'));
    const N = opt('n', QUICK ? 20_000 : 100_000);
    const D = 128;
    const sq = QUICK ? 200 : 500;
    const syn = clustered(N, D, 42);
    const sQueries = rows2d(clustered(sq, D, 43), D, sq);
    const metric: VectorMetric = 'l2';
    const gt2 = groundTruth(metric, syn, N, D, sQueries, 10);
    const rows2: (string | number)[][] = [];
    const b0 = now();
    const t2 = new VectorTable('syn', { dim: D, metric, index: 'auto', params: {} });
    for (let i = 0; i < N; i++) t2.upsert(String(i), syn.subarray(i * D, (i + 1) * D), { b10: i % 10, b100: i % 100 });
    const ourBuild = now() - b0;
    const r0 = now();
    const raw2 = rawHnsw(metric, syn, N, D);
    const rawBuild = now() - r0;
    rows2.push(['build (in-process)', '', Math.round(ourBuild), Math.round(rawBuild), '', '', f2(ourBuild / rawBuild), '', '']);
    let httpLoad = 0;
    if (srv) {
      const l0 = now();
      await loadHttps(srv, 'syn', syn, N, D, metric, (i) => ({ b10: i % 10, b100: i % 100 }));
      httpLoad = now() - l0;
      rows2.push(['build over HTTPS (16 puts in flight)', '', Math.round(httpLoad), Math.round(rawBuild), '', '', f2(httpLoad / rawBuild), '', '']);
    }
    for (const mode of ['high_recall', 'fast'] as const) {
      raw2.setEf(mode === 'fast' ? HNSW_DEFAULTS.ef_fast : HNSW_DEFAULTS.ef_high_recall);
      const r = await timeWithHttps(
        srv,
        'syn',
        sQueries,
        gt2,
        [(q) => t2.topk(q, { k: 10, mode }).map((m) => m.id), (q) => raw2.searchKnn(q, 10).neighbors.map(String)],
        (q) => ({ vector: q, k: 10, mode }),
      );
      const [ours, ceil] = r.inproc;
      rows2.push([`${mode} in-process`, f3(ours.recall), f2(ours.p50), f2(ours.p99), f3(ceil.recall), f2(ceil.p99), f2(ours.p99 / ceil.p99), '', f1(ours.steal)]);
      for (const [path, h] of [['HTTPS (lean client)', r.lean], ['HTTPS (node:https)', r.node]] as const)
        if (h) rows2.push([`${mode} ${path}`, f3(h.recall), f2(h.p50), f2(h.p99), f3(ceil.recall), f2(ceil.p99), f2(h.p99 / ceil.p99), added(h, ours), '']);
      if (r.floor) rows2.push([`${mode} ${FLOOR}`, '', f2(r.floor.p50), f2(r.floor.p99), '', '', '', '', '']);
    }
    table(
      `2. Synthetic clustered ${N.toLocaleString()} × ${D} (seed 42, ${flag('iid') ? 'gaussian blobs' : '100 clusters of intrinsic dimension 16'}, l2), ${sq} queries; ceiling: raw hnswlib-node in this run`,
      ['what', 'recall@10', 'p50 ms (build: ours ms)', 'p99 ms (build: raw ms)', 'ceiling recall', 'ceiling p99 ms', 'ratio', 'HTTPS − in-process p50 / p99 ms', 'host steal %'],
      rows2,
    );

    const rows3: (string | number)[][] = [];
    if (!flag('skip-filtered')) for (const [field, sel, mod] of [
      ['b10', '10%', 10],
      ['b100', '1%', 100],
    ] as const) {
      const fq = sQueries.slice(0, QUICK ? 100 : 200);
      const gtf = groundTruth(metric, syn, N, D, fq, 10, (i) => i % mod === 3);
      const filter = { [field]: 3 };
      raw2.setEf(HNSW_DEFAULTS.ef_high_recall);
      const ceil = await timeQueries(fq, gtf, (q) => raw2.searchKnn(q, 10, (l) => l % mod === 3).neighbors.map(String));
      for (const mode of ['high_recall', 'fast'] as const) {
        // the route, both clients and the server are warm from part 2: a shorter warm-up (the 10% scans cost ms each)
        const r = await timeWithHttps(srv, 'syn', fq, gtf, [(q) => t2.topk(q, { k: 10, mode, filter }).map((m) => m.id)], (q) => ({ vector: q, k: 10, mode, filter }), 500);
        const [ours] = r.inproc;
        rows3.push([sel, mode, 'in-process', f3(ours.recall), f2(ours.p99), f3(ceil.recall), f2(ceil.p99), f1(ours.steal)]);
        for (const [path, h] of [['HTTPS (lean client)', r.lean], ['HTTPS (node:https)', r.node]] as const) if (h) rows3.push([sel, mode, path, f3(h.recall), f2(h.p99), f3(ceil.recall), f2(ceil.p99), '']);
        if (r.floor) rows3.push([sel, mode, FLOOR, '', f2(r.floor.p99), '', '', '']);
      }
    }
    if (rows3.length) table('3. Filtered top-k on the synthetic set (ceiling: raw hnswlib-node with a filter callback, ef high_recall)', ['selectivity', 'mode', 'path', 'recall@10', 'p99 ms', 'ceiling recall', 'ceiling p99 ms', 'host steal %'], rows3);

    // ---- 4. IVF-PQ at scale ----
    if (flag('skip-ivfpq')) return;
    const NP = opt('ivfpq-n', QUICK ? 100_000 : 1_000_000);
    const big = NP === N ? syn : clustered(NP, D, 44);
    // loaded as `exact` (no index upkeep), then trained once over the whole corpus
    const pq = new VectorTable('pq', { dim: D, metric, index: 'exact', params: {} });
    const p0 = now();
    for (let i = 0; i < NP; i++) pq.upsert(String(i), big.subarray(i * D, (i + 1) * D), null);
    pq.rebuild('ivfpq');
    const pqBuild = now() - p0;
    const pqq = rows2d(clustered(200, D, 45), D, 200);
    const gtp = groundTruth(metric, big, NP, D, pqq, 10);
    const ivf = pq.ann as IvfIndex;
    const rows4: (string | number)[][] = [];
    for (const mode of ['high_recall', 'fast'] as const) {
      const ours = await timeQueries(pqq, gtp, (q) => pq.topk(q, { k: 10, mode }).map((m) => m.id));
      rows4.push([NP.toLocaleString(), mode, ivf.nlist, f3(ours.recall), f2(ours.p50), f2(ours.p99), (ivf.codeBytes() / 2 ** 20).toFixed(1), ((NP * D * 4) / 2 ** 20).toFixed(1), `1/${Math.round((NP * D * 4) / ivf.codeBytes())}`, Math.round(pqBuild / 1000)]);
    }
    table(
      `4. IVF-PQ (own: k-means coarse quantizer, PQ ${D / 4}×8-bit residual codes, exact re-rank), synthetic clustered ${NP.toLocaleString()} × ${D}, 200 queries`,
      ['vectors', 'mode', 'nlist', 'recall@10', 'p50 ms', 'p99 ms', 'codes MiB', 'float32 MiB', 'codes/float32', 'build s'],
      rows4,
    );
  } finally {
    await srv?.stop();
    await bare?.stop();
  }
}
