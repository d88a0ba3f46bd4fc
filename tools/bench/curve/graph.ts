/**
 * The curve's graph child: ours (the in-memory `Adjacency` a relation is served from, bulk
 * loaded and compacted as GraphIndex's build does; loading 10M edges through TenantStore takes
 * ~40 min here, so the store is left out) or sqlite (tools/bench/graph/sqlite-peer.js: in-memory,
 * WITHOUT ROWID (src, dst), traversals as recursive CTEs) over the graph bench's seeded synthetic
 * graph (n / 10 nodes, skewed targets, weights 1..10), streamed (no edge list is kept).
 */
import { Adjacency, bfs, dijkstra, edgeWeights, walk, walkNames } from '@mmdb/graph';
import { percentiles, memory, report, log, settledMemory } from './common';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { rng } = require('../rng');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { SqlitePeer } = require('../graph/sqlite-peer');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { quiesce } = require('../quiet');

/** The same edges, in the same order, as tools/bench/graph/data.js synthetic(m / 10, m, 42). */
export function* synthetic(m: number, seed = 42): Generator<[string, string, number]> {
  const n = m / 10;
  const r = rng(seed);
  // the duplicate check in a typed open-addressing table (a Set of 10M numbers was ~0.4 GB of JS
  // heap: the child's peak and its garbage, read as ours)
  const seen = new Float64Array(2 ** Math.ceil(Math.log2(2 * m + 2))).fill(-1);
  const mask = seen.length - 1;
  let count = 0;
  while (count < m) {
    const a = Math.floor(r() * n);
    const b = Math.floor(Math.pow(r(), 1.5) * n);
    if (a === b) continue;
    const k = a * n + b;
    let i = (Math.imul(a, 0x9e3779b1) ^ Math.imul(b, 0x85ebca6b)) & mask;
    while (seen[i] !== -1 && seen[i] !== k) i = (i + 1) & mask;
    if (seen[i] === k) continue;
    seen[i] = k;
    count++;
    yield [`v${a}`, `v${b}`, 1 + Math.floor(r() * 10)];
  }
}

/** Seeded (src, dst) pairs over node ids (a random node has ~10 out-edges). */
function pick(m: number, count: number, seed: number): { src: string; dst: string }[] {
  const r = rng(seed);
  return Array.from({ length: count }, () => ({ src: `v${Math.floor(r() * (m / 10))}`, dst: `v${Math.floor(r() * (m / 10))}` }));
}

export async function runGraph(system: string, m: number): Promise<void> {
  const base = memory();
  const t0 = performance.now();
  const qN = pick(m, 2000, 1);
  const qB = pick(m, 200, 2);
  const qD = pick(m, 10, 3);
  const out: Record<string, { wall: number; cpu?: number }> = {};
  const pass = async (name: string, qs: { src: string; dst: string }[], fn: (q: { src: string; dst: string }) => unknown, warm: number) => {
    await quiesce(process.pid, { maxMs: 30_000 });
    const p = await percentiles(qs, fn, warm);
    out[`${name}, mean`] = { wall: p.mean, cpu: p.cpuMean };
    out[`${name}, p99`] = { wall: p.p99, cpu: p.cpuP99 };
    log(`${system} ${m} ${name}: mean ${p.mean.toFixed(3)} p50 ${p.p50.toFixed(3)} p99 ${p.p99.toFixed(3)} ms; cpu mean ${p.cpuMean.toFixed(3)} p99 ${p.cpuP99.toFixed(3)}`);
  };
  if (system === 'sqlite') {
    // SqlitePeer takes an edge list; hand it the generator's output in one transaction
    const peer = new SqlitePeer({ [Symbol.iterator]: () => synthetic(m) });
    const loadS = (performance.now() - t0) / 1000;
    const loaded = memory();
    log(`sqlite ${m}: loaded in ${loadS.toFixed(0)} s`);
    await pass('neighbors', qN, (q) => peer.neighbors(q.src), 200);
    await pass('bfs depth 3', qB, (q) => peer.bfs(q.src, 3), 20);
    await pass('dijkstra', qD, (q) => peer.dijkstra(q.src, q.dst), 1);
    report({ area: 'graph', system, size: m, loadS, base, loaded, after: memory(), settled: settledMemory(), queries: out });
    peer.close();
    return;
  }
  const adj = new Adjacency();
  for (const [src, dst, weight] of synthetic(m)) adj.append({ src, dst, owner: null, weight });
  adj.compact();
  const loadS = (performance.now() - t0) / 1000;
  const loaded = memory();
  log(`ours ${m}: loaded in ${loadS.toFixed(0)} s, ${adj.nodeCount} nodes`);
  const w = edgeWeights(adj);
  await pass('neighbors', qN, (q) => adj.neighbors(q.src), 2000);
  await pass('bfs depth 3', qB, (q) => bfs(adj, q.src, 3), 200);
  // the executor's walk (graph_expand: GET /graph/bfs, SQL), with the names it emits
  await pass('bfs depth 3 (executor walk)', qB, (q) => {
    const w = walk(adj, q.src, { direction: 'forward', maxDepth: 3, startSeen: true });
    const names: string[] = [];
    if (w) {
      const name = walkNames(adj, w.ids, w.length); // as the executor reads them (libs/sql multimodel.ts)
      for (let k = 0; k < w.length; k++) names.push(name(k));
    }
    return names;
  }, 200);
  await pass('dijkstra', qD, (q) => dijkstra(adj, q.src, q.dst, w), 2);
  const nodes = adj.nodeCount;
  // libs/graph DESIGN.md: 24 B an edge; a node 8 (offsets) + 16 (overlay heads) + 12 (hash, slot) + 2 per UTF-16 unit of its name
  const doc = (m * 24 + nodes * (8 + 16 + 12 + 2 * 7)) / 1048576;
  report({ area: 'graph', system, size: m, loadS, base, loaded, after: memory(), settled: settledMemory(), queries: out, budgetMB: doc, budget: `${nodes} nodes: documented adjacency memory ${doc.toFixed(0)} MB (24 B an edge + ~50 B a node)` });
}
