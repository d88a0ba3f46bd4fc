#!/usr/bin/env node
// Graph benchmark: neighbors, BFS depth 3 and Dijkstra from seeded random nodes on
// ca-GrQc and a synthetic 1,000,000-edge graph, in-process and (with --https) over
// HTTPS, beside SQLite recursive CTEs on the same edges. See README.md here.
'use strict';
const os = require('os');
const fs = require('fs');
const path = require('path');
const { loadGrQc, synthetic, rng } = require('./data');
const { SqlitePeer } = require('./sqlite-peer');
const { measure, printTable, quiesce, loadavg } = require('./stats');

const HTTPS_WARMUP = 3000;

const args = process.argv.slice(2);
const flag = (name) => args.includes(`--${name}`);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};

const graph = require('@mmdb/graph');

function pickQueries(edges, count, seed) {
  const r = rng(seed);
  const srcs = [...new Set(edges.map((e) => e[0]))];
  const nodes = [...new Set(edges.flatMap((e) => [e[0], e[1]]))];
  const q = [];
  for (let i = 0; i < count; i++) q.push({ src: srcs[Math.floor(r() * srcs.length)], dst: nodes[Math.floor(r() * nodes.length)] });
  return q;
}

function buildAdjacency(edges) {
  const a = new graph.Adjacency();
  for (const [src, dst, weight] of edges) a.append({ src, dst, owner: null, weight });
  if (typeof a.compact === 'function') a.compact(); // bulk appends land in the overlay: fold them into the CSR base, as GraphIndex's build does
  return a;
}

/** Checks that our answers equal SQLite's on a sample, so the table compares equal work. */
function crossCheck(adj, peer, queries) {
  const weight = graph.edgeWeights ? graph.edgeWeights(adj) : (u, k) => adj.out[u].w[k];
  for (const { src, dst } of queries) {
    const a = new Set(graph.bfs(adj, src, 3).map((v) => `${v.node}@${v.depth}`));
    const b = new Set(peer.bfs(src, 3).map((v) => `${v.node}@${v.depth}`));
    if (a.size !== b.size || [...a].some((x) => !b.has(x))) throw new Error(`bfs mismatch from ${src}`);
    const d1 = graph.dijkstra(adj, src, dst, weight).total_weight;
    const d2 = peer.dijkstra(src, dst);
    if (d1 !== d2) throw new Error(`dijkstra mismatch ${src}->${dst}: ${d1} vs ${d2}`);
    const n1 = new Set(graph.bfs(adj, src, 1).map((v) => v.node));
    if (n1.size - 1 !== new Set(peer.neighbors(src)).size) throw new Error(`neighbors mismatch at ${src}`);
  }
}

async function runDataset(name, edges, opts) {
  const rows = [];
  const t0 = Date.now();
  const peer = new SqlitePeer(edges);
  const tSql = Date.now() - t0;
  const t1 = Date.now();
  const adj = buildAdjacency(edges);
  const tAdj = Date.now() - t1;
  console.log(`${name}: ${edges.length} edges, ${adj.nodeCount} nodes; sqlite load ${tSql} ms, adjacency build ${tAdj} ms`);
  const qN = pickQueries(edges, opts.nNeighbors, 1);
  const qB = pickQueries(edges, opts.nBfs, 2);
  const qD = pickQueries(edges, opts.nDijkstra, 3);
  crossCheck(adj, peer, qD.slice(0, 10));
  console.log(`${name}: answers agree with SQLite on 10 sampled bfs/dijkstra/neighbors queries`);

  const weight = graph.edgeWeights ? graph.edgeWeights(adj) : (u, k) => adj.out[u].w[k];
  // Every timed loop starts on a quiet process (no load, build or compaction still running)
  // and after a warm-up; the load average of the moment is kept beside each figure.
  const timed = async (fn) => {
    await quiesce(process.pid, { maxMs: 10_000 });
    return { load: loadavg(), m: await fn() };
  };
  const sN = (await timed(() => measure(qN, (q) => peer.neighbors(q.src), 200))).m;
  const sB = (await timed(() => measure(qB, (q) => peer.bfs(q.src, 3), 50))).m;
  const sD = (await timed(() => measure(qD, (q) => peer.dijkstra(q.src, q.dst), 10))).m;
  const inProc = 'in-process adjacency';
  rows.push({ dataset: name, op: 'neighbors', target: inProc, ...(await timed(() => measure(qN, (q) => adj.neighbors(q.src), 2000))), peer: sN });
  rows.push({ dataset: name, op: 'bfs depth 3', target: inProc, ...(await timed(() => measure(qB, (q) => graph.bfs(adj, q.src, 3), 200))), peer: sB });
  rows.push({ dataset: name, op: 'dijkstra', target: inProc, ...(await timed(() => measure(qD, (q) => graph.dijkstra(adj, q.src, q.dst, weight), 20))), peer: sD });

  for (const t of opts.targets) {
    const target = await t.prepare(name, edges);
    if (!target) continue;
    // Over HTTPS, steady state: 3,000 warm-up requests first (the first few thousand requests
    // of a fresh client and server pay for JIT tier-up, with p99 around 4–6 ms).
    const https = typeof target.run === 'function';
    const run = (op, qs, warm, fn) => timed(() => (https ? target.run(op, qs, warm) : measure(qs, fn, warm)));
    rows.push({ dataset: name, op: 'neighbors', target: target.label, ...(await run('neighbors', qN, https ? HTTPS_WARMUP : 2000, (q) => target.neighbors(q.src))), peer: sN });
    rows.push({ dataset: name, op: 'bfs depth 3', target: target.label, ...(await run('bfs', qB, https ? HTTPS_WARMUP : 200, (q) => target.bfs(q.src, 3))), peer: sB });
    rows.push({ dataset: name, op: 'dijkstra', target: target.label, ...(await run('dijkstra', qD, https ? 300 : 20, (q) => target.dijkstra(q.src, q.dst))), peer: sD });
    await target.close?.();
  }
  peer.close();
  return rows;
}

async function main() {
  const targets = [];
  if (!flag('no-store')) targets.push(require('./store-target').storeTarget({ syntheticThroughStore: !flag('skip-synthetic-store') }));
  if (flag('https')) targets.push(require('./https-target').httpsTarget({ probe: flag('probe'), profile: flag('profile') }));
  const small = flag('quick');
  const all = [];
  const nD = opt('dijkstra-queries');
  all.push(...(await runDataset('ca-GrQc', loadGrQc(), { nNeighbors: 2000, nBfs: 1000, nDijkstra: Number(nD ?? 300), targets })));
  if (!flag('skip-synthetic')) {
    const edges = synthetic(small ? 10_000 : 100_000, small ? 100_000 : 1_000_000, 42);
    all.push(...(await runDataset(small ? 'synthetic-100k' : 'synthetic-1M', edges, { nNeighbors: 2000, nBfs: 200, nDijkstra: Number(nD ?? 100), targets })));
  }
  console.log(`\nnode ${process.version}, ${os.cpus().length} cpu(s) ${os.cpus()[0]?.model ?? ''}`);
  printTable('graph benchmark (latency per query; speed-up = sqlite / ours)', all);
  const out = opt('json');
  if (out) fs.writeFileSync(path.resolve(out), JSON.stringify(all, null, 2));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
